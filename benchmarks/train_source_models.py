"""Train source models into the cache and print their out-of-domain test scores and times.

Usage:
    ADAPTABLE_DATA_DIR=... ADAPTABLE_CACHE_DIR=.cache/models \\
        python benchmarks/train_source_models.py --datasets heloc --models mlp resnet \\
        [--seed 0] [--paper-results PATH/paper_results.csv] [--device auto|cpu|cuda] \\
        [--threads N] [--max-epochs N]

Each line reports the model, macro-F1 and balanced accuracy (%) on the test split, the wall
time of training (or, on a cache hit, the time recorded when it was trained), the device, the
seconds per epoch of deep models (median over epochs, and the first epoch) or the boosting
rounds the early-stopped trials kept, and what the training chose (epochs run / best epoch, or
the selected hyper-parameters). With ``--paper-results`` the paper's Source / supervised row is
printed beside ours. ``--max-epochs`` shortens deep training to time epochs (its own cache
entry; not the paper's protocol). Timings are printed for information, never asserted.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import time
from pathlib import Path

import torch
from sklearn.metrics import balanced_accuracy_score, f1_score

from adaptable import datasets, models
from adaptable.models.training import TrainingConfig

PAPER_DATASET = {"heloc": "HELOC", "hospital_readmission": "Hospital Readmission"}
PAPER_MODEL = {
    "mlp": ("MLP", "Source"),
    "resnet": ("ResNet", "Source"),
    "autoint": ("AutoInt", "Source"),
    "ft_transformer": ("FT-Transformer", "Source"),
    "knn": ("kNN", "kNN"),
    "logreg": ("LogReg", "LogReg"),
    "random_forest": ("RandomForest", "RandomForest"),
    "xgboost": ("XGBoost", "XGBoost"),
    "catboost": ("CatBoost", "CatBoost"),
}


def paper_scores(path: Path | None) -> dict[tuple[str, str, str], float]:
    """(dataset, model, metric) -> the paper's natural-shift number (first occurrence)."""
    if path is None:
        return {}
    out: dict[tuple[str, str, str], float] = {}
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            if row["shift"] != "natural" or row["table"] not in ("main", "architecture"):
                continue
            for name, (model, method) in PAPER_MODEL.items():
                if row["model"] == model and row["method"] == method:
                    out.setdefault((row["dataset"], name, row["metric"]), float(row["mean"]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["heloc", "hospital_readmission"])
    parser.add_argument("--models", nargs="+", default=models.names())
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--paper-results", type=Path, default=None)
    parser.add_argument("--progress", action="store_true", help="per-epoch progress bars")
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    parser.add_argument(
        "--threads", type=int, default=None, help="training threads (default: models.train's)"
    )
    parser.add_argument("--max-epochs", type=int, default=None, help="deep models: epoch cap")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--cache-dir", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    training = None if args.max_epochs is None else TrainingConfig(max_epochs=args.max_epochs)
    paper = paper_scores(args.paper_results)
    print(f"cache: {args.cache_dir or models.default_cache_dir()}; load average {os.getloadavg()}")
    print(
        "| dataset | model | F1 | bAcc | paper F1 | paper bAcc | train s | device | s/epoch "
        "(median, first) or rounds kept | cached | chose |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.datasets:
        dataset = datasets.load(name, data_dir=args.data_dir)
        for model_name in args.models:
            start = time.perf_counter()
            model = models.train(
                model_name,
                dataset,
                seed=args.seed,
                quiet=not args.progress,
                cache_dir=args.cache_dir,
                device=args.device,
                threads=args.threads,
                training=training,
            )
            wall = time.perf_counter() - start
            info = model.cache_info
            meta = info["meta"]
            pred = model.predict_proba(dataset.test.X).argmax(axis=1)
            f1 = 100 * f1_score(dataset.test.y, pred, average="macro")
            bacc = 100 * balanced_accuracy_score(dataset.test.y, pred)
            if meta["kind"] == "torch":
                hist = meta["history"]
                chose = f"{len(hist['train_loss'])} epochs, best {hist['best_epoch'] + 1}"
                epochs = hist.get("epoch_seconds") or []
                device = hist.get("device", "cpu")
                per_epoch = f"{statistics.median(epochs):.1f}, {epochs[0]:.1f}" if epochs else "-"
            else:
                chose = json.dumps(meta["params"], sort_keys=True)
                device = "cpu"
                rounds = [t["rounds"] for t in meta.get("trials", []) if "rounds" in t]
                per_epoch = ",".join(map(str, rounds)) if rounds else "-"
            pd_name = PAPER_DATASET.get(name, name)
            pf1 = paper.get((pd_name, model_name, "F1"))
            pba = paper.get((pd_name, model_name, "bAcc"))
            fmt = lambda v: "-" if v is None else f"{v:.1f}"  # noqa: E731
            cached = f"hit (load {wall:.1f}s)" if info["hit"] else "trained"
            print(
                f"| {name} | {model_name} | {f1:.1f} | {bacc:.1f} | {fmt(pf1)} | {fmt(pba)} | "
                f"{meta['train_seconds']:.1f} | {device} | {per_epoch} | {cached} | {chose} |",
                flush=True,
            )


if __name__ == "__main__":
    main()

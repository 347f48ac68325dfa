"""Source vs AdapTable macro-F1 under every shift scenario, beside the paper's numbers.

One source model (trained once, or loaded from the model cache), one AdapTable fitted once on
the source data and ``reset()`` before each stream; every scenario's stream is fed in batches of
64 in its fixed order. Macro-F1 is computed over the whole stream, as the paper does.

Usage (HELOC, MLP, seed 0; the paper's numbers from its results table)::

    ADAPTABLE_DATA_DIR=/path/to/data ADAPTABLE_CACHE_DIR=.cache/models \\
        python benchmarks/shift_scenarios.py --dataset heloc --model mlp --seed 0 \\
        --paper-results /path/to/paper_results.csv

    python benchmarks/shift_scenarios.py --smoke     # synthetic data, a few calibrator epochs

Prints one row per scenario: stream facts (rows, share of class 1 or the majority class, the
scenario's chosen column / dropped columns), our Source and AdapTable macro-F1 (%), and the
paper's Source / AdapTable macro-F1 (mean +- s.e. over its three seeds) where it reports them.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sklearn.metrics import f1_score

from adaptable import datasets, shifts

#: the paper's results table names each scenario like this (tables "main", "corruption",
#: "label_shift"; model "MLP"; methods "Source" and "AdapTable"; metric "F1")
PAPER_TABLE = {
    "natural": ("main", "natural"),
    "gaussian": ("corruption", "Gaussian"),
    "uniform": ("corruption", "Uniform"),
    "random_drop": ("corruption", "Random Drop"),
    "column_drop": ("corruption", "Column Drop"),
    "numerical": ("corruption", "Numerical"),
    "categorical": ("corruption", "Categorical"),
    "class_imbalance": ("label_shift", "Class Imbalance"),
    "temporal": ("label_shift", "Temporal Correlation"),
}
PAPER_DATASET = {"heloc": "HELOC", "voting": "Voting", "childhood_lead": "Childhood Lead"}
PAPER_MODEL = {"mlp": "MLP", "resnet": "ResNet", "autoint": "AutoInt", "ft_transformer": "FT-Transformer"}  # fmt: skip


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="heloc", help="a datasets.load() name")
    parser.add_argument("--model", default="mlp", help="a models.train() name")
    parser.add_argument("--seed", type=int, default=0, help="model, calibrator and stream seed")
    parser.add_argument(
        "--scenarios",
        nargs="+",
        default=shifts.names(),
        choices=shifts.names(),
        help="scenarios to run (default: all, natural first)",
    )
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument(
        "--paper-results",
        default=os.environ.get("ADAPTABLE_PAPER_RESULTS"),
        help="the paper's results CSV (default: $ADAPTABLE_PAPER_RESULTS; omitted -> no column)",
    )
    parser.add_argument(
        "--cache-dir",
        default=os.environ.get("ADAPTABLE_CACHE_DIR"),
        help="source-model cache (default: $ADAPTABLE_CACHE_DIR, else the models' default)",
    )
    parser.add_argument(
        "--calibrator-epochs",
        type=int,
        default=None,
        help="override AdapTable's post-training epochs (default: the method's own, 50)",
    )
    parser.add_argument(
        "--imbalance-convention",
        choices=["paper", "authors"],
        default="paper",
        help="class_imbalance weights: the paper's formula (default) or the authors' code",
    )
    parser.add_argument(
        "--temporal-floor",
        type=float,
        default=None,
        help="temporal scenario's floor eta (default: the paper's 1e-6)",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="synthetic dataset, 2 calibrator epochs, two scenarios: checks the plumbing only",
    )
    return parser.parse_args(argv)


def load_paper(path: str | None, dataset: str, model: str) -> dict[tuple[str, str], str]:
    """``{(scenario, method): "mean +- se"}`` for this dataset and model, from the paper's CSV."""
    if not path:
        return {}
    wanted_dataset = PAPER_DATASET.get(dataset)
    wanted_model = PAPER_MODEL.get(model)
    out: dict[tuple[str, str], str] = {}
    with Path(path).open(newline="") as handle:
        for row in csv.DictReader(handle):
            if row["dataset"] != wanted_dataset or row["model"] != wanted_model:
                continue
            if row["metric"] != "F1" or row["method"] not in ("Source", "AdapTable"):
                continue
            for scenario, (table, shift) in PAPER_TABLE.items():
                if row["table"] == table and row["shift"] == shift:
                    out[(scenario, row["method"])] = (
                        f"{float(row['mean']):.1f}+-{float(row['se']):.1f}"
                    )
    return out


def stream_predictions(method: Any, stream: shifts.Stream, batch_size: int) -> np.ndarray:
    """Predicted classes for the whole stream, batch by batch in stream order."""
    return np.concatenate([method.predict(X) for X, _ in stream.batches(batch_size)])


class SourceOnly:
    """No adaptation: the source model's argmax (what the paper's "Source" rows report)."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def predict(self, X: Any) -> np.ndarray:
        return np.asarray(self.model.predict_proba(X)).argmax(axis=1)


def scenario_options(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """The non-default scenario options asked for on the command line."""
    if name == "class_imbalance":
        return {"convention": args.imbalance_convention}
    if name == "temporal" and args.temporal_floor is not None:
        return {"floor": args.temporal_floor}
    return {}


def describe(stream: shifts.Stream) -> str:
    """A short note on what the scenario did, for the table."""
    info = stream.info
    if "column" in info:
        return f"column={info['column']} eff.rows={info['effective_rows']:.0f}"
    if "dropped_columns" in info:
        return f"dropped={len(info['dropped_columns'])}"
    if "label_switches" in info:
        return f"label switches={info['label_switches']}"
    if "class_weights" in info:
        return "weights=" + "/".join(f"{w:g}" for w in info["class_weights"])
    if "replaced_fraction" in info:
        return f"replaced={info['replaced_fraction']:.3f}"
    return ""


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(1)
    from adaptable import AdapTable, models

    if args.smoke:
        dataset = datasets.make_shift_dataset(seed=args.seed)
        args.scenarios = ["natural", "numerical"]
        args.calibrator_epochs = args.calibrator_epochs or 2
    else:
        dataset = datasets.load(args.dataset, seed=args.seed)
    started = time.perf_counter()
    model = models.train(args.model, dataset, seed=args.seed, cache_dir=args.cache_dir, quiet=True)
    print(f"source model {args.model} on {dataset.name}: {time.perf_counter() - started:.1f}s")

    options: dict[str, Any] = {"random_state": args.seed}
    if args.calibrator_epochs is not None:
        options["epochs"] = args.calibrator_epochs
    started = time.perf_counter()
    adaptable = AdapTable(**options).fit(
        model, dataset.train.X, dataset.train.y, dataset.valid.X, dataset.valid.y
    )
    print(f"AdapTable post-training: {time.perf_counter() - started:.1f}s")

    paper = load_paper(args.paper_results, args.dataset, args.model)
    header = (
        f"{'scenario':<16}{'rows':>7}{'pos%':>7}  {'note':<46}{'Source':>8}{'AdapTable':>10}"
        f"{'paper Src':>12}{'paper AdapT':>13}"
    )
    print(header)
    print("-" * len(header))
    for name in args.scenarios:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UserWarning)
            stream = shifts.apply(name, dataset, args.seed, **scenario_options(name, args))
        adaptable.reset()
        scores = {}
        for label, method in (("Source", SourceOnly(model)), ("AdapTable", adaptable)):
            predicted = stream_predictions(method, stream, args.batch_size)
            # sklearn's macro-F1 over the classes present in labels or predictions, as the
            # authors compute it; on a one-class temporal stream a wrong class scores 0.
            scores[label] = 100 * f1_score(stream.y, predicted, average="macro", zero_division=0)
        share = 100 * np.mean(stream.y == 1) if dataset.n_classes == 2 else np.nan
        print(
            f"{name:<16}{len(stream):>7}{share:>7.1f}  {describe(stream):<46}"
            f"{scores['Source']:>8.1f}{scores['AdapTable']:>10.1f}"
            f"{paper.get((name, 'Source'), 'n/a'):>12}{paper.get((name, 'AdapTable'), 'n/a'):>13}"
        )
        for warning in caught:
            print(f"    warning: {warning.message}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Source MLP recipes on HELOC: the source model and ``AdapTable(preset="paper")``, per seed.

For each training recipe (``adaptable.models.RECIPES``: ``default``, ``authors``) and
each seed, the MLP source model is trained (or loaded from the cache), then scored on the seed's
test stream (``adaptable.shifts.apply(scenario, dataset, seed)``, batches of 64 rows), alone and
under ``AdapTable(preset="paper", random_state=seed)``, exactly as ``experiments.experiment`` runs
one experiment. Labels are used only to score the stream. Prints one table (macro-F1 and balanced
accuracy in percent), then the mean and standard error over the seeds.

``--spread-seeds`` adds the source model's macro-F1 over more seeds (cheap: no adapter), to show
how much of a difference between two recipes is the draw of the seed.

Usage:
    ADAPTABLE_DATA_DIR=/path/to/data python benchmarks/research/heloc_source_recipe.py \\
        [--seeds 0 1 2] [--recipes default authors] [--scenario natural] \\
        [--stream-option convention=authors] [--spread-seeds 10] [--cache-dir DIR]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import torch
from sklearn.metrics import balanced_accuracy_score, f1_score

from adaptable import AdapTable, datasets, models, shifts


def scores(y: np.ndarray, pred: np.ndarray) -> tuple[float, float]:
    """(macro-F1, balanced accuracy) in percent."""
    return 100 * f1_score(y, pred, average="macro"), 100 * balanced_accuracy_score(y, pred)


def parse_option(text: str) -> tuple[str, Any]:
    """``key=value`` with the value read as an int, a float or else a string."""
    key, _, raw = text.partition("=")
    for cast in (int, float):
        try:
            return key, cast(raw)
        except ValueError:
            pass
    return key, raw


def run(
    ds: datasets.ShiftDataset,
    recipe: str,
    seed: int,
    scenario: str,
    stream_options: dict[str, Any],
    cache_dir: str | None,
    adapt: bool = True,
) -> dict[str, Any]:
    """Source (and AdapTable paper preset) scores of one (recipe, seed)."""
    model = models.train("mlp", ds, seed=seed, cache_dir=cache_dir, recipe=recipe)
    stream = shifts.apply(scenario, ds, seed=seed, **stream_options)
    batches = list(stream.batches(64))
    y_all = np.concatenate([np.asarray(y, dtype=np.int64) for _, y in batches])
    out: dict[str, Any] = {
        "best_epoch": model.history.best_epoch + 1,
        "epochs": model.history.epochs,
        "share_1": float(np.mean(y_all == 1)),
    }
    source = np.concatenate([model.predict_proba(X).argmax(axis=1) for X, _ in batches])
    out["Source"] = scores(y_all, source)
    out["source_positive_rate"] = float(np.mean(source == 1))
    if adapt:
        method = AdapTable(preset="paper", random_state=seed)
        start = time.perf_counter()
        method.fit(model, ds.train.X, ds.train.y, ds.valid.X, ds.valid.y)
        pred = np.concatenate([method.predict_proba(X).argmax(axis=1) for X, _ in batches])
        out["AdapTable (paper preset)"] = scores(y_all, pred)
        out["seconds"] = time.perf_counter() - start
    return out


def mean_se(values: list[float]) -> str:
    """``mean ± standard error`` of a list (standard error 0 for one value)."""
    array = np.asarray(values, dtype=float)
    se = array.std(ddof=1) / np.sqrt(len(array)) if len(array) > 1 else 0.0
    return f"{array.mean():.1f} ± {se:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--recipes", nargs="+", default=list(models.RECIPES))
    parser.add_argument("--scenario", default="natural", choices=shifts.names())
    parser.add_argument("--stream-option", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--spread-seeds", type=int, default=0, help="source-only seeds 0..N-1")
    parser.add_argument(
        "--spread-adapt", action="store_true", help="the spread seeds with AdapTable too (slow)"
    )
    parser.add_argument("--dataset", default="heloc")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--cache-dir", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    ds = datasets.load(args.dataset, data_dir=args.data_dir)
    options = dict(parse_option(text) for text in args.stream_option)
    print(f"{args.dataset}, MLP, scenario {args.scenario} {options or ''}; F1 / bAcc in percent")
    print(
        "| recipe | seed | best epoch (ran) | stream share of class 1 | source positive rate "
        "| Source F1 / bAcc | AdapTable paper preset F1 / bAcc |"
    )
    print("|---|---|---|---|---|---|---|")
    summary: dict[str, dict[str, list[float]]] = {}
    for recipe in args.recipes:
        for seed in args.seeds:
            r = run(ds, recipe, seed, args.scenario, options, args.cache_dir)
            src, ada = r["Source"], r["AdapTable (paper preset)"]
            print(
                f"| {recipe} | {seed} | {r['best_epoch']} ({r['epochs']}) | {r['share_1']:.3f} "
                f"| {r['source_positive_rate']:.3f} | {src[0]:.1f} / {src[1]:.1f} "
                f"| {ada[0]:.1f} / {ada[1]:.1f} |"
            )
            cell = summary.setdefault(recipe, {"src": [], "ada": []})
            cell["src"].append(src[0])
            cell["ada"].append(ada[0])
    print("\n| recipe | Source F1 | AdapTable paper preset F1 |\n|---|---|---|")
    for recipe, cell in summary.items():
        print(f"| {recipe} | {mean_se(cell['src'])} | {mean_se(cell['ada'])} |")
    if args.spread_seeds:
        rows = ["Source", "AdapTable (paper preset)"] if args.spread_adapt else ["Source"]
        print(f"\nMacro-F1 over seeds 0..{args.spread_seeds - 1}:")
        for recipe in args.recipes:
            runs = [
                run(ds, recipe, s, args.scenario, options, args.cache_dir, args.spread_adapt)
                for s in range(args.spread_seeds)
            ]
            for row in rows:
                f1s = [r[row][0] for r in runs]
                print(
                    f"  {recipe:8s} {row:25s} {mean_se(f1s)}  min {min(f1s):.1f}  "
                    f"max {max(f1s):.1f}  [{' '.join(f'{f:.1f}' for f in f1s)}]"
                )


if __name__ == "__main__":
    main()

"""What late labels can buy at most by choosing among the fixed rules: an oracle ceiling.

The feedback table's reference row, "best fixed rule", is max(source, balanced, oracle prior)
per case, applied to every row of the stream from the first batch, chosen with the stream's
labels in hindsight (and the oracle prior uses the true target label distribution). An adapter
that learns from late labels cannot act on them before they arrive: until the first label is
delivered it is the unlabelled default. This script measures the best any such adapter could do
by rule choice alone:

- ``switch at first label``: the unlabelled default's predictions for the batches before the
  first label arrives (``delay + 1`` batches, and later if the first batches reveal no row),
  then the case's best fixed rule for every later batch, chosen by an oracle;
- ``switch at k labels``: the same, switching once ``k`` labels have arrived (``--labels``).

Every row is scored as the runner scores it (macro-F1 over the whole stream, mean over seeds
first, gain over the unadapted model in points). A ceiling below the best fixed rule means that
no rule choice, however well informed, reaches that reference: only a correction that beats
every fixed rule on the labelled part of the stream could.

Usage::

    python benchmarks/feedback_ceiling.py --roles development --models logreg
    python benchmarks/feedback_ceiling.py --roles confirmation holdout --models logreg \\
        --max-rows 15000 --workers 2
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from adaptable.datasets.benchmark_cases import SEALED_ROLES, by_role
from adaptable.experiments.benchmark import role_cases
from adaptable.experiments.metrics import macro_f1
from adaptable.experiments.runner import (
    RunContext,
    fit_experiment,
    predict_stream,
    shifted_stream,
)
from adaptable.experiments.spec import ExperimentSpec

RULES = ("source", "balanced", "oracle_prior")
#: streams at least this many batches long, as in the feedback table
LONG_STREAM = 20


def stream_predictions(task: tuple[str, str, str, int]) -> dict[str, Any]:
    """Labels, batch sizes and every method's predicted class of one (dataset, scenario,
    model, seed) cell, in stream order."""
    dataset, scenario, model, seed = task
    context = RunContext()
    out: dict[str, Any] = {}
    for method in ("adaptable", *RULES):
        spec = ExperimentSpec(dataset, scenario, model, method, seed)
        fitted = fit_experiment(spec, context)
        stream = shifted_stream(fitted, scenario, context)
        labels, predicted, sizes = [], [], []
        for batch in predict_stream(fitted, stream):
            labels.append(batch.y)
            predicted.append(batch.proba.argmax(axis=1))
            sizes.append(len(batch.y))
        out[method] = np.concatenate(predicted)
        out["y"], out["sizes"] = np.concatenate(labels), np.asarray(sizes)
    return out


def arrivals(sizes: np.ndarray, share: float, delay: int, seed: int) -> np.ndarray:
    """Labels delivered before each batch is predicted, as the runner's protocol draws them
    (the same generator, so the same rows)."""
    rng = np.random.default_rng([seed, 31])
    revealed = np.array([int((rng.random(n) < share).sum()) for n in sizes])
    delivered = np.zeros(len(sizes), dtype=int)
    for b in range(len(sizes)):
        delivered[b] = revealed[: max(0, b - delay)].sum()
    return delivered


def switched(cell: dict[str, Any], rule: str, first_batch: int) -> np.ndarray:
    """The default's predictions before ``first_batch``, ``rule``'s from it on."""
    start = int(cell["sizes"][:first_batch].sum())
    return np.concatenate([cell["adaptable"][:start], cell[rule][start:]])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--roles", nargs="+", default=["development"])
    parser.add_argument("--models", nargs="+", default=["logreg"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--share", type=float, default=0.05)
    parser.add_argument("--delay", type=int, default=10)
    parser.add_argument("--labels", nargs="+", type=int, default=[10, 40])
    parser.add_argument("--max-rows", type=int, default=None, help="skip larger test sets")
    parser.add_argument("--only", nargs="*", default=None, help="only these cases (dataset names)")
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    if set(args.roles) & set(SEALED_ROLES):
        parser.error(f"the sealed roles {SEALED_ROLES} are kept for judging a design")
    started = time.perf_counter()
    cells = [
        (role, case.name)
        for role in args.roles
        for case in by_role(role)
        if (case.name, "natural") in role_cases([case])
        and (args.max_rows is None or case.sizes[3] <= args.max_rows)
        and (args.only is None or case.name in args.only)
    ]
    tasks = [(d, "natural", m, s) for _, d in cells for m in args.models for s in args.seeds]
    if args.workers > 1:
        with ProcessPoolExecutor(args.workers) as pool:
            results = list(pool.map(stream_predictions, tasks))
    else:
        results = [stream_predictions(t) for t in tasks]
    by_case: dict[tuple[str, str, str], list[tuple[int, dict]]] = defaultdict(list)
    role_of = dict((d, r) for r, d in cells)
    for (dataset, _, model, seed), cell in zip(tasks, results, strict=True):
        by_case[(role_of[dataset], dataset, model)].append((seed, cell))
    header = ["best fixed rule", "switch at first label"] + [
        f"switch at {k} labels" for k in args.labels
    ]
    rows_out = []
    summary: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for (role, dataset, model), seeded in sorted(by_case.items()):
        base = np.mean([100 * macro_f1(c["y"], c["source"]) for _, c in seeded])
        means = {r: np.mean([100 * macro_f1(c["y"], c[r]) for _, c in seeded]) for r in RULES}
        best = max(RULES, key=lambda r: means[r])
        values = {"default": np.mean([100 * macro_f1(c["y"], c["adaptable"]) for _, c in seeded])}
        values["best fixed rule"] = means[best]
        thresholds = {"switch at first label": 1} | {
            f"switch at {k} labels": k for k in args.labels
        }
        for name, k in thresholds.items():
            scores = []
            for seed, c in seeded:
                delivered = arrivals(c["sizes"], args.share, args.delay, seed)
                reached = np.flatnonzero(delivered >= k)
                first = int(reached[0]) if reached.size else len(c["sizes"])
                scores.append(100 * macro_f1(c["y"], switched(c, best, first)))
            values[name] = float(np.mean(scores))
        n_batches = len(seeded[0][1]["sizes"])
        gains = {k: v - base for k, v in values.items()}
        rows_out.append((role, dataset, model, n_batches, best, gains))
        if n_batches >= LONG_STREAM:
            for k, v in gains.items():
                summary[role][k].append(v)
    columns = ["default", *header]
    print(
        f"share {args.share:g}, delay {args.delay} batches, seeds {args.seeds}; macro-F1 gain "
        "over the unadapted model, points (mean over seeds)\n"
    )
    print("| role | long domain splits | " + " | ".join(columns) + " |")
    print("|---|---|" + "---|" * len(columns))
    for role, by_name in summary.items():
        n = len(by_name["default"])
        cells_text = " | ".join(f"{np.mean(by_name[c]):+.2f}" for c in columns)
        print(f"| {role} | {n} | {cells_text} |")
    print("\n| role | dataset | model | batches | best rule | " + " | ".join(columns) + " |")
    print("|---|---|---|---|---|" + "---|" * len(columns))
    for role, dataset, model, n_batches, best, gains in rows_out:
        cells_text = " | ".join(f"{gains[c]:+.2f}" for c in columns)
        print(f"| {role} | {dataset} | {model} | {n_batches} | {best} | {cells_text} |")
    print(f"\nwall time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()

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

    python benchmarks/research/feedback_ceiling.py --roles development --models logreg
    python benchmarks/research/feedback_ceiling.py --roles confirmation holdout --models logreg \\
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
from adaptable.experiments.components import RunContext
from adaptable.experiments.experiment import fit_experiment, predict_stream, shifted_stream
from adaptable.experiments.metrics import macro_f1
from adaptable.experiments.spec import ExperimentSpec

RULES = ("source", "balanced", "oracle_prior")
#: the methods that take the late labels, run on the same labels (``--labelled``)
LEARNERS = ("adaptable", "labelled_recalibration", "labelled_prior", "labelled_online")
#: streams at least this many batches long, as in the feedback table
LONG_STREAM = 20


def stream_predictions(task: tuple[str, str, str, int, float | None, int]) -> dict[str, Any]:
    """Labels, batch sizes and every method's predicted class of one (dataset, scenario,
    model, seed) cell, in stream order; with a share of labels, also the learners' on those
    labels (keys ``"<method> fed"``)."""
    dataset, scenario, model, seed, share, delay = task
    context = RunContext()
    out: dict[str, Any] = {}
    runs = [(m, m, {}) for m in ("adaptable", *RULES)]
    if share is not None:
        feedback = {"feedback_share": share, "feedback_delay": delay}
        runs += [(f"{m} fed", m, feedback) for m in LEARNERS]
    for key, method, feedback in runs:
        spec = ExperimentSpec(dataset, scenario, model, method, seed, **feedback)
        fitted = fit_experiment(spec, context)
        stream = shifted_stream(fitted, scenario, context)
        labels, predicted, sizes = [], [], []
        for batch in predict_stream(fitted, stream):
            labels.append(batch.y)
            predicted.append(batch.proba.argmax(axis=1))
            sizes.append(len(batch.y))
        out[key] = np.concatenate(predicted)
        out["y"], out["sizes"] = np.concatenate(labels), np.asarray(sizes)
    return out


def arrivals(sizes: np.ndarray, share: float, delay: int, seed: int) -> np.ndarray:
    """Labels delivered before each batch is predicted, as the runner's protocol draws them
    (the same generator, so the same rows)."""
    rng = np.random.default_rng([seed, 31])
    # (one draw per batch, in order: the runner's generator is consumed batch by batch)
    revealed = np.array([int((rng.random(n) < share).sum()) for n in sizes])
    # before batch b: the labels of batches 0 .. b - delay - 1
    so_far = np.concatenate([[0], np.cumsum(revealed)])
    return so_far[np.clip(np.arange(len(sizes)) - delay, 0, None)]


def first_label(cell: dict[str, Any], args: argparse.Namespace, seed: int) -> int:
    """The first batch predicted with at least one label delivered (the stream's length when
    none arrives in time)."""
    reached = np.flatnonzero(arrivals(cell["sizes"], args.share, args.delay, seed) >= 1)
    return int(reached[0]) if reached.size else len(cell["sizes"])


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
    parser.add_argument(
        "--labelled",
        action="store_true",
        help="also run the learners on the labels and score the rows after the first label",
    )
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
    fed = args.share if args.labelled else None
    tasks = [
        (d, "natural", m, s, fed, args.delay)
        for _, d in cells
        for m in args.models
        for s in args.seeds
    ]
    if args.workers > 1:
        with ProcessPoolExecutor(args.workers) as pool:
            results = list(pool.map(stream_predictions, tasks))
    else:
        results = [stream_predictions(t) for t in tasks]
    by_case: dict[tuple[str, str, str], list[tuple[int, dict]]] = defaultdict(list)
    role_of = dict((d, r) for r, d in cells)
    for (dataset, _, model, seed, _, _), cell in zip(tasks, results, strict=True):
        by_case[(role_of[dataset], dataset, model)].append((seed, cell))
    header = ["best fixed rule", "switch at first label"] + [
        f"switch at {k} labels" for k in args.labels
    ]
    fed_keys = [f"{m} fed" for m in LEARNERS]
    phase_names = {"best": "best fixed rule", "adaptable": "default, no labels"} | {
        k: k.replace(" fed", ", labels") for k in fed_keys
    }
    phases: dict[str, dict] = {
        p: defaultdict(lambda: defaultdict(list)) for p in ("before", "after")
    }
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
        if args.labelled:
            for method in LEARNERS:
                key = f"{method} fed"
                values[key] = np.mean([100 * macro_f1(c["y"], c[key]) for _, c in seeded])
            for phase in ("before", "after") if n_batches >= LONG_STREAM else ():
                parts = {m: [] for m in ("source", best, "adaptable", *fed_keys)}
                for seed, c in seeded:
                    cut = int(c["sizes"][: first_label(c, args, seed)].sum())
                    rows = slice(None, cut) if phase == "before" else slice(cut, None)
                    if len(c["y"][rows]) == 0:
                        continue
                    for m in parts:
                        parts[m].append(100 * macro_f1(c["y"][rows], c[m][rows]))
                if parts["source"]:
                    origin = np.mean(parts["source"])
                    for m, label in phase_names.items():
                        phases[phase][role][label].append(
                            np.mean(parts[best if m == "best" else m]) - origin
                        )
        gains = {k: v - base for k, v in values.items()}
        rows_out.append((role, dataset, model, n_batches, best, gains))
        if n_batches >= LONG_STREAM:
            for k, v in gains.items():
                summary[role][k].append(v)
    columns = ["default", *header] + (fed_keys if args.labelled else [])
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
    if args.labelled:
        names = list(phase_names.values())
        print(
            "\nThe long domain splits cut at the first batch predicted with a label delivered: "
            "macro-F1 gain over the unadapted model on the rows before / after it\n"
        )
        print("| role | phase | cases | " + " | ".join(names) + " |")
        print("|---|---|---|" + "---|" * len(names))
        for phase, per_role in phases.items():
            for role, by_name in per_role.items():
                n = len(by_name[names[0]])
                text = " | ".join(f"{np.mean(by_name[c]):+.2f}" for c in names)
                print(f"| {role} | {phase} | {n} | {text} |")
    print(f"\nwall time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()

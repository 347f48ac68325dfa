"""How often ``AdapTable.drift_summary``'s verdict is right on the benchmark's streams. Prints
tables; asserts nothing.

Each cell of ``--roles`` (domain splits and pure label shifts, reported apart), source model
``--model``, seeds ``--seeds``, is adapted by the default with each share of ``--shares`` of its
rows' labels arriving ``--delay`` batches late (the runner's protocol; share 0: no labels).
After every batch (every one of the first 100, then fewer: :func:`looked_at`) the summary of
the stream so far is read, and its verdict is set beside the truth at that batch: the realised
fall of the adapter's objective over the rows so far, below the summary's own reference (the
unadapted model's objective on the held-out source rows), against the tolerance. The truth
reads every row's label, which the summary never sees.

Printed per role, kind and share:

- at the stream's end: streams truly degraded (fall > tolerance) and truly holding; how many
  of each the verdict calls ``degraded`` / ``holding`` / ``undetermined`` / ``unverified``;
- over every look: the share of looks at a truly holding stream that say ``degraded`` (false
  alarms), of looks at a truly degraded one that say ``holding`` (missed falls), and the share
  of truly holding streams with at least one false alarm (many looks, one stream);
- how often the realised objective lies within two of the summary's deviations of its
  estimate at the end (where it has one).

Usage:
    python benchmarks/research/drift_verdicts.py --data-dir DIR --cache-dir DIR
        [--roles development generality confirmation holdout] [--model logreg]
        [--seeds 0] [--shares 0 0.05 0.2] [--delay 10] [--tolerance 0.05] [--deviations 2]
        [--only DATASET ...]
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from typing import Any

import numpy as np
from report_estimate import adapted_streams

from adaptable.core.decision.rules import confusion, score

VERDICT_NAMES = ("degraded", "holding", "undetermined", "unverified")


def looked_at(batch: int) -> bool:
    """The batches (0-based) after which the summary is read: every one of the first 100,
    then every 5th to 500, then every 20th (the stream's end is read too)."""
    return batch < 100 or (batch < 500 and batch % 5 == 0) or batch % 20 == 0


class Looks:
    """The looks at one stream: after each batch :func:`looked_at` names, the verdict and the
    truth (verdict, truly degraded, estimate, its deviation, realised objective)."""

    def __init__(self, tolerance: float, deviations: float) -> None:
        self.tolerance, self.deviations = tolerance, deviations
        self.matrix: np.ndarray | None = None  # the adapter's confusion over the rows so far
        self.batches = 0
        self.rows: list[tuple[str, bool, float, float, float]] = []

    def __call__(self, fitted: Any, batch: Any) -> None:
        n_classes = int(fitted.dataset.n_classes)
        counts = confusion(batch.y, batch.proba.argmax(axis=1), n_classes)
        self.matrix = counts if self.matrix is None else self.matrix + counts
        self.batches += 1
        if looked_at(self.batches - 1):
            self.look(fitted)

    def look(self, fitted: Any) -> None:
        summary = fitted.method.drift_summary(tolerance=self.tolerance, deviations=self.deviations)
        realised = float(score(self.matrix, summary.objective))
        fall = summary.reference - realised
        self.rows.append(
            (summary.verdict, fall > self.tolerance, summary.estimate, summary.estimate_sd,
             realised)
        )  # fmt: skip

    def next_stream(self) -> list[tuple[str, bool, float, float, float]]:
        """This stream's looks; the next stream starts afresh."""
        rows, self.rows, self.matrix, self.batches = self.rows, [], None, 0
        return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument(
        "--roles", nargs="+", default=["development", "generality", "confirmation", "holdout"]
    )
    parser.add_argument("--model", default="logreg")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--shares", nargs="+", type=float, default=[0.0, 0.05, 0.2])
    parser.add_argument("--delay", type=int, default=10)
    parser.add_argument("--tolerance", type=float, default=0.05)
    parser.add_argument("--deviations", type=float, default=2.0)
    parser.add_argument("--only", nargs="+", default=None, help="only these datasets")
    args = parser.parse_args()
    args.domain = True
    started = time.perf_counter()
    streams: dict[tuple[str, str, float], list[list[tuple]]] = defaultdict(list)
    print("| role | dataset | scenario | seed | share | batches | end: verdict | estimate "
          "(kind) | realised | reference | looks saying degraded / holding |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for share in args.shares:
        options = {"feedback_share": share, "feedback_delay": args.delay} if share else {}
        looks = Looks(args.tolerance, args.deviations)

        def each_batch(fitted: Any, batch: Any, looks: Looks = looks) -> None:
            looks(fitted, batch)

        for run in adapted_streams(args, each_batch, **options):
            if not looked_at(run.batches - 1):
                looks.look(run.fitted)  # the stream's end
            rows = looks.next_stream()
            streams[(run.role, run.kind, share)].append(rows)
            verdict, _, estimate, sd, realised = rows[-1]
            summary = run.fitted.method.drift_summary(
                tolerance=args.tolerance, deviations=args.deviations
            )
            said = [v for v, *_ in rows]
            print(
                f"| {run.role} | {run.name} | {run.scenario} | {run.seed} | {share:g} | "
                f"{run.batches} | {verdict} | {100 * estimate:.1f} ± {100 * sd:.1f} "
                f"({summary.estimate_kind}) | {100 * realised:.1f} | "
                f"{100 * summary.reference:.1f} | {said.count('degraded')} / "
                f"{said.count('holding')} of {len(said)} |",
                flush=True,
            )
    print()
    print_summary(streams)
    print(f"\nwall time {time.perf_counter() - started:.0f} s")


def print_summary(streams: dict[tuple[str, str, float], list[list[tuple]]]) -> None:
    print("| role | kind | share | streams: truly degraded / holding at the end | end verdicts "
          "of the degraded: degraded / holding / undetermined / unverified | of the holding | "
          "false alarms per look (holding looks) | missed falls per look | holding streams "
          "with a false alarm | realised within 2 sd at the end |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (role, kind, share), runs in streams.items():
        ends = [r[-1] for r in runs]
        degraded = [e for e in ends if e[1]]
        holding = [e for e in ends if not e[1]]
        looks = [look for r in runs for look in r]
        holding_looks = [v for v, truth, *_ in looks if not truth]
        degraded_looks = [v for v, truth, *_ in looks if truth]
        always_holding = [r for r in runs if not any(truth for _, truth, *_ in r)]
        alarmed = sum(any(v == "degraded" for v, *_ in r) for r in always_holding)
        covered = [abs(e[2] - e[4]) <= 2 * e[3] for e in ends if np.isfinite(e[3])]

        def counts(chosen: list[tuple]) -> str:
            return " / ".join(str(sum(e[0] == v for e in chosen)) for v in VERDICT_NAMES)

        def rate(values: list[str], verdict: str) -> str:
            return f"{values.count(verdict) / len(values):.1%}" if values else "-"

        print(
            f"| {role} | {kind} | {share:g} | {len(degraded)} / {len(holding)} | "
            f"{counts(degraded)} | {counts(holding)} | {rate(holding_looks, 'degraded')} | "
            f"{rate(degraded_looks, 'holding')} | {alarmed} of {len(always_holding)} | "
            f"{sum(covered)} of {len(covered)} |"
        )


if __name__ == "__main__":
    main()

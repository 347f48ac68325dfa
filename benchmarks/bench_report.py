"""What reading the drift report costs on a long stream: a synthetic log of ``--batches``
batches of 64 rows per class count, with held-out rows (the calibration-free columns), labels
on ``--share`` of the rows (the realised and label-corrected columns) and a rule that changes
every batch. Prints seconds per ``DriftLog.frame()``; asserts nothing.

Usage:
    python benchmarks/bench_report.py [--batches 20000] [--classes 2 3 10] [--share 0.05]
"""

from __future__ import annotations

import argparse

import numpy as np
from _timing import timed  # the benchmarks' folder is first on sys.path

from adaptable.core.report.drift_log import DriftLog
from adaptable.framework.probability import normalize


def synthetic_log(n_classes: int, batches: int, share: float, seed: int = 0) -> DriftLog:
    rng = np.random.default_rng(seed)
    log = DriftLog(n_classes=n_classes, objective="macro_f1")
    held = rng.dirichlet(np.full(n_classes, 0.5), size=500)
    log.use_heldout(np.log(held), held.argmax(axis=1))
    for _ in range(batches):
        posteriors = rng.dirichlet(np.ones(n_classes), size=64)
        weights = 1.0 + rng.random(n_classes)  # a rule of its own each batch
        output = normalize(posteriors * weights)
        predictions = output.argmax(axis=1)
        first = log.n_rows
        log.record(
            rows=64,
            predictions=predictions,
            rule="balanced",
            target_prior=np.full(n_classes, 1.0 / n_classes),
            posteriors=posteriors,
            source_proba=posteriors,
            output=output,
        )
        chosen = np.flatnonzero(rng.random(64) < share)
        if len(chosen):
            labels = rng.integers(0, n_classes, len(chosen))
            log.learn(first + chosen, labels, posteriors[chosen].argmax(axis=1))
    return log


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", type=int, default=20000)
    parser.add_argument("--classes", type=int, nargs="+", default=[2, 3, 10])
    parser.add_argument("--share", type=float, default=0.05)
    args = parser.parse_args()
    print("| classes | batches | frame() seconds (min of 3, after one read) |\n|---|---|---|")
    for n_classes in args.classes:
        log = synthetic_log(n_classes, args.batches, args.share)
        # (timed's warm-up read settles the pending records, as any earlier read would)
        _, least = timed(log.frame, 3)
        print(f"| {n_classes} | {args.batches} | {least:.2f} |", flush=True)


if __name__ == "__main__":
    main()

"""The one timing helper of the benchmark scripts (imported as ``_timing``: a script's own
folder is first on ``sys.path``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

#: the clock timings read: wall time, or this process's CPU time (on a machine shared with
#: other work, CPU time of single-threaded code is what its wall time would be on a quiet one,
#: without the waits for a core)
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}


def timed(function: Callable[[], Any], repeats: int, clock: str = "wall") -> tuple[float, float]:
    """(median, min) seconds of ``function`` over ``repeats`` runs, after one warm-up run, on
    ``clock`` (a key of :data:`CLOCKS`).

    Both are printed because the machine may be shared: the minimum is the least disturbed run,
    the median the typical one.
    """
    now = CLOCKS[clock]
    function()
    times = []
    for _ in range(repeats):
        start = now()
        function()
        times.append(now() - start)
    return float(np.median(times)), float(np.min(times))


def timed_pair(
    baseline: Callable[[], Any],
    candidate: Callable[[], Any],
    repeats: int,
    clock: str = "wall",
) -> dict[str, float]:
    """Time two functions in alternation and compare each candidate run with the baseline run
    beside it.

    A ratio of two medians taken minutes apart mixes in whatever else the machine did in
    between; alternating the two (baseline, candidate, baseline, ...) exposes both to the same
    disturbances, and the median of the per-pair ratios is what one run of each costs relative
    to the other. Returns the median and minimum seconds of each, and the medians of the
    per-pair ratio (candidate / baseline) and difference (candidate - baseline, seconds).
    """
    now = CLOCKS[clock]
    baseline()
    candidate()
    base, cand = [], []
    for _ in range(repeats):
        for function, times in ((baseline, base), (candidate, cand)):
            start = now()
            function()
            times.append(now() - start)
    b, c = np.array(base), np.array(cand)
    return {
        "baseline_median": float(np.median(b)),
        "baseline_min": float(b.min()),
        "candidate_median": float(np.median(c)),
        "candidate_min": float(c.min()),
        "ratio": float(np.median(c / b)),
        "difference": float(np.median(c - b)),
    }

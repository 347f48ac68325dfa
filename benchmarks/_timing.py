"""The one timing helper of the benchmark scripts (imported as ``_timing``: a script's own
folder is first on ``sys.path``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np


def timed(function: Callable[[], Any], repeats: int) -> tuple[float, float]:
    """(median, min) wall seconds of ``function`` over ``repeats`` runs, after one warm-up run.

    Both are printed because the machine may be shared: the minimum is the least disturbed run,
    the median the typical one.
    """
    function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return float(np.median(times)), float(np.min(times))

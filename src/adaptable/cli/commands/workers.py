"""Where a command's experiments run: the run context and the executor its options ask for."""

from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Any

from adaptable.experiments.components import Components, RunContext


def context_and_executor(
    args: argparse.Namespace, components: Components
) -> tuple[RunContext, Any]:
    """The run context of ``--data-dir``, ``--cache-dir``, ``--threads`` and ``--device``, and
    the executor of ``--executor``, ``--workers`` and ``--ray-address`` (the caller closes it).
    Local workers past the CPUs this process may use are cut to them, with a line on standard
    error."""
    from adaptable.experiments.executors import make_executor

    context = RunContext(
        data_dir=args.data_dir, cache_dir=args.cache_dir, components=components,
        threads=args.threads,
        device=args.device,
    )  # fmt: skip
    workers = args.workers
    cpus = _usable_cpus()
    if args.executor == "local" and workers is not None and workers > cpus:
        # each worker process loads torch and its data: past the CPUs they only compete
        plural = "s" if cpus != 1 else ""
        print(f"adaptable {args.command}: --workers {workers}: this machine lets the command "
              f"use {cpus} CPU{plural}; running {cpus} worker{plural}", file=sys.stderr)  # fmt: skip
        workers = cpus
    executor = make_executor(args.executor, workers=workers, address=args.ray_address)
    return context, executor


def _usable_cpus(quota_file: str = "/sys/fs/cgroup/cpu.max") -> int:
    """The CPUs this process may run on: its affinity where the system has one, and no more
    than a container's CPU quota (cgroup v2 ``cpu.max``, e.g. ``docker --cpus 2``)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity on this system (macOS, Windows)
        cpus = os.cpu_count() or 1
    try:
        with open(quota_file) as quota:
            limit, period = quota.read().split()[:2]
        if limit != "max":
            cpus = min(cpus, math.ceil(int(limit) / int(period)))
    except (OSError, ValueError):  # no cgroup v2 quota here
        pass
    return max(1, cpus)

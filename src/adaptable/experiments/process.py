"""Process-wide settings an experiment needs: thread limits and seeding.

Kept apart from the runner and the executors so that both can set up a worker process without
importing each other.

>>> seed_everything(3); import random; a = random.random(); seed_everything(3)
>>> a == random.random()
True
"""

from __future__ import annotations

import importlib.util
import os
import random
import signal
import sys
import threading
import time
from typing import Any

import numpy as np


def seed_everything(seed: int) -> None:
    """Seed Python's, numpy's and (once imported) torch's global generators."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    # torch is seeded only once something has imported it (every torch model and method has),
    # so that runs of non-torch models do not pay for importing it.
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)


def seed_method(method: Any, seed: int, options: dict[str, Any]) -> None:
    """Give a method with a ``random_state`` parameter the experiment's seed, unless the
    options set one: a method left at ``random_state=None`` draws fresh entropy (AdapTable's
    reservoir, bootstrap and null draws), and two runs of one spec would differ."""
    if "random_state" in options:
        return
    get_params = getattr(method, "get_params", None)
    if callable(get_params) and get_params(deep=False).get("random_state", 0) is None:
        method.set_params(random_state=seed)


def resolved_device(device: str) -> str:
    """The device a run context's ``device`` stands for here: ``"cpu"`` or ``"cuda"``
    (``"auto"``: CUDA where torch finds it, else the CPU; a machine without torch has no CUDA).

    >>> resolved_device("cpu")
    'cpu'
    """
    if device != "auto":
        return device
    if importlib.util.find_spec("torch") is None:
        return "cpu"
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def cuda_problem() -> str | None:
    """Why CUDA cannot be used here, or ``None`` when it can."""
    if importlib.util.find_spec("torch") is None:
        return "CUDA needs torch, which is not installed"
    import torch

    if not torch.cuda.is_available():
        return f"torch {torch.__version__} finds no CUDA device here (torch.cuda.is_available())"
    return None


def limit_threads(threads: int) -> None:
    """Use ``threads`` torch (OpenMP / MKL) threads in this process, before or after torch is
    imported; 1 keeps parallel workers from oversubscribing the cores (0: leave as is)."""
    if not threads:
        return
    torch = sys.modules.get("torch")
    if torch is None:
        # Read by torch (OpenMP / MKL) when it is imported later in this process.
        os.environ["OMP_NUM_THREADS"] = str(threads)
        os.environ["MKL_NUM_THREADS"] = str(threads)
    elif torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


#: how often a worker checks that the process that started it is alive (seconds)
PARENT_POLL_SECONDS = 0.5


def ignore_interrupts() -> None:
    """Ignore Ctrl-C (SIGINT) in this process: for workers, whose parent handles it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def exit_with_parent(parent: int, poll_seconds: float = PARENT_POLL_SECONDS) -> threading.Thread:
    """End this process as soon as ``parent`` (a process id) is no longer its parent.

    A worker whose parent was killed outright (``kill -9``, the out-of-memory killer) would
    otherwise live on, holding its memory and the pool's resource tracker, until its current
    call ends and it finds its call queue broken, or forever while it waits. A daemon thread
    polls ``os.getppid()``: a dead parent's children are handed to another process (init or a
    subreaper), which changes it. Works on every POSIX system; on Windows ``getppid`` keeps
    the dead parent's id, so there the thread never fires (the pool's own broken-pipe check
    remains).

    Args:
        parent: the process id the worker was started by (``os.getpid()`` there).
        poll_seconds: time between checks.

    Returns:
        the watching thread (a daemon: it never keeps the process alive).

    Example:
        >>> exit_with_parent(os.getppid()).daemon
        True
    """

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_seconds)
        os._exit(1)  # no cleanup to run: the results of a dead parent have no reader

    thread = threading.Thread(target=watch, name="exit-with-parent", daemon=True)
    thread.start()
    return thread

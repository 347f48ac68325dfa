"""Process-wide settings an experiment needs: thread limits and seeding.

Kept apart from the runner and the executors so that both can set up a worker process without
importing each other.

>>> seed_everything(3); import random; a = random.random(); seed_everything(3)
>>> a == random.random()
True
"""

from __future__ import annotations

import os
import random
import sys
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

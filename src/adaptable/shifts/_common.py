"""Pieces every scenario shares: input checks, seeded generators, the shuffled test split."""

from __future__ import annotations

from enum import IntEnum
from typing import Any

import numpy as np
import pandas as pd

from adaptable.datasets import ShiftDataset


class Purpose(IntEnum):
    """Independent random streams per seed, so that one scenario's draws never shift another's.

    ``ORDER`` is the same for the natural scenario and every corruption: with one seed they all
    visit the test rows in the same order and differ only by the corruption.
    """

    ORDER = 0
    CORRUPTION = 1
    SAMPLING = 2


def generator(seed: int, purpose: Purpose) -> np.random.Generator:
    """A numpy Generator for ``(seed, purpose)``; the same pair always gives the same draws."""
    return np.random.default_rng([int(seed), int(purpose)])


def check_seed(seed: Any) -> int:
    """Seeds are non-negative integers (numpy's SeedSequence rejects negative ones)."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise TypeError(f"seed must be a non-negative integer; got {seed!r}")
    if seed < 0:
        raise ValueError(f"seed must be a non-negative integer; got {seed}")
    return int(seed)


def check_dataset(dataset: Any) -> ShiftDataset:
    """Fail early, naming what is missing, when given something other than a ShiftDataset."""
    if not isinstance(dataset, ShiftDataset):
        raise TypeError(
            "shift scenarios need an adaptable.datasets.ShiftDataset (from datasets.load or "
            f"datasets.make_shift_dataset); got {type(dataset).__name__}"
        )
    if len(dataset.test.y) == 0:
        raise ValueError(f"dataset {dataset.name!r} has an empty test split; nothing to stream")
    if len(dataset.train.y) == 0:
        raise ValueError(
            f"dataset {dataset.name!r} has an empty train split; the source statistics the "
            "scenarios need come from it"
        )
    return dataset


def check_fraction(name: str, value: float) -> float:
    """A probability-like option (drop rates)."""
    if not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{name} must lie in [0, 1]; got {value}")
    return float(value)


def shuffled_test(dataset: ShiftDataset, seed: int) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """The test split in the seed's random order: ``(X, y, rows)`` with ``rows`` the positions.

    The authors' test loader visits the test split in a seeded random permutation; so do we.
    """
    rows = generator(seed, Purpose.ORDER).permutation(len(dataset.test.y)).astype(np.int64)
    X = dataset.test.X.iloc[rows].reset_index(drop=True)
    return X, dataset.test.y[rows], rows


def source_std(dataset: ShiftDataset, column: str) -> float:
    """sigma_j^s: standard deviation of column ``column`` over the SOURCE (train) split.

    Population standard deviation (ddof = 0), the spread of the empirical marginal as the
    paper defines it; missing values are skipped, and an all-missing column gives 0.
    """
    values = pd.to_numeric(dataset.train.X[column], errors="coerce").to_numpy(dtype=np.float64)
    finite = values[~np.isnan(values)]
    return float(finite.std()) if finite.size else 0.0


def draw_source_marginal(
    dataset: ShiftDataset, column: str, size: int, rng: np.random.Generator
) -> np.ndarray:
    """``size`` i.i.d. draws from the empirical marginal of ``column`` on the SOURCE (train) split.

    Drawing train cells uniformly at random is exactly sampling the empirical marginal, so
    categorical draws are always categories seen in training and integer columns stay integer.
    """
    source = dataset.train.X[column].to_numpy()
    return source[rng.integers(0, len(source), size=size)]

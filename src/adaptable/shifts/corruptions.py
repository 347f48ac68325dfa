"""Common corruptions of the test features (paper appendix "Common Corruptions").

Each function returns the test split in the seed's random order (the same order as the
``natural`` scenario with that seed) with its RAW features corrupted, before any encoding, so
every model sees the same corrupted rows. Source statistics -- sigma_j and the empirical
marginals -- come from the SOURCE data, i.e. the dataset's train split, never from the test rows.

- ``gaussian``: x_ij + z * sigma_j, z ~ N(0, 0.1^2), numerical columns.
- ``uniform``: x_ij + u * sigma_j, u ~ U(-0.1, 0.1), numerical columns.
- ``random_drop``: each cell replaced with probability 0.2 by a draw from its column's source
  marginal.
- ``column_drop``: each column replaced with probability 0.2, for the whole stream, by draws
  from its source marginal.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from adaptable.datasets import ShiftDataset
from adaptable.shifts._common import (
    Purpose,
    check_dataset,
    check_fraction,
    check_seed,
    draw_source_marginal,
    generator,
    shuffled_test,
    source_std,
)
from adaptable.shifts.stream import Stream

#: the paper's noise scale (0.1 standard deviations) and drop probability (0.2)
NOISE_SCALE = 0.1
DROP_RATE = 0.2


def gaussian(dataset: ShiftDataset, seed: int, *, scale: float = NOISE_SCALE) -> Stream:
    """Gaussian noise: every numerical cell gets ``z * sigma_j`` with ``z ~ N(0, scale^2)``.

    Args:
        dataset: the task; its test split is corrupted, sigma_j is measured on its train split.
        seed: seeds the row order and the noise.
        scale: standard deviation of ``z`` in units of sigma_j (paper: 0.1).

    Returns:
        A ``"gaussian"`` Stream. Integer numerical columns become ``float64``; categorical
        columns are untouched; missing values stay missing.
    """
    return _additive_noise("gaussian", dataset, seed, scale, lambda rng, n: rng.normal(0, scale, n))


def uniform(dataset: ShiftDataset, seed: int, *, scale: float = NOISE_SCALE) -> Stream:
    """Uniform noise: every numerical cell gets ``u * sigma_j`` with ``u ~ U(-scale, scale)``.

    Args:
        dataset: the task; its test split is corrupted, sigma_j is measured on its train split.
        seed: seeds the row order and the noise.
        scale: half-width of ``u`` in units of sigma_j (paper: 0.1).

    Returns:
        A ``"uniform"`` Stream; dtypes as for :func:`gaussian`.
    """
    return _additive_noise(
        "uniform", dataset, seed, scale, lambda rng, n: rng.uniform(-scale, scale, n)
    )


def random_drop(dataset: ShiftDataset, seed: int, *, rate: float = DROP_RATE) -> Stream:
    """Random drop: each cell, independently with probability ``rate``, takes a source draw.

    The mask m_ij ~ Bernoulli(rate) covers numerical and categorical columns alike; a masked
    cell is replaced by a draw from its column's empirical marginal on the train split.

    Deliberate difference: the authors' code replaces exactly ``int(D * rate)`` cells per row
    (and exactly ``D - int(D * (1 - rate))`` columns for column drop); we follow the paper's
    independent Bernoulli masks.

    Args:
        dataset: the task.
        seed: seeds the row order, the mask and the replacement draws.
        rate: probability that a cell is replaced (paper: 0.2).

    Returns:
        A ``"random_drop"`` Stream; dtypes unchanged. ``info["replaced_fraction"]`` is the
        realised share of replaced cells.
    """
    dataset, seed = check_dataset(dataset), check_seed(seed)
    rate = check_fraction("rate", rate)
    X, y, rows = shuffled_test(dataset, seed)
    rng = generator(seed, Purpose.CORRUPTION)
    mask = rng.random(X.shape) < rate
    X = _replace_cells(dataset, X, mask, rng)
    info = {"rate": rate, "replaced_fraction": float(mask.mean()) if mask.size else 0.0}
    return Stream("random_drop", X, y, seed, dataset.name, rows, info)


def column_drop(dataset: ShiftDataset, seed: int, *, rate: float = DROP_RATE) -> Stream:
    """Column drop: each column, with probability ``rate``, is replaced for the whole stream.

    One mask m_j ~ Bernoulli(rate) per column; every cell of a masked column takes an
    independent draw from that column's empirical marginal on the train split, so the column
    carries no information about its row. With ``D`` columns, no column at all is dropped with
    probability ``(1 - rate)^D`` (0.7 % for HELOC's 22); the stream is then the natural one.

    Args:
        dataset: the task.
        seed: seeds the row order, the column mask and the replacement draws.
        rate: probability that a column is replaced (paper: 0.2).

    Returns:
        A ``"column_drop"`` Stream; dtypes unchanged. ``info["dropped_columns"]`` lists the
        replaced columns in table order.
    """
    dataset, seed = check_dataset(dataset), check_seed(seed)
    rate = check_fraction("rate", rate)
    X, y, rows = shuffled_test(dataset, seed)
    rng = generator(seed, Purpose.CORRUPTION)
    dropped = rng.random(X.shape[1]) < rate
    mask = np.broadcast_to(dropped, X.shape)
    X = _replace_cells(dataset, X, mask, rng)
    info = {
        "rate": rate,
        "dropped_columns": [c for c, d in zip(X.columns, dropped, strict=True) if d],
    }
    return Stream("column_drop", X, y, seed, dataset.name, rows, info)


def _additive_noise(
    name: str,
    dataset: ShiftDataset,
    seed: int,
    scale: float,
    draw: Callable[[np.random.Generator, int], np.ndarray],
) -> Stream:
    """Shared body of the two noise corruptions: x + noise * sigma_j on numerical columns."""
    dataset, seed = check_dataset(dataset), check_seed(seed)
    if not float(scale) >= 0.0:
        raise ValueError(f"scale must be a non-negative number; got {scale}")
    X, y, rows = shuffled_test(dataset, seed)
    rng = generator(seed, Purpose.CORRUPTION)
    sigmas: dict[str, float] = {}
    for column in dataset.numerical:
        sigmas[column] = source_std(dataset, column)
        original = X[column]
        noisy = original.to_numpy(dtype=np.float64) + draw(rng, len(X)) * sigmas[column]
        # Float columns keep their width; integer ones must become float64 to carry the noise.
        dtype = original.dtype if pd.api.types.is_float_dtype(original.dtype) else np.float64
        X[column] = pd.Series(noisy, dtype=dtype, name=column)
    info = {"scale": float(scale), "source_std": sigmas}
    return Stream(name, X, y, seed, dataset.name, rows, info)


def _replace_cells(
    dataset: ShiftDataset, X: pd.DataFrame, mask: np.ndarray, rng: np.random.Generator
) -> pd.DataFrame:
    """Replace the masked cells of each column by draws from its source marginal.

    Only as many draws as masked cells, column by column, so the cost is O(masked cells).
    """
    X = X.copy()
    for j, column in enumerate(X.columns):
        hit = np.flatnonzero(mask[:, j])
        if hit.size == 0:
            continue
        original = X[column]
        if pd.api.types.is_numeric_dtype(original.dtype):
            # int test + int source stays int; a float on either side makes the column float.
            dtype = np.result_type(original.dtype, dataset.train.X[column].dtype)
            values = original.to_numpy(dtype=dtype, copy=True)
        else:
            dtype = original.dtype
            values = original.to_numpy(dtype=object, copy=True)
        values[hit] = draw_source_marginal(dataset, column, hit.size, rng)
        X[column] = pd.Series(values, dtype=dtype, name=column)
    return X

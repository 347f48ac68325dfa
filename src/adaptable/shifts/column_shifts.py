"""Important-column shifts: resample the test rows against the source distribution of one column.

Paper appendix "Common Corruptions", items Numerical and Categorical. The column j* is the most
important one of its kind for an XGBoost model fitted on the SOURCE (train) split
(:mod:`adaptable.shifts.importance`); a likelihood is fitted to j* on the train split; test rows
are drawn with replacement with probability proportional to the INVERSE of their likelihood, so
rows that are unusual for the source dominate the stream. The stream has as many rows as the test
split; the features themselves are not modified.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from adaptable.datasets import ShiftDataset
from adaptable.shifts._common import (
    Purpose,
    check_dataset,
    check_seed,
    generator,
    source_std,
)
from adaptable.shifts.importance import most_important_column
from adaptable.shifts.stream import Stream


def numerical(dataset: ShiftDataset, seed: int) -> Stream:
    """Numerical column shift: inverse-Gaussian-likelihood resampling along the top numerical column.

    A Gaussian N(mu, sigma^2) is fitted to column j* on the train split (mean and population
    standard deviation); test row i is drawn with probability proportional to
    ``1 / N(x_ij* | mu, sigma)``, i.e. to ``exp((x_ij* - mu)^2 / (2 sigma^2))``, computed in log
    space so that far tails neither overflow nor underflow. A missing value counts as the
    source mean (where the Encoder also puts it), the least likely row to be drawn.

    Args:
        dataset: the task.
        seed: seeds the XGBoost fit and the draws.

    Returns:
        A ``"numerical"`` Stream with ``info["column"]``, ``info["source_mean"]``,
        ``info["source_std"]`` and the per-column XGBoost gains ``info["gains"]``.
    """
    dataset, seed = check_dataset(dataset), check_seed(seed)
    choice = most_important_column(dataset, "numerical", seed)
    column = choice.column
    mean = float(np.nanmean(pd.to_numeric(dataset.train.X[column], errors="coerce")))
    std = source_std(dataset, column)
    if not std > 0.0:
        raise ValueError(
            f"column {column!r} of {dataset.name!r} is constant on the train split; a Gaussian "
            "with zero spread gives no likelihood to invert"
        )
    values = pd.to_numeric(dataset.test.X[column], errors="coerce").to_numpy(dtype=np.float64)
    z = np.where(np.isnan(values), 0.0, (values - mean) / std)
    log_inverse_likelihood = 0.5 * z**2  # the Gaussian's normalising constant cancels
    info = {"column": column, "source_mean": mean, "source_std": std, "gains": choice.gains}
    return _resample("numerical", dataset, seed, log_inverse_likelihood, info)


def categorical(dataset: ShiftDataset, seed: int) -> Stream:
    """Categorical column shift: inverse-frequency resampling along the top categorical column.

    A categorical distribution is fitted to column j* on the train split with +1 (Laplace)
    smoothing over the levels of j* seen in the train or the test split:
    ``p_k = (count_k + 1) / (N_train + K)``. Test row i is drawn with probability proportional to
    ``1 / p_{x_ij*}``, so test-only levels (count 0) are the most over-represented.

    Args:
        dataset: the task.
        seed: seeds the XGBoost fit and the draws.

    Returns:
        A ``"categorical"`` Stream with ``info["column"]``, the smoothed source probabilities
        ``info["source_probabilities"]`` and ``info["gains"]``.
    """
    dataset, seed = check_dataset(dataset), check_seed(seed)
    choice = most_important_column(dataset, "categorical", seed)
    column = choice.column
    source = dataset.train.X[column].astype(str)
    test = dataset.test.X[column].astype(str)
    levels = sorted(set(source.unique()) | set(test.unique()))
    counts = source.value_counts().reindex(levels, fill_value=0).to_numpy(dtype=np.float64)
    probabilities = (counts + 1.0) / (counts.sum() + len(levels))
    likelihood = probabilities[np.searchsorted(levels, test.to_numpy())]
    info = {
        "column": column,
        "source_probabilities": dict(zip(levels, probabilities.tolist(), strict=True)),
        "gains": choice.gains,
    }
    return _resample("categorical", dataset, seed, -np.log(likelihood), info)


def _resample(
    name: str,
    dataset: ShiftDataset,
    seed: int,
    log_weights: np.ndarray,
    info: dict[str, object],
) -> Stream:
    """Draw ``len(test)`` test rows with replacement, P(row i) proportional to exp(log_weights_i).

    ``info["effective_rows"]`` records Kish's effective sample size ``1 / sum_i P_i^2`` of the
    draw probabilities: the number of distinct test rows the stream effectively carries. When it
    falls below 1 % of the test rows a UserWarning says so.
    """
    weights = np.exp(log_weights - log_weights.max())
    probabilities = weights / weights.sum()
    rng = generator(seed, Purpose.SAMPLING)
    rows = rng.choice(len(probabilities), size=len(probabilities), replace=True, p=probabilities)
    X = dataset.test.X.iloc[rows].reset_index(drop=True)
    effective_rows = float(1.0 / np.sum(probabilities**2))
    if effective_rows < 0.01 * len(probabilities):
        # Exponential tails can hand almost all the mass to a few extreme rows (e.g. Hospital
        # Readmission's number_inpatient, about 40 source sd out): say so rather than hide it.
        warnings.warn(
            f"{name} shift on {dataset.name!r} ({info.get('column')!r}): the inverse-likelihood "
            f"weights concentrate on about {effective_rows:.1f} distinct test rows out of "
            f"{len(probabilities)}; the stream repeats them",
            UserWarning,
            stacklevel=3,
        )
    info = {**info, "effective_rows": effective_rows}
    return Stream(name, X, dataset.test.y[rows], seed, dataset.name, rows, info)

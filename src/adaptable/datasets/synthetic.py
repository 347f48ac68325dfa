"""A small synthetic shift task with mixed column kinds, for tests, examples and smoke runs."""

from __future__ import annotations

import numpy as np
import pandas as pd

from adaptable.datasets._base import ShiftDataset, Split


def make_shift_dataset(
    n_train: int = 600,
    n_valid: int = 150,
    n_test: int = 600,
    n_numerical: int = 4,
    n_categorical: int = 2,
    n_classes: int = 2,
    source_prior: list[float] | None = None,
    target_prior: list[float] | None = None,
    covariate_shift: float = 0.5,
    seed: int = 0,
) -> ShiftDataset:
    """A task whose test split has both label shift and covariate shift.

    Each class has its own mean in the numerical columns and its own category frequencies;
    the test split draws labels from ``target_prior`` and moves every numerical column by
    ``covariate_shift`` standard deviations. Categorical values are strings ``"c0"``, ``"c1"``, ...
    """
    if n_classes < 2:
        raise ValueError(f"n_classes must be at least 2; got {n_classes}")
    rng = np.random.default_rng(seed)
    source_prior = source_prior or _skewed(n_classes, heavy_first=True)
    target_prior = target_prior or _skewed(n_classes, heavy_first=False)
    class_means = rng.normal(0.0, 1.0, size=(n_classes, n_numerical))
    cat_levels = [3 + j for j in range(n_categorical)]
    cat_probs = [rng.dirichlet(np.ones(k) * 2.0, size=n_classes) for k in cat_levels]
    num_cols = [f"num_{j}" for j in range(n_numerical)]
    cat_cols = [f"cat_{j}" for j in range(n_categorical)]

    def draw(n: int, prior: list[float], shift: float) -> Split:
        y = rng.choice(n_classes, size=n, p=np.asarray(prior) / np.sum(prior))
        num = class_means[y] + rng.normal(0.0, 1.0, size=(n, n_numerical)) + shift
        frame = pd.DataFrame(num, columns=num_cols)
        for j, col in enumerate(cat_cols):
            cum = np.cumsum(cat_probs[j][y], axis=1)
            codes = (rng.random((n, 1)) > cum).sum(axis=1)
            codes = np.minimum(codes, cat_levels[j] - 1)
            frame[col] = pd.Series([f"c{c}" for c in codes], dtype=object)
        return Split(frame, y.astype(np.int64))

    return ShiftDataset(
        name="synthetic",
        train=draw(n_train, source_prior, 0.0),
        valid=draw(n_valid, source_prior, 0.0),
        test=draw(n_test, target_prior, covariate_shift),
        numerical=num_cols,
        categorical=cat_cols,
        classes=[f"class_{k}" for k in range(n_classes)],
        domain_split=f"synthetic: label shift and a {covariate_shift} sd covariate shift",
        sources=[f"make_shift_dataset(seed={seed})"],
    )


def _skewed(n_classes: int, heavy_first: bool) -> list[float]:
    weights = np.linspace(3.0, 1.0, n_classes)
    if not heavy_first:
        weights = weights[::-1]
    return list(weights / weights.sum())

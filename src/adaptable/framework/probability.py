"""The package's one softmax and one ``norm`` (Algorithm 1 takes both as given functions).

Every method (AdapTable, its ablation calibrators, the baselines) uses these two, so that the
same logits always give the same probabilities, to the last bit.

Example:
    >>> softmax(np.array([[0.0, 0.0], [0.0, np.log(3.0)]])).round(4).tolist()
    [[0.5, 0.5], [0.25, 0.75]]
    >>> normalize(np.array([1.0, 3.0])).tolist()
    [0.25, 0.75]
"""

from __future__ import annotations

from typing import Any

import numpy as np


def softmax(logits: np.ndarray, temperature: np.ndarray | float = 1.0) -> np.ndarray:
    """Row-wise ``softmax(logits / temperature)``, numerically stable, float64.

    Args:
        logits: shape (n, C).
        temperature: a scalar or a per-row array of shape (n,), all > 0.
    """
    scaled = np.asarray(logits, dtype=np.float64)
    if not (isinstance(temperature, float | int) and temperature == 1):
        # (dividing by exactly 1 changes nothing: skipped, it runs on every batch)
        t = np.asarray(temperature, dtype=np.float64)
        scaled = scaled / (t[:, None] if t.ndim == 1 else t)
    scaled = scaled - scaled.max(axis=1, keepdims=True)
    np.exp(scaled, out=scaled)
    scaled /= scaled.sum(axis=1, keepdims=True)
    return scaled


def normalize(weights: np.ndarray) -> np.ndarray:
    """The paper's ``norm``: divide each row (or a single vector) by its sum."""
    weights = np.asarray(weights, dtype=np.float64)
    return weights / weights.sum(axis=-1, keepdims=True)


def floored_log(proba: np.ndarray) -> np.ndarray:
    """log p with zeros floored at 1e-300, so that scores built from it stay finite.

    >>> floored_log(np.array([1.0, 0.0])).round(1).tolist()
    [0.0, -690.8]
    """
    return np.log(np.maximum(proba, 1e-300))


def check_distribution(values: Any, n_classes: int, what: str) -> np.ndarray:
    """``values`` as a float64 probability vector of length ``n_classes``, or a ValueError."""
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    if values.shape != (n_classes,):
        raise ValueError(f"{what} must have shape ({n_classes},); got {values.shape}.")
    if not np.all(np.isfinite(values)) or values.min() < 0 or abs(values.sum() - 1.0) > 1e-6:
        raise ValueError(f"{what} must be a probability vector; got {values.tolist()}.")
    return values

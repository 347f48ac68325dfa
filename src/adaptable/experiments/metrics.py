"""Evaluation metrics for one finished test stream, and the distances the figures use.

Every function takes plain numpy arrays: integer labels ``y`` of shape (n,) and class
probabilities ``proba`` of shape (n, C) whose rows sum to one.

>>> import numpy as np
>>> macro_f1(np.array([0, 1, 1]), np.array([0, 1, 0]))
0.6666666666666666
"""

from __future__ import annotations

import warnings

import numpy as np

# scipy and scikit-learn are imported where they are used: importing the experiment runner (the
# CLI, every spawned worker) stays fast.

#: bins of the expected calibration error and of the reliability diagrams (Guo et al. 2017 use 15)
ECE_BINS = 15


def _check_labels(y_true: np.ndarray, y_pred: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two label vectors of one length, at least one label each."""
    from sklearn.utils import check_consistent_length, column_or_1d

    y_true, y_pred = column_or_1d(y_true), column_or_1d(y_pred)
    check_consistent_length(y_true, y_pred)
    if y_true.size == 0:
        raise ValueError("expected at least one label; got an empty array")
    return y_true, y_pred


def _check_proba(proba: np.ndarray, n: int | None = None) -> np.ndarray:
    proba = np.asarray(proba, dtype=np.float64)
    if proba.ndim != 2 or (n is not None and proba.shape[0] != n):
        raise ValueError(f"expected probabilities of shape ({n or 'n'}, C); got {proba.shape}")
    if not np.all(np.isfinite(proba)):
        raise ValueError("probabilities contain NaN or infinite values")
    return proba


def confusion_matrix(y_true: np.ndarray, y_pred: np.ndarray, n_classes: int) -> np.ndarray:
    """Counts ``[true, predicted]`` of the classes 0..C-1, shape (C, C)."""
    from sklearn.metrics import confusion_matrix

    y_true, y_pred = _check_labels(y_true, y_pred)
    labels = np.concatenate([y_true, y_pred])
    if labels.min() < 0 or labels.max() >= n_classes:
        raise ValueError(f"labels must lie in 0..{n_classes - 1}")
    return confusion_matrix(y_true, y_pred, labels=np.arange(n_classes))


def macro_f1(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Unweighted mean of the per-class F1 scores (scikit-learn's ``average="macro"``).

    Classes that occur in neither ``y_true`` nor ``y_pred`` are left out; a class that is
    predicted but absent, or present but never predicted, scores 0.
    """
    from sklearn.metrics import f1_score

    y_true, y_pred = _check_labels(y_true, y_pred)
    return float(f1_score(y_true, y_pred, average="macro", zero_division=0.0))


def balanced_accuracy(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Mean recall over the classes present in ``y_true`` (scikit-learn's)."""
    from sklearn.metrics import balanced_accuracy_score

    y_true, y_pred = _check_labels(y_true, y_pred)
    with warnings.catch_warnings():
        # A stream without some class still has predictions of it: by definition, the mean
        # runs over the classes present, which is what scikit-learn computes after warning.
        warnings.filterwarnings("ignore", message="y_pred contains classes not in y_true")
        warnings.filterwarnings("ignore", message="A single label was found")
        return float(balanced_accuracy_score(y_true, y_pred))


def accuracy(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Fraction of rows predicted correctly."""
    from sklearn.metrics import accuracy_score

    y_true, y_pred = _check_labels(y_true, y_pred)
    return float(accuracy_score(y_true, y_pred))


def reliability_bins(
    y_true: np.ndarray, proba: np.ndarray, n_bins: int = ECE_BINS
) -> dict[str, list[float]]:
    """Top-label reliability statistics in ``n_bins`` equal-width confidence bins.

    Returns ``count``, ``confidence`` (mean top probability) and ``accuracy`` per bin (0 where a
    bin is empty); enough to draw a reliability diagram or recompute the ECE.
    """
    y_true = np.asarray(y_true, dtype=np.int64)
    proba = _check_proba(proba, len(y_true))
    confidence = proba.max(axis=1)
    correct = (proba.argmax(axis=1) == y_true).astype(np.float64)
    # Bin k holds confidences in (k/n, (k+1)/n]; a confidence of exactly 0 goes to bin 0.
    index = np.clip(np.ceil(confidence * n_bins).astype(np.int64) - 1, 0, n_bins - 1)
    count = np.bincount(index, minlength=n_bins).astype(np.float64)
    conf_sum = np.bincount(index, weights=confidence, minlength=n_bins)
    acc_sum = np.bincount(index, weights=correct, minlength=n_bins)
    safe = np.maximum(count, 1.0)
    return {
        "count": count.tolist(),
        "confidence": (conf_sum / safe).tolist(),
        "accuracy": (acc_sum / safe).tolist(),
    }


def expected_calibration_error(
    y_true: np.ndarray, proba: np.ndarray, n_bins: int = ECE_BINS
) -> float:
    """Top-label ECE: sum over bins of |accuracy - confidence| weighted by the bin's share."""
    bins = reliability_bins(y_true, proba, n_bins)
    count = np.asarray(bins["count"])
    gap = np.abs(np.asarray(bins["accuracy"]) - np.asarray(bins["confidence"]))
    return float((count * gap).sum() / count.sum())


def classification_metrics(y_true: np.ndarray, proba: np.ndarray) -> dict[str, float]:
    """The four metrics every experiment reports, as fractions in [0, 1].

    Returns ``macro_f1``, ``balanced_accuracy``, ``accuracy`` and ``ece``.
    """
    y_true = np.asarray(y_true, dtype=np.int64)
    proba = _check_proba(proba, len(y_true))
    y_pred = proba.argmax(axis=1)
    return {
        "macro_f1": macro_f1(y_true, y_pred),
        "balanced_accuracy": balanced_accuracy(y_true, y_pred),
        "accuracy": accuracy(y_true, y_pred),
        "ece": expected_calibration_error(y_true, proba),
    }


def js_divergence(p: np.ndarray, q: np.ndarray) -> float:
    """Jensen-Shannon divergence (natural log, so at most ln 2) between two distributions.

    The square of scipy's Jensen-Shannon *distance*; ``p`` and ``q`` are normalised first.
    """
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    if p.shape != q.shape or p.ndim != 1:
        raise ValueError(
            f"expected two distributions of the same shape (C,); got {p.shape}, {q.shape}"
        )
    from scipy.spatial.distance import jensenshannon

    if not (np.all(np.isfinite(p)) and np.all(np.isfinite(q))) or min(p.min(), q.min()) < 0:
        raise ValueError("expected non-negative, finite weights")
    with np.errstate(invalid="ignore"):
        distance = jensenshannon(p, q)
    # Rounding can leave the divergence a hair below 0 for (nearly) equal inputs, which scipy's
    # square root turns into NaN; the divergence there is 0.
    return 0.0 if np.isnan(distance) else float(distance) ** 2


def squared_distances(x: np.ndarray, y: np.ndarray | None = None) -> np.ndarray:
    """Squared Euclidean distances between the rows of ``x`` and of ``y`` (default ``x``)."""
    x = np.asarray(x, dtype=np.float64)
    y = x if y is None else np.asarray(y, dtype=np.float64)
    sq_x, sq_y = np.sum(x**2, axis=1), np.sum(y**2, axis=1)
    return np.maximum(sq_x[:, None] + sq_y[None, :] - 2.0 * x @ y.T, 0.0)


def median_distance(x: np.ndarray) -> float:
    """The median heuristic for an RBF kernel width: median pairwise distance of the rows of x.

    1.0 when it is undefined (fewer than two rows) or zero (all rows equal). Use it to fix one
    width for many comparisons against the same sample (e.g. ``mmd_rbf(batch, source,
    bandwidth=median_distance(source))``), so that their MMDs are comparable.
    """
    dist = squared_distances(x)
    upper = dist[np.triu_indices(len(dist), k=1)]
    return (float(np.sqrt(np.median(upper))) if upper.size else 1.0) or 1.0


def mmd_rbf(x: np.ndarray, y: np.ndarray, bandwidth: float | None = None) -> float:
    """Biased squared maximum mean discrepancy with a Gaussian kernel.

    Args:
        x: samples, shape (n, d); y: samples, shape (m, d).
        bandwidth: kernel width sigma in exp(-|a - b|^2 / (2 sigma^2)); by default the median
            pairwise distance of the pooled samples (:func:`median_distance`).
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or y.ndim != 2 or x.shape[1] != y.shape[1]:
        raise ValueError(f"expected two matrices (n, d) and (m, d); got {x.shape} and {y.shape}")
    pooled = np.vstack([x, y])
    if bandwidth is None:
        bandwidth = median_distance(pooled)
    kernel = np.exp(-squared_distances(pooled) / (2.0 * bandwidth**2))
    n = len(x)
    return float(kernel[:n, :n].mean() + kernel[n:, n:].mean() - 2.0 * kernel[:n, n:].mean())


def mean_and_se(values: list[float] | np.ndarray) -> tuple[float, float]:
    """Mean and standard error (sample sd / sqrt(n); 0 for a single value)."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0:
        raise ValueError("expected at least one value")
    if arr.size == 1:
        return float(arr[0]), 0.0
    return float(arr.mean()), float(arr.std(ddof=1) / np.sqrt(arr.size))

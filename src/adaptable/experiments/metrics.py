"""Evaluation metrics for one finished test stream, and the distances the figures use.

Every function takes plain numpy arrays: integer labels ``y`` of shape (n,) and class
probabilities ``proba`` of shape (n, C) whose rows sum to one.

>>> import numpy as np
>>> macro_f1(np.array([0, 1, 1]), np.array([0, 1, 0]))
0.6666666666666666
"""

from __future__ import annotations

import numpy as np

#: bins of the expected calibration error and of the reliability diagrams (Guo et al. 2017 use 15)
ECE_BINS = 15


def _check_labels(y_true: np.ndarray, y_pred: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    y_true = np.asarray(y_true)
    y_pred = np.asarray(y_pred)
    if y_true.ndim != 1 or y_pred.shape != y_true.shape:
        raise ValueError(
            f"expected two label vectors of the same shape (n,); got {y_true.shape} and "
            f"{y_pred.shape}"
        )
    if y_true.size == 0:
        raise ValueError("expected at least one label; got an empty array")
    return y_true.astype(np.int64), y_pred.astype(np.int64)


def _check_proba(proba: np.ndarray, n: int | None = None) -> np.ndarray:
    proba = np.asarray(proba, dtype=np.float64)
    if proba.ndim != 2 or (n is not None and proba.shape[0] != n):
        raise ValueError(f"expected probabilities of shape ({n or 'n'}, C); got {proba.shape}")
    if not np.all(np.isfinite(proba)):
        raise ValueError("probabilities contain NaN or infinite values")
    return proba


def confusion_matrix(y_true: np.ndarray, y_pred: np.ndarray, n_classes: int) -> np.ndarray:
    """Counts ``[true, predicted]``, shape (C, C)."""
    y_true, y_pred = _check_labels(y_true, y_pred)
    if (
        y_true.max() >= n_classes
        or y_pred.max() >= n_classes
        or min(y_true.min(), y_pred.min()) < 0
    ):
        raise ValueError(f"labels must lie in 0..{n_classes - 1}")
    out = np.zeros((n_classes, n_classes), dtype=np.int64)
    np.add.at(out, (y_true, y_pred), 1)
    return out


def macro_f1(y_true: np.ndarray, y_pred: np.ndarray, n_classes: int | None = None) -> float:
    """Unweighted mean of the per-class F1 scores.

    Classes that occur in neither ``y_true`` nor ``y_pred`` are left out (as scikit-learn does
    when ``labels`` is not given); a class that is predicted but absent, or present but never
    predicted, scores 0.
    """
    y_true, y_pred = _check_labels(y_true, y_pred)
    n_classes = n_classes or int(max(y_true.max(), y_pred.max())) + 1
    cm = confusion_matrix(y_true, y_pred, n_classes)
    tp = np.diag(cm).astype(np.float64)
    support = cm.sum(axis=1) + cm.sum(axis=0)  # 2 tp + fn + fp
    seen = support > 0
    f1 = np.where(seen, 2.0 * tp / np.maximum(support, 1), 0.0)
    return float(f1[seen].mean())


def balanced_accuracy(
    y_true: np.ndarray, y_pred: np.ndarray, n_classes: int | None = None
) -> float:
    """Mean recall over the classes present in ``y_true``."""
    y_true, y_pred = _check_labels(y_true, y_pred)
    n_classes = n_classes or int(max(y_true.max(), y_pred.max())) + 1
    cm = confusion_matrix(y_true, y_pred, n_classes)
    support = cm.sum(axis=1)
    present = support > 0
    return float((np.diag(cm)[present] / support[present]).mean())


def accuracy(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Fraction of rows predicted correctly."""
    y_true, y_pred = _check_labels(y_true, y_pred)
    return float(np.mean(y_true == y_pred))


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
    n_classes = max(proba.shape[1], int(y_true.max()) + 1)
    return {
        "macro_f1": macro_f1(y_true, y_pred, n_classes),
        "balanced_accuracy": balanced_accuracy(y_true, y_pred, n_classes),
        "accuracy": accuracy(y_true, y_pred),
        "ece": expected_calibration_error(y_true, proba),
    }


def js_divergence(p: np.ndarray, q: np.ndarray) -> float:
    """Jensen-Shannon divergence (natural log, so at most ln 2) between two distributions."""
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    if p.shape != q.shape or p.ndim != 1:
        raise ValueError(
            f"expected two distributions of the same shape (C,); got {p.shape}, {q.shape}"
        )
    p = p / p.sum()
    q = q / q.sum()
    m = 0.5 * (p + q)

    def kl(a: np.ndarray, b: np.ndarray) -> float:
        mask = a > 0
        return float(np.sum(a[mask] * np.log(a[mask] / b[mask])))

    return 0.5 * kl(p, m) + 0.5 * kl(q, m)


def mmd_rbf(x: np.ndarray, y: np.ndarray, bandwidth: float | None = None) -> float:
    """Biased squared maximum mean discrepancy with a Gaussian kernel.

    Args:
        x: samples, shape (n, d); y: samples, shape (m, d).
        bandwidth: kernel width sigma in exp(-|a - b|^2 / (2 sigma^2)); by default the median
            pairwise distance of the pooled samples (the usual heuristic).
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or y.ndim != 2 or x.shape[1] != y.shape[1]:
        raise ValueError(f"expected two matrices (n, d) and (m, d); got {x.shape} and {y.shape}")
    pooled = np.vstack([x, y])
    sq = np.sum(pooled**2, axis=1)
    dist = np.maximum(sq[:, None] + sq[None, :] - 2.0 * pooled @ pooled.T, 0.0)
    if bandwidth is None:
        upper = dist[np.triu_indices(len(pooled), k=1)]
        bandwidth = float(np.sqrt(np.median(upper))) if upper.size else 1.0
        bandwidth = bandwidth or 1.0
    kernel = np.exp(-dist / (2.0 * bandwidth**2))
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

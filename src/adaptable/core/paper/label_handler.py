"""The paper's label distribution handler (Section 3.3; Algorithm 1, lines 3, 8 and 10-26).

Plain numpy on one batch, no Python loop over rows. The pieces are public so that the other
label-shift methods (EM, BBSE) reuse exactly the same smoothing and source prior. The whole
batch step is :func:`adjust_batch`; :class:`~adaptable.core.paper.paper_decider.PaperDecider` runs it
batch after batch inside :class:`~adaptable.core.estimator.AdapTable` (``preset="paper"``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from adaptable.framework.probability import check_distribution, normalize, softmax

#: the paper's epsilon in T = 1.5 rho / (rho - 1 + 1e-6)
TEMPERATURE_EPSILON = 1e-6
#: above this, T is the symptom of a (nearly) balanced source and turns outputs one-hot
LARGE_TEMPERATURE = 100.0


def source_prior(*labels: np.ndarray | None, n_classes: int | None = None) -> np.ndarray:
    """Line 3: p_s(y), class frequencies of all given label arrays together (train + valid).

    Deliberate difference: the paper counts the training labels; the authors' code (and we)
    count train + validation labels.

    Args:
        *labels: integer label arrays in ``0 .. C-1``; ``None`` entries are skipped.
        n_classes: C; defaults to ``max label + 1``.

    Raises:
        ValueError: no labels, negative labels, or a class with no source example (the
            handler divides by p_s, so every class must occur).

    Example:
        >>> source_prior(np.array([0, 0, 1]), np.array([1]))
        array([0.5, 0.5])
    """
    parts = [np.asarray(y).reshape(-1) for y in labels if y is not None]
    y = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    if y.size == 0:
        raise ValueError("source_prior needs at least one label; got none.")
    if not np.issubdtype(y.dtype, np.integer):
        if not np.all(np.equal(np.mod(y, 1), 0)):
            raise ValueError(f"Labels must be integers 0..C-1; got dtype {y.dtype}.")
        y = y.astype(np.int64)
    if y.min() < 0:
        raise ValueError(f"Labels must be integers 0..C-1; got a label {int(y.min())}.")
    n_classes = int(y.max()) + 1 if n_classes is None else int(n_classes)
    if y.max() >= n_classes:
        raise ValueError(f"Label {int(y.max())} is out of range for {n_classes} classes.")
    counts = np.bincount(y, minlength=n_classes).astype(np.float64)
    present = np.flatnonzero(counts)
    if present.size < 2:
        raise ValueError(
            f"The source labels hold a single class ({present.tolist()}); AdapTable needs at "
            "least two classes in the source data."
        )
    if present.size < n_classes:
        missing = np.flatnonzero(counts == 0).tolist()
        raise ValueError(
            f"Class(es) {missing} never occur in the source labels; p_s(y) would be 0 for them "
            "and the label distribution handler divides by p_s."
        )
    return counts / counts.sum()


def imbalance_temperature(
    prior: np.ndarray,
    temperature: float | None = None,
    max_temperature: float | None = None,
) -> float:
    """Line 3: T = 1.5 rho / (rho - 1 + 1e-6) with rho = max_j p_s(j) / min_j p_s(j).

    Args:
        prior: p_s, shape (C,).
        temperature: an explicit T that replaces the formula.
        max_temperature: a cap applied to the formula's value.

    A (nearly) balanced source makes rho -> 1 and T explode (rho = 1 gives 1.5e6, which turns
    every output one-hot); the formula is kept, as in the paper, with a warning that names the
    two ways out.

    Example:
        >>> round(imbalance_temperature(np.array([0.75, 0.25])), 4)
        2.25
    """
    if temperature is not None:
        if not np.isfinite(temperature) or temperature <= 0:
            raise ValueError(f"temperature must be a positive number; got {temperature!r}.")
        return float(temperature)
    prior = np.asarray(prior, dtype=np.float64)
    rho = float(prior.max() / prior.min())
    value = 1.5 * rho / (rho - 1.0 + TEMPERATURE_EPSILON)
    if max_temperature is not None:
        if max_temperature <= 0:
            raise ValueError(f"max_temperature must be positive; got {max_temperature!r}.")
        return float(min(value, max_temperature))
    if value > LARGE_TEMPERATURE:
        warnings.warn(
            f"The source labels are nearly balanced (rho = {rho:.6f}), so the paper's "
            f"temperature T = 1.5 rho / (rho - 1 + 1e-6) = {value:.4g} turns the most and least "
            "certain rows' predictions one-hot. Pass max_temperature=... to cap it or "
            "temperature=... to set it.",
            RuntimeWarning,
            stacklevel=2,
        )
    return float(value)


def uncertainty(calibrated: np.ndarray) -> np.ndarray:
    """Lines 10-11: delta_i = 1 / (q_i,j* - q_i,j**), q_i the calibrated probabilities, (n,).

    Deliberate difference: a zero margin (a tie) gives a very large finite value instead of the
    paper's ``1/0``, so the quantiles stay defined; the ordering of rows is unchanged.
    """
    top2 = np.sort(np.asarray(calibrated, dtype=np.float64), axis=1)[:, -2:]
    margin = top2[:, 1] - top2[:, 0]
    return 1.0 / np.maximum(margin, np.finfo(np.float64).tiny)


def debiased_estimate(proba: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """Line 12: p^de_i = norm(p_i / p_s), shape (n, C)."""
    return normalize(np.asarray(proba, dtype=np.float64) / prior)


def smooth(previous: np.ndarray, current: np.ndarray, alpha: float) -> np.ndarray:
    """Lines 14 and 26: ``(1 - alpha) * current + alpha * previous``.

    Note the convention (paper, Eqs. 5-6): ``alpha`` weighs the *previous* estimate, so the
    default ``alpha = 0.1`` mostly trusts the current batch.

    Example:
        >>> smooth(np.array([0.5, 0.5]), np.array([1.0, 0.0]), alpha=0.1)
        array([0.95, 0.05])
    """
    _check_alpha(alpha)
    return (1.0 - alpha) * np.asarray(current, dtype=np.float64) + alpha * np.asarray(
        previous, dtype=np.float64
    )


def recalibration_temperatures(
    delta: np.ndarray, temperature: float, q_low: float = 0.25, q_high: float = 0.75
) -> np.ndarray:
    """Lines 15-22 (Eq. 4): T~_i = T at or above the q_high uncertainty quantile, 1/T at or
    below q_low, else 1.

    Quantiles are numpy's linear interpolation within the batch. The high branch is tested
    first, as in Algorithm 1, so a one-row batch (both quantiles equal its own value) is
    softened with T.

    Example:
        >>> recalibration_temperatures(np.array([1.0, 2.0, 3.0, 4.0, 5.0]), 2.0)
        array([0.5, 0.5, 1. , 2. , 2. ])
    """
    delta = np.asarray(delta, dtype=np.float64)
    ordered = np.sort(delta)
    high, low = quantile(ordered, q_high), quantile(ordered, q_low)
    out = np.ones_like(delta)
    out[delta <= low] = 1.0 / temperature
    out[delta >= high] = temperature
    return out


def quantile(ordered: np.ndarray, q: float) -> float:
    """``np.quantile(x, q)`` (linear interpolation) of an already sorted 1-D array.

    The same arithmetic as numpy's default method, without its per-call overhead (the label
    handler takes two quantiles per batch).

    Example:
        >>> quantile(np.array([1.0, 2.0, 3.0, 4.0]), 0.25)
        1.75
    """
    position = q * (len(ordered) - 1)
    below = min(int(np.floor(position)), len(ordered) - 1)
    above = min(below + 1, len(ordered) - 1)
    t = position - below
    a, b = ordered[below], ordered[above]
    # numpy's _lerp: interpolate from the nearer end, so the result is exact at both ends.
    return float(b - (b - a) * (1.0 - t)) if t >= 0.5 else float(a + (b - a) * t)


def final_mixture(recalibrated: np.ndarray, target: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """Line 24 (Eq. 3): p_bar_i = (p~_i + norm(p~_i * p_t / p_s)) / 2, shape (n, C)."""
    aligned = normalize(recalibrated * (target / prior))
    return 0.5 * (recalibrated + aligned)


class OnlinePrior:
    """Line 26 (Eq. 6): the online target-label estimator p^oe, uniform at first, then smoothed.

    Args:
        n_classes: C >= 2.
        alpha: smoothing factor in [0, 1], weight of the previous estimate.
        initial: starting distribution; uniform when ``None`` (the paper).

    Example:
        >>> prior = OnlinePrior(n_classes=2, alpha=0.1)
        >>> prior.value
        array([0.5, 0.5])
        >>> prior.update(np.array([0.9, 0.1]))
        array([0.86, 0.14])
    """

    def __init__(self, n_classes: int, alpha: float = 0.1, initial: np.ndarray | None = None):
        if int(n_classes) < 2:
            raise ValueError(f"n_classes must be at least 2; got {n_classes}.")
        _check_alpha(alpha)
        self.n_classes = int(n_classes)
        self.alpha = float(alpha)
        start = np.full(self.n_classes, 1.0 / self.n_classes) if initial is None else initial
        self._initial = check_distribution(start, self.n_classes, "initial")
        self.value = self._initial.copy()

    def update(self, batch_mean: np.ndarray) -> np.ndarray:
        """Fold in one batch's mean prediction (shape (C,)) and return the new estimate."""
        return self._fold(check_distribution(batch_mean, self.n_classes, "batch_mean"))

    def _fold(self, batch_mean: np.ndarray) -> np.ndarray:
        # The handler's own means are valid by construction: no re-check on the hot path.
        self.value = (1.0 - self.alpha) * batch_mean + self.alpha * self.value
        return self.value

    def reset(self) -> None:
        """Back to the initial distribution."""
        self.value = self._initial.copy()

    def __repr__(self) -> str:
        return f"OnlinePrior(alpha={self.alpha}, value={np.round(self.value, 4).tolist()})"


@dataclass(frozen=True)
class BatchResult:
    """What :func:`adjust_batch` computed for one batch (all numpy, float64).

    Attributes:
        proba: p_bar, the adapted probabilities, (n, C).
        target_prior: p_t used on this batch, (C,).
        online_prior: p^oe after the update, i.e. the estimate carried to the next batch, (C,).
        uncertainty: delta_i, (n,).
        recalibration_temperatures: T~_i, (n,).
    """

    proba: np.ndarray
    target_prior: np.ndarray
    online_prior: np.ndarray
    uncertainty: np.ndarray
    recalibration_temperatures: np.ndarray


def adjust_batch(
    logits: np.ndarray,
    calibrated: np.ndarray,
    prior: np.ndarray,
    online: OnlinePrior,
    temperature: float,
    q_low: float = 0.25,
    q_high: float = 0.75,
) -> BatchResult:
    """Algorithm 1, lines 7-26, on one batch whose calibrated probabilities are given; advances
    ``online`` (p^oe).

    Args:
        logits: z_i = f(x_i), shape (n, C), n >= 1.
        calibrated: q_i, the calibrator's probabilities (``softmax(z_i / T_i)`` for the shift-aware
            calibrator, ``softmax(z_i)`` without calibrator), shape (n, C).
        prior: p_s, shape (C,).
        online: the p^oe state, updated in place.
        temperature: T (see :func:`imbalance_temperature`).
        q_low, q_high: uncertainty quantiles.
    """
    logits = np.asarray(logits, dtype=np.float64)
    proba = softmax(logits)  # line 8
    delta = uncertainty(calibrated)  # lines 10-11 (line 9, T_i, made ``calibrated``)
    p_de = debiased_estimate(proba, prior)  # line 12
    target = smooth(online.value, p_de.mean(axis=0), online.alpha)  # line 14
    t_tilde = recalibration_temperatures(delta, temperature, q_low, q_high)  # lines 15-22
    recalibrated = softmax(logits, t_tilde)  # line 23
    adapted = final_mixture(recalibrated, target, prior)  # line 24
    online._fold(adapted.mean(axis=0))  # line 26
    return BatchResult(adapted, target, online.value.copy(), delta, t_tilde)


def _check_alpha(alpha: float) -> None:
    if not 0.0 <= float(alpha) <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1]; got {alpha!r}.")

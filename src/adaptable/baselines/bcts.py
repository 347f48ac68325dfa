"""Bias-corrected temperature scaling (BCTS; Alexandari, Kundaje and Shrikumar 2020).

Calibrated logits ``z / T + b`` with one temperature T > 0 and one bias per class, fitted by
minimising the negative log-likelihood on held-out labelled data (the validation split).
Alexandari et al. show that EM prior adjustment needs calibrated posteriors and that the class
biases matter for it; plain temperature scaling is the special case b = 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from adaptable.framework.probability import softmax


@dataclass(frozen=True)
class BiasCorrectedTemperature:
    """A fitted BCTS map ``logits -> softmax(logits / temperature + bias)``.

    Attributes:
        temperature: T > 0.
        bias: per-class biases, shape (C,).
    """

    temperature: float
    bias: np.ndarray

    def logits(self, logits: np.ndarray) -> np.ndarray:
        """Calibrated logits ``z / T + b``, shape (n, C)."""
        return np.asarray(logits, dtype=np.float64) / self.temperature + self.bias

    def proba(self, logits: np.ndarray) -> np.ndarray:
        """Calibrated probabilities, rows summing to one."""
        return softmax(self.logits(logits))


def fit_bcts(logits: np.ndarray, y: np.ndarray, max_iter: int = 500) -> BiasCorrectedTemperature:
    """Fit T and b by minimising the mean NLL of ``softmax(logits / T + b)`` (L-BFGS).

    Args:
        logits: uncalibrated logits of the held-out rows, (n, C).
        y: their labels in 0..C-1, (n,).
        max_iter: L-BFGS iterations.

    Example:
        >>> z = np.array([[0.0, 4.0], [0.0, -4.0], [0.0, 4.0], [0.0, 3.0], [0.0, -3.0], [0, -4]])
        >>> fit_bcts(z, np.array([1, 0, 0, 1, 1, 0])).temperature > 1  # over-confident -> T > 1
        True
    """
    z = np.asarray(logits, dtype=np.float64)
    y = np.asarray(y)
    if z.ndim != 2 or z.shape[0] != y.shape[0] or z.shape[0] == 0:
        raise ValueError(
            f"fit_bcts needs logits (n, C) and labels (n,) with n > 0; got {z.shape} and {y.shape}"
        )
    n, n_classes = z.shape
    if y.min() < 0 or y.max() >= n_classes:
        raise ValueError(f"labels must lie in 0..{n_classes - 1}; got {y.min()}..{y.max()}")
    onehot = np.eye(n_classes)[y]

    # Parameters: log T (keeps T positive) and b. The loss is invariant to adding a constant to
    # b; L-BFGS copes, and the returned b is centred to make the solution unique.
    def loss_and_grad(theta: np.ndarray) -> tuple[float, np.ndarray]:
        log_t, bias = theta[0], theta[1:]
        scaled = z * np.exp(-log_t) + bias
        shifted = scaled - scaled.max(axis=1, keepdims=True)
        log_norm = np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        log_p = shifted - log_norm
        loss = -np.mean(np.sum(onehot * log_p, axis=1))
        residual = (np.exp(log_p) - onehot) / n
        grad_log_t = -np.sum(residual * z * np.exp(-log_t))
        return float(loss), np.concatenate([[grad_log_t], residual.sum(axis=0)])

    result = minimize(
        loss_and_grad,
        np.zeros(n_classes + 1),
        jac=True,
        method="L-BFGS-B",
        bounds=[(-7.0, 7.0)] + [(None, None)] * n_classes,
        options={"maxiter": max_iter},
    )
    bias = result.x[1:] - result.x[1:].mean()
    return BiasCorrectedTemperature(temperature=float(np.exp(result.x[0])), bias=bias)

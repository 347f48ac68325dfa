"""The patch: a correction of any model's posteriors fitted on labelled target rows.

A multinomial logistic regression over the model's log-posteriors and the encoded features,
started at the model: logits = log p + b + (log p) A + x B, with a ridge penalty on (A, B), so a
strong penalty gives back the model (up to the per-class offset b). Its strength is chosen by
3-fold cross-validation on the labelled rows. It reads the model only through its outputs, so it
serves every model (torch modules, callables, models whose training rows were not given).

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(200, 1)); y = (x[:, 0] > 0).astype(int)
    >>> log_p = np.log(np.full((200, 2), 0.5))           # a model that knows nothing
    >>> weights, bias = fit_patch(log_p, x, y, 2, strength=1.0)
    >>> bool(weights[0, 1] > weights[0, 0])              # the patch learnt the feature
    True
"""

from __future__ import annotations

import numpy as np

#: ridge strengths (in rows' worth of log-loss) the patch chooses among by cross-validation
STRENGTHS = (1.0, 4.0, 16.0, 64.0, 256.0)
#: the patch's strength where too few rows are labelled for cross-validation
DEFAULT_STRENGTH = 64.0
#: labelled rows below which the patch does not cross-validate
CV_MIN_ROWS = 30
#: the ridge on the patch's per-class offset b (one row's worth: the labels decide it)
BIAS_STRENGTH = 1.0
#: log-posteriors are clipped here (one confident mistake must not dominate a fit)
LOG_FLOOR = float(np.log(1e-12))


def clipped_log(proba: np.ndarray) -> np.ndarray:
    """log p, clipped at :data:`LOG_FLOOR` (one confident mistake must not dominate a fit)."""
    return np.maximum(np.log(np.maximum(proba, 1e-300)), LOG_FLOOR)


def patched_logits(
    log_p: np.ndarray, design: np.ndarray, weights: np.ndarray, bias: np.ndarray
) -> np.ndarray:
    """The patch's logits, log p + design W + b, (n, C)."""
    return log_p + design @ weights + bias


def fit_patch(
    offset: np.ndarray,
    design: np.ndarray,
    labels: np.ndarray,
    n_classes: int,
    strength: float,
    start: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """softmax(offset + design W + b) fitted by L-BFGS on the labelled rows: summed log-loss
    + strength / 2 |W|^2 + :data:`BIAS_STRENGTH` / 2 |b|^2.

    Args:
        offset: the model's (clipped) log-posteriors, (n, C): where the fit starts (W = 0,
            b = 0 is the model).
        design: the patch's inputs, (n, k).
        labels: codes 0..C-1, (n,).
        n_classes: C.
        strength: the ridge on W.
        start: a starting point, the flat (W, b) of another fit.

    Returns:
        W (k, C) and b (C,).
    """
    n, k = design.shape
    target = np.zeros((n, n_classes))
    target[np.arange(n), labels] = 1.0

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        weights = theta[: k * n_classes].reshape(k, n_classes)
        bias = theta[k * n_classes :]
        z = offset + design @ weights + bias
        z -= z.max(axis=1, keepdims=True)
        log_q = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        value = -(target * log_q).sum() + 0.5 * strength * (weights**2).sum()
        value += 0.5 * BIAS_STRENGTH * (bias**2).sum()
        residual = np.exp(log_q) - target
        grad_w = design.T @ residual + strength * weights
        grad_b = residual.sum(axis=0) + BIAS_STRENGTH * bias
        return float(value), np.concatenate([grad_w.ravel(), grad_b])

    theta = np.zeros(k * n_classes + n_classes) if start is None else start
    from scipy.optimize import minimize  # (slow to import; only a fit needs it)

    result = minimize(loss, theta, jac=True, method="L-BFGS-B", options={"maxiter": 500})
    theta = result.x
    return theta[: k * n_classes].reshape(k, n_classes), theta[k * n_classes :]


def choose_strength(
    offset: np.ndarray, design: np.ndarray, labels: np.ndarray, n_classes: int, seed: int
) -> float:
    """The strength of :data:`STRENGTHS` with the lowest 3-fold cross-validated log-loss
    (:data:`DEFAULT_STRENGTH` below :data:`CV_MIN_ROWS` rows; ties: the stronger)."""
    n = len(labels)
    if n < CV_MIN_ROWS:
        return DEFAULT_STRENGTH
    fold = np.random.default_rng([seed, n]).permutation(n) % 3
    losses = np.zeros(len(STRENGTHS))
    for f in range(3):
        train, held = fold != f, fold == f
        start = None
        # strongest first: each fit starts from the previous (stronger) one
        for i in range(len(STRENGTHS) - 1, -1, -1):
            weights, bias = fit_patch(
                offset[train], design[train], labels[train], n_classes, STRENGTHS[i], start
            )
            start = np.concatenate([weights.ravel(), bias])
            z = offset[held] + design[held] @ weights + bias
            z -= z.max(axis=1, keepdims=True)
            log_q = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
            losses[i] -= log_q[np.arange(int(held.sum())), labels[held]].sum()
    best = np.flatnonzero(losses <= losses.min() + 1e-9)
    return float(STRENGTHS[int(best.max())])

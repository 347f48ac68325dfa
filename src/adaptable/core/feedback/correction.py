"""A correction of the model's scores fitted on labelled target rows, for where p(y|x) moved.

Re-weighting by p_t / p_s cannot help where the class-conditional distributions themselves
moved (the model's scores still rank the rows, but its probabilities and thresholds are off).
Labelled target rows can fit that: q(y|x) = softmax(a log p(y|x) + b), one scale a and one
offset per class (bias-corrected temperature scaling, Alexandari et al. 2020, here on the
target's labels), by penalised maximum likelihood with the penalty

    strength / 2 * (v (a - 1)^2 + ||b - b0||^2),   v = the rows' mean spread of log p,

which pulls the fit towards the unlabelled reading of the target (a = 1, b = b0: log(p_t / p_s)
under label shift, 0 otherwise), so that a handful of labels moves it little. ``strength`` (in
rows' worth, a grid) is chosen by K-fold cross-validated log-loss on the labelled rows alone,
and each labelled row also gets its out-of-fold decision: the rule comparison
(:func:`.rules.compare_rules`) judges the correction on rows it was not fitted on, so it is used
only where the labels support it over the unlabelled decision.

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=400)
    >>> y = (rng.random(400) < 1 / (1 + np.exp(-(2 * z - 1)))).astype(int)
    >>> log_p = np.log(np.stack([1 / (1 + np.exp(z)), 1 / (1 + np.exp(-z))], axis=1))
    >>> fit = fit_correction(log_p, y, np.zeros(2), "accuracy", seed=0)
    >>> b = fit.calibration_offset
    >>> round(fit.scale, 1), round(float(b[1] - b[0]), 1)    # the truth: 2 and -1
    (1.9, -1.1)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from adaptable.core.decision import plugin_weights
from adaptable.core.feedback.rules import ScoreRule

#: candidate penalty strengths, in rows' worth of the unlabelled reading
STRENGTHS = (1.0, 4.0, 16.0, 64.0, 256.0)
#: cross-validation folds
N_FOLDS = 5


@dataclass(frozen=True)
class Correction:
    """A fitted score correction and its decision rule.

    Attributes:
        scale: a, (> 0).
        calibration_offset: b, (C,): softmax(a log p + b) are the corrected posteriors.
        rule: the decision for the objective on the corrected posteriors (plug-in weights v
            folded into the offsets: argmax a log p + b + log v).
        strength: the penalty strength cross-validation chose.
        out_of_fold: each labelled row's decision by the correction fitted without its fold,
            (n,).
        cv_log_loss: the chosen strength's mean out-of-fold log-loss.
        base_log_loss: the unlabelled reading's (a = 1, b = b0) log-loss on the same rows.
    """

    scale: float
    calibration_offset: np.ndarray
    rule: ScoreRule
    strength: float
    out_of_fold: np.ndarray
    cv_log_loss: float
    base_log_loss: float


def fit_affine(
    log_p: np.ndarray,
    labels: np.ndarray,
    base_offset: np.ndarray,
    strength: float,
    *,
    max_iterations: int = 50,
) -> tuple[float, np.ndarray]:
    """The penalised maximum-likelihood (a, b) of softmax(a log p + b) (see the module doc).

    Args:
        log_p: the rows' log-posteriors, (n, C).
        labels: their labels, (n,).
        base_offset: b0, (C,).
        strength: the penalty's weight (> 0).

    Returns:
        (a, b).
    """
    z = np.asarray(log_p, dtype=np.float64)
    n, n_classes = z.shape
    onehot = np.eye(n_classes)[np.asarray(labels, dtype=np.int64)]
    b0 = np.asarray(base_offset, dtype=np.float64)
    spread = float(np.mean((z - z.mean(axis=1, keepdims=True)) ** 2)) if n else 1.0
    spread = max(spread, 1e-6)
    theta = np.concatenate([[1.0], b0])

    def loss(parameters: np.ndarray) -> float:
        u = parameters[0] * z + parameters[1:]
        top = u.max(axis=1, keepdims=True)
        lse = top[:, 0] + np.log(np.exp(u - top).sum(axis=1))
        penalty = spread * (parameters[0] - 1.0) ** 2 + np.sum((parameters[1:] - b0) ** 2)
        return float(np.sum(lse - (u * onehot).sum(axis=1)) + 0.5 * strength * penalty)

    value = loss(theta)
    for _ in range(max_iterations):
        u = theta[0] * z + theta[1:]
        p = np.exp(u - u.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        residual = p - onehot
        pz = (p * z).sum(axis=1)
        gradient = np.concatenate(
            [
                [np.sum(residual * z) + strength * spread * (theta[0] - 1.0)],
                residual.sum(axis=0) + strength * (theta[1:] - b0),
            ]
        )
        hessian = np.empty((n_classes + 1, n_classes + 1))
        hessian[0, 0] = np.sum(p * z * z) - np.sum(pz**2) + strength * spread
        cross = (p * z - p * pz[:, None]).sum(axis=0)
        hessian[0, 1:] = hessian[1:, 0] = cross
        hessian[1:, 1:] = np.diag(p.sum(axis=0)) - p.T @ p + strength * np.eye(n_classes)
        step = np.linalg.solve(hessian, -gradient)
        length = 1.0
        while True:  # backtrack: the loss is convex, so a short enough step lowers it
            candidate = theta + length * step
            if candidate[0] > 1e-3:
                candidate_value = loss(candidate)
                if candidate_value <= value + 1e-12:
                    break
            length /= 2.0
            if length < 1e-8:
                return float(theta[0]), theta[1:].copy()
        moved = float(np.max(np.abs(candidate - theta)))
        theta, value = candidate, candidate_value
        if moved < 1e-8:
            break
    return float(theta[0]), theta[1:].copy()


def log_loss(log_p: np.ndarray, labels: np.ndarray, scale: float, offset: np.ndarray) -> float:
    """Mean negative log-likelihood of softmax(scale log p + offset) on labelled rows."""
    u = scale * np.asarray(log_p, dtype=np.float64) + offset
    top = u.max(axis=1, keepdims=True)
    lse = top[:, 0] + np.log(np.exp(u - top).sum(axis=1))
    return float(np.mean(lse - u[np.arange(len(u)), np.asarray(labels, dtype=np.int64)]))


def decision_rule(
    scale: float, offset: np.ndarray, decide_on: np.ndarray, objective: str
) -> ScoreRule:
    """The plug-in decision for ``objective`` on the corrected posteriors of ``decide_on``
    (rows believed to follow the target: log-posteriors (n, C)), as one :class:`ScoreRule`."""
    u = scale * np.asarray(decide_on, dtype=np.float64) + offset
    q = np.exp(u - u.max(axis=1, keepdims=True))
    q /= q.sum(axis=1, keepdims=True)
    weights = plugin_weights(q, objective)
    return ScoreRule("corrected", offset + np.log(np.maximum(weights, 1e-12)), scale)


def fit_correction(
    log_p: np.ndarray,
    labels: np.ndarray,
    base_offset: np.ndarray,
    objective: str,
    *,
    decide_on: np.ndarray | None = None,
    strengths: tuple[float, ...] = STRENGTHS,
    seed: int = 0,
) -> Correction:
    """The score correction on labelled target rows, its strength chosen by cross-validation.

    Args:
        log_p: the labelled rows' log-posteriors, (n, C), n >= :data:`N_FOLDS`.
        labels: their labels, (n,).
        base_offset: b0, the unlabelled reading's offsets, (C,).
        objective: one of :data:`adaptable.core.decision.OBJECTIVES`.
        decide_on: the rows the plug-in decision is taken over (e.g. a sample of the unlabelled
            stream), (m, C); ``None``: the labelled rows themselves (each fold's own).
        strengths: the grid of penalty strengths.
        seed: seeds the fold assignment.

    Returns:
        :class:`Correction`.

    Raises:
        ValueError: fewer rows than folds.
    """
    log_p = np.asarray(log_p, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    base_offset = np.asarray(base_offset, dtype=np.float64)
    n = len(labels)
    if n < N_FOLDS:
        raise ValueError(f"fit_correction needs at least {N_FOLDS} labelled rows; got {n}.")
    folds = np.random.default_rng(seed).permutation(n) % N_FOLDS
    best: tuple[float, float, np.ndarray] | None = None  # (cv loss, strength, out-of-fold)
    for strength in strengths:
        losses, out_of_fold = [], np.zeros(n, dtype=np.int64)
        for fold in range(N_FOLDS):
            train, test = folds != fold, folds == fold
            scale, offset = fit_affine(log_p[train], labels[train], base_offset, strength)
            losses.append(log_loss(log_p[test], labels[test], scale, offset) * test.sum())
            rows = log_p[train] if decide_on is None else decide_on
            out_of_fold[test] = decision_rule(scale, offset, rows, objective).predict(log_p[test])
        cv = float(np.sum(losses) / n)
        if best is None or cv < best[0]:
            best = (cv, strength, out_of_fold)
    cv, strength, out_of_fold = best
    scale, offset = fit_affine(log_p, labels, base_offset, strength)
    rule = decision_rule(scale, offset, log_p if decide_on is None else decide_on, objective)
    return Correction(
        scale,
        offset,
        rule,
        strength,
        out_of_fold,
        cv,
        log_loss(log_p, labels, 1.0, base_offset),
    )

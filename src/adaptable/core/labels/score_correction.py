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
(:func:`.rule_choice.compare_rules`) judges the correction on rows it was not fitted on, so it is used
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

from adaptable.core.decision.rules import macro_f1_thresholds, plugin_weights
from adaptable.core.labels.rule_choice import ScoreRule

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
    scales, offsets = fit_affine_many(
        log_p,
        labels,
        base_offset,
        np.array([strength], dtype=np.float64),
        np.ones((1, len(labels)), dtype=bool),
        max_iterations=max_iterations,
    )
    return float(scales[0]), offsets[0]


def log_loss(log_p: np.ndarray, labels: np.ndarray, scale: float, offset: np.ndarray) -> float:
    """Mean negative log-likelihood of softmax(scale log p + offset) on labelled rows."""
    u = scale * np.asarray(log_p, dtype=np.float64) + offset
    top = u.max(axis=1, keepdims=True)
    lse = top[:, 0] + np.log(np.exp(u - top).sum(axis=1))
    return float(np.mean(lse - u[np.arange(len(u)), np.asarray(labels, dtype=np.int64)]))


def decision_rule(
    scale: float,
    offset: np.ndarray,
    decide_on: np.ndarray,
    objective: str,
    class_factor: np.ndarray | None = None,
) -> ScoreRule:
    """The plug-in decision for ``objective`` on the corrected posteriors of ``decide_on``
    (rows believed to follow the target: log-posteriors (n, C)), as one :class:`ScoreRule`;
    ``class_factor`` (C,) multiplies the plug-in weights (see :func:`fit_correction`)."""
    u = scale * np.asarray(decide_on, dtype=np.float64) + offset
    q = np.exp(u - u.max(axis=1, keepdims=True))
    q /= q.sum(axis=1, keepdims=True)
    weights = plugin_weights(q, objective)
    if class_factor is not None:
        weights = weights * class_factor
    return ScoreRule("corrected", offset + np.log(np.maximum(weights, 1e-12)), scale)


def fit_correction(
    log_p: np.ndarray,
    labels: np.ndarray,
    base_offset: np.ndarray,
    objective: str,
    *,
    decide_on: np.ndarray | None = None,
    class_factor: np.ndarray | None = None,
    strengths: tuple[float, ...] = STRENGTHS,
    seed: int = 0,
) -> Correction:
    """The score correction on labelled target rows, its strength chosen by cross-validation.

    Every fit (each strength on each fold's training rows, and each strength on all rows) is
    one Newton run of :func:`fit_affine_many`, all run together; the result is
    :func:`fit_affine`'s, fit by fit, to the Newton tolerance.

    Args:
        log_p: the labelled rows' log-posteriors, (n, C), n >= :data:`N_FOLDS`.
        labels: their labels, (n,).
        base_offset: b0, the unlabelled reading's offsets, (C,).
        objective: one of :data:`adaptable.core.decision.rules.OBJECTIVES`.
        decide_on: the rows the plug-in decision is taken over (e.g. a sample of the unlabelled
            stream), (m, C); ``None``: the labelled rows themselves (each fold's own).
        class_factor: multiplies the plug-in weights of every fit's decision, (C,) (e.g.
            :func:`adaptable.core.decision.rules.presence_factor`); ``None``: no factor.
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
    n_strengths = len(strengths)
    # fits (strength s, fold f) at s * N_FOLDS + f, then each strength on all rows
    training = np.concatenate(
        [
            np.tile(folds[None, :] != np.arange(N_FOLDS)[:, None], (n_strengths, 1)),
            np.ones((n_strengths, n), dtype=bool),
        ]
    )
    grid = np.concatenate([np.repeat(strengths, N_FOLDS), strengths]).astype(np.float64)
    scales, offsets = fit_affine_many(log_p, labels, base_offset, grid, training)
    cv_fits = n_strengths * N_FOLDS
    # each row's out-of-fold log-loss and decision under each strength: the fit of its fold
    own = np.arange(n_strengths)[:, None] * N_FOLDS + folds[None, :]  # (S, n)
    u = scales[own][:, :, None] * log_p[None] + offsets[own]  # (S, n, C)
    top = u.max(axis=2)
    losses = top + np.log(np.exp(u - top[:, :, None]).sum(axis=2)) - u[:, np.arange(n), labels]
    cv = losses.sum(axis=1) / n
    best = int(np.argmin(cv))  # the first of equal losses: the smaller strength
    # the out-of-fold decisions of the chosen strength's fold fits (only they are kept)
    chosen = slice(best * N_FOLDS, (best + 1) * N_FOLDS)
    weights = _plugin_weights_many(
        scales[chosen], offsets[chosen], log_p, training[chosen], decide_on, objective
    )
    if class_factor is not None:
        weights = weights * class_factor
    fold_rules = offsets[chosen] + np.log(np.maximum(weights, 1e-12))
    out_of_fold = (scales[chosen][folds, None] * log_p + fold_rules[folds]).argmax(axis=1)
    scale, offset = float(scales[cv_fits + best]), offsets[cv_fits + best].copy()
    rows = log_p if decide_on is None else decide_on
    rule = decision_rule(scale, offset, rows, objective, class_factor)
    return Correction(
        scale,
        offset,
        rule,
        float(strengths[best]),
        out_of_fold,
        float(cv[best]),
        log_loss(log_p, labels, 1.0, base_offset),
    )


def fit_affine_many(
    log_p: np.ndarray,
    labels: np.ndarray,
    base_offset: np.ndarray,
    strengths: np.ndarray,
    training: np.ndarray,
    *,
    max_iterations: int = 50,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`fit_affine` for several fits at once: fit k on the rows ``training[k]`` with
    penalty ``strengths[k]``, each its own Newton run (same steps, backtracking and stopping
    rule), computed together over the rows (numpy's per-call cost paid once per step, not once
    per fit).

    Args:
        log_p: the rows' log-posteriors, (n, C).
        labels: their labels, (n,).
        base_offset: b0, (C,).
        strengths: each fit's penalty weight (> 0), (K,).
        training: which rows each fit reads, (K, n) booleans, at least one per fit.

    Returns:
        (a, b): the scales (K,) and offsets (K, C).

    Example:
        >>> z = np.log(np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]]))
        >>> y = np.array([0, 1, 1, 1])
        >>> a, b = fit_affine_many(z, y, np.zeros(2), np.array([1.0, 4.0]), np.ones((2, 4), bool))
        >>> one = fit_affine(z, y, np.zeros(2), 4.0)
        >>> bool(np.isclose(a[1], one[0]) and np.allclose(b[1], one[1]))
        True
    """
    z = np.asarray(log_p, dtype=np.float64)
    n, n_classes = z.shape
    weights = np.asarray(training, dtype=np.float64)  # (K, n)
    strengths = np.asarray(strengths, dtype=np.float64)
    n_fits = len(weights)
    b0 = np.asarray(base_offset, dtype=np.float64)
    counts = weights.sum(axis=1)
    deviation = ((z - z.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
    spread = np.where(counts > 0, weights @ deviation / np.maximum(counts * n_classes, 1), 1.0)
    spread = np.maximum(spread, 1e-6)
    # class-major (C, n): the sums over the classes are then sums of contiguous rows
    zt = np.ascontiguousarray(z.T)
    onehot = (np.asarray(labels, dtype=np.int64) == np.arange(n_classes)[:, None]).astype(float)
    theta = np.tile(np.concatenate([[1.0], b0]), (n_fits, 1))  # (K, 1 + C)
    eye = np.eye(n_classes)

    def scores(parameters: np.ndarray) -> np.ndarray:
        return parameters[:, :1, None] * zt + parameters[:, 1:, None]  # (k, C, n)

    def losses(parameters: np.ndarray, fits: np.ndarray) -> np.ndarray:
        """The penalised loss of the given fits at their parameters (k, 1 + C)."""
        u = scores(parameters)
        top = u.max(axis=1)
        lse = top + np.log(np.exp(u - top[:, None]).sum(axis=1))
        fitted = ((lse - (u * onehot).sum(axis=1)) * weights[fits]).sum(axis=1)
        penalty = spread[fits] * (parameters[:, 0] - 1.0) ** 2
        penalty += ((parameters[:, 1:] - b0) ** 2).sum(axis=1)
        return fitted + 0.5 * strengths[fits] * penalty

    value = losses(theta, np.arange(n_fits))
    active = np.ones(n_fits, dtype=bool)
    for _ in range(max_iterations):
        if not active.any():
            break
        at = np.flatnonzero(active)
        t, w, s = theta[at], weights[at], strengths[at]
        u = scores(t)
        p = np.exp(u - u.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        wp = p * w[:, None]
        residual = (p - onehot) * w[:, None]
        pz = (p * zt).sum(axis=1)  # (k, n)
        gradient = np.empty((len(at), n_classes + 1))
        gradient[:, 0] = (residual * zt).sum(axis=(1, 2)) + s * spread[at] * (t[:, 0] - 1.0)
        gradient[:, 1:] = residual.sum(axis=2) + s[:, None] * (t[:, 1:] - b0)
        hessian = np.empty((len(at), n_classes + 1, n_classes + 1))
        hessian[:, 0, 0] = (wp * zt * zt).sum(axis=(1, 2)) - (w * pz**2).sum(axis=1)
        hessian[:, 0, 0] += s * spread[at]
        cross = (wp * (zt - pz[:, None])).sum(axis=2)
        hessian[:, 0, 1:] = cross
        hessian[:, 1:, 0] = cross
        hessian[:, 1:, 1:] = (
            wp.sum(axis=2)[:, :, None] * eye
            - np.einsum("kin,kjn->kij", wp, p)
            + s[:, None, None] * eye
        )
        step = np.linalg.solve(hessian, -gradient[:, :, None])[:, :, 0]
        # backtrack each fit: the loss is convex, so a short enough step lowers it
        length = np.ones(len(at))
        pending = np.ones(len(at), dtype=bool)
        candidate = t.copy()
        candidate_value = value[at].copy()
        while pending.any():
            trial = t[pending] + length[pending, None] * step[pending]
            trial_value = np.full(len(trial), np.inf)
            positive = trial[:, 0] > 1e-3
            if positive.any():
                fits = at[np.flatnonzero(pending)[positive]]
                trial_value[positive] = losses(trial[positive], fits)
            accepted = trial_value <= value[at][pending] + 1e-12
            where = np.flatnonzero(pending)
            candidate[where[accepted]] = trial[accepted]
            candidate_value[where[accepted]] = trial_value[accepted]
            pending[where[accepted]] = False
            length[where[~accepted]] /= 2.0
            stuck = pending & (length < 1e-8)
            if stuck.any():  # no step lowers the loss: the fit stops where it is
                active[at[stuck]] = False
                pending[stuck] = False
        moving = active[at]
        moved = np.abs(candidate - t).max(axis=1)
        theta[at[moving]] = candidate[moving]
        value[at[moving]] = candidate_value[moving]
        active[at[moving & (moved < 1e-8)]] = False
    return theta[:, 0].copy(), theta[:, 1:].copy()


def _plugin_weights_many(
    scales: np.ndarray,
    offsets: np.ndarray,
    log_p: np.ndarray,
    training: np.ndarray,
    decide_on: np.ndarray | None,
    objective: str,
) -> np.ndarray:
    """Each fit's plug-in class weights, (K, C), as :func:`decision_rule` takes them: over
    ``decide_on`` (or each fit's own training rows), under its corrected posteriors."""
    if decide_on is not None and objective == "macro_f1" and log_p.shape[1] == 2:
        # class by class, as decision_rule's softmax computes them (the same numbers)
        rows = np.asarray(decide_on, dtype=np.float64).T
        u0 = scales[:, None] * rows[0] + offsets[:, :1]
        u1 = scales[:, None] * rows[1] + offsets[:, 1:]
        top = np.maximum(u0, u1)
        e0, e1 = np.exp(u0 - top), np.exp(u1 - top)
        thresholds = macro_f1_thresholds(e1 / (e0 + e1))
        return np.stack([thresholds, 1.0 - thresholds], axis=1)
    weights = np.empty_like(offsets)
    for k, (scale, offset) in enumerate(zip(scales, offsets, strict=True)):
        rows = log_p[training[k]] if decide_on is None else decide_on
        u = scale * np.asarray(rows, dtype=np.float64) + offset
        q = np.exp(u - u.max(axis=1, keepdims=True))
        q /= q.sum(axis=1, keepdims=True)
        weights[k] = plugin_weights(q, objective)
    return weights

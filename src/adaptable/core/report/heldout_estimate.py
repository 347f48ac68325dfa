"""The drift report's calibration-free estimate: the stream's label distribution by black-box
shift estimation, and the objective from the held-out rows' confusion rates.

Under pure label shift p(x | y) does not move, so whatever a fixed rule does to the rows of a
class on the held-out source rows it does on the target too: the rule's confusion rates
R[y, k] = P(rule predicts k | y), measured on the held-out rows, carry over, and the expected
confusion of n target rows is n p_t(y) R[y, k]. What remains is p_t, the target label
distribution. Estimated from the model's posteriors it inherits their miscalibration; black-box
shift estimation with soft predictions (BBSE-soft; Lipton, Wang and Smola 2018, Section 5)
needs none: the stream's mean posterior mu satisfies mu = C w with C[i, j] the held-out mean of
p(yhat = i | x) [y = j] and w_j = p_t(j) / p_s(j), so w = C^{-1} mu. It is unbiased whatever the
calibration, and noisy on short streams (no prior to shrink towards).

The adapter's rule on a batch is a class offset on the model's log-posteriors (argmax of
log p(y | x) + b) for every unlabelled rule and the labelled rules that re-weight classes:
:func:`class_offsets` reads b from the output where it reproduces the batch's decisions, and
:func:`offset_rates` measures that rule on the held-out rows. A rule that is no offset (a
fitted score correction that scales the scores) has none, and its estimate is NaN.

Valid only under pure label shift: the report shows it where the moment test accepts.

>>> soft = np.array([[0.4, 0.1], [0.1, 0.4]])  # held-out joint (yhat, y), balanced source
>>> bbse_priors(np.array([[0.7, 0.3]]), soft, np.array([0.5, 0.5])).round(3).tolist()
[[0.833, 0.167]]
"""

from __future__ import annotations

import numpy as np

from adaptable.core.decision.distinct_rows import unique_rows
from adaptable.core.decision.rules import OBJECTIVES, score

#: the cap of the report's deviations: two of them already cover any miss between two values
#: in [0, 1], and the delta method, which a nearly absent class blows up (its gradient grows
#: as one over its count), can give far more
LARGEST_DEVIATION = 0.5


def soft_confusion(proba: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """C[i, j] = mean over the rows of p(yhat = i | x) [y = j], (C, C), from predicted
    probabilities (n, C) and label codes (n,)."""
    n_classes = proba.shape[1]
    joint = np.zeros((n_classes, n_classes))
    np.add.at(joint.T, labels, proba)
    return joint / max(len(labels), 1)


def bbse_priors(
    mean_posteriors: np.ndarray, soft: np.ndarray, label_shares: np.ndarray
) -> np.ndarray:
    """BBSE-soft's label distributions for several streams' mean posteriors (B, C): w solves
    ``soft @ w = mu`` (least squares: the held-out matrix can be singular), clipped at zero,
    times the held-out label shares, normalised; the held-out shares where every weight clips.
    Returns (B, C)."""
    weights = np.linalg.lstsq(soft, np.asarray(mean_posteriors, dtype=np.float64).T, rcond=None)[0]
    priors = np.clip(weights, 0.0, None).T * label_shares
    totals = priors.sum(axis=1, keepdims=True)
    return np.where(totals > 0, priors / np.where(totals > 0, totals, 1.0), label_shares)


def class_offsets(
    output: np.ndarray, model_proba: np.ndarray, predictions: np.ndarray, starts: np.ndarray
) -> np.ndarray:
    """Each batch's class offsets b (C,) of its rule on the model's log-posteriors, centred to
    mean zero: read from the batch's first row (log output - log model), and kept where the
    offset reproduces the rule's decisions on every row of the batch (argmax of
    model_proba * exp(b) equals ``predictions``), NaN otherwise (a rule that scales the scores,
    or a first row with a zero probability). The batches' rows stacked: ``output``,
    ``model_proba`` (n, C), ``predictions`` (n,); each batch's first row ``starts`` (B,).
    Returns (B, C)."""
    sizes = np.diff(np.append(starts, len(output)))
    # (a zero probability in a first row gives inf or NaN here, refused below)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = output[starts] / model_proba[starts]
        offsets = np.log(ratio)
        offsets -= offsets.mean(axis=1, keepdims=True)
        decided = (model_proba * np.repeat(ratio, sizes, axis=0)).argmax(axis=1) == predictions
    valid = np.logical_and.reduceat(decided, starts) & np.isfinite(offsets).all(axis=1)
    return np.where(valid[:, None], offsets, np.nan)


def offset_rates(log_posteriors: np.ndarray, labels: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The rates R[y, k] = P(argmax(log p + b) = k | y) on the held-out rows of each offset b
    (B, C), (B, C, C); NaN rows of ``offsets`` give NaN. A class absent from the held-out rows
    has rates 0. Offsets that repeat are measured once."""
    n_batches, n_classes = offsets.shape
    out = np.full((n_batches, n_classes, n_classes), np.nan)
    known = np.isfinite(offsets).all(axis=1)
    if not known.any():
        return out
    unique, inverse = unique_rows(offsets[known])
    counts = np.bincount(labels, minlength=n_classes).astype(np.float64)
    per_class = np.where(counts > 0, 1.0 / np.maximum(counts, 1.0), 0.0)
    if n_classes == 2:
        # argmax picks class 1 where log p_1 + b_1 > log p_0 + b_0 (a tie goes to class 0):
        # the share of each class's held-out log-odds above b_0 - b_1, by one sorted search
        odds = log_posteriors[:, 1] - log_posteriors[:, 0]
        cut = unique[:, 0] - unique[:, 1]
        ones = np.empty((len(cut), 2))
        for y in range(2):
            sorted_odds = np.sort(odds[labels == y])
            above = len(sorted_odds) - np.searchsorted(sorted_odds, cut, side="right")
            ones[:, y] = above * per_class[y]
        rates = np.empty((len(cut), 2, 2))
        rates[:, :, 1] = ones
        rates[:, :, 0] = np.where(counts > 0, 1.0 - ones, 0.0)
    else:
        rates = np.empty((len(unique), n_classes, n_classes))
        for index, offset in enumerate(unique):
            predicted = (log_posteriors + offset).argmax(axis=1)
            tallies = np.bincount(labels * n_classes + predicted, minlength=n_classes**2)
            rates[index] = tallies.reshape(n_classes, n_classes)
        rates *= per_class[:, None]
    out[known] = rates[inverse.reshape(-1)]
    return out


def bbse_covariances(
    mean_posteriors: np.ndarray,
    second_moments: np.ndarray,
    rows: np.ndarray,
    soft: np.ndarray,
    label_shares: np.ndarray,
) -> np.ndarray:
    """The delta-method covariance (B, C, C) of :func:`bbse_priors`' estimate from ``rows``
    (B,) rows whose posteriors have mean ``mean_posteriors`` (B, C) and second moment
    ``second_moments`` (B, C, C), the held-out matrix taken as exact: Cov(w) = C^+ S C^+T / n
    with S the posteriors' covariance, carried through the normalisation. NaN where a weight
    clipped at zero: the estimate then sits on the edge of the simplex, where a linear
    approximation says nothing (it would give a deviation of zero)."""
    n_classes = len(label_shares)
    inverse = np.linalg.pinv(soft)
    spread = second_moments - mean_posteriors[:, :, None] * mean_posteriors[:, None, :]
    weights = mean_posteriors @ inverse.T
    weight_cov = inverse @ spread @ inverse.T / np.maximum(rows, 1.0)[:, None, None]
    scaled = np.clip(weights, 0.0, None) * label_shares
    total = scaled.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        prior = scaled / total[:, None]
        # d prior_i / d w_k = a_k (delta_ik - prior_i) / sum_j a_j w_j, a the held-out shares
        jacobian = (np.eye(n_classes) - prior[:, :, None]) * label_shares / total[:, None, None]
    covariance = jacobian @ weight_cov @ jacobian.transpose(0, 2, 1)
    covariance[~(weights > 0).all(axis=1)] = np.nan
    return covariance


def cell_gradient(matrices: np.ndarray, objective: str) -> np.ndarray:
    """The objective's gradient in the cells of each matrix (B, C, C) (rows the true class,
    columns the predicted one), in closed form (:func:`gradient_parts`); NaN where a matrix
    holds NaN.

    Example:
        >>> g = cell_gradient(np.array([[[3.0, 1.0], [1.0, 3.0]]]), "accuracy")
        >>> g[0].round(4).tolist()  # (delta_ij - 0.75) / 8
        [[0.0312, -0.0938], [-0.0938, 0.0312]]
    """
    diagonal, by_row, by_column = gradient_parts(matrices, objective)
    eye = np.eye(diagonal.shape[-1])
    return eye * diagonal[:, :, None] + by_row[:, :, None] + by_column[:, None, :]


def gradient_parts(matrices: np.ndarray, objective: str) -> tuple[np.ndarray, ...]:
    """The objective's gradient in the cells of each matrix (B, C, C) as three vectors (B, C):
    g_ij = a_i delta_ij + h_i + w_j. NaN where a matrix holds NaN.

    With r_k, s_k a class's row and column sums, t_k = c_kk and P the classes present (as
    :func:`~adaptable.core.decision.rules.score` counts them): accuracy a = 1 / total,
    h = -acc / total, w = 0; balanced accuracy a_i = 1 / (P r_i), h_i = -t_i / (P r_i^2),
    w = 0, for a present row i; macro-F1 a_k = 2 / (P d_k), h_k = w_k = -2 t_k / (P d_k^2),
    d_k = r_k + s_k, for a present class k. Classes absent from a matrix contribute nothing
    (the objective is not differentiable where one would appear), and an empty matrix has a
    zero gradient. A vector u over the true classes that sums to zero (a residual e_y - p, one
    column of a correction) meets only a and h: sum_i g_ik u_i = a_k u_k + h . u.
    """
    matrices = np.asarray(matrices, dtype=np.float64)
    diagonal = np.diagonal(matrices, axis1=1, axis2=2)  # t, (B, C)
    rows = matrices.sum(axis=2)  # r, (B, C)
    with np.errstate(divide="ignore", invalid="ignore"):
        if objective == "accuracy":
            total = rows.sum(axis=1, keepdims=True)
            rows_in = total > 0  # an empty matrix: no class present, a zero gradient
            safe = np.where(rows_in, total, 1.0)
            accuracy = diagonal.sum(axis=1, keepdims=True) / safe
            a = np.broadcast_to(np.where(rows_in, 1.0 / safe, 0.0), rows.shape)
            h = np.broadcast_to(np.where(rows_in, -accuracy / safe, 0.0), rows.shape)
            w = np.zeros_like(rows)
        elif objective == "balanced_accuracy":
            present = rows > 0
            count = np.maximum(present.sum(axis=1, keepdims=True), 1)
            safe = np.where(present, rows, 1.0)
            a = np.where(present, 1.0 / (count * safe), 0.0)
            h = np.where(present, -diagonal / (count * safe**2), 0.0)
            w = np.zeros_like(rows)
        elif objective == "macro_f1":
            sizes = rows + matrices.sum(axis=1)  # d = r + s, (B, C)
            present = sizes > 0
            count = np.maximum(present.sum(axis=1, keepdims=True), 1)
            safe = np.where(present, sizes, 1.0)
            a = np.where(present, 2.0 / (count * safe), 0.0)
            h = np.where(present, -2.0 * diagonal / (count * safe**2), 0.0)
            w = h
        else:
            raise ValueError(f"objective must be one of {OBJECTIVES}; got {objective!r}.")
    nan = np.isnan(matrices).any(axis=(1, 2))
    parts = tuple(np.array(part, dtype=np.float64) for part in (a, h, w))
    for part in parts:
        part[nan] = np.nan
    return parts


def metric_deviation(
    prior: np.ndarray,
    covariance: np.ndarray,
    counts: np.ndarray,
    objective: str,
    gradient: np.ndarray | None = None,
) -> np.ndarray:
    """The standard deviation (B,) of ``score(prior[:, None] * counts)`` when ``prior`` (B, C)
    has covariance ``covariance`` (B, C, C) (delta method); ``counts`` (B, C, C) are the rates
    times the rows. The gradient in ``prior`` comes from the one in the cells
    (:func:`cell_gradient` of ``prior[:, None] * counts``, or ``gradient`` where the caller has
    it): row k of the matrix is ``prior_k`` times row k of ``counts``. NaN where an input is."""
    if gradient is None:
        gradient = cell_gradient(prior[:, :, None] * counts, objective)
    with np.errstate(invalid="ignore"):
        slope = (gradient * counts).sum(axis=2)
        variance = np.einsum("bi,bij,bj->b", slope, covariance, slope)
    known = np.isfinite(prior).all(axis=1) & np.isfinite(counts).all(axis=(1, 2))
    return np.where(known, np.sqrt(np.maximum(variance, 0.0)), np.nan)


#: bootstrap resamples of the held-out rows behind the held-out part of the deviation
HELDOUT_RESAMPLES = 40
#: distinct adapter rules the resamples measure at most (:func:`rules_on_grid`)
RESAMPLED_RULES = 256


def rules_on_grid(offsets: np.ndarray) -> np.ndarray:
    """``offsets`` rounded to 3 decimals, or fewer until at most :data:`RESAMPLED_RULES`
    distinct finite rows remain (NaN rows stay NaN)."""
    finite = offsets[np.isfinite(offsets).all(axis=1)]
    for decimals in (3, 2, 1, 0):
        rounded = np.round(offsets, decimals)
        if len(unique_rows(np.round(finite, decimals))[0]) <= RESAMPLED_RULES:
            break
    return rounded


def _point_estimates(
    mean: np.ndarray,
    rows: np.ndarray,
    offsets: np.ndarray,
    heldout: tuple[np.ndarray, np.ndarray, np.ndarray],
    objective: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The label distribution (B, C), the two rules' expected counts so far (B, 2, C, C) and
    their objective (B, 2), from the stream's mean posteriors so far (B, C) and the held-out
    rows (``heldout``: log-posteriors, posteriors, labels); then the held-out soft confusion
    matrix and label shares they came from. NaN where an input is."""
    log_posteriors, proba, labels = heldout
    n_classes = mean.shape[1]
    seen = np.cumsum(rows)
    shares = np.bincount(labels, minlength=n_classes) / max(len(labels), 1)
    soft = soft_confusion(proba, labels)
    known = np.isfinite(mean).all(axis=1)
    prior = np.full_like(mean, np.nan)
    if known.any():
        prior[known] = bbse_priors(mean[known], soft, shares)
    source_rates = offset_rates(log_posteriors, labels, np.zeros((1, n_classes)))[0]
    adapter_rates = np.cumsum(offset_rates(log_posteriors, labels, offsets) * rows[:, None, None],
                              axis=0)  # fmt: skip
    counts = np.stack([seen[:, None, None] * source_rates, adapter_rates], axis=1)
    matrices = prior[:, None, :, None] * counts
    scores = np.full((len(rows), 2), np.nan)
    valid = np.isfinite(matrices).all(axis=(2, 3)) & (seen > 0)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        for r in range(2):
            if valid[:, r].any():
                scores[valid[:, r], r] = score(matrices[valid[:, r], r], objective)
    return prior, counts, scores, soft, shares


def realised_variance(
    matrices: np.ndarray, objective: str, gradient: np.ndarray | None = None
) -> np.ndarray:
    """The variance (B,) of the objective of multinomial confusion counts whose expectation is
    ``matrices`` (B, C, C) (their sum the rows): N sum_i g_i^2 pi_i, g the objective's gradient
    in the cells (:func:`cell_gradient`, or ``gradient`` where the caller has it), pi the
    cells' shares (the multinomial's covariance N (diag pi - pi pi^T); its second term drops:
    every objective is a ratio of counts, so sum_i g_i pi_i = 0). The part of a realised
    value's distance from its expectation that no estimate can know."""
    if gradient is None:
        gradient = cell_gradient(matrices, objective)
    total = matrices.sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        shares = matrices / total[:, None, None]
        return total * (gradient**2 * shares).sum(axis=(1, 2))


def stream_estimates(
    rows: np.ndarray,
    offsets: np.ndarray,
    moments: np.ndarray,
    log_posteriors: np.ndarray,
    labels: np.ndarray,
    objective: str,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The calibration-free estimates of a stream after each batch, from the batches' rows
    (B,), rule offsets (B, C; NaN: no offset rule) and sums of the model's posteriors' outer
    products (B, C, C; their rows sum to the posteriors' sums, as each posterior sums to one),
    and the held-out rows' log-posteriors (m, C) and labels (m,).

    Returns:
        the BBSE-soft label distribution of the stream so far (B, C); the ``objective`` of the
        unadapted model [0] and of the adapter [1] from the held-out confusion rates under it
        (B, 2; the adapter's NaN from a batch without an offset on); and the standard
        deviation of the realised objective around each estimate (B, 2), three variances
        added: the stream's own noise in the estimate (delta method, :func:`bbse_covariances`),
        the held-out rows' (:data:`HELDOUT_RESAMPLES` bootstrap resamples of them, drawn from
        ``seed``) and the realised value's around its expectation
        (:func:`realised_variance`), the deviation capped at :data:`LARGEST_DEVIATION`. NaN
        where the stream has no rows yet or an input is NaN.
    """
    seen = np.cumsum(rows)
    per_row = 1.0 / np.maximum(seen, 1.0)[:, None]
    moment = np.cumsum(moments, axis=0) * per_row[:, :, None]
    mean = moment.sum(axis=2)
    heldout = (log_posteriors, np.exp(log_posteriors), labels)
    prior, counts, scores, soft, shares = _point_estimates(mean, rows, offsets, heldout, objective)
    covariance = bbse_covariances(mean, moment, seen, soft, shares)
    rng = np.random.default_rng(seed)
    # the resamples measure the offset rules on a grid (log class weights rounded, to 1e-3 or
    # coarser until at most RESAMPLED_RULES distinct rules remain): the held-out noise of a
    # rule's rates barely depends on the rule, and a long stream's rules are many
    coarse = rules_on_grid(offsets)
    resampled = []
    for _ in range(HELDOUT_RESAMPLES):
        pick = rng.integers(0, len(labels), len(labels))
        picked = tuple(values[pick] for values in heldout)
        resampled.append(_point_estimates(mean, rows, coarse, picked, objective)[2])
    # the variance over the resamples whose estimate exists (a resample can miss a rare class)
    replicas = np.stack(resampled)
    finite = np.isfinite(replicas)
    usable = finite.sum(axis=0)
    centre = np.where(finite, replicas, 0.0).sum(axis=0) / np.maximum(usable, 1)
    squares = np.where(finite, replicas - centre, 0.0) ** 2
    spread = np.where(usable >= 2, squares.sum(axis=0) / np.maximum(usable, 1), np.nan)
    deviations = np.full((len(rows), 2), np.nan)
    for r in range(2):
        # one cell gradient serves the stream's part (through the prior) and the realised one
        matrices = prior[:, :, None] * counts[:, r]
        gradient = cell_gradient(matrices, objective)
        stream = metric_deviation(prior, covariance, counts[:, r], objective, gradient) ** 2
        realised = realised_variance(matrices, objective, gradient)
        deviations[:, r] = np.minimum(np.sqrt(stream + spread[:, r] + realised), LARGEST_DEVIATION)
    deviations[~np.isfinite(scores)] = np.nan
    prior[seen == 0] = np.nan
    return prior, scores, deviations

"""The drift summary's estimate under covariate shift: the held-out source rows re-weighted to
look like the stream, by a domain classifier on the features.

Under covariate shift p(y | x) does not move, only p(x): the expected confusion of a fixed rule
on the stream is the held-out rows' confusion with each row weighted by
w(x) = p_stream(x) / p_heldout(x) (importance weighting). A logistic regression told apart the
held-out rows' encoded features from a uniform sample of the stream's
(:func:`domain_weights`; its odds are w up to a constant), cross-fitted so that no row's weight
comes from a classifier that saw it. Their effective number of rows (:func:`effective_rows`,
Kish's, of the weights as fitted) says how much of the held-out set still speaks for the
stream: where the stream lies where the held-out rows do not, it collapses, and no estimate is
read. The estimate itself reads them clipped at :data:`WEIGHT_CAP` times their mean
(:func:`clipped`), so that no row carries it alone.

The weighted estimate (:func:`weighted_estimates`) is then set beside the objective expected
under the model's own posteriors on the stream, whose bias under a covariate shift is unknown
but bounded in practice: each is weighted by its precision, the posteriors' with the spread
:data:`POSTERIORS_BIAS` (:func:`combined`). Where the weights speak for many rows the weighted
estimate dominates; where they speak for few, the posteriors do, and the deviation stays wide.

What this cannot see: a change of p(y | x) (a feature that moved is missing from the columns,
or the labels mean something else now). Labelled rows check it (the label-corrected estimate).

>>> rng = np.random.default_rng(0)
>>> held, stream = rng.normal(size=(400, 1)), rng.normal(0.5, 1.0, size=(400, 1))
>>> weights = domain_weights(held, stream, seed=0)
>>> bool(weights[held[:, 0] > 1].mean() > weights[held[:, 0] < -1].mean())
True
"""

from __future__ import annotations

import numpy as np

from adaptable.core.decision.rules import score
from adaptable.core.report.heldout_estimate import (
    LARGEST_DEVIATION,
    cell_gradient,
    realised_variance,
    rules_on_grid,
)

#: the folds of the cross-fitting: each held-out row is weighted by a classifier fitted
#: without it
FOLDS = 5
#: the domain classifier's inverse regularisation strength (scikit-learn's ``C``, on features
#: standardised and one-hot encoded by the adapter's Encoder)
REGULARISATION = 1.0
#: no weight above this many times the mean weight
WEIGHT_CAP = 20.0
#: the spread (a fraction of the objective) assumed for the bias of the estimate under the
#: model's own posteriors on a covariate-shifted stream, when it is set beside the weighted one
#: (docs/research/monitoring_vs_nannyml.md)
POSTERIORS_BIAS = 0.03


def design_matrix(numeric: np.ndarray, codes: np.ndarray, widths: np.ndarray) -> np.ndarray:
    """The rows as the domain classifier reads them: the standardised numbers, then one
    one-hot block per categorical column of ``widths[j]`` columns (code -1, a category unseen
    at fit, is an all-zero block). Returns float64 (n, D_num + sum(widths))."""
    n = len(numeric)
    blocks = [np.asarray(numeric, dtype=np.float64).reshape(n, -1)]
    for j, width in enumerate(np.asarray(widths, dtype=np.int64)):
        onehot = np.zeros((n, int(width)))
        column = codes[:, j]
        known = (column >= 0) & (column < width)
        onehot[np.flatnonzero(known), column[known]] = 1.0
        blocks.append(onehot)
    return np.hstack(blocks)


def domain_weights(heldout: np.ndarray, stream: np.ndarray, seed: int = 0) -> np.ndarray:
    """The importance weights (m,) of the held-out rows ``heldout`` (m, D) towards the stream
    rows ``stream`` (n, D): the odds of a logistic regression that tells the stream from the
    held-out rows, each held-out row's from the fold of :data:`FOLDS` that left it out,
    scaled to mean one.

    Raises:
        ValueError: fewer than :data:`FOLDS` rows on either side.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold

    m, n = len(heldout), len(stream)
    if min(m, n) < FOLDS:
        raise ValueError(f"domain_weights needs {FOLDS} rows on each side; got {m} and {n}.")
    X = np.vstack([heldout, stream])
    side = np.r_[np.zeros(m, dtype=np.int64), np.ones(n, dtype=np.int64)]
    log_odds = np.zeros(m)
    folds = StratifiedKFold(FOLDS, shuffle=True, random_state=seed)
    for train, test in folds.split(X, side):
        classifier = LogisticRegression(C=REGULARISATION, max_iter=1000)
        classifier.fit(X[train], side[train])
        mine = test[test < m]
        log_odds[mine] = classifier.decision_function(X[mine])
    # (the odds relative to their largest: no overflow; the scale cancels)
    weights = np.exp(log_odds - log_odds.max())
    return weights / weights.mean()


def clipped(weights: np.ndarray) -> np.ndarray:
    """``weights`` with none above :data:`WEIGHT_CAP` times their mean (the cap moves the
    mean: a few passes settle it)."""
    weights = np.asarray(weights, dtype=np.float64)
    for _ in range(3):
        weights = np.minimum(weights, WEIGHT_CAP * weights.mean())
    return weights


def effective_rows(weights: np.ndarray) -> float:
    """Kish's effective number of rows of a weighted sample, (sum w)^2 / sum w^2: m for equal
    weights, 1 where one row holds all the weight."""
    weights = np.asarray(weights, dtype=np.float64)
    total = float((weights**2).sum())
    return float(weights.sum() ** 2 / total) if total > 0 else 0.0


def _rule_mixture(
    log_posteriors: np.ndarray, offsets: np.ndarray, rows: np.ndarray
) -> tuple[np.ndarray, bool]:
    """Q[i, k]: the share of the stream's rows whose rule predicts class k for held-out row i,
    (m, C): each batch's rule an offset on the log-posteriors (argmax of log p + b), weighted
    by the batch's rows; and whether every batch had one (else Q is NaN)."""
    m, n_classes = log_posteriors.shape
    if not np.isfinite(offsets).all():
        return np.full((m, n_classes), np.nan), False
    coarse = rules_on_grid(offsets)
    unique, inverse = np.unique(coarse, axis=0, return_inverse=True)
    totals = np.bincount(inverse.reshape(-1), weights=rows, minlength=len(unique))
    shares = totals / max(totals.sum(), 1.0)
    mixture = np.zeros((m, n_classes))
    for offset, share in zip(unique, shares, strict=True):
        predicted = (log_posteriors + offset).argmax(axis=1)
        mixture[np.arange(m), predicted] += share
    return mixture, True


def _influence(mixture: np.ndarray, labels: np.ndarray, shares: np.ndarray, objective: str):
    """The objective of the confusion sum_i shares_i e_{y_i} Q_i^T and each row's influence on
    it (the delta method: the gradient in the cells at row i's cells, less its mean)."""
    n_classes = mixture.shape[1]
    matrix = np.zeros((n_classes, n_classes))
    np.add.at(matrix, labels, shares[:, None] * mixture)
    gradient = cell_gradient(matrix[None], objective)[0]
    influence = (gradient[labels] * mixture).sum(axis=1) - float((gradient * matrix).sum())
    return float(score(matrix, objective)), influence, matrix


def weighted_estimates(
    log_posteriors: np.ndarray,
    labels: np.ndarray,
    weights: np.ndarray,
    offsets: np.ndarray,
    rows: np.ndarray,
    objective: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The objective of the unadapted model [0] and of the adapter [1] on a stream of
    ``rows.sum()`` rows, from the held-out rows (log-posteriors (m, C), labels (m,)) weighted
    by ``weights`` (m,; :func:`clipped` here): the model's argmax, and each batch's rule (``offsets`` (B, C), class
    offsets on the log-posteriors; NaN: a rule that is none, and the adapter's estimate is
    NaN) in proportion to its ``rows`` (B,).

    Returns:
        the two estimates (2,); the deviation of the realised value around each (2,): the
        weighted rows' noise (delta method, sum_i (w_i / sum w)^2 f_i^2, f the row's influence)
        and the realised value's own (:func:`realised_variance`); and the deviation of the drop
        from the held-out level (the unweighted argmax on the same rows) to each (2,), in which
        the rows' shared noise cancels. Deviations capped at :data:`LARGEST_DEVIATION`.
    """
    labels = np.asarray(labels, dtype=np.int64)
    m, n_classes = log_posteriors.shape
    weights = clipped(weights)
    shares = weights / float(weights.sum())
    even = np.full(m, 1.0 / m)
    argmax = np.zeros((m, n_classes))
    argmax[np.arange(m), log_posteriors.argmax(axis=1)] = 1.0
    _, level_influence, _ = _influence(argmax, labels, even, objective)
    adapter, known = _rule_mixture(log_posteriors, offsets, np.asarray(rows, dtype=np.float64))
    values, deviations, drops = np.full(2, np.nan), np.full(2, np.nan), np.full(2, np.nan)
    n_rows = float(np.sum(rows))
    for r, mixture in enumerate((argmax, adapter)):
        if r == 1 and not known:
            continue
        value, influence, matrix = _influence(mixture, labels, shares, objective)
        realised = realised_variance(matrix[None] * n_rows, objective)[0]
        spread = float((shares**2 * influence**2).sum())
        paired = float(((shares * influence - even * level_influence) ** 2).sum())
        values[r] = value
        deviations[r] = min(np.sqrt(spread + realised), LARGEST_DEVIATION)
        drops[r] = min(np.sqrt(paired + realised), LARGEST_DEVIATION)
    return values, deviations, drops


def combined(
    weighted: float, weighted_sd: float, posteriors: float, bias: float = POSTERIORS_BIAS
) -> tuple[float, float, float]:
    """The weighted estimate and the posteriors' set together by their precisions: the
    weighted one's ``1 / weighted_sd**2``, the posteriors' ``1 / bias**2``. Returns the
    estimate, its deviation and the weighted estimate's share in it (NaN where the weighted
    estimate is: the posteriors' alone, share 0).

    >>> [round(v, 3) for v in combined(0.70, 0.05, 0.80, bias=0.05)]
    [0.75, 0.035, 0.5]
    """
    if not (np.isfinite(weighted) and np.isfinite(weighted_sd)):
        return float(posteriors), float(bias), 0.0
    share = bias**2 / (bias**2 + max(weighted_sd, 1e-12) ** 2)
    value = share * weighted + (1.0 - share) * posteriors
    return float(value), float(np.sqrt(share * weighted_sd**2)), float(share)

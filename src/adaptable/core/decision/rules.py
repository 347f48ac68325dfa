"""Decision rules for an objective: which class to predict once the posteriors are estimated.

The recommended adapter (``AdapTable(preset="default")``) separates *estimating* the target
posterior from *deciding*. For a metric other than accuracy the most probable class is not the
best decision: on an imbalanced source, macro-F1 and balanced accuracy reward predicting the
minority class more often than argmax does. Four pieces:

- :func:`score` -- macro-F1, balanced accuracy or accuracy from a confusion matrix, hard or
  expected (soft), computed with ``bincount`` instead of one scikit-learn call per bootstrap;
- :func:`choose_rule` -- on labelled held-out source rows, the source rule (argmax p(y|x)) or the
  balanced rule (argmax p(y|x) / p_s(y), post-hoc logit adjustment), whichever serves the
  objective, with a bootstrap guard: the balanced rule is chosen only when it beats the source
  rule on the resampled validation rows with probability at least ``evidence``;
- :func:`between_weights` -- the same, restricted to v = 1 / p_s^beta, beta in [0, 1]: between
  argmax and the balanced rule, never past them;
- :func:`plugin_weights` -- given posteriors believed to be the target's, class weights v such
  that argmax_y q(y|x) v(y) maximises the *expected* objective over those rows ("plug-in"
  decision; binary macro-F1 by an exact threshold search, multi-class by the family
  v = 1 / pi^beta between the Bayes rule (beta 0) and the balanced rule (beta 1));
  :func:`label_shift_weights` -- the same for posteriors re-weighted to an estimated target
  label distribution, with the Bayes rule for multi-class macro-F1.

Example:
    >>> import numpy as np
    >>> y = np.array([0, 0, 0, 1]); pred = np.array([0, 0, 1, 1])
    >>> round(float(score(confusion(y, pred, 2), "balanced_accuracy")), 4)
    0.8333
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

#: the metrics the recommended adapter can decide for
OBJECTIVES = ("macro_f1", "balanced_accuracy", "accuracy")
#: the multi-class plug-in family v = 1 / pi^beta, from the Bayes rule to the balanced rule
BETAS = np.linspace(0.0, 1.0, 11)


def confusion(y: np.ndarray, pred: np.ndarray, n_classes: int) -> np.ndarray:
    """Counts of (true class, predicted class), (C, C) float64."""
    cells = np.asarray(y, dtype=np.int64) * n_classes + np.asarray(pred, dtype=np.int64)
    counts = np.bincount(cells, minlength=n_classes * n_classes)
    return counts.reshape(n_classes, n_classes).astype(np.float64)


def expected_confusion(posteriors: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """Expected (true, predicted) counts if ``posteriors`` (n, C) were the true class
    probabilities of the rows: column k sums the posteriors of the rows predicted k.

    ``pred`` (n,) gives one (C, C) matrix; a stack of predictions (R, n) gives (R, C, C), one
    matrix per rule. Class-major posteriors (C, n) are passed as their transposed view: the
    product reads them as they lie. One matrix product per rule, rather than numpy's stacked
    product over (R, n, C) one-hot predictions (docs/research/design_notes.md#decision-rules).
    """
    by_class = np.asarray(posteriors, dtype=np.float64).T
    classes = np.arange(len(by_class))[:, None]
    pred = np.asarray(pred)
    rules = pred.reshape(-1, pred.shape[-1])
    matrices = np.stack([by_class @ (rule == classes).T.astype(np.float64) for rule in rules])
    return matrices.reshape(pred.shape[:-1] + matrices.shape[1:])


def argmax_by_class(values: np.ndarray) -> np.ndarray:
    """``values.argmax(axis=0)`` of class-major values (C, n): the first class wins a tie.

    One comparison per class over contiguous rows, rather than numpy's own argmax along the
    short class axis of an (n, C) array (docs/research/design_notes.md#decision-rules).
    """
    best = values[0]
    index = np.zeros(values.shape[1], dtype=np.intp)
    for k in range(1, len(values)):
        better = values[k] > best
        index[better] = k
        if k < len(values) - 1:
            best = np.where(better, values[k], best)
    return index


def score(matrix: np.ndarray, objective: str) -> float | np.ndarray:
    """The objective from a (C, C) confusion matrix, or from a stack (..., C, C) of them.

    Classes absent from both the truth and the predictions are left out of macro-F1 and
    balanced accuracy (scikit-learn's convention for labels that never occur).
    """
    # Few numpy calls: the adapter scores its two rules on every batch.
    matrix = np.asarray(matrix, dtype=np.float64)
    n_classes = matrix.shape[-1]
    if matrix.shape == (2, 2, 2) and objective in OBJECTIVES:
        return np.array([_binary_score(*pair, objective) for pair in matrix.tolist()])
    tp = matrix.reshape(*matrix.shape[:-2], n_classes * n_classes)[..., :: n_classes + 1]
    actual = matrix.sum(axis=-1)
    if objective == "accuracy":
        return tp.sum(axis=-1) / np.maximum(actual.sum(axis=-1), 1e-12)
    if objective == "balanced_accuracy":
        present = actual > 0
        recall = np.where(present, tp / np.maximum(actual, 1e-12), 0.0)
        return recall.sum(axis=-1) / np.maximum(present.sum(axis=-1), 1)
    if objective == "macro_f1":
        total = actual + matrix.sum(axis=-2)
        present = total > 0
        # tp <= total, so a class with total 0 has tp 0: dividing by 1 there gives its 0.
        f1 = 2 * tp / np.where(present, total, 1.0)
        return f1.sum(axis=-1) / np.maximum(present.sum(axis=-1), 1)
    raise ValueError(f"objective must be one of {OBJECTIVES}; got {objective!r}.")


def score_bounds(
    matrices: np.ndarray, objective: str, factor: float
) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds of :func:`score` of expected confusion matrices (..., C, C) whose
    cells may each be scaled by any factor in [1 / ``factor``, ``factor``] (``factor`` >= 1)
    while every column sum (the rows predicted each class, a count) stays as it is.

    Each class's term of the score is bounded on its own: macro-F1's 2 tp / (actual +
    predicted) between 2 (tp / f) / (f actual + predicted) and 2 f tp / (actual / f +
    predicted); balanced accuracy's recall tp / actual within the factor f^2; accuracy's
    sum(tp) / rows within f (the rows' count is the sum of the column sums). Classes present
    stay present (a positive cell stays positive).

    Example:
        >>> m = np.array([[30.0, 10.0], [5.0, 55.0]])
        >>> low, high = score_bounds(m, "accuracy", 1.1)
        >>> round(float(low), 4), float(score(m, "accuracy")), round(float(high), 4)
        (0.7727, 0.85, 0.935)
    """
    matrix = np.asarray(matrices, dtype=np.float64)
    if matrix.shape == (2, 2, 2) and objective == "macro_f1":
        # two rules, two classes (every batch of the common case): scalars
        bounds = [_binary_f1_bounds(*pair, factor) for pair in matrix.tolist()]
        return np.array([b[0] for b in bounds]), np.array([b[1] for b in bounds])
    n_classes = matrix.shape[-1]
    tp = matrix.reshape(*matrix.shape[:-2], n_classes * n_classes)[..., :: n_classes + 1]
    actual = matrix.sum(axis=-1)
    if objective == "accuracy":
        exact = tp.sum(axis=-1) / np.maximum(actual.sum(axis=-1), 1e-12)
        return exact / factor, exact * factor
    if objective == "balanced_accuracy":
        present = actual > 0
        recall = np.where(present, tp / np.maximum(actual, 1e-12), 0.0)
        count = np.maximum(present.sum(axis=-1), 1)
        exact = recall.sum(axis=-1) / count
        return exact / factor**2, exact * factor**2
    if objective == "macro_f1":
        predicted = matrix.sum(axis=-2)
        present = actual + predicted > 0
        low = np.where(
            present, 2 * (tp / factor) / np.maximum(factor * actual + predicted, 1e-300), 0.0
        )
        high = np.where(
            present, 2 * tp * factor / np.maximum(actual / factor + predicted, 1e-300), 0.0
        )
        count = np.maximum(present.sum(axis=-1), 1)
        return low.sum(axis=-1) / count, high.sum(axis=-1) / count
    raise ValueError(f"objective must be one of {OBJECTIVES}; got {objective!r}.")


def _binary_f1_bounds(
    actual_0: list[float], actual_1: list[float], factor: float
) -> tuple[float, float]:
    """:func:`score_bounds` of one 2 x 2 matrix for macro-F1, in scalars."""
    (tn, fp), (fn, tp) = actual_0, actual_1
    low = high = 0.0
    present = 0
    for hit, actual, predicted in ((tn, tn + fp, tn + fn), (tp, fn + tp, fp + tp)):
        if actual + predicted > 0:
            present += 1
            low += 2 * (hit / factor) / max(factor * actual + predicted, 1e-300)
            high += 2 * hit * factor / max(actual / factor + predicted, 1e-300)
    present = max(present, 1)
    return low / present, high / present


def _binary_score(actual_0: list[float], actual_1: list[float], objective: str) -> float:
    """:func:`score` of one 2 x 2 confusion matrix (rows: true class 0, 1), in scalars.

    The same arithmetic as the array version, written out because numpy's per-call cost on
    2 x 2 arrays is most of the price of scoring two rules on every batch.
    """
    (tn, fp), (fn, tp) = actual_0, actual_1
    if objective == "accuracy":
        return (tn + tp) / max((tn + fp) + (fn + tp), 1e-12)
    if objective == "balanced_accuracy":
        recalls = [tn / max(tn + fp, 1e-12), tp / max(fn + tp, 1e-12)]
        present = [tn + fp > 0, fn + tp > 0]
        return sum(r for r, p in zip(recalls, present, strict=True) if p) / max(sum(present), 1)
    totals = [(tn + fp) + (tn + fn), (fn + tp) + (fp + tp)]
    f1 = [
        2 * tn / totals[0] if totals[0] > 0 else 0.0,
        2 * tp / totals[1] if totals[1] > 0 else 0.0,
    ]
    return (f1[0] + f1[1]) / max((totals[0] > 0) + (totals[1] > 0), 1)


def prior_adjusted(proba: np.ndarray, prior: np.ndarray, beta: float = 1.0) -> np.ndarray:
    """``norm(p / prior^beta)``: beta 0 keeps p, beta 1 gives the balanced posterior."""
    weighted = np.asarray(proba, dtype=np.float64) / np.asarray(prior) ** beta
    return weighted / weighted.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class RuleChoice:
    """What :func:`choose_rule` decided, and on what evidence.

    Attributes:
        beta: 0 for the source rule, 1 for the balanced rule.
        source_score, balanced_score: the objective of each rule on the validation rows.
        evidence: share of bootstrap resamples on which the balanced rule scored higher.
    """

    beta: float
    source_score: float
    balanced_score: float
    evidence: float

    @property
    def name(self) -> str:
        return "balanced" if self.beta > 0 else "source"


def choose_rule(
    proba: np.ndarray,
    labels: np.ndarray,
    prior: np.ndarray,
    objective: str,
    *,
    evidence: float = 0.8,
    n_bootstrap: int = 200,
    seed: int = 0,
) -> RuleChoice:
    """The source rule or the balanced rule for ``objective``, judged on held-out source rows.

    Args:
        proba: the model's probabilities on the held-out rows, (n, C).
        labels: their labels 0..C-1, (n,).
        prior: p_s, (C,).
        objective: one of :data:`OBJECTIVES`.
        evidence: the balanced rule is chosen when it scores higher on the rows *and* on at
            least this share of bootstrap resamples of them (0.5: a plain comparison).
        n_bootstrap: resamples (Poisson weights, one matrix product for all of them).
        seed: seeds the resampling.

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> y = (rng.random(400) < 0.2).astype(int)      # a 20 % minority the model under-calls
        >>> p1 = np.clip(0.1 + 0.3 * y + 0.1 * rng.random(400), 0, 1)
        >>> proba = np.stack([1 - p1, p1], axis=1)
        >>> choose_rule(proba, y, np.array([0.8, 0.2]), "macro_f1").name
        'balanced'
    """
    proba = np.asarray(proba, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    n_classes = proba.shape[1]
    source_pred = proba.argmax(axis=1)
    balanced_pred = (proba / prior).argmax(axis=1)
    source_score = float(score(confusion(labels, source_pred, n_classes), objective))
    balanced_score = float(score(confusion(labels, balanced_pred, n_classes), objective))
    if balanced_score <= source_score:
        return RuleChoice(0.0, source_score, balanced_score, 0.0)
    # Bootstrap by Poisson(1) row weights: every resample's confusion matrices in one product.
    rng = np.random.default_rng(seed)
    weights = rng.poisson(1.0, size=(n_bootstrap, len(labels))).astype(np.float64)
    cells = n_classes * n_classes

    def resampled(pred: np.ndarray) -> np.ndarray:
        onehot = np.zeros((len(labels), cells))
        onehot[np.arange(len(labels)), labels * n_classes + pred] = 1.0
        return (weights @ onehot).reshape(n_bootstrap, n_classes, n_classes)

    better = score(resampled(balanced_pred), objective) > score(resampled(source_pred), objective)
    share = float(np.mean(better))
    beta = 1.0 if share >= evidence else 0.0
    return RuleChoice(beta, source_score, balanced_score, share)


def plugin_weights(posteriors: np.ndarray, objective: str) -> np.ndarray:
    """Class weights v (C,) so that argmax q(y|x) v(y) maximises the expected objective.

    Args:
        posteriors: rows believed to follow the target distribution, with their estimated
            target posteriors q, (n, C).
        objective: one of :data:`OBJECTIVES`.

    Accuracy: v = 1 (the Bayes rule). Balanced accuracy: v = 1 / mean(q) (the balanced rule
    for the target's class distribution). Macro-F1: binary, the threshold t on q(1|x) with the
    highest expected macro-F1 (v = (t, 1 - t)); multi-class, the best of v = 1 / pi^beta,
    beta in :data:`BETAS`, pi = mean(q).

    Example:
        >>> q1 = np.array([0.9, 0.6, 0.4, 0.35, 0.1])    # 2.35 expected positives
        >>> v = plugin_weights(np.stack([1 - q1, q1], axis=1), "macro_f1")
        >>> (np.stack([1 - q1, q1], axis=1) * v).argmax(axis=1).tolist()
        [1, 1, 0, 0, 0]
    """
    q = np.asarray(posteriors, dtype=np.float64)
    n_classes = q.shape[1]
    if objective == "accuracy":
        return np.ones(n_classes)
    mean = np.maximum(q.mean(axis=0), 1e-12)
    if objective == "balanced_accuracy":
        return 1.0 / mean
    if objective != "macro_f1":
        raise ValueError(f"objective must be one of {OBJECTIVES}; got {objective!r}.")
    if n_classes == 2:
        threshold = macro_f1_threshold(q[:, 1])
        return np.array([threshold, 1.0 - threshold])
    candidates = 1.0 / mean[None, :] ** BETAS[:, None]  # (B, C)
    # class-major: the plug-in rule runs this over the stream's reservoir
    by_class = np.ascontiguousarray(q.T)
    preds = np.stack([argmax_by_class(by_class * v[:, None]) for v in candidates])
    expected = score(expected_confusion(by_class.T, preds), "macro_f1")
    return candidates[int(np.argmax(expected))]


def label_shift_weights(
    posteriors: np.ndarray | Callable[[], np.ndarray],
    objective: str,
    n_classes: int,
    presence: Callable[[], np.ndarray] | None = None,
) -> np.ndarray:
    """The class weights of label-shift correction: :func:`plugin_weights` over the posteriors
    re-weighted to an estimated target label distribution, except on more than two classes for
    macro-F1, where every weight is 1 (argmax of those posteriors), and for balanced accuracy,
    where the weight 1 / mean(q) of each class is multiplied by the chance that the stream
    holds it at all (``presence``, :mod:`adaptable.core.decision.class_presence`).

    There the family v = 1 / pi^beta boosts the classes the estimate holds to be rare. The
    estimate keeps a few rows' worth of every class (its prior counts), also of a class the
    stream never holds, so the boost sends rows there, and scikit-learn's macro-F1 counts that
    class with F1 = 0; v = 1 was chosen on multi-class streams
    (docs/research/design_notes.md#decision-rules). Over the model's own posteriors (the
    plug-in rule) the family stays: there it corrects a model that under-predicts its minority
    classes.

    Balanced accuracy's weights 1 / mean(q) cancel the share the estimate gives a class (the
    decision is the balanced rule p(y|x) / p_s(y) whatever positive share it is), so they boost
    a class the stream never holds as much as one it does; the presence factor stops that.

    Args:
        posteriors: the re-weighted posteriors, (n, C), or a function that gives them (called
            only where they are read: not for multi-class macro-F1).
        objective: one of :data:`OBJECTIVES`.
        n_classes: C.
        presence: a function giving each class's chance of occurring in the stream, (C,),
            called only for balanced accuracy on more than two classes; ``None``: no factor.

    Example:
        >>> q = np.array([[0.6, 0.3, 0.1], [0.2, 0.7, 0.1], [0.5, 0.45, 0.05]])
        >>> label_shift_weights(q, "macro_f1", 3).tolist()
        [1.0, 1.0, 1.0]
    """
    if objective == "macro_f1" and n_classes > 2:
        return np.ones(n_classes)
    q = posteriors() if callable(posteriors) else posteriors
    factor = presence_factor(objective, n_classes, presence)
    weights = plugin_weights(q, objective)
    return weights if factor is None else weights * factor


def presence_factor(
    objective: str, n_classes: int, presence: Callable[[], np.ndarray] | None
) -> np.ndarray | None:
    """What a plug-in rule's class weights are multiplied by: each class's chance of occurring
    in the stream (``presence()``, called only here) for balanced accuracy on more than two
    classes, whose weights 1 / mean(q) boost a class the stream never holds as much as one it
    does; ``None`` (no factor) otherwise."""
    if objective == "balanced_accuracy" and n_classes > 2 and presence is not None:
        return np.asarray(presence(), dtype=np.float64)
    return None


def macro_f1_threshold(q1: np.ndarray) -> float:
    """The threshold t (predict 1 when q1 >= t) with the highest expected binary macro-F1.

    Only cuts between distinct values are scored: a threshold cannot split rows of equal
    q1, so a cut inside such a run is a decision no threshold realises, and placing t on
    the tied value would leave the whole run to rounding.
    """
    order = np.sort(q1)[::-1]
    n = len(order)
    # predict the k most probable rows positive, for every k that ends a run of equal values
    cuts = np.flatnonzero(np.concatenate([[True], order[:-1] > order[1:], [True]]))
    tp0, fp1, fn1, tp1 = _top_k_counts(order, cuts)
    f1_one = 2 * tp1 / np.maximum(2 * tp1 + fp1 + fn1, 1e-12)
    f1_zero = 2 * tp0 / np.maximum(2 * tp0 + fn1 + fp1, 1e-12)
    best = int(cuts[int(np.argmax(f1_one + f1_zero))])
    # Halfway between the last row predicted 1 and the first predicted 0.
    above = order[best - 1] if best > 0 else 1.0
    below = order[best] if best < n else 0.0
    return float(np.clip((above + below) / 2.0, 1e-6, 1.0 - 1e-6))


def macro_f1_thresholds(q1: np.ndarray) -> np.ndarray:
    """:func:`macro_f1_threshold` of each row of ``q1`` (K, m): the K thresholds, (K,), from one
    sort and one cumulative sum over all of them (the same cuts, values and ties)."""
    order = np.sort(np.asarray(q1, dtype=np.float64), axis=1)[:, ::-1]
    n_fits, n = order.shape
    cuts = np.ones((n_fits, n + 1), dtype=bool)
    cuts[:, 1:-1] = order[:, :-1] > order[:, 1:]
    positives = order.sum(axis=1, keepdims=True)
    tp1 = np.zeros((n_fits, n + 1))
    np.cumsum(order, axis=1, out=tp1[:, 1:])
    fp1 = np.arange(n + 1) - tp1
    fn1 = positives - tp1
    tp0 = (n - positives) - fp1
    f1_one = 2 * tp1 / np.maximum(2 * tp1 + fp1 + fn1, 1e-12)
    f1_zero = 2 * tp0 / np.maximum(2 * tp0 + fn1 + fp1, 1e-12)
    best = np.where(cuts, f1_one + f1_zero, -np.inf).argmax(axis=1)
    fits = np.arange(n_fits)
    above = np.where(best > 0, order[fits, np.maximum(best - 1, 0)], 1.0)
    below = np.where(best < n, order[fits, np.minimum(best, n - 1)], 0.0)
    return np.clip((above + below) / 2.0, 1e-6, 1.0 - 1e-6)


def between_weights(posteriors: np.ndarray, prior: np.ndarray, objective: str) -> np.ndarray:
    """Class weights v = 1 / p_s^beta, beta in :data:`BETAS`, with the highest expected
    objective under ``posteriors``: the plug-in decision held between the source's two rules.

    beta 0 is argmax, beta 1 the balanced rule argmax p / p_s. Unlike :func:`plugin_weights`
    the family is built from p_s, not from the posteriors' mean, so however wrong the
    posteriors are on the target the decision never goes past the balanced rule. Ties go to
    the smaller beta (closer to the model's own decision).

    Args:
        posteriors: rows believed to follow the target distribution, with their posteriors q,
            (n, C).
        prior: p_s, (C,).
        objective: one of :data:`OBJECTIVES`.

    Example:
        >>> q1 = np.array([0.45, 0.4, 0.3, 0.1, 0.05, 0.05])   # 1.35 expected positives
        >>> q = np.stack([1 - q1, q1], axis=1)
        >>> v = between_weights(q, np.array([0.8, 0.2]), "macro_f1")
        >>> (q * v).argmax(axis=1).tolist()     # beta 0.3: predict 1 when q1 > 0.397
        [1, 1, 0, 0, 0, 0]
        >>> # A balanced source: both rules are argmax, so this stays argmax (no positive) where
        >>> # the plug-in, trusting q, predicts two positives.
        >>> between_weights(q, np.array([0.5, 0.5]), "macro_f1").tolist()
        [1.0, 1.0]
        >>> int((q * plugin_weights(q, "macro_f1")).argmax(axis=1).sum())
        2
    """
    q = np.asarray(posteriors, dtype=np.float64)
    prior = np.asarray(prior, dtype=np.float64)
    candidates = 1.0 / prior[None, :] ** BETAS[:, None]  # (B, C)
    if q.shape[1] == 2:
        expected = score(binary_family_confusions(q[:, 1], prior), objective)
    else:
        preds = (q[None, :, :] * candidates[:, None, :]).argmax(axis=-1)
        expected = score(expected_confusion(q, preds), objective)
    return candidates[int(np.argmax(expected))]


def binary_family_confusions(q1: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """Expected confusion matrices (B, 2, 2) of the rules v = 1 / p_s^beta on binary rows.

    Rule beta predicts 1 where q1 / q0 > (p1 / p0)^beta, i.e. q1 > r / (1 + r): one sort and a
    cumulative sum serve every beta (the stream's reservoir is scored on every batch).
    """
    order = np.sort(q1)[::-1]
    odds = (prior[1] / prior[0]) ** BETAS
    # rows strictly above each threshold, as argmax sends ties to class 0
    k = np.searchsorted(-order, -(odds / (1.0 + odds)), side="left")
    return _top_k_confusions(order, k)


def _top_k_confusions(order: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Expected confusion matrices (len(k), 2, 2) of predicting class 1 for the k most probable
    rows, each k; ``order``: the rows' q1 sorted in decreasing order (one cumulative sum)."""
    tp0, fp1, fn1, tp1 = _top_k_counts(order, k)
    return np.stack([np.stack([tp0, fp1], axis=-1), np.stack([fn1, tp1], axis=-1)], axis=1)


def _top_k_counts(
    order: np.ndarray, k: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The cells (tp0, fp1, fn1, tp1) of :func:`_top_k_confusions`, each (len(k),): the
    threshold search reads them as vectors, without the (n + 1, 2, 2) stack."""
    n, positives = len(order), float(order.sum())
    tp1 = np.concatenate([[0.0], np.cumsum(order)])[k]
    fp1 = k - tp1
    fn1 = positives - tp1
    tp0 = (n - positives) - fp1
    return tp0, fp1, fn1, tp1

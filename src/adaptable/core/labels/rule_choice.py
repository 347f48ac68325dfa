"""Which decision rule serves the objective, judged on labelled target rows and held-out rows.

A decision rule here is an affine map of the log-posteriors, argmax_y (scale * log p(y|x) +
offset_y) (:class:`ScoreRule`): argmax is (1, 0), the balanced rule argmax p / p_s is (1,
-log p_s), label-shift correction with plug-in weights v under p_t is (1, log(p_t / p_s) +
log v), and a score correction fitted on labelled rows (:mod:`.score_correction`) has its own scale.

:func:`compare_rules` estimates each rule's objective from up to three kinds of evidence:

- the labelled target rows (a uniform sample of the stream's labels, each standing for
  ``row_weight`` rows): unbiased for the target, but few;
- the held-out source rows, with their class mix moved to the target's estimated one (each
  row weighted by p_t(y) / p_h(y), p_h the held-out class frequencies: the target's confusion
  matrix wherever p(x|y) did not move), worth ``heldout_worth`` rows together: plentiful, but
  biased wherever p(x|y) moved;
- unlabelled stream rows with the posteriors the adapter believes for them (each row counts as
  p(y) of a row of class y: the expected confusion under those posteriors), worth
  ``stream_worth`` rows together: they speak for the target's rows, but only as far as the
  posteriors are calibrated for it.

The held-out and the stream rows act as priors worth a fixed number of rows, so their share
of the evidence falls as m / (m + n) with n labelled rows. Uncertainty comes from a Bayesian
bootstrap: the labelled rows get Exp(1) weights, the held-out and stream rows Gamma weights
whose total varies like that of the rows they are worth (not like that of the many rows they
are), so that each kind counts as much as it is worth. Where the held-out (or the stream)
rows disagree with the labelled ones on how the rules compare beyond what their spreads
allow, they are left out (a shift that moved p(x|y) makes the held-out rows speak for a
distribution the stream no longer follows; posteriors the labels refute are not the
target's). The draws are taken per distinct (label, decisions) pattern, so a comparison costs
O(rows) once and O(patterns) per draw. :func:`choose_labelled_rule` then keeps the anchor (the
unlabelled decision) unless the labelled evidence says otherwise; see there.

Example:
    >>> import numpy as np
    >>> rules = [ScoreRule("argmax", np.zeros(2)), ScoreRule("balanced", -np.log([0.8, 0.2]))]
    >>> log_p = np.log(np.array([[0.7, 0.3], [0.9, 0.1], [0.6, 0.4]]))
    >>> [rule.predict(log_p).tolist() for rule in rules]
    [[0, 0, 0], [1, 0, 1]]
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from adaptable.core.decision.distinct_rows import unique_rows
from adaptable.core.decision.rules import score

#: Bayesian-bootstrap draws of each comparison
N_DRAWS = 200


@dataclass(frozen=True)
class ScoreRule:
    """The decision argmax_y (scale * log p(y|x) + offset_y) over the (C,) log-posteriors.

    Attributes:
        name: what the rule is ("argmax", "balanced", "label_shift", "corrected", ...).
        offset: (C,) per-class additive offsets.
        scale: multiplies the log-posteriors (> 0; 1 keeps them).
    """

    name: str
    offset: np.ndarray
    scale: float = 1.0

    def scores(self, log_posteriors: np.ndarray) -> np.ndarray:
        """scale * log p + offset, (n, C)."""
        return self.scale * np.asarray(log_posteriors, dtype=np.float64) + self.offset

    def predict(self, log_posteriors: np.ndarray) -> np.ndarray:
        """The decisions, (n,) class codes (ties to the lower class, as argmax)."""
        return self.scores(log_posteriors).argmax(axis=1)

    def proba(self, log_posteriors: np.ndarray) -> np.ndarray:
        """softmax of :meth:`scores`: probabilities whose argmax is the decision, (n, C)."""
        values = self.scores(log_posteriors)
        values -= values.max(axis=1, keepdims=True)
        np.exp(values, out=values)
        return values / values.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class DeferredRule:
    """A candidate :class:`ScoreRule` built only where it is used (a comparison, or the
    labels' last choice): its name, and the function that builds it.

    Example:
        >>> rule = DeferredRule("plugin", lambda: ScoreRule("plugin", np.zeros(2)))
        >>> resolved(rule).name, resolved(ScoreRule("argmax", np.zeros(2))).name
        ('plugin', 'argmax')
    """

    name: str
    build: Callable[[], ScoreRule]


def resolved(rule: ScoreRule | DeferredRule) -> ScoreRule:
    """``rule`` itself, or the rule a :class:`DeferredRule` builds."""
    return rule.build() if isinstance(rule, DeferredRule) else rule


@dataclass(frozen=True)
class RuleComparison:
    """What :func:`compare_rules` found, one entry per rule.

    Attributes:
        scores: the objective of each rule on the pooled evidence, (R,).
        draws: the objective on each bootstrap draw, (N_DRAWS, R) (empty without evidence).
        n_labelled: labelled rows the evidence stood for.
        heldout_worth: rows the held-out evidence counted as (0 where it was left out).
        compatible: whether the held-out rows agreed with the labelled ones.
        stream_worth: rows the stream evidence counted as (0 where it was left out or
            not given).
    """

    scores: np.ndarray
    draws: np.ndarray
    n_labelled: float
    heldout_worth: float
    compatible: bool = True
    stream_worth: float = 0.0

    def probability_better(self, rule: int, than: int) -> float:
        """Share of draws on which ``rule`` scored strictly higher than ``than``."""
        if len(self.draws) == 0:
            return 0.0
        return float(np.mean(self.draws[:, rule] > self.draws[:, than]))


def compare_rules(
    labelled_predictions: np.ndarray,
    labelled_labels: np.ndarray,
    n_classes: int,
    objective: str,
    *,
    row_weight: float = 1.0,
    heldout_predictions: np.ndarray | None = None,
    heldout_labels: np.ndarray | None = None,
    heldout_worth: float = 0.0,
    target_prior: np.ndarray | None = None,
    stream_predictions: np.ndarray | None = None,
    stream_posteriors: np.ndarray | None = None,
    stream_worth: float = 0.0,
    compatibility_level: float = 0.05,
    seed: int = 0,
) -> RuleComparison:
    """Each rule's objective on labelled target rows pooled with re-weighted held-out rows.

    Args:
        labelled_predictions: each rule's decisions on the labelled rows, (R, n); a rule
            fitted on these rows should pass out-of-fold decisions (see :mod:`.score_correction`).
        labelled_labels: their labels, (n,).
        n_classes: C.
        objective: one of :data:`adaptable.core.decision.rules.OBJECTIVES`.
        row_weight: stream rows each labelled row stands for.
        heldout_predictions: each rule's decisions on the held-out source rows, (R, m), or
            ``None``.
        heldout_labels: their labels, (m,).
        heldout_worth: rows the held-out evidence counts as in all (0: left out).
        target_prior: the target label distribution the held-out rows are moved to, (C,);
            ``None`` keeps their own class mix.
        stream_predictions: each rule's decisions on unlabelled stream rows, (R, m), or
            ``None``.
        stream_posteriors: what the adapter believes those rows' labels to be, (m, C): each
            row counts as ``p(y)`` of a row of each class y (the expected confusion under the
            posteriors).
        stream_worth: rows the stream evidence counts as in all (0: left out).
        compatibility_level: where the labelled rows and the held-out (or the stream) rows
            disagree on how some rule compares with rule 0 at this level, those rows are left
            out (they no longer speak for the target).
        seed: seeds the bootstrap.

    Returns:
        :class:`RuleComparison`.
    """
    labelled_predictions = np.atleast_2d(np.asarray(labelled_predictions, dtype=np.int64))
    labels = np.asarray(labelled_labels, dtype=np.int64)
    n_rules = len(labelled_predictions)
    rng = np.random.default_rng(seed)
    # Rows with the same label and the same decision under every rule fall in the same cells,
    # so only their summed weight matters: a sum of k Exp(1) weights is Gamma(k, 1), of k
    # Gamma(a, 1 / a) weights Gamma(k a, 1 / a). Drawing per pattern costs O(patterns), not
    # O(rows), per draw.
    blocks = []  # (patterns (P, 1 + R), point weights (P,), draw weights (D, P))
    if len(labels):
        patterns, counts = _patterns(labels, labelled_predictions)
        point = counts * float(row_weight)
        draws = rng.gamma(counts, 1.0, size=(N_DRAWS, len(counts))) * row_weight
        blocks.append((patterns, point, draws))
    use_heldout = heldout_predictions is not None and heldout_worth > 0
    if use_heldout and heldout_labels is not None and len(heldout_labels):
        held = np.asarray(heldout_labels, dtype=np.int64)
        class_weight = np.ones(n_classes)
        if target_prior is not None:
            own = np.bincount(held, minlength=n_classes) / len(held)
            class_weight = np.where(own > 0, np.asarray(target_prior) / np.maximum(own, 1e-12), 0)
        # each held-out row's weight, so that together they count as `heldout_worth` rows
        per_row = class_weight * (heldout_worth / max(float(class_weight[held].sum()), 1e-12))
        patterns, counts = _patterns(held, np.atleast_2d(heldout_predictions))
        # Gamma(a, 1 / a) row weights with a = worth / rows: the weighted total varies like
        # that of `worth` rows, not like that of the many rows they are.
        shape = heldout_worth / len(held)
        row = per_row[patterns[:, 0]]
        draws = rng.gamma(counts * shape, 1.0 / shape, size=(N_DRAWS, len(counts))) * row
        blocks.append((patterns, counts * row, draws))
    else:
        heldout_worth = 0.0
    # which evidence each block is: "labelled", "heldout", "stream"
    kinds = ["labelled"] * bool(len(labels)) + ["heldout"] * (len(blocks) - bool(len(labels)))
    if stream_predictions is not None and stream_posteriors is not None and stream_worth > 0:
        predictions = np.atleast_2d(stream_predictions)
        blocks.append(_soft_block(predictions, stream_posteriors, stream_worth, rng))
        kinds.append("stream")
    else:
        stream_worth = 0.0
    if not blocks:
        return RuleComparison(np.zeros(n_rules), np.zeros((0, n_rules)), 0.0, 0.0, True)
    matrices = [_block_matrices(block, n_classes, n_rules) for block in blocks]
    compatible = True
    if kinds[0] == "labelled":
        # each other kind of evidence is kept only where the labelled rows do not refute it
        keep = [True] + [
            _compatible(matrices[0][1], m[1], objective, compatibility_level) for m in matrices[1:]
        ]
        compatible = all(k for k, kind in zip(keep, kinds, strict=True) if kind == "heldout")
        heldout_worth = heldout_worth if compatible else 0.0
        stream_worth = (
            stream_worth if all(keep[i] for i, k in enumerate(kinds) if k == "stream") else 0.0
        )
        matrices = [m for m, k in zip(matrices, keep, strict=True) if k]
    point_matrices = sum(m[0] for m in matrices)
    draw_matrices = sum(m[1] for m in matrices)
    return RuleComparison(
        np.asarray(score(point_matrices, objective)).reshape(n_rules),
        np.asarray(score(draw_matrices, objective)).reshape(N_DRAWS, n_rules),
        float(len(labels) * row_weight),
        float(heldout_worth),
        compatible,
        float(stream_worth),
    )


def _soft_block(
    predictions: np.ndarray, posteriors: np.ndarray, worth: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unlabelled rows as evidence: each row split into one row per class y, of weight
    p(y), together worth ``worth`` rows (Gamma draw weights, as the held-out rows').

    Rows the rules decide alike share a pattern: the rows are grouped by their decisions
    first (one integer per row), then split by class, so the cost is O(rows x rules)."""
    posteriors = np.asarray(posteriors, dtype=np.float64)
    n_rows, n_classes = posteriors.shape
    decisions, inverse = unique_rows(np.asarray(predictions, dtype=np.int64).T)
    # mass[g, y]: the posterior mass of class y over the rows of decision pattern g
    mass = np.stack(
        [np.bincount(inverse, posteriors[:, y], len(decisions)) for y in range(n_classes)], 1
    )
    group, label = np.nonzero(mass > 0)
    patterns = np.column_stack([label, decisions[group]])
    shape = worth / n_rows
    point = mass[group, label] * shape
    draws = rng.gamma(point, 1.0, size=(N_DRAWS, len(point)))
    return patterns, point, draws


def _block_matrices(block, n_classes: int, n_rules: int) -> tuple[np.ndarray, np.ndarray]:
    """One kind of evidence's weighted confusion matrices: point (R, C, C), draws (D, R, C, C)."""
    patterns, point, draws = block
    cells = n_classes * n_classes
    point_matrices = np.zeros((n_rules, cells))
    draw_matrices = np.zeros((N_DRAWS, n_rules, cells))
    for r in range(n_rules):
        cell = patterns[:, 0] * n_classes + patterns[:, 1 + r]
        onehot = np.zeros((len(cell), cells))
        onehot[np.arange(len(cell)), cell] = 1.0
        point_matrices[r] = point @ onehot
        draw_matrices[:, r] = draws @ onehot
    shape = (n_classes, n_classes)
    return point_matrices.reshape(n_rules, *shape), draw_matrices.reshape(N_DRAWS, n_rules, *shape)


def _compatible(labelled: np.ndarray, heldout: np.ndarray, objective: str, level: float) -> bool:
    """Whether the two kinds of evidence agree on how each rule compares with rule 0.

    Each rule's score difference to rule 0 is estimated on each kind alone, with its bootstrap
    variance; the held-out rows are kept unless some rule's two estimates differ by more than
    their combined spread allows (a z-test per rule, Bonferroni over the rules).
    """
    n_rules = labelled.shape[1]
    if n_rules < 2:
        return True
    differences = []
    for draws in (labelled, heldout):
        scores = np.asarray(score(draws, objective))
        differences.append(scores[:, 1:] - scores[:, :1])
    gap = differences[0].mean(axis=0) - differences[1].mean(axis=0)
    spread = differences[0].var(axis=0) + differences[1].var(axis=0)
    statistic = gap**2 / np.maximum(spread, 1e-12)
    return bool(np.all(statistic <= _chi2_critical(level, n_rules - 1)))


@functools.lru_cache(maxsize=64)
def _chi2_critical(level: float, tests: int) -> float:
    """The chi-squared (1 degree of freedom) critical value at ``level`` over ``tests`` tests
    (Bonferroni): the same few values at every comparison, cached rather than asked of scipy
    each time (docs/research/design_notes.md#labels-rule-choice)."""
    from scipy.stats import chi2  # here, not at import (docs/research/costs.md#importing-adaptable)

    return float(chi2.ppf(1.0 - level / tests, 1))


def _patterns(labels: np.ndarray, predictions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (label, decision of each rule) rows, (P, 1 + R), in lexicographic order,
    and how many rows each."""
    patterns, inverse = unique_rows(np.column_stack([labels, predictions.T]))
    return patterns, np.bincount(inverse, minlength=len(patterns)).astype(np.float64)


def choose_labelled_rule(
    comparison: RuleComparison,
    anchor: int,
    *,
    safe: int = 0,
    evidence: float = 0.8,
    min_labelled: float = 1.0,
    candidates: Sequence[int] | None = None,
) -> int:
    """The rule to use: the anchor unless the labelled evidence says otherwise.

    1. With fewer than ``min_labelled`` labelled rows the anchor stands (without labels the
       adapter is exactly the unlabelled one).
    2. Where the anchor is not the ``safe`` rule (the model's own argmax) and the evidence
       favours the safe rule (it scores higher on more than half of the draws), the safe
       rule becomes the incumbent: a lean against the unlabelled decision is enough to fall
       back to the unadapted model, whose worst case is zero.
    3. A rule replaces the incumbent only where it scores higher on at least ``evidence`` of
       the draws; of several such rules, the one with the highest pooled score.

    Args:
        comparison: from :func:`compare_rules`.
        anchor: index of the unlabelled decision's rule.
        safe: index of argmax.
        evidence: the share of draws a challenger must win.
        min_labelled: labelled rows below which nothing changes.
        candidates: indices that may challenge (default: all).

    Returns:
        The index of the rule to use.

    Example:
        >>> import numpy as np
        >>> draws = np.array([[0.6, 0.7, 0.65]] * 9 + [[0.6, 0.5, 0.7]])
        >>> found = RuleComparison(draws.mean(axis=0), draws, 100.0, 0.0)
        >>> choose_labelled_rule(found, anchor=0), choose_labelled_rule(found, anchor=2)
        (1, 1)
    """
    if comparison.n_labelled < min_labelled or len(comparison.draws) == 0:
        return anchor
    incumbent = anchor
    if anchor != safe and comparison.probability_better(safe, anchor) > 0.5:
        incumbent = safe
    indices = range(len(comparison.scores)) if candidates is None else candidates
    winners = [
        r
        for r in indices
        if r != incumbent and comparison.probability_better(r, incumbent) >= evidence
    ]
    if not winners:
        return incumbent
    return max(winners, key=lambda r: (comparison.scores[r], -r))

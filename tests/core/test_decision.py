"""Decisions for an objective: expected confusions, plug-in and between weights, the rule choice."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score

from adaptable.core.decision import rules as decision
from adaptable.core.decision.rules import (
    BETAS,
    argmax_by_class,
    between_weights,
    choose_rule,
    confusion,
    expected_confusion,
    label_shift_weights,
    plugin_weights,
    score,
)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_scores_equal_scikit_learn(n_classes: int) -> None:
    rng = np.random.default_rng(n_classes)
    y, pred = rng.integers(0, n_classes, 200), rng.integers(0, n_classes, 200)
    matrix = confusion(y, pred, n_classes)
    assert score(matrix, "macro_f1") == pytest.approx(f1_score(y, pred, average="macro"))
    assert score(matrix, "balanced_accuracy") == pytest.approx(balanced_accuracy_score(y, pred))
    assert score(matrix, "accuracy") == pytest.approx(accuracy_score(y, pred))
    with pytest.raises(ValueError, match="objective"):
        score(matrix, "f2")


def test_expected_confusion_sums_posteriors_by_prediction() -> None:
    q = np.array([[0.9, 0.1], [0.3, 0.7], [0.6, 0.4]])
    np.testing.assert_allclose(expected_confusion(q, np.array([0, 1, 1])), [[0.9, 0.9], [0.1, 1.1]])


@pytest.mark.parametrize("n_classes", [2, 3, 5])
def test_argmax_by_class_is_numpys_argmax_ties_included(n_classes: int) -> None:
    rng = np.random.default_rng(n_classes)
    # Values from a few levels, so that many rows hold a tie for the largest.
    values = rng.integers(0, 3, size=(n_classes, 500)).astype(float)
    np.testing.assert_array_equal(argmax_by_class(values), values.argmax(axis=0))
    assert argmax_by_class(np.array([[0.5, 0.2], [0.5, 0.8]])).tolist() == [0, 1]


def test_expected_confusion_of_class_major_posteriors_is_the_row_major_one_per_rule() -> None:
    rng = np.random.default_rng(1)
    q = rng.dirichlet(np.ones(3), size=300)
    preds = rng.integers(0, 3, size=(2, 300))
    by_class = q.T.copy()
    found = expected_confusion(by_class.T, preds)  # class-major (C, n), passed transposed
    assert found.shape == (2, 3, 3)
    np.testing.assert_allclose(found, expected_confusion(q, preds), rtol=1e-12)
    for rule, matrix in zip(preds, found, strict=True):  # the stack is one matrix per rule
        np.testing.assert_array_equal(matrix, expected_confusion(by_class.T, rule))
    # by hand, as in test_expected_confusion_sums_posteriors_by_prediction
    hand = np.array([[0.9, 0.3, 0.6], [0.1, 0.7, 0.4]])
    np.testing.assert_allclose(
        expected_confusion(hand.T, np.array([[0, 1, 1]]))[0], [[0.9, 0.9], [0.1, 1.1]]
    )


def test_binary_macro_f1_threshold_is_the_best_of_every_cut() -> None:
    rng = np.random.default_rng(0)
    q1 = rng.beta(0.6, 2.0, 300)
    q = np.stack([1 - q1, q1], axis=1)
    v = plugin_weights(q, "macro_f1")
    chosen = score(expected_confusion(q, (q * v).argmax(axis=1)), "macro_f1")
    every_cut = [
        score(expected_confusion(q, (q1 >= t).astype(int)), "macro_f1") for t in np.unique(q1)
    ]
    assert chosen == pytest.approx(max(every_cut))


def test_plugin_weights_for_accuracy_balanced_accuracy_and_multiclass() -> None:
    rng = np.random.default_rng(1)
    q = rng.dirichlet([0.5, 1.0, 2.0], 400)
    np.testing.assert_array_equal(plugin_weights(q, "accuracy"), np.ones(3))
    np.testing.assert_allclose(plugin_weights(q, "balanced_accuracy"), 1 / q.mean(axis=0))
    v = plugin_weights(q, "macro_f1")
    family = [1 / q.mean(axis=0) ** b for b in BETAS]
    assert any(np.allclose(v, w) for w in family)
    best = max(score(expected_confusion(q, (q * w).argmax(axis=1)), "macro_f1") for w in family)
    assert score(expected_confusion(q, (q * v).argmax(axis=1)), "macro_f1") == pytest.approx(best)


def test_label_shift_weights_are_the_bayes_rule_for_multiclass_macro_f1_only() -> None:
    rng = np.random.default_rng(3)
    three = rng.dirichlet([4.0, 4.0, 0.2], 300)  # the last class rare in these posteriors
    np.testing.assert_array_equal(label_shift_weights(three, "macro_f1", 3), np.ones(3))
    # the plug-in family would boost the rare class and send rows to it
    boosted = (three * plugin_weights(three, "macro_f1")).argmax(axis=1)
    decided = (three * label_shift_weights(three, "macro_f1", 3)).argmax(axis=1)
    assert (boosted == 2).sum() > (decided == 2).sum()
    np.testing.assert_array_equal(decided, three.argmax(axis=1))
    # every other case is the plug-in decision
    np.testing.assert_allclose(
        label_shift_weights(three, "balanced_accuracy", 3),
        plugin_weights(three, "balanced_accuracy"),
    )
    two = rng.dirichlet([1.0, 3.0], 300)
    np.testing.assert_allclose(
        label_shift_weights(two, "macro_f1", 2), plugin_weights(two, "macro_f1")
    )
    assert label_shift_weights(two, "macro_f1", 2)[0] != 1.0


@pytest.mark.parametrize(
    ("alpha", "prior", "best_beta"),
    [([3.0, 1.0], [0.75, 0.25], 0.6), ([3.0, 1.0, 0.6], [0.7, 0.2, 0.1], 0.4)],
)
def test_between_weights_are_the_best_rule_between_argmax_and_the_balanced_rule(
    alpha, prior, best_beta
) -> None:
    n_classes = len(alpha)
    rng = np.random.default_rng(7 + n_classes)
    q = rng.dirichlet(alpha, 300)  # minority classes with low posteriors
    prior = np.array(prior)
    family = [1 / prior**b for b in BETAS]
    expected = [score(expected_confusion(q, (q * w).argmax(axis=1)), "macro_f1") for w in family]
    v = between_weights(q, prior, "macro_f1")
    first_best = int(np.argmax(expected))
    assert BETAS[first_best] == pytest.approx(best_beta)  # inside (0, 1): neither end rule
    np.testing.assert_allclose(v, family[first_best])
    # For accuracy the Bayes rule (beta 0) maximises the expected accuracy under q.
    np.testing.assert_allclose(between_weights(q, prior, "accuracy"), np.ones(n_classes))


def test_binary_between_family_by_sorting_equals_the_rules_argmax() -> None:
    # The binary path scores every beta from one sort; it must agree with applying each rule,
    # including rules that predict no positive at all (the first draw: every q1 below 0.5).
    rng = np.random.default_rng(11)
    for draw in range(30):
        q1 = rng.beta(rng.uniform(0.3, 3.0), rng.uniform(0.3, 3.0), rng.integers(1, 400))
        if draw == 0:
            q1 = 0.45 * q1
        q = np.stack([1 - q1, q1], axis=1)
        prior = rng.dirichlet([2.0, 2.0])
        rules = [(q * (1 / prior**b)).argmax(axis=1) for b in BETAS]
        np.testing.assert_allclose(
            decision.binary_family_confusions(q1, prior),
            [expected_confusion(q, r) for r in rules],
            atol=1e-9,
        )


def test_between_weights_never_go_past_the_balanced_rule() -> None:
    # Posteriors that put every row near 0.3 for class 1 with p_s(1) = 0.4: the plug-in
    # (threshold search under q) predicts class 1 for rows the balanced rule (q1 > 0.4) leaves
    # at 0; the held decision cannot.
    q1 = np.array([0.39, 0.38, 0.35, 0.3, 0.3, 0.25, 0.2, 0.1])
    q = np.stack([1 - q1, q1], axis=1)
    prior = np.array([0.6, 0.4])
    assert (q * plugin_weights(q, "macro_f1")).argmax(axis=1).sum() > 0
    v = between_weights(q, prior, "macro_f1")
    assert (q * v).argmax(axis=1).sum() == 0
    np.testing.assert_allclose(v, [1.0, 1.0])  # ties go to argmax (beta 0)


def test_choose_rule_needs_evidence_for_the_balanced_rule() -> None:
    rng = np.random.default_rng(2)
    y = (rng.random(2000) < 0.2).astype(int)
    p1 = 0.05 + 0.2 * y + 0.15 * rng.random(2000)  # argmax never says 1; p / p_s separates
    proba = np.stack([1 - p1, p1], axis=1)
    prior = np.array([0.8, 0.2])
    choice = choose_rule(proba, y, prior, "macro_f1")
    assert choice.name == "balanced" and choice.evidence > 0.95
    assert choose_rule(proba, y, prior, "accuracy").name == "balanced"  # it is more accurate too
    # Calibrated posteriors: argmax is the accuracy-optimal rule.
    p1 = rng.beta(1.0, 3.0, 4000)
    calibrated = np.stack([1 - p1, p1], axis=1)
    y_calibrated = (rng.random(4000) < p1).astype(int)
    lost = choose_rule(calibrated, y_calibrated, prior, "accuracy")
    # the balanced rule lost on the held-out rows: no resample is drawn, and none speaks for it
    assert lost.name == "source" and lost.balanced_score < lost.source_score
    assert lost.evidence == 0.0
    # Identical rules: nothing to choose.
    calm = np.tile([0.9, 0.1], (2000, 1))
    assert choose_rule(calm, y, prior, "macro_f1").beta == 0.0
    # An unreachable evidence level keeps the source rule.
    assert choose_rule(proba, y, prior, "macro_f1", evidence=1.0 + 1e-9).beta == 0.0


def test_the_binary_threshold_never_sits_on_a_tie_of_posteriors() -> None:
    q1 = np.array([0.42] * 5 + [0.3, 0.03])
    threshold = decision.macro_f1_threshold(q1)
    assert threshold not in set(q1.tolist())
    # the run of five 0.42s is all positive or all negative: the best of those two cuts
    scored = {k: _expected_f1_of_top(q1, k) for k in (0, 5, 6, 7)}
    assert int((q1 >= threshold).sum()) == max(scored, key=scored.get)
    # a stream of one value: all rows one way, the end cuts included in the search
    assert (np.full(5, 0.9) >= decision.macro_f1_threshold(np.full(5, 0.9))).all()
    assert not (np.full(5, 0.1) >= decision.macro_f1_threshold(np.full(5, 0.1))).any()


def _expected_f1_of_top(q1: np.ndarray, k: int) -> float:
    order = np.sort(q1)[::-1]
    q = np.stack([1 - order, order], axis=1)
    return float(score(expected_confusion(q, (np.arange(len(order)) < k).astype(int)), "macro_f1"))


def test_the_binary_threshold_is_the_best_decision_a_threshold_can_make_on_tied_posteriors() -> (
    None
):
    # A tree model's posteriors take few values: score every threshold between distinct values
    rng = np.random.default_rng(4)
    for _ in range(30):
        q1 = rng.choice(rng.uniform(0.01, 0.99, 5), size=40)
        threshold = decision.macro_f1_threshold(q1)
        values = np.unique(q1)
        cuts = np.concatenate([[0.0], (values[:-1] + values[1:]) / 2, [1.0]])
        best = max(_expected_f1_of_top(q1, int((q1 > c).sum())) for c in cuts)
        assert threshold not in set(q1.tolist())
        assert _expected_f1_of_top(q1, int((q1 >= threshold).sum())) == pytest.approx(best)
        # the weights the plug-in returns make the same decision as the threshold
        q = np.stack([1 - q1, q1], axis=1)
        v = plugin_weights(q, "macro_f1")
        np.testing.assert_array_equal((q * v).argmax(axis=1), (q1 >= threshold).astype(int))


def test_the_binary_threshold_keeps_a_lone_top_row_positive() -> None:
    # The best rule predicts only the top row positive: the threshold lies between the top two
    # posteriors, not above the top one.
    q1 = np.array([0.55, 0.05, 0.04, 0.03, 0.02])
    threshold = decision.macro_f1_threshold(q1)
    assert (q1 >= threshold).tolist() == [True, False, False, False, False]
    assert threshold == pytest.approx((0.55 + 0.05) / 2)

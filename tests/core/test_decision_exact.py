"""The decision step's arithmetic against scikit-learn and brute force (mutation testing showed
these functions were reached only through end-to-end behaviour)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score

from adaptable.core.decision.rules import (
    choose_rule,
    confusion,
    expected_confusion,
    macro_f1_threshold,
    plugin_weights,
    prior_adjusted,
    score,
)

SKLEARN = {
    "accuracy": accuracy_score,
    "balanced_accuracy": balanced_accuracy_score,
    "macro_f1": lambda y, p: f1_score(y, p, average="macro"),
}


@pytest.mark.parametrize("objective", list(SKLEARN))
@pytest.mark.parametrize("n_classes", [2, 3, 4])
@pytest.mark.filterwarnings("ignore:y_pred contains classes not in y_true")
def test_score_equals_scikit_learn_hard_and_stacked(objective, n_classes) -> None:
    rng = np.random.default_rng(n_classes)
    stack, expected = [], []
    for _ in range(5):
        y = rng.integers(0, n_classes - 1, 60)  # the last class never occurs in the truth
        pred = rng.integers(0, n_classes, 60)
        matrix = confusion(y, pred, n_classes)
        assert matrix.dtype == np.float64 and matrix.sum() == 60
        assert float(score(matrix, objective)) == pytest.approx(SKLEARN[objective](y, pred))
        stack.append(matrix)
        expected.append(SKLEARN[objective](y, pred))
    np.testing.assert_allclose(score(np.stack(stack), objective), expected)


def test_score_leaves_out_classes_absent_from_truth_and_predictions() -> None:
    y = np.array([0, 0, 1, 1])
    pred = np.array([0, 1, 1, 1])
    three = confusion(y, pred, 3)  # class 2: neither true nor predicted
    assert score(three, "macro_f1") == pytest.approx(f1_score(y, pred, average="macro"))
    assert score(three, "balanced_accuracy") == pytest.approx(0.75)
    with pytest.raises(ValueError, match="objective"):
        score(three, "f2")


def test_expected_confusion_by_hand_with_a_class_never_predicted() -> None:
    q = np.array([[0.8, 0.1, 0.1], [0.6, 0.3, 0.1], [0.2, 0.7, 0.1]])
    pred = np.array([0, 0, 1])
    expected = np.array([[1.4, 0.2, 0.0], [0.4, 0.7, 0.0], [0.2, 0.1, 0.0]])
    np.testing.assert_allclose(expected_confusion(q, pred), expected)


def test_expected_confusion_of_a_stack_of_rules_is_one_matrix_per_rule() -> None:
    q = np.array([[0.8, 0.1, 0.1], [0.6, 0.3, 0.1], [0.2, 0.7, 0.1]])
    rules = np.array([[0, 0, 1], [2, 1, 1]])
    stacked = expected_confusion(q, rules)
    assert stacked.shape == (2, 3, 3)
    np.testing.assert_allclose(stacked[0], expected_confusion(q, rules[0]))
    # Rule 2: row 0 predicted 2, rows 1 and 2 predicted 1.
    by_hand = np.array([[0.0, 0.8, 0.8], [0.0, 1.0, 0.1], [0.0, 0.2, 0.1]])
    np.testing.assert_allclose(stacked[1], by_hand)


def test_prior_adjusted_by_hand() -> None:
    p = np.array([[0.6, 0.4], [0.9, 0.1]])
    prior = np.array([0.8, 0.2])
    np.testing.assert_allclose(
        prior_adjusted(p, prior), [[0.75 / 2.75, 2.0 / 2.75], [1.125 / 1.625, 0.5 / 1.625]]
    )
    np.testing.assert_allclose(prior_adjusted(p, prior, beta=0.0), p)
    half = p / np.sqrt(prior)
    np.testing.assert_allclose(
        prior_adjusted(p, prior, beta=0.5), half / half.sum(1, keepdims=True)
    )


def _expected_macro_f1(q1: np.ndarray, predicted_one: np.ndarray) -> float:
    q = np.stack([1 - q1, q1], axis=1)
    return float(score(expected_confusion(q, predicted_one.astype(np.int64)), "macro_f1"))


def test_macro_f1_threshold_is_the_brute_force_optimum() -> None:
    rng = np.random.default_rng(3)
    for _ in range(20):
        q1 = rng.beta(0.7, 2.0, 9)
        t = macro_f1_threshold(q1)
        best = max(
            _expected_macro_f1(q1, np.array(mask))
            for mask in itertools.product([0, 1], repeat=len(q1))
        )
        assert _expected_macro_f1(q1, q1 >= t) == pytest.approx(best)
        assert 0.0 < t < 1.0


def test_plugin_weights_for_each_objective() -> None:
    q = np.array([[0.7, 0.2, 0.1], [0.5, 0.4, 0.1], [0.2, 0.2, 0.6], [0.6, 0.3, 0.1]])
    np.testing.assert_array_equal(plugin_weights(q, "accuracy"), np.ones(3))
    np.testing.assert_allclose(plugin_weights(q, "balanced_accuracy"), 1.0 / q.mean(axis=0))
    v = plugin_weights(q, "macro_f1")
    assert v.shape == (3,) and np.all(v > 0)
    with pytest.raises(ValueError, match="objective"):
        plugin_weights(q, "f2")


def test_choose_rule_records_both_scores_and_the_evidence() -> None:
    rng = np.random.default_rng(0)
    y = (rng.random(400) < 0.2).astype(int)
    p1 = np.clip(0.1 + 0.3 * y + 0.1 * rng.random(400), 0, 1)
    proba = np.stack([1 - p1, p1], axis=1)
    prior = np.array([0.8, 0.2])
    choice = choose_rule(proba, y, prior, "macro_f1")
    assert choice.source_score == pytest.approx(f1_score(y, proba.argmax(1), average="macro"))
    balanced = (proba / prior).argmax(1)
    assert choice.balanced_score == pytest.approx(f1_score(y, balanced, average="macro"))
    assert choice.evidence == 1.0 and choice.beta == 1.0
    strict = choose_rule(proba, y, prior, "macro_f1", evidence=1.01)
    assert strict.beta == 0.0 and strict.evidence == 1.0  # evidence kept, rule refused
    accuracy = choose_rule(proba, y, prior, "accuracy")
    assert accuracy.source_score == pytest.approx(accuracy_score(y, proba.argmax(1)))
    assert accuracy.balanced_score == pytest.approx(accuracy_score(y, balanced))
    flipped = choose_rule(proba[:, ::-1], 1 - y, prior[::-1], "macro_f1")  # relabelled classes
    assert flipped.source_score == pytest.approx(choice.source_score)


@pytest.mark.parametrize("objective", ["macro_f1", "balanced_accuracy", "accuracy"])
def test_two_binary_rules_scored_in_scalars_match_the_array_path_exactly(objective) -> None:
    # score() of a (2, 2, 2) stack (two rules, binary) takes a scalar shortcut; a stack of
    # three takes the array path. Both must agree to the last bit, empty classes included.
    rng = np.random.default_rng(0)
    for i in range(500):
        pair = rng.random((2, 2, 2)) * rng.integers(0, 3, (2, 2, 2))
        if i % 7 == 0:
            pair[0, 0, :] = pair[0, :, 0] = 0.0  # class 0 absent from truth and predictions
        if i % 11 == 0:
            pair[1] = 0.0
        shortcut = score(pair, objective)
        array_path = score(np.concatenate([pair, pair[:1]]), objective)[:2]
        np.testing.assert_array_equal(shortcut, array_path)

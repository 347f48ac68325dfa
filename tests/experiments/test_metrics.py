"""Metrics against hand-computed values and scikit-learn."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import balanced_accuracy_score, f1_score

from adaptable.experiments import metrics


def test_macro_f1_hand_computed() -> None:
    # class 0: tp 1, fp 1, fn 0 -> F1 2/3; class 1: tp 1, fp 0, fn 1 -> F1 2/3
    y, pred = np.array([0, 1, 1]), np.array([0, 1, 0])
    assert metrics.macro_f1(y, pred) == pytest.approx(2 / 3)
    # a class never predicted scores 0 -> mean of (F1_0 = 2/3, F1_1 = 0)
    assert metrics.macro_f1(np.array([0, 1]), np.array([0, 0])) == pytest.approx(1 / 3)


def test_balanced_accuracy_hand_computed() -> None:
    y = np.array([0, 0, 0, 1])
    pred = np.array([0, 0, 1, 1])
    assert metrics.balanced_accuracy(y, pred) == pytest.approx((2 / 3 + 1) / 2)
    assert metrics.accuracy(y, pred) == pytest.approx(0.75)


def test_agree_with_sklearn_on_random_labels() -> None:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 500)
    pred = np.where(rng.random(500) < 0.6, y, rng.integers(0, 3, 500))
    assert metrics.macro_f1(y, pred) == pytest.approx(f1_score(y, pred, average="macro"))
    assert metrics.balanced_accuracy(y, pred) == pytest.approx(balanced_accuracy_score(y, pred))


def test_ece_hand_computed() -> None:
    # two rows at confidence 0.9 (one right), two at 0.6 (both right):
    # ECE = 0.5 * |0.5 - 0.9| + 0.5 * |1.0 - 0.6| = 0.4
    proba = np.array([[0.9, 0.1], [0.9, 0.1], [0.4, 0.6], [0.4, 0.6]])
    y = np.array([0, 1, 1, 1])
    assert metrics.expected_calibration_error(y, proba) == pytest.approx(0.4)
    bins = metrics.reliability_bins(y, proba)
    assert sum(bins["count"]) == 4
    scores = metrics.classification_metrics(y, proba)
    assert set(scores) == {"macro_f1", "balanced_accuracy", "accuracy", "ece"}
    assert scores["accuracy"] == pytest.approx(0.75)


def test_js_divergence_and_mmd() -> None:
    assert metrics.js_divergence(np.array([0.5, 0.5]), np.array([0.5, 0.5])) == pytest.approx(0.0)
    assert metrics.js_divergence(np.array([1.0, 0.0]), np.array([0.0, 1.0])) == pytest.approx(
        math.log(2)
    )
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3))
    assert metrics.mmd_rbf(x, x) == pytest.approx(0.0, abs=1e-12)
    near = metrics.mmd_rbf(x, rng.normal(size=(64, 3)), bandwidth=1.0)
    far = metrics.mmd_rbf(x, rng.normal(size=(64, 3)) + 3.0, bandwidth=1.0)
    assert far > near


def _js_by_hand(p: np.ndarray, q: np.ndarray) -> float:
    """The definition: mean KL of p and q to their midpoint (0 log 0 = 0), natural log."""
    p, q = p / p.sum(), q / q.sum()
    m = 0.5 * (p + q)

    def kl(a: np.ndarray, b: np.ndarray) -> float:
        mask = a > 0
        return float(np.sum(a[mask] * np.log(a[mask] / b[mask])))

    return 0.5 * kl(p, m) + 0.5 * kl(q, m)


def test_js_divergence_is_the_divergence_not_scipys_distance() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        p, q = rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(4))
        q[rng.integers(4)] = 0.0  # a zero class, as a batch without some label has
        assert metrics.js_divergence(p, q) == pytest.approx(_js_by_hand(p, q), rel=1e-12)
    # Unnormalised weights are normalised; equal inputs give exactly 0, never NaN.
    assert metrics.js_divergence(np.array([2.0, 6.0]), np.array([0.25, 0.75])) == 0.0
    p = rng.dirichlet(np.ones(7))
    assert metrics.js_divergence(p, p * (1 + 1e-15)) == pytest.approx(0.0, abs=1e-15)
    with pytest.raises(ValueError, match="non-negative"):
        metrics.js_divergence(np.array([0.5, -0.5]), np.array([0.5, 0.5]))


def test_median_distance_is_the_default_mmd_bandwidth() -> None:
    x = np.array([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]])
    assert metrics.median_distance(x) == pytest.approx(5.0)  # distances 5, 10, 5
    assert metrics.median_distance(x[:1]) == 1.0 and metrics.median_distance(x[[0, 0]]) == 1.0
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(20, 3)), rng.normal(size=(30, 3)) + 1.0
    pooled = np.vstack([a, b])
    assert metrics.mmd_rbf(a, b) == metrics.mmd_rbf(a, b, bandwidth=metrics.median_distance(pooled))


def test_mean_and_se() -> None:
    assert metrics.mean_and_se([1.0, 2.0, 3.0]) == pytest.approx((2.0, 1.0 / math.sqrt(3)))
    assert metrics.mean_and_se([5.0]) == (5.0, 0.0)


def test_bad_input_says_what_was_expected() -> None:
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        metrics.macro_f1(np.array([0, 1]), np.array([0]))
    with pytest.raises(ValueError, match="at least one label"):
        metrics.balanced_accuracy(np.array([], dtype=int), np.array([], dtype=int))
    with pytest.raises(ValueError, match=r"0\.\.1"):
        metrics.confusion_matrix(np.array([0, 2]), np.array([0, 1]), 2)
    with pytest.raises(ValueError, match="shape"):
        metrics.classification_metrics(np.array([0, 1]), np.array([0.5, 0.5]))

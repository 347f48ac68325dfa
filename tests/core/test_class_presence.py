"""Each class's chance of occurring in the stream (balanced accuracy's label-shift weights)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import quad

from adaptable.core.decision.class_presence import presence
from adaptable.core.decision.rules import label_shift_weights, plugin_weights


def _two_of_three(n: int, on: float, off: float, seed: int = 0) -> np.ndarray:
    """Posteriors (3, n) of a stream holding classes 0 and 2 only: ``on`` for the row's own
    class, ``off`` for each other."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n) * 2
    posteriors = np.full((n, 3), off)
    posteriors[np.arange(n), y] = on
    return posteriors.T


def test_a_class_a_sharp_model_never_sees_is_ruled_out_and_the_others_kept() -> None:
    chances = presence(_two_of_three(400, 0.98, 0.01), np.full(3, 1 / 3), [0.49, 0.02, 0.49], 400)
    assert chances[1] < 0.05  # about 1 / log(n) under the log-uniform prior of a share
    assert chances[0] > 0.999 and chances[2] > 0.999


def test_rows_that_cannot_tell_the_classes_apart_leave_presence_at_even_odds() -> None:
    # every row's posteriors are the source prior: the stream's likelihood does not move with
    # a class's share, so the Bayes factor is the prior's integral, 1, and the chance 1 / 2
    source = np.array([0.5, 0.3, 0.2])
    flat = np.tile(source[:, None], (1, 300))
    np.testing.assert_allclose(presence(flat, source, [0.4, 0.35, 0.25], 300), 0.5, atol=1e-9)


def test_the_grid_integral_is_the_bayes_factor_of_the_module_docstring() -> None:
    # the factor computed by quadrature, from the formula: integral over log e in
    # [-log n, log 0.999] of exp(w sum_i log(1 + e x_i)) / span
    rng = np.random.default_rng(4)
    n_rows, source = 60, np.array([0.5, 0.3, 0.2])
    posteriors = rng.dirichlet([2.0, 1.0, 0.3], n_rows).T
    prior = np.array([0.6, 0.3, 0.1])
    chances = presence(posteriors, source, prior, 3 * n_rows)  # each row stands for three
    ratio = posteriors / source[:, None]
    mixture = prior @ ratio
    span = math.log(0.999) + math.log(3 * n_rows)
    for k in range(3):
        excess = ratio[k] / ((mixture - prior[k] * ratio[k]) / (1 - prior[k])) - 1

        def integrand(log_e: float, excess: np.ndarray = excess) -> float:
            return math.exp(3 * np.log1p(math.exp(log_e) * excess).sum()) / span

        factor, _ = quad(integrand, -math.log(3 * n_rows), math.log(0.999), limit=200)
        assert chances[k] == pytest.approx(factor / (1 + factor), rel=0.02, abs=1e-6)


def test_presence_is_all_ones_without_rows_or_with_two_classes() -> None:
    np.testing.assert_array_equal(presence(np.zeros((3, 0)), np.full(3, 1 / 3), [0.2] * 3, 0), 1)
    two = np.array([[0.99] * 50, [0.01] * 50])
    np.testing.assert_array_equal(presence(two, np.array([0.5, 0.5]), [0.99, 0.01], 50), 1)


def test_balanced_accuracy_weights_carry_presence_on_many_classes_only() -> None:
    rng = np.random.default_rng(3)
    three = rng.dirichlet([4.0, 4.0, 0.2], 300)
    chances = np.array([1.0, 0.5, 0.01])
    weights = label_shift_weights(three, "balanced_accuracy", 3, presence=lambda: chances)
    np.testing.assert_allclose(weights, plugin_weights(three, "balanced_accuracy") * chances)

    # read only where it applies: not for two classes, macro-F1 or accuracy
    def refused() -> np.ndarray:
        raise AssertionError("presence read")

    two = rng.dirichlet([1.0, 3.0], 300)
    label_shift_weights(two, "balanced_accuracy", 2, presence=refused)
    label_shift_weights(three, "macro_f1", 3, presence=refused)
    label_shift_weights(three, "accuracy", 3, presence=refused)

"""The first-order bound on the reading's score gap: it holds for every estimate within the
move, it is exact without a move, and it is tighter than scaling every cell."""

from __future__ import annotations

import math

import numpy as np
import pytest

from adaptable.core.decision.rules import expected_confusion, score, score_bounds
from adaptable.core.recommended.estimate_bound import column_slopes, f1_gap_bounds


def reweighted(posteriors: np.ndarray, source_prior: np.ndarray, share: float) -> np.ndarray:
    """norm(q(y|x) p / p_s) of class-major posteriors (2, n) at the class-1 share ``share``."""
    weighted = posteriors * (np.array([1 - share, share]) / source_prior)[:, None]
    return weighted / weighted.sum(axis=0)


def gap(posteriors, source_prior, share, rules) -> float:
    cells = expected_confusion(reweighted(posteriors, source_prior, share).T, rules)
    argmax, balanced = score(cells, "macro_f1")
    return float(balanced - argmax)


def test_column_slopes_by_hand() -> None:
    weighted = np.array([[0.5, 0.9, 0.2], [0.5, 0.1, 0.8]])
    rules = np.array([[0, 0, 1], [1, 0, 1]])
    # pi (1 - pi): 0.25, 0.09, 0.16; argmax predicts 1 on the last row only, the balanced
    # rule on the first and the last
    np.testing.assert_allclose(column_slopes(weighted, rules), [[0.34, 0.16], [0.09, 0.41]])


def test_without_a_move_the_bounds_are_the_gap() -> None:
    cells = np.array([[[60.0, 10.0], [15.0, 15.0]], [[50.0, 5.0], [25.0, 20.0]]])
    low, high = f1_gap_bounds(cells, np.ones((2, 2)), 0.0)
    argmax, balanced = score(cells, "macro_f1")
    assert low == pytest.approx(balanced - argmax) and high == pytest.approx(low)


def test_the_gap_stays_within_the_bounds_for_every_share_in_the_interval() -> None:
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(60):
        n = int(rng.integers(20, 3000))
        source_prior = np.array([0.8, 0.2]) if rng.random() < 0.5 else np.array([0.6, 0.4])
        logits = rng.normal(size=n) * rng.uniform(0.5, 3.0) + rng.normal()
        posteriors = np.stack([1 / (1 + np.exp(logits)), 1 / (1 + np.exp(-logits))])
        rules = np.stack(
            [
                (posteriors[1] > posteriors[0]).astype(np.intp),
                (posteriors[1] / source_prior[1] > posteriors[0] / source_prior[0]).astype(np.intp),
            ]
        )
        share = float(rng.uniform(0.05, 0.95))
        weighted = reweighted(posteriors, source_prior, share)
        cells = expected_confusion(weighted.T, rules)
        delta = float(rng.choice([1e-3, 1e-2, 0.05, 0.2]))
        low, high = f1_gap_bounds(cells, column_slopes(weighted, rules), delta)
        logit = math.log(share / (1 - share))
        for move in np.linspace(-delta, delta, 9):
            moved = 1 / (1 + math.exp(-(logit + move)))
            assert low - 1e-12 <= gap(posteriors, source_prior, moved, rules) <= high + 1e-12
            checked += 1
    assert checked == 540


def test_tighter_than_scaling_every_cell_for_a_small_move() -> None:
    rng = np.random.default_rng(1)
    logits = rng.normal(size=4000) * 1.5 - 0.5
    posteriors = np.stack([1 / (1 + np.exp(logits)), 1 / (1 + np.exp(-logits))])
    source_prior = np.array([0.8, 0.2])
    rules = np.stack(
        [
            (posteriors[1] > posteriors[0]).astype(np.intp),
            (posteriors[1] / 0.2 > posteriors[0] / 0.8).astype(np.intp),
        ]
    )
    weighted = reweighted(posteriors, source_prior, 0.3)
    cells = expected_confusion(weighted.T, rules)
    factor = 1.01  # every share within 1 %: the logit within log(1.01)
    low, high = f1_gap_bounds(cells, column_slopes(weighted, rules), math.log(factor))
    cell_low, cell_high = score_bounds(cells, "macro_f1", factor)
    cell_width = (cell_high[1] - cell_low[0]) - (cell_low[1] - cell_high[0])
    assert high - low < cell_width / 5

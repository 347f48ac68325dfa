"""The label-shift reading kept between batches: the bound answers only where the full reading
would give the same answer, and the bound's pieces hold."""

from __future__ import annotations

import numpy as np
import pytest

from adaptable.core.decision.rules import argmax_by_class, expected_confusion, score, score_bounds
from adaptable.core.recommended import label_shift_estimate as label_shift_reading
from adaptable.core.recommended.label_shift_estimate import LabelShiftReading
from adaptable.core.recommended.prior_estimate import OnlinePriorEstimate


def full_reading(estimate: OnlinePriorEstimate, start: np.ndarray, objective: str):
    """The reading as written before it was kept between batches: Newton from ``start``, both
    rules scored on the whole reservoir; (answer, estimate, score difference)."""
    prior = estimate.estimate_with(estimate.source_prior, 64.0, start)
    posteriors = estimate.reservoir_by_class
    rules = np.stack(
        [
            argmax_by_class(posteriors),
            argmax_by_class(posteriors / estimate.source_prior[:, None]),
        ]
    )
    matrices = expected_confusion(estimate.target_posteriors_by_class(prior).T, rules)
    source, balanced = score(matrices, objective)
    return bool(balanced >= source), prior, float(balanced - source)


def stream(source_prior: np.ndarray, rows: int, seed: int) -> np.ndarray:
    """Posteriors of a model trained on ``source_prior`` (it under-calls the rare classes) on a
    stream whose labels are uniform: the balanced rule wins by a clear margin."""
    rng = np.random.default_rng(seed)
    n_classes = len(source_prior)
    labels = rng.integers(0, n_classes, rows)
    logits = rng.normal(size=(rows, n_classes)) + 1.5 * np.eye(n_classes)[labels]
    proba = np.exp(logits + np.log(source_prior))
    return proba / proba.sum(axis=1, keepdims=True)


@pytest.mark.parametrize(
    ("source_prior", "objective", "capacity", "least_bounded"),
    [
        ([0.8, 0.2], "macro_f1", 4096, 80),  # a long reservoir changes little: mostly bounded
        ([0.8, 0.2], "balanced_accuracy", 1024, 10),
        ([0.6, 0.3, 0.1], "macro_f1", 4096, 0),
        ([0.6, 0.3, 0.1], "accuracy", 1024, 0),  # three classes: the ranges rarely separate
    ],
)
def test_every_answer_is_the_full_readings_and_the_bound_answers_some(
    source_prior: list[float], objective: str, capacity: int, least_bounded: int
) -> None:
    source_prior = np.array(source_prior)
    kept = OnlinePriorEstimate(source_prior, capacity=capacity, seed=1)
    fresh = OnlinePriorEstimate(source_prior, capacity=capacity, seed=1)
    reading = LabelShiftReading(kept, 64.0, 1.0 / source_prior, objective)
    rows = stream(source_prior, 6000, seed=0)
    start = source_prior.copy()
    for first in range(0, len(rows), 64):
        kept.add(rows[first : first + 64])
        fresh.add(rows[first : first + 64])
        expected, start, _ = full_reading(fresh, start, objective)
        assert reading.favours_balanced() is expected
    assert reading.bounded_readings >= least_bounded
    assert reading.bounded_readings + reading.full_readings == 94
    # the estimate is computed on demand after a bounded answer
    np.testing.assert_allclose(reading.prior, start, atol=1e-9)


def test_without_a_provable_move_every_batch_is_read_in_full(monkeypatch) -> None:
    # A box too small to hold any move: no answer is provable, every batch is read in full.
    monkeypatch.setattr(label_shift_reading, "BOX", 1e-12)
    source_prior = np.array([0.8, 0.2])
    estimate = OnlinePriorEstimate(source_prior, capacity=4096)
    reading = LabelShiftReading(estimate, 64.0, 1.0 / source_prior, "macro_f1")
    rows = stream(source_prior, 1280, seed=0)
    for first in range(0, len(rows), 64):
        estimate.add(rows[first : first + 64])
        reading.favours_balanced()
    assert reading.bounded_readings == 0 and reading.full_readings == 20


def test_the_estimate_stays_within_the_proven_move() -> None:
    """Step 1 of the proof on its own: the reading's estimate on the current reservoir lies
    within the move the bound allows (checked where the bound answers)."""
    source_prior = np.array([0.8, 0.2])
    estimate = OnlinePriorEstimate(source_prior, capacity=4096, seed=3)
    reading = LabelShiftReading(estimate, 64.0, 1.0 / source_prior, "macro_f1")
    rows = stream(source_prior, 6000, seed=5)
    moves = []
    original = reading._bounded_answer

    def recording(snapshot):
        answer = original(snapshot)
        if answer is not None:
            size = estimate.reservoir_by_class.shape[1]
            row_weight = estimate.n_seen / size
            curvature = snapshot.curvature - row_weight * snapshot.removed
            mu = curvature / (1 + label_shift_reading.BOX) ** 2
            gradient = row_weight * snapshot.slope_sum + snapshot.prior_gradient
            bound = float(np.sqrt(gradient @ gradient)) / mu
            exact = estimate.estimate_with(source_prior, 64.0, snapshot.prior)
            moves.append((float(np.abs(exact - snapshot.prior).max()), bound))
        return answer

    reading._bounded_answer = recording
    for first in range(0, len(rows), 32):
        estimate.add(rows[first : first + 32])
        reading.favours_balanced()
    assert len(moves) > 10
    assert all(actual <= bound + 1e-9 for actual, bound in moves)
    # and the bound is not vacuous: within a few times the actual move
    assert np.median([bound / max(actual, 1e-12) for actual, bound in moves]) < 10


def test_score_bounds_by_hand() -> None:
    m = np.array([[30.0, 10.0], [5.0, 55.0]])  # columns: 35 and 65 rows predicted
    low, high = score_bounds(m, "macro_f1", 1.0)
    assert low == pytest.approx(score(m, "macro_f1")) and high == pytest.approx(low)
    low, high = score_bounds(m, "macro_f1", 2.0)
    # class 0: 2 * 15 / (80 + 35) and 2 * 60 / (20 + 35); class 1: 2 * 27.5 / (120 + 65) and
    # 2 * 110 / (30 + 65)
    assert low == pytest.approx((30 / 115 + 55 / 185) / 2)
    assert high == pytest.approx((120 / 55 + 220 / 95) / 2)
    low, high = score_bounds(m, "balanced_accuracy", 2.0)
    exact = (30 / 40 + 55 / 60) / 2
    assert (low, high) == pytest.approx((exact / 4, exact * 4))


@pytest.mark.parametrize("objective", ["macro_f1", "balanced_accuracy", "accuracy"])
def test_score_bounds_hold_for_every_prior_within_the_factor(objective: str) -> None:
    rng = np.random.default_rng(0)
    for trial in range(200):
        n_classes = int(rng.integers(2, 5))
        posteriors = rng.dirichlet(np.ones(n_classes), size=200)
        rules = rng.integers(0, n_classes, size=(2, 200))
        center = rng.dirichlet(np.ones(n_classes) * 3)
        ratios = np.exp(rng.uniform(-0.2, 0.2, n_classes))
        moved = center * ratios
        factor = float(ratios.max() / ratios.min())

        def matrices(prior, posteriors=posteriors, rules=rules):
            weighted = posteriors * prior
            weighted /= weighted.sum(axis=1, keepdims=True)
            return expected_confusion(weighted, rules)

        low, high = score_bounds(matrices(center), objective, factor)
        exact = score(matrices(moved / moved.sum()), objective)
        assert np.all(low <= exact + 1e-12) and np.all(exact <= high + 1e-12), trial


def test_answers_that_turn_against_the_balanced_rule_are_the_full_readings_too() -> None:
    """A stream whose class-1 share falls from 0.5 to 0.02: the reading turns from the
    balanced rule to argmax along it, and the bound must prove the new answer, not the old."""
    source_prior = np.array([0.8, 0.2])
    rng = np.random.default_rng(2)
    n_rows = 12_000
    labels = (rng.random(n_rows) < np.linspace(0.5, 0.02, n_rows)).astype(int)
    logits = rng.normal(size=(n_rows, 2)) + 1.5 * np.eye(2)[labels]
    rows = np.exp(logits + np.log(source_prior))
    rows /= rows.sum(axis=1, keepdims=True)
    kept = OnlinePriorEstimate(source_prior, capacity=4096, seed=1)
    fresh = OnlinePriorEstimate(source_prior, capacity=4096, seed=1)
    reading = LabelShiftReading(kept, 64.0, 1.0 / source_prior, "macro_f1")
    start, against = source_prior.copy(), 0
    for first in range(0, n_rows, 64):
        kept.add(rows[first : first + 64])
        fresh.add(rows[first : first + 64])
        expected, start, _ = full_reading(fresh, start, "macro_f1")
        against += not expected
        assert reading.favours_balanced() is expected
    assert against >= 10 and reading.bounded_readings >= 100

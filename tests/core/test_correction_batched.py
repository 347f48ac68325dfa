"""The score correction's fits run together (``fit_affine_many``, ``fit_correction``) give
what one fit at a time gives: pinned against the plain loops over :func:`fit_affine` and
:func:`decision_rule`, fit by fit, and the batched macro-F1 thresholds row by row."""

from __future__ import annotations

import numpy as np
import pytest

from adaptable.core.decision.rules import macro_f1_threshold, macro_f1_thresholds
from adaptable.core.labels.score_correction import (
    N_FOLDS,
    STRENGTHS,
    decision_rule,
    fit_affine,
    fit_affine_many,
    fit_correction,
    log_loss,
)


def _one_at_a_time(log_p, labels, base, objective, decide_on=None, seed=0):
    """fit_correction's contract written as plain loops: every strength on every fold, the
    strength of the lowest out-of-fold log-loss (the first of equal ones), its folds'
    decisions, then its fit on all rows."""
    n = len(labels)
    folds = np.random.default_rng(seed).permutation(n) % N_FOLDS
    best = None
    for strength in STRENGTHS:
        total, decisions = 0.0, np.zeros(n, dtype=np.int64)
        for fold in range(N_FOLDS):
            train, test = folds != fold, folds == fold
            scale, offset = fit_affine(log_p[train], labels[train], base, strength)
            total += log_loss(log_p[test], labels[test], scale, offset) * test.sum()
            rows = log_p[train] if decide_on is None else decide_on
            decisions[test] = decision_rule(scale, offset, rows, objective).predict(log_p[test])
        if best is None or total / n < best[0]:
            best = (total / n, strength, decisions)
    cv, strength, decisions = best
    scale, offset = fit_affine(log_p, labels, base, strength)
    rule = decision_rule(scale, offset, log_p if decide_on is None else decide_on, objective)
    return scale, offset, rule, strength, decisions, cv


def _shifted_rows(
    n: int, n_classes: int, seed: int, *, sharp: float = 2.0, moved: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Log-posteriors of a model whose scores are too sharp and whose threshold moved (or,
    ``moved=False``, a calibrated one: then the penalty's pull to the base wins)."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, n_classes)) * sharp
    log_p = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
    truth = 0.6 * logits + np.linspace(-0.8, 0.8, n_classes) if moved else logits
    q = np.exp(truth - np.logaddexp.reduce(truth, axis=1, keepdims=True))
    labels = (rng.random(n)[:, None] > q.cumsum(axis=1)).sum(axis=1)
    return log_p, np.minimum(labels, n_classes - 1)


CASES = [
    (37, 2, "macro_f1", True, True),
    (240, 2, "macro_f1", True, True),
    (240, 2, "macro_f1", True, False),
    (120, 2, "macro_f1", False, True),
    (90, 2, "accuracy", True, True),
    (150, 3, "macro_f1", True, True),
    (150, 3, "macro_f1", True, False),
    (80, 3, "balanced_accuracy", False, True),
]


@pytest.mark.parametrize(("n", "n_classes", "objective", "with_stream", "moved"), CASES)
def test_fit_correction_is_the_one_at_a_time_result(
    n, n_classes, objective, with_stream, moved
) -> None:
    log_p, labels = _shifted_rows(n, n_classes, seed=n, moved=moved)
    stream = _shifted_rows(700, n_classes, seed=n + 1)[0] if with_stream else None
    base = np.linspace(0.1, -0.1, n_classes) if moved else np.zeros(n_classes)
    found = fit_correction(log_p, labels, base, objective, decide_on=stream, seed=3)
    scale, offset, rule, strength, decisions, cv = _one_at_a_time(
        log_p, labels, base, objective, stream, seed=3
    )
    assert found.strength == strength
    np.testing.assert_array_equal(found.out_of_fold, decisions)
    assert found.scale == pytest.approx(scale, rel=1e-9)
    np.testing.assert_allclose(found.calibration_offset, offset, atol=1e-9)
    np.testing.assert_allclose(found.rule.offset, rule.offset, atol=1e-9)
    assert found.cv_log_loss == pytest.approx(cv, rel=1e-12)


def test_the_cases_above_choose_weak_and_strong_penalties() -> None:
    """(So that the pins above also pin which strength's fold fits give the decisions.)"""
    chosen = set()
    for n, n_classes, objective, _with_stream, moved in CASES:
        log_p, labels = _shifted_rows(n, n_classes, seed=n, moved=moved)
        base = np.linspace(0.1, -0.1, n_classes) if moved else np.zeros(n_classes)
        chosen.add(fit_correction(log_p, labels, base, objective, seed=3).strength)
    assert min(chosen) == STRENGTHS[0] and max(chosen) > STRENGTHS[1]


def test_fit_affine_many_backtracks_each_fit_like_one_fit() -> None:
    # sharp scores and labels unrelated to them (the optimum's scale near 0) or against them
    # (the optimum past a > 1e-3): full Newton steps overshoot, each fit halves its steps,
    # and against the bound it stops where no step lowers the loss
    rng = np.random.default_rng(0)
    for sharp, against in ((5.0, False), (20.0, False), (100.0, False), (20.0, True)):
        logits = rng.normal(size=(40, 2)) * sharp
        log_p = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
        labels = logits.argmin(axis=1) if against else rng.integers(0, 2, 40)
        training = np.ones((3, 40), dtype=bool)
        training[1, ::3] = training[2, ::2] = False
        strengths = np.array([1e-3, 0.01, 1.0])
        scales, offsets = fit_affine_many(log_p, labels, np.zeros(2), strengths, training)
        for k in range(3):
            rows = training[k]
            scale, offset = fit_affine(log_p[rows], labels[rows], np.zeros(2), strengths[k])
            assert scales[k] == pytest.approx(scale, rel=1e-7, abs=1e-9)
            np.testing.assert_allclose(offsets[k], offset, atol=1e-7)


def test_fit_affine_many_is_each_fit_alone() -> None:
    log_p, labels = _shifted_rows(60, 3, seed=4)
    rng = np.random.default_rng(5)
    training = rng.random((4, 60)) < np.array([[0.3], [0.6], [0.9], [1.0]])
    strengths = np.array([0.5, 4.0, 1.0, 300.0])
    base = np.array([0.2, 0.0, -0.2])
    scales, offsets = fit_affine_many(log_p, labels, base, strengths, training)
    assert scales.shape == (4,) and offsets.shape == (4, 3)
    for k in range(4):
        scale, offset = fit_affine(log_p[training[k]], labels[training[k]], base, strengths[k])
        assert scales[k] == pytest.approx(scale, rel=1e-9)
        np.testing.assert_allclose(offsets[k], offset, atol=1e-9)
    # the strongest penalty holds the fit near the base, the weakest lets it move
    assert abs(scales[3] - 1.0) < abs(scales[0] - 1.0)


def test_macro_f1_thresholds_are_each_rows_threshold_ties_included() -> None:
    rng = np.random.default_rng(6)
    rows = [
        rng.random(50),
        np.round(rng.random(50), 1),  # runs of equal values: cuts only between them
        np.full(50, 0.3),  # one run: no cut inside it
        np.concatenate([np.ones(3), np.zeros(47)]),
        rng.random(50) ** 6,
    ]
    found = macro_f1_thresholds(np.stack(rows))
    assert found.shape == (5,)
    for q1, threshold in zip(rows, found, strict=True):
        assert threshold == macro_f1_threshold(q1)


def test_each_fit_is_the_minimum_of_its_penalised_log_loss() -> None:
    """Against scipy's optimiser on the module doc's objective, fit by fit (its own rows and
    strength): the Newton runs find the same minimum."""
    from scipy.optimize import minimize

    log_p, labels = _shifted_rows(80, 3, seed=11)
    rng = np.random.default_rng(12)
    training = rng.random((3, 80)) < np.array([[0.5], [0.8], [1.0]])
    strengths = np.array([0.3, 3.0, 30.0])
    base = np.array([0.1, -0.2, 0.1])
    scales, offsets = fit_affine_many(log_p, labels, base, strengths, training)
    for k in range(3):
        z, y = log_p[training[k]], labels[training[k]]
        spread = np.mean((z - z.mean(axis=1, keepdims=True)) ** 2)

        def objective(theta, z=z, y=y, spread=spread, strength=strengths[k]):
            u = theta[0] * z + theta[1:]
            nll = np.sum(np.logaddexp.reduce(u, axis=1) - u[np.arange(len(y)), y])
            penalty = spread * (theta[0] - 1) ** 2 + np.sum((theta[1:] - base) ** 2)
            return nll + 0.5 * strength * penalty

        found = minimize(objective, np.concatenate([[1.0], base]), method="BFGS", tol=1e-12)
        assert scales[k] == pytest.approx(found.x[0], abs=1e-5)
        np.testing.assert_allclose(offsets[k], found.x[1:], atol=1e-5)

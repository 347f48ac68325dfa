"""Algorithm 1's equations against hand-computed values, and the vectorised batch step against a
row-by-row transcription of the algorithm."""

from __future__ import annotations

import numpy as np
import pytest

from adaptable.core.paper import label_handler as lh


def test_smooth_weighs_previous_by_alpha() -> None:
    out = lh.smooth(np.array([0.5, 0.5]), np.array([1.0, 0.0]), alpha=0.1)
    np.testing.assert_allclose(out, [0.95, 0.05])


def test_smooth_rejects_alpha_outside_unit_interval() -> None:
    with pytest.raises(ValueError, match="alpha"):
        lh.smooth(np.ones(2) / 2, np.ones(2) / 2, alpha=1.5)


def test_online_prior_starts_uniform_updates_and_resets() -> None:
    prior = lh.OnlinePrior(n_classes=4, alpha=0.2)
    np.testing.assert_allclose(prior.value, [0.25] * 4)
    prior.update(np.array([1.0, 0.0, 0.0, 0.0]))
    np.testing.assert_allclose(prior.value, [0.8 + 0.05, 0.05, 0.05, 0.05])
    prior.reset()
    np.testing.assert_allclose(prior.value, [0.25] * 4)
    with pytest.raises(ValueError, match="shape"):
        prior.update(np.array([0.5, 0.5]))


def test_source_prior_pools_train_and_valid_labels() -> None:
    np.testing.assert_allclose(lh.source_prior(np.array([0, 0, 0]), np.array([1])), [0.75, 0.25])
    np.testing.assert_allclose(lh.source_prior(np.array([0, 1]), None, n_classes=2), [0.5, 0.5])


def test_source_prior_rejects_one_class_and_missing_classes() -> None:
    with pytest.raises(ValueError, match="single class"):
        lh.source_prior(np.array([1, 1, 1]))
    with pytest.raises(ValueError, match="never occur"):
        lh.source_prior(np.array([0, 2, 2]), n_classes=3)
    with pytest.raises(ValueError, match="out of range"):
        lh.source_prior(np.array([0, 3]), n_classes=2)


def test_imbalance_temperature_formula() -> None:
    # rho = 0.8 / 0.2 = 4 -> T = 1.5 * 4 / (3 + 1e-6)
    assert lh.imbalance_temperature(np.array([0.8, 0.2])) == pytest.approx(6.0 / (3.0 + 1e-6))
    # three classes: rho = 0.5 / 0.1 = 5
    prior = np.array([0.5, 0.4, 0.1])
    assert lh.imbalance_temperature(prior) == pytest.approx(7.5 / (4.0 + 1e-6))


def test_balanced_source_warns_and_accepts_cap_or_explicit_temperature() -> None:
    with pytest.warns(RuntimeWarning, match="max_temperature"):
        t = lh.imbalance_temperature(np.array([0.5, 0.5]))
    assert t == pytest.approx(1.5e6)
    assert lh.imbalance_temperature(np.array([0.5, 0.5]), max_temperature=3.0) == 3.0
    assert lh.imbalance_temperature(np.array([0.5, 0.5]), temperature=2.0) == 2.0
    with pytest.raises(ValueError, match="positive"):
        lh.imbalance_temperature(np.array([0.5, 0.5]), temperature=0.0)


def test_uncertainty_is_reciprocal_top_two_margin() -> None:
    q = np.array([[0.7, 0.3], [0.5, 0.5]])
    delta = lh.uncertainty(q)
    assert delta[0] == pytest.approx(1 / 0.4)
    assert np.isfinite(delta[1]) and delta[1] > 1e300  # a tie: huge but finite
    q3 = np.array([[0.2, 0.5, 0.3]])
    assert lh.uncertainty(q3)[0] == pytest.approx(1 / 0.2)


def test_quantile_rule_hand_computed() -> None:
    # Q(., 0.75) = 4 and Q(., 0.25) = 2 for 1..5 (linear interpolation)
    delta = np.array([3.0, 1.0, 5.0, 2.0, 4.0])
    out = lh.recalibration_temperatures(delta, temperature=2.0)
    np.testing.assert_allclose(out, [1.0, 0.5, 2.0, 0.5, 2.0])
    # interpolated quantiles: four values, Q(.75) = 3.25, Q(.25) = 1.75
    out = lh.recalibration_temperatures(np.array([1.0, 2.0, 3.0, 4.0]), 3.0)
    np.testing.assert_allclose(out, [1 / 3, 1.0, 1.0, 3.0])


def test_quantile_rule_single_row_is_softened() -> None:
    np.testing.assert_allclose(lh.recalibration_temperatures(np.array([7.0]), 2.0), [2.0])


def test_debiased_estimate_and_final_mixture_hand_computed() -> None:
    prior = np.array([0.75, 0.25])
    # p / p_s = (0.8, 1.6) -> (1/3, 2/3)
    np.testing.assert_allclose(
        lh.debiased_estimate(np.array([[0.6, 0.4]]), prior), [[1 / 3, 2 / 3]]
    )
    p_tilde = np.array([[0.6, 0.4]])
    target = np.array([0.5, 0.5])
    # p~ * p_t / p_s = (0.4, 0.8) -> (1/3, 2/3); mean with (0.6, 0.4)
    np.testing.assert_allclose(
        lh.final_mixture(p_tilde, target, prior), [[(0.6 + 1 / 3) / 2, (0.4 + 2 / 3) / 2]]
    )


def _algorithm_1_row_by_row(logits, calibrated, prior, p_oe, temperature, alpha, q_low, q_high):
    """Algorithm 1 transcribed literally, one row at a time (the reference)."""
    n = len(logits)
    p = [np.exp(z - z.max()) / np.exp(z - z.max()).sum() for z in logits]
    delta = []
    for q in calibrated:
        top = np.sort(q)[::-1]
        delta.append(1.0 / (top[0] - top[1]))
    p_de = [(pi / prior) / (pi / prior).sum() for pi in p]
    p_t = (1 - alpha) * np.mean(p_de, axis=0) + alpha * p_oe
    high, low = np.quantile(delta, q_high), np.quantile(delta, q_low)
    out = []
    for i in range(n):
        t = temperature if delta[i] >= high else (1 / temperature if delta[i] <= low else 1.0)
        z = logits[i] / t
        pt = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
        aligned = pt * p_t / prior
        out.append((pt + aligned / aligned.sum()) / 2)
    p_oe_new = (1 - alpha) * np.mean(out, axis=0) + alpha * p_oe
    return np.array(out), p_t, p_oe_new


@pytest.mark.parametrize("n_classes", [2, 3])
def test_adjust_batch_matches_row_by_row_algorithm(n_classes: int) -> None:
    rng = np.random.default_rng(0)
    prior = rng.dirichlet(np.ones(n_classes) * 3)
    online = lh.OnlinePrior(n_classes, alpha=0.1)
    p_oe = online.value.copy()
    temperature = lh.imbalance_temperature(prior)
    for _ in range(3):  # three batches: the online state carries over
        logits = rng.normal(size=(17, n_classes)) * 2
        calibrated = lh.softmax(logits, rng.uniform(0.5, 2.0, size=17))
        result = lh.adjust_batch(logits, calibrated, prior, online, temperature)
        expected, p_t, p_oe = _algorithm_1_row_by_row(
            logits, calibrated, prior, p_oe, temperature, 0.1, 0.25, 0.75
        )
        np.testing.assert_allclose(result.proba, expected, rtol=1e-12)
        np.testing.assert_allclose(result.target_prior, p_t, rtol=1e-12)
        np.testing.assert_allclose(online.value, p_oe, rtol=1e-12)
        np.testing.assert_allclose(result.proba.sum(axis=1), 1.0)


def test_softmax_with_per_row_temperature() -> None:
    out = lh.softmax(np.array([[0.0, np.log(3.0)], [0.0, np.log(3.0)]]), np.array([1.0, 0.5]))
    np.testing.assert_allclose(out, [[0.25, 0.75], [0.1, 0.9]])


def test_fast_quantile_equals_numpy() -> None:
    rng = np.random.default_rng(0)
    for n in (1, 2, 5, 64, 101):
        values = np.sort(rng.exponential(size=n))
        for q in (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0):
            assert lh.quantile(values, q) == np.quantile(values, q)

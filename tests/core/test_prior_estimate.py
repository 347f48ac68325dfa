"""The MAP-EM estimate of the target label distribution: EM, the reservoir, the likelihood ratio."""

from __future__ import annotations

import numpy as np
import pytest

from adaptable.core.recommended.prior_estimate import OnlinePriorEstimate


def test_map_em_step_by_hand() -> None:
    est = OnlinePriorEstimate(np.array([0.5, 0.5]), strength=2.0)
    est.add(np.array([[0.8, 0.2], [0.4, 0.6]]))
    prior = est.estimate(max_iterations=1)
    # One EM step from the uniform start: responsibilities = q; (sum q + 2 * 0.5) / (2 + 2).
    np.testing.assert_allclose(prior, [(1.2 + 1.0) / 4, (0.8 + 1.0) / 4])


def test_likelihood_ratio_by_hand() -> None:
    est = OnlinePriorEstimate(np.array([0.5, 0.5]), strength=0.0)
    assert est.likelihood_ratio() == 0.0  # no row yet
    est.add(np.array([[0.8, 0.2], [0.3, 0.7]]))
    est.prior = np.array([0.5, 0.5])  # p_t = p_s: every row's ratio is one
    assert est.likelihood_ratio() == pytest.approx(0.0, abs=1e-12)
    est.prior = np.array([0.8, 0.2])
    # Rows: 0.8 * 1.6 + 0.2 * 0.4 = 1.36 and 0.3 * 1.6 + 0.7 * 0.4 = 0.76.
    expected = 2 * (np.log(1.36) + np.log(0.76))
    assert est.likelihood_ratio() == pytest.approx(expected, rel=1e-12)


def test_likelihood_ratio_counts_every_stream_row_the_reservoir_stands_for() -> None:
    q = np.array([[0.9, 0.1], [0.2, 0.8]] * 50)
    small = OnlinePriorEstimate(np.array([0.5, 0.5]), capacity=100)
    large = OnlinePriorEstimate(np.array([0.5, 0.5]), capacity=50, seed=0)
    small.add(q), large.add(q)
    small.prior = large.prior = np.array([0.7, 0.3])
    # The 50 kept rows of the second stand for 100; their statistic is scaled to match.
    kept = large.reservoir
    scaled = 2 * 2 * np.log((kept * [1.4, 0.6]).sum(axis=1)).sum()
    assert large.likelihood_ratio() == pytest.approx(scaled, rel=1e-12)
    assert small.likelihood_ratio() == pytest.approx(
        2 * 50 * (np.log(0.9 * 1.4 + 0.1 * 0.6) + np.log(0.2 * 1.4 + 0.8 * 0.6)), rel=1e-12
    )


def test_map_em_recovers_a_known_prior_and_the_reservoir_stays_bounded() -> None:
    rng = np.random.default_rng(4)
    source = np.array([0.7, 0.3])
    y = (rng.random(20000) < 0.6).astype(int)  # target: 60 % class 1
    # Calibrated source posteriors of a model with likelihood ratio 4 between the classes.
    ratio = np.where(rng.random(20000) < 0.8, 4.0, 0.25) ** np.where(y == 1, 1, -1)
    odds = ratio * source[1] / source[0]
    q = np.stack([1 / (1 + odds), odds / (1 + odds)], axis=1)
    est = OnlinePriorEstimate(source, strength=64.0, capacity=4096, seed=0)
    for start in range(0, 20000, 64):
        est.add(q[start : start + 64])
    assert len(est.reservoir) == 4096 and est.n_seen == 20000
    assert abs(est.estimate()[1] - 0.6) < 0.03


def _position_rows(n: int) -> np.ndarray:
    """Rows that remember their stream position t: (t / n, 1 - t / n)."""
    t = np.arange(n) / n
    return np.stack([t, 1.0 - t], axis=1)


def test_the_reservoir_does_not_depend_on_how_the_stream_is_cut() -> None:
    rows = _position_rows(20000)
    kept = []
    for cuts in ([64] * 313, [1000] * 20, [5, 4091, 1, 3000, 12903]):
        est = OnlinePriorEstimate(np.array([0.5, 0.5]), capacity=4096, seed=3)
        start = 0
        for size in cuts:
            est.add(rows[start : start + size])
            start += size
        assert est.n_seen == 20000
        kept.append(est.reservoir.copy())
    np.testing.assert_array_equal(kept[0], kept[1])
    np.testing.assert_array_equal(kept[0], kept[2])


def test_the_class_major_reservoir_is_the_reservoir_transposed() -> None:
    """Kept in step with the reservoir through filling, replacement, reset and restore."""
    rng = np.random.default_rng(5)
    est = OnlinePriorEstimate(np.array([0.2, 0.3, 0.5]), capacity=256, seed=4)
    for size in (100, 156, 1, 64, 1000, 7):
        est.add(rng.dirichlet(np.ones(3), size=size))
        np.testing.assert_array_equal(est.reservoir_by_class, est.reservoir.T)
    prior = np.array([0.5, 0.25, 0.25])
    np.testing.assert_allclose(
        est.target_posteriors_by_class(prior), est.target_posteriors(prior=prior).T, rtol=1e-12
    )
    other = OnlinePriorEstimate(np.array([0.2, 0.3, 0.5]), capacity=256)
    other.restore(est.arrays())
    np.testing.assert_array_equal(other.reservoir_by_class, est.reservoir.T)
    est.reset()
    assert est.reservoir_by_class.shape == (3, 0)


def test_the_reservoir_is_a_uniform_sample_of_the_stream() -> None:
    n = 40000
    est = OnlinePriorEstimate(np.array([0.5, 0.5]), capacity=4096, seed=1)
    for start in range(0, n, 64):
        est.add(_position_rows(n)[start : start + 64])
    positions = est.reservoir[:, 0]
    assert len(np.unique(positions)) == 4096  # no row kept twice
    # A uniform sample of 4,096 positions: mean 0.5 (sd 0.0045), a quarter in each quarter.
    assert abs(positions.mean() - 0.5) < 0.015
    quarters = np.histogram(positions, bins=4, range=(0.0, 1.0))[0] / 4096
    np.testing.assert_allclose(quarters, 0.25, atol=0.03)
    # A different seed keeps a different sample.
    other = OnlinePriorEstimate(np.array([0.5, 0.5]), capacity=4096, seed=2)
    for start in range(0, n, 64):
        other.add(_position_rows(n)[start : start + 64])
    assert not np.array_equal(np.sort(positions), np.sort(other.reservoir[:, 0]))


@pytest.mark.parametrize("n_classes", [2, 3, 5])
def test_estimate_with_reaches_the_fixed_point_of_map_em(n_classes: int) -> None:
    """Newton's MAP estimate equals MAP-EM iterated to its fixed point (to 1e-9), from any
    start, and leaves the running estimate alone."""
    rng = np.random.default_rng(n_classes)
    for _ in range(20):
        p_s = rng.dirichlet(np.full(n_classes, 2.0)) * 0.9 + 0.1 / n_classes
        est = OnlinePriorEstimate(p_s, strength=64)
        logits = rng.normal(size=(int(rng.integers(5, 6000)), n_classes)) * rng.uniform(0.2, 4)
        posteriors = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
        for i in range(0, len(posteriors), 64):
            est.add(posteriors[i : i + 64])
        strength = float(rng.choice([1.0, 8.0, 64.0, 500.0]))
        ratio, weight = est.reservoir / p_s, est.n_seen / len(est.reservoir)
        fixed = p_s.copy()
        for _ in range(100_000):  # EM's own update, run to its fixed point
            resp = ratio * fixed
            resp /= resp.sum(axis=1, keepdims=True)
            new = (weight * resp.sum(axis=0) + strength * p_s) / (est.n_seen + strength)
            if np.abs(new - fixed).max() < 1e-14:
                break
            fixed = new
        start = rng.dirichlet(np.ones(n_classes))
        found = est.estimate_with(p_s, strength, start)
        np.testing.assert_allclose(found, fixed, atol=1e-9)
        assert est.last_estimate_converged  # stopped on its tolerance, not on the cap
        assert est.prior.tolist() == est.center.tolist()  # the running estimate untouched
    with pytest.raises(ValueError, match="positive strength"):
        est.estimate_with(p_s, 0.0, p_s)


def test_target_posteriors_of_given_rows_by_hand() -> None:
    est = OnlinePriorEstimate(np.array([0.25, 0.75]))
    est.prior = np.array([0.5, 0.5])
    rows = np.array([[0.5, 0.5], [0.2, 0.8]])
    # p_t / p_s = (2, 2/3): (1, 1/3) / (4/3) and (0.4, 0.8 * 2/3) / (0.4 + 0.8 * 2/3)
    second = np.array([0.4, 0.8 * 2 / 3]) / (0.4 + 0.8 * 2 / 3)
    np.testing.assert_allclose(est.target_posteriors(rows), [[0.75, 0.25], second.tolist()])
    # an explicit prior replaces the running estimate: at p_t = p_s the rows stay as they are
    np.testing.assert_allclose(est.target_posteriors(rows, prior=np.array([0.25, 0.75])), rows)


def test_one_row_moves_the_estimate_and_estimate_with_finds_em_s_fixed_point() -> None:
    est = OnlinePriorEstimate(np.array([0.5, 0.5]), strength=2.0)
    est.add(np.array([[0.8, 0.2]]))
    # One EM step from the uniform start: (0.8 + 2 * 0.5) / (1 + 2), (0.2 + 1) / 3.
    np.testing.assert_allclose(est.estimate(max_iterations=1), [0.6, 0.4])
    fixed = est.estimate(max_iterations=10_000, tolerance=1e-15)
    center = np.array([0.5, 0.5])
    for start in ([0.5, 0.5], [3.0, 1.0], [1.0, 0.0]):  # unnormalised or on the boundary
        found = est.estimate_with(center, 2.0, np.array(start))
        np.testing.assert_allclose(found, fixed, atol=1e-9)


def test_the_uniform_draws_of_each_block_come_from_its_own_generator() -> None:
    est = OnlinePriorEstimate(np.array([0.5, 0.5]), capacity=50, seed=7)
    blocks = [np.random.default_rng([7, block]).random(50) for block in range(3)]
    expected = np.concatenate(blocks)
    for first, count in ((0, 30), (30, 40), (70, 5), (75, 75), (10, 130), (120, 3)):
        np.testing.assert_array_equal(est.uniforms(first, count), expected[first : first + count])


@pytest.mark.parametrize(
    ("reservoir", "prior", "message"),
    [
        (np.full(4, 0.5), [0.5, 0.5], "reservoir must be"),
        (np.full((2, 3), 1 / 3), [0.5, 0.5], "reservoir must be"),
        (np.full((2, 2), 0.5), [1.5, -0.5], "probability vector"),
        (np.full((2, 2), 0.5), [0.6, 0.6], "probability vector"),
        (np.full((2, 2), 0.5), [1.0], "probability vector"),
    ],
)
def test_restore_refuses_a_malformed_state(reservoir, prior, message) -> None:
    est = OnlinePriorEstimate(np.array([0.5, 0.5]))
    arrays = {"reservoir": reservoir, "n_seen": np.array([2]), "prior": np.array(prior)}
    with pytest.raises(ValueError, match=message):
        est.restore(arrays)


def test_restore_takes_a_prior_with_an_empty_class() -> None:
    est = OnlinePriorEstimate(np.array([0.5, 0.5]))
    arrays = {"reservoir": np.full((2, 2), 0.5), "n_seen": np.array([2]), "prior": np.eye(2)[1]}
    est.restore(arrays)
    assert est.prior.tolist() == [0.0, 1.0] and est.n_seen == 2


def test_no_newton_step_lowers_the_map_objective() -> None:
    """Each step of estimate_with either rises along its whole length (its end's slope proves
    it) or is checked against the objective and shortened: one step from any start never
    lowers F (several classes, where a full Newton step can overshoot)."""
    rng = np.random.default_rng(1)
    for _ in range(400):
        n_classes = int(rng.integers(3, 6))
        p_s = rng.dirichlet(np.ones(n_classes)) * 0.9 + 0.1 / n_classes
        est = OnlinePriorEstimate(p_s, strength=1.0)
        logits = rng.normal(size=(int(rng.integers(5, 400)), n_classes)) * rng.uniform(1, 8)
        est.add(np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True))
        strength = float(rng.choice([0.01, 0.5, 8.0]))
        ratio, weight = est.reservoir / p_s, est.n_seen / len(est.reservoir)
        start = rng.dirichlet(np.full(n_classes, 0.2))
        clipped = np.maximum(start, 1e-6) / np.maximum(start, 1e-6).sum()
        stepped = est.estimate_with(p_s, strength, start, max_iterations=1)
        before, after = (
            weight * float(np.log(ratio @ q).sum()) + strength * float(p_s @ np.log(q))
            for q in (clipped, stepped)
        )
        assert after >= before - 1e-9

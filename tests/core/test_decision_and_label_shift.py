"""The recommended adapter's parts: metric-aware decisions, the label-shift test, MAP-EM."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score

from adaptable.core import decision, label_shift
from adaptable.core.decision import (
    BETAS,
    argmax_by_class,
    between_weights,
    choose_rule,
    confusion,
    expected_confusion,
    plugin_weights,
    score,
)
from adaptable.core.label_shift import LabelShiftTest, feature_sums
from adaptable.core.prior_estimate import OnlinePriorEstimate


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


def test_feature_sums_equal_the_dense_one_hot_sums() -> None:
    numeric = np.array([[1.0, -1.0], [2.0, 0.5], [4.0, 0.0]])
    codes = np.array([[0, 1], [2, -1], [0, 0]])  # -1: unseen -> all-zero block
    dense = np.array(
        [[1, -1, 1, 0, 0, 0, 1], [2, 0.5, 0, 0, 1, 0, 0], [4, 0, 1, 0, 0, 1, 0]], float
    )
    np.testing.assert_allclose(feature_sums(numeric, codes, np.array([0, 3]), 7), dense.sum(0))


def test_feature_sums_add_categories_that_share_a_column() -> None:
    codes = np.array([[0, 1], [2, -1], [0, 0]])
    lookup = np.array([0, 1, 1, 2, 3])  # categories 1 and 2 of the first feature pooled
    sums = feature_sums(np.zeros((3, 0)), codes, np.array([0, 3]), 4, lookup)
    np.testing.assert_allclose(sums, [2, 1, 1, 1])


@pytest.mark.parametrize(
    ("frequencies", "sizes", "expected"),
    [
        # two features: the second's columns start after the first's
        ([0.5, 0.001, 0.499, 0.002, 0.998], [3, 2], [0, 1, 1, 2, 2]),
        # rare ones pooled after the kept ones; together not rare, so nobody joins them
        ([0.9, 0.003, 0.004, 0.093, 1.0], [4, 1], [0, 2, 2, 1, 3]),
        # exactly the minimum is not rare, alone or pooled
        ([0.005, 0.002, 0.003, 0.99], [4], [0, 2, 2, 1]),
        # a lone rare category takes the smallest other one, not the first
        ([0.3, 0.001, 0.2, 0.499], [4], [0, 2, 2, 1]),
        # every category rare: one column; no rare category: one column each
        ([0.002, 0.001, 0.5, 0.5], [2, 2], [0, 0, 1, 2]),
        # three features: each starts where the previous ended
        ([0.6, 0.4, 0.7, 0.3, 0.5, 0.5], [2, 2, 2], [0, 1, 2, 3, 4, 5]),
        ([0.6, 0.4, 0.7, 0.3, 0.999, 0.001], [2, 2, 2], [0, 1, 2, 3, 4, 4]),
    ],
)
def test_pooled_columns_by_hand(frequencies, sizes, expected) -> None:
    lookup = label_shift.pooled_columns(np.array(frequencies), np.array(sizes), 0.005)
    assert lookup.tolist() == expected


def _rare_category_source(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    """Two classes, one number and one categorical feature whose third category is 1 in 2,500."""
    y = (rng.random(n) < 0.4).astype(int)
    x = rng.normal(size=(n, 1)) + y[:, None]
    codes = np.where(rng.random(n) < 0.5 + 0.2 * y, 0, 1)
    codes[rng.random(n) < 4e-4] = 2
    return x, codes[:, None], y


@pytest.mark.parametrize("pooled", [True, False])
def test_one_row_of_a_rare_category_is_no_evidence_against_label_shift(
    monkeypatch: pytest.MonkeyPatch, pooled: bool
) -> None:
    # Weighted by the inverse of its source frequency, a single row of a category the source has
    # seen a handful of times dominated the statistic: this 256-row pure label shift was rejected.
    rng = np.random.default_rng(0)
    if not pooled:
        monkeypatch.setattr(label_shift, "MIN_EXPECTED_COUNT", 0.0)
    x, codes, y = _rare_category_source(rng, 10_000)
    test = LabelShiftTest.fit(x, codes, [3], y, 2, seed=0)
    assert test.width == (1 + 2 if pooled else 1 + 3)
    stream_x, stream_codes, stream_y = _rare_category_source(rng, 256)
    stream_codes[0] = 2
    test.update(stream_x, stream_codes)
    assert (test.z_score() < 3.0) is pooled
    # Pooling keeps the feature's evidence: a stream of the wrong categories is still rejected.
    test.reset()
    test.update(stream_x, np.where(stream_y[:, None] == 1, 0, 1))
    assert test.z_score() > 3.0


def test_pooled_columns_survive_saving() -> None:
    rng = np.random.default_rng(2)
    x, codes, y = _rare_category_source(rng, 10_000)
    test = LabelShiftTest.fit(x, codes, [3], y, 2, seed=0)
    stream_x, stream_codes, _ = _rare_category_source(rng, 256)
    stream_codes[:3] = 2
    test.update(stream_x, stream_codes)
    copy = LabelShiftTest.from_arrays(test.arrays(), 2)
    assert copy.lookup.tolist() == test.lookup.tolist() == [0, 1, 1]
    assert copy.z_score() == pytest.approx(test.z_score())
    copy.update(stream_x, stream_codes)  # and it keeps reading batches through the lookup
    test.update(stream_x, stream_codes)
    assert copy.z_score() == pytest.approx(test.z_score())


def test_a_file_without_pooled_columns_loads_with_one_column_per_category(gaussian_test):
    test, rng = gaussian_test
    arrays = test.arrays()
    assert "lookup" in arrays
    old = {k: v for k, v in arrays.items() if k != "lookup"}  # as written before pooling
    loaded = LabelShiftTest.from_arrays(old, 3)
    assert loaded.lookup is None and "lookup" not in loaded.arrays()
    with pytest.raises(ValueError, match="lookup"):
        LabelShiftTest.from_arrays(arrays | {"lookup": arrays["lookup"] + 5}, 3)


@pytest.fixture(scope="module")
def gaussian_test() -> tuple[LabelShiftTest, np.random.Generator]:
    rng = np.random.default_rng(3)
    y = rng.integers(0, 3, 6000)
    means = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0]])
    x = means[y] + rng.normal(size=(6000, 2))
    codes = (y[:, None] + (rng.random((6000, 1)) < 0.3)) % 3
    return LabelShiftTest.fit(x, codes, [3], y, 3, seed=0), rng


def test_label_shift_test_accepts_a_label_shift_and_rejects_a_covariate_shift(gaussian_test):
    test, rng = gaussian_test
    means = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0]])
    y = rng.choice(3, 3000, p=[0.6, 0.1, 0.3])
    codes = (y[:, None] + (rng.random((3000, 1)) < 0.3)) % 3
    test.reset()
    test.update(means[y] + rng.normal(size=(3000, 2)), codes)
    assert test.z_score() < 3.0
    np.testing.assert_allclose(test.mixture(), [0.6, 0.1, 0.3], atol=0.05)
    test.reset()
    test.update(means[y] + rng.normal(size=(3000, 2)) * 1.5 + [0.0, 1.0], codes)
    assert test.z_score() > 3.0
    # The null is calibrated: draws from the source itself give z near 0.
    assert test.null_sd > 0 and np.isfinite(test.null_mean)


def test_label_shift_test_round_trips_its_arrays(gaussian_test) -> None:
    test, rng = gaussian_test
    test.reset()
    test.update(rng.normal(size=(100, 2)), rng.integers(0, 3, (100, 1)))
    copy = LabelShiftTest.from_arrays(test.arrays(), 3)
    assert copy.z_score() == pytest.approx(test.z_score())
    broken = test.arrays() | {"null": np.array([0.0, -1.0])}
    with pytest.raises(ValueError, match="null"):
        LabelShiftTest.from_arrays(broken, 3)


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
        assert est.prior.tolist() == est.center.tolist()  # the running estimate untouched
    with pytest.raises(ValueError, match="positive strength"):
        est.estimate_with(p_s, 0.0, p_s)


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


def test_label_shift_test_fit_means_and_inverse_within_class_variances_by_hand() -> None:
    # two numbers (the second constant) and two categorical features (2 and 3 categories)
    numeric = np.array([[1.0, 2.0], [3.0, 2.0], [5.0, 2.0], [9.0, 2.0]])
    codes = np.array([[0, 2], [1, 0], [1, 1], [1, 2]])
    labels = np.array([0, 0, 0, 1])
    test = LabelShiftTest.fit(numeric, codes, [2, 3], labels, 2)
    # class 0: rows 1, 3, 5; class 1: row 9
    third = 1 / 3
    np.testing.assert_allclose(
        test.class_means,
        [[3, 9], [2, 2], [third, 0], [2 * third, 1], [third, 0], [third, 0], [third, 1]],
    )
    # within-class variance over all rows: numbers (4 + 0 + 4 + 0) / 4 and 0 (a constant column
    # gets no weight); each one-hot column sum_c n_c f (1 - f) / n = 3 * (1/3)(2/3) / 4, since
    # class 1's single row makes its columns constant
    np.testing.assert_allclose(test.weights, [1 / 2, 0, 6, 6, 6, 6, 6])
    # numbers alone: no one-hot column
    alone = LabelShiftTest.fit(numeric, np.zeros((4, 0), dtype=np.int64), [], labels, 2)
    np.testing.assert_allclose(alone.class_means, [[3, 9], [2, 2]])
    np.testing.assert_allclose(alone.weights, [1 / 2, 0])


def test_the_binary_threshold_keeps_a_lone_top_row_positive() -> None:
    # The best rule predicts only the top row positive: the threshold lies between the top two
    # posteriors, not above the top one.
    q1 = np.array([0.55, 0.05, 0.04, 0.03, 0.02])
    threshold = decision.macro_f1_threshold(q1)
    assert (q1 >= threshold).tolist() == [True, False, False, False, False]
    assert threshold == pytest.approx((0.55 + 0.05) / 2)


@pytest.mark.parametrize(
    ("entry", "value", "message"),
    [
        ("class_means", np.zeros(3), "class_means must be"),
        ("class_means", np.zeros((2, 2)), "class_means must be"),
        ("weights", np.ones(6), "wrong shape"),
        ("sums", np.ones(6), "wrong shape"),
        ("null", np.ones(3), "wrong shape"),
        ("weights", -np.ones(5), "negative weights"),
        ("null", np.array([0.0, 0.0]), "non-positive null sd"),
        ("weights", np.array([1.0, np.nan, 1.0, 1.0, 1.0]), "weights"),
    ],
)
def test_label_shift_test_refuses_malformed_arrays(gaussian_test, entry, value, message) -> None:
    test, _ = gaussian_test
    arrays = test.arrays()
    assert arrays["class_means"].shape == (5, 3)  # two numbers, one column per category
    with pytest.raises(ValueError, match=message):
        LabelShiftTest.from_arrays(arrays | {entry: value}, 3)

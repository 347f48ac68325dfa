"""The moment-matching label-shift test: feature sums, pooled rare categories, the z-score."""

from __future__ import annotations

import numpy as np
import pytest

from adaptable.core.recommended import moment_test as label_shift
from adaptable.core.recommended.moment_test import LabelShiftTest, feature_sums


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

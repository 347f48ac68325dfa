"""Pure label shift of the in-domain test split: counts, priors, no replacement, seeding, errors."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from adaptable import shifts
from adaptable.datasets import ShiftDataset, Split, make_shift_dataset
from adaptable.shifts.prior_shifts import class_counts_for_prior, dirichlet_prior


def with_id_test(dataset: ShiftDataset, labels: list[int]) -> ShiftDataset:
    """``dataset`` with an in-domain test split whose column ``row`` numbers its rows."""
    y = np.asarray(labels, dtype=np.int64)
    X = dataset.train.X.iloc[: len(y)].reset_index(drop=True).copy()
    X["num_0"] = np.arange(len(y), dtype=np.float64)  # identifies the row
    return dataclasses.replace(dataset, id_test=Split(X, y))


@pytest.fixture(scope="module")
def binary() -> ShiftDataset:
    # 70 rows of class 0, 30 of class 1, in a fixed order.
    base = make_shift_dataset(n_train=200, n_valid=50, n_test=50, seed=0)
    return with_id_test(base, [0] * 70 + [1] * 30)


@pytest.mark.parametrize(
    "available, prior, expected",
    [
        ([70, 30], [0.9, 0.1], [69, 8]),  # n = floor(70 / 0.9) = 77: 69.3 -> 69, 7.7 -> 8
        ([70, 30], [0.5, 0.5], [30, 30]),
        ([70, 30], [0.1, 0.9], [3, 30]),  # n = floor(30 / 0.9) = 33
        ([10, 20, 30], [0.2, 0.3, 0.5], [10, 15, 25]),  # n = 50
        ([10, 0, 30], [0.5, 0.0, 0.5], [10, 0, 10]),  # a class the prior leaves out may be empty
    ],
)
def test_class_counts_are_the_largest_stream_without_replacement(available, prior, expected):
    counts = class_counts_for_prior(np.array(available), np.array(prior))
    assert counts.tolist() == expected
    assert np.all(counts <= np.array(available))


def test_class_counts_reject_bad_priors():
    with pytest.raises(ValueError, match="probability vector"):
        class_counts_for_prior(np.array([5, 5]), np.array([0.7, 0.7]))
    with pytest.raises(ValueError, match="no rows of class"):
        class_counts_for_prior(np.array([5, 0]), np.array([0.5, 0.5]))


@pytest.mark.parametrize("rate, length", [(0.1, 77), (0.5, 60), (0.9, 33)])
def test_binary_scenarios_hit_the_positive_rate(binary, rate, length):
    stream = shifts.apply(f"prior_{rate}", binary, seed=0)
    assert len(stream) == length
    assert abs(stream.y.mean() - rate) <= 1 / length
    assert stream.info["split"] == "id_test"
    # Without replacement: every id_test row at most once, and the features are that row's.
    assert len(set(stream.rows.tolist())) == len(stream)
    np.testing.assert_array_equal(stream.X["num_0"].to_numpy(), stream.rows)
    np.testing.assert_array_equal(stream.y, binary.id_test.y[stream.rows])


def test_stream_is_shuffled_seeded_and_seed_dependent(binary):
    first = shifts.apply("prior_0.5", binary, seed=3)
    again = shifts.apply("prior_0.5", binary, seed=3)
    other = shifts.apply("prior_0.5", binary, seed=4)
    np.testing.assert_array_equal(first.rows, again.rows)
    assert not np.array_equal(first.rows, other.rows)
    # Shuffled: the labels are not in blocks (30 + 30 rows sorted would switch once).
    assert np.count_nonzero(np.diff(first.y)) > 5


def test_dirichlet_priors_are_fixed_by_the_draw_not_the_seed():
    assert not np.allclose(dirichlet_prior(3, 0), dirichlet_prior(3, 1))
    np.testing.assert_array_equal(dirichlet_prior(3, 2), dirichlet_prior(3, 2))
    base = make_shift_dataset(n_train=300, n_valid=60, n_test=60, n_classes=3, seed=1)
    dataset = with_id_test(base, [0] * 40 + [1] * 50 + [2] * 60)
    streams = [shifts.apply("prior_dirichlet_1", dataset, seed=s) for s in (0, 1)]
    target = np.asarray(streams[0].info["target_prior"])
    assert target == pytest.approx(dirichlet_prior(3, 1))
    assert streams[1].info["target_prior"] == pytest.approx(target.tolist())
    for stream in streams:
        realised = np.bincount(stream.y, minlength=3) / len(stream)
        assert np.all(np.abs(realised - target) <= 1 / len(stream) + 1e-12)


def test_binary_scenario_on_three_classes_and_missing_id_test_are_errors(binary):
    three = make_shift_dataset(n_train=100, n_valid=30, n_test=30, n_classes=3, seed=2)
    three = with_id_test(three, [0, 1, 2] * 10)
    with pytest.raises(ValueError, match="3 classes"):
        shifts.apply("prior_0.1", three, seed=0)
    with pytest.raises(ValueError, match="in-domain test split"):
        shifts.apply("prior_0.5", make_shift_dataset(seed=0), seed=0)


def test_real_dataset_streams_come_from_the_in_domain_test_split(readmission):
    stream = shifts.apply("prior_0.9", readmission, seed=0)
    positives, negatives = np.bincount(readmission.id_test.y, minlength=2)[::-1]
    assert len(stream) == int(np.floor(positives / 0.9 + 1e-9))
    pd.testing.assert_frame_equal(
        stream.X.iloc[:5], readmission.id_test.X.iloc[stream.rows[:5]].reset_index(drop=True)
    )
    assert negatives >= (stream.y == 0).sum()

"""Class imbalance and temporal correlation: label proportions and label persistence."""

from __future__ import annotations

import numpy as np
import pytest

from adaptable import datasets, shifts
from adaptable.datasets import ShiftDataset


def _persistence(labels: np.ndarray) -> float:
    """Share of consecutive stream positions that carry the same label."""
    return float(np.mean(labels[1:] == labels[:-1]))


@pytest.fixture(scope="module")
def three_class() -> ShiftDataset:
    return datasets.make_shift_dataset(
        n_train=900,
        n_test=6000,
        n_classes=3,
        source_prior=[0.5, 0.2, 0.3],
        target_prior=[1 / 3, 1 / 3, 1 / 3],
        seed=2,
    )


def test_class_weights_follow_the_paper_formula() -> None:
    # Source counts 5, 1, 3: ascending-frequency ranks are class1 -> 1, class2 -> 2, class0 -> 3.
    labels = np.array([0] * 5 + [1] + [2] * 3)
    weights = shifts.class_weights(labels, 3, ratio=10.0)
    np.testing.assert_allclose(weights, [3 / 3 * 9 + 1, 1 / 3 * 9 + 1, 2 / 3 * 9 + 1])
    np.testing.assert_allclose(weights, [10.0, 4.0, 7.0])


def test_class_weights_authors_convention_favours_rare_classes() -> None:
    labels = np.array([0] * 5 + [1] + [2] * 3)
    weights = shifts.class_weights(labels, 3, ratio=10.0, convention="authors")
    np.testing.assert_allclose(weights, [1.0, 10.0, 5.5])
    assert weights.max() / weights.min() == pytest.approx(10.0)


def test_class_weights_reject_bad_options() -> None:
    with pytest.raises(ValueError, match="ratio must be at least 1"):
        shifts.class_weights(np.array([0, 1]), 2, ratio=0.5)
    with pytest.raises(ValueError, match="convention must be"):
        shifts.class_weights(np.array([0, 1]), 2, convention="rare")  # type: ignore[arg-type]


@pytest.mark.parametrize("convention", ["paper", "authors"])
def test_class_imbalance_proportions_match_the_formula(
    three_class: ShiftDataset, convention: str
) -> None:
    stream = shifts.apply("class_imbalance", three_class, 0, convention=convention)
    weights = shifts.class_weights(three_class.train.y, 3, 10.0, convention)  # type: ignore[arg-type]
    test_counts = np.bincount(three_class.test.y, minlength=3)
    expected = test_counts * weights / np.sum(test_counts * weights)
    observed = stream.label_counts(3) / len(stream)
    np.testing.assert_allclose(observed, expected, atol=4 * np.sqrt(0.25 / len(stream)))
    np.testing.assert_allclose(stream.info["expected_proportions"], expected)
    assert len(stream) == len(three_class.test.y)


def test_class_imbalance_paper_order_favours_frequent_source_classes(
    three_class: ShiftDataset,
) -> None:
    counts = np.bincount(three_class.train.y, minlength=3)
    weights = np.array(shifts.apply("class_imbalance", three_class, 0).info["class_weights"])
    assert np.argmax(weights) == np.argmax(counts) and np.argmin(weights) == np.argmin(counts)


def test_temporal_stream_is_strongly_autocorrelated(synthetic: ShiftDataset) -> None:
    natural = shifts.apply("natural", synthetic, 0)
    for seed in range(3):
        temporal = shifts.apply("temporal", synthetic, seed)
        assert _persistence(temporal.y) > 0.95
    assert _persistence(natural.y) < 0.75
    assert len(temporal) == len(synthetic.test.y)


def test_temporal_with_a_large_floor_switches_often(three_class: ShiftDataset) -> None:
    # A floor of 0.2 keeps every class reachable: the chain mixes, but stays sticky.
    stream = shifts.apply("temporal", three_class, 0, floor=0.2)
    assert stream.info["label_switches"] > 100
    assert set(np.unique(stream.y)) == {0, 1, 2}
    assert _persistence(stream.y) > _persistence(shifts.apply("natural", three_class, 0).y)


def test_temporal_labels_draw_only_present_classes() -> None:
    rng = np.random.default_rng(0)
    labels = shifts.temporal_labels(np.array([0, 2, 2, 0, 2]), rng, window=2, floor=0.3)
    assert set(np.unique(labels)) <= {0, 2}
    assert labels.shape == (5,)


def test_temporal_labels_are_deterministic_given_the_generator() -> None:
    y = np.arange(200) % 2
    a = shifts.temporal_labels(y, np.random.default_rng(5), floor=0.1)
    b = shifts.temporal_labels(y, np.random.default_rng(5), floor=0.1)
    np.testing.assert_array_equal(a, b)


def test_temporal_rejects_bad_options(synthetic: ShiftDataset) -> None:
    with pytest.raises(ValueError, match="window must be a positive integer"):
        shifts.apply("temporal", synthetic, 0, window=0)
    with pytest.raises(ValueError, match=r"floor must lie in \(0, 1\)"):
        shifts.apply("temporal", synthetic, 0, floor=0.0)


def test_class_imbalance_authors_code_weights_test_positions_by_train_labels(
    make_dataset,
) -> None:
    import pandas as pd

    # Train labels 0, 0, 0, 1: class 1 is rare, so the train row at position 3 weighs 10, the
    # others 1. The test split has 8 rows: positions 0-3 all of class 1, 4-7 of class 0.
    train = pd.DataFrame({"row": [0.0, 1.0, 2.0, 3.0]})
    test = pd.DataFrame({"row": np.arange(8, dtype=float)})
    ds = make_dataset(train, [0, 0, 0, 1], test, [1, 1, 1, 1, 0, 0, 0, 0], ["row"], [])
    drawn = []
    for seed in range(200):
        stream = shifts.apply("class_imbalance", ds, seed, convention="authors_code")
        assert len(stream) == 4  # one draw per train row
        drawn.append(stream.X["row"].to_numpy())
        assert set(stream.y) == {1}  # only test positions 0-3 are ever drawn
    drawn = np.concatenate(drawn)
    assert drawn.max() <= 3
    assert np.mean(drawn == 3) == pytest.approx(10 / 13, abs=0.04)
    np.testing.assert_allclose(stream.info["expected_proportions"], [0.0, 1.0])
    np.testing.assert_allclose(stream.info["class_weights"], [1.0, 10.0])


def test_class_imbalance_authors_code_needs_as_many_test_rows_as_train_rows(make_dataset) -> None:
    import pandas as pd

    frame = pd.DataFrame({"row": np.arange(6, dtype=float)})
    ds = make_dataset(frame, [0, 0, 0, 1, 1, 0], frame.iloc[:3], [0, 1, 0], ["row"], [])
    with pytest.raises(ValueError, match="only 3 rows"):
        shifts.apply("class_imbalance", ds, 0, convention="authors_code")

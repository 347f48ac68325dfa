"""The registry: names, errors, determinism and the shape contract shared by every scenario."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from adaptable import shifts
from adaptable.datasets import ShiftDataset

EXPECTED = [
    "natural",
    "gaussian",
    "uniform",
    "random_drop",
    "column_drop",
    "numerical",
    "categorical",
    "class_imbalance",
    "temporal",
]


@pytest.fixture(scope="module")
def streams(synthetic: ShiftDataset) -> dict[tuple[str, int], shifts.Stream]:
    """Every scenario at seeds 0 and 1, plus a second build at seed 0 (for determinism)."""
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for name in EXPECTED:
            for seed in (0, 1):
                out[(name, seed)] = shifts.apply(name, synthetic, seed)
            out[(name, -1)] = shifts.apply(name, synthetic, 0)  # -1: the rebuild of seed 0
    return out


def test_names_lists_the_nine_scenarios_natural_first() -> None:
    # The paper's nine, then the generality benchmark's pure label shifts (prior_shifts).
    assert shifts.names()[: len(EXPECTED)] == EXPECTED
    assert all(name.startswith("prior_") for name in shifts.names()[len(EXPECTED) :])


def test_unknown_name_is_a_clear_error_listing_the_names(synthetic: ShiftDataset) -> None:
    with pytest.raises(ValueError, match="unknown shift scenario 'gausian'") as err:
        shifts.apply("gausian", synthetic, 0)
    for name in EXPECTED:
        assert name in str(err.value)


@pytest.mark.parametrize("seed", [-1, 1.5, True, "0"])
def test_bad_seed_is_rejected(synthetic: ShiftDataset, seed: object) -> None:
    with pytest.raises((TypeError, ValueError), match="non-negative integer"):
        shifts.apply("natural", synthetic, seed)  # type: ignore[arg-type]


def test_non_dataset_is_rejected() -> None:
    with pytest.raises(TypeError, match="ShiftDataset"):
        shifts.apply("gaussian", pd.DataFrame({"a": [1.0]}), 0)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", EXPECTED)
def test_same_seed_same_stream(streams: dict, name: str) -> None:
    a, b = streams[(name, 0)], streams[(name, -1)]
    pd.testing.assert_frame_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    np.testing.assert_array_equal(a.rows, b.rows)


@pytest.mark.parametrize("name", EXPECTED)
def test_other_seed_other_stream(streams: dict, name: str) -> None:
    a, b = streams[(name, 0)], streams[(name, 1)]
    assert not a.X.equals(b.X)


@pytest.mark.parametrize("name", EXPECTED)
def test_columns_dtypes_length_and_labels(
    streams: dict, synthetic: ShiftDataset, name: str
) -> None:
    stream = streams[(name, 0)]
    assert stream.name == name and stream.seed == 0 and stream.dataset == "synthetic"
    assert len(stream) == len(synthetic.test.y)
    assert list(stream.X.columns) == list(synthetic.test.X.columns)
    # The synthetic numerics are float64, so even the noise scenarios keep every dtype.
    assert stream.X.dtypes.tolist() == synthetic.test.X.dtypes.tolist()
    assert stream.y.dtype == np.int64
    # Each stream row carries the label of the test row it came from.
    np.testing.assert_array_equal(stream.y, synthetic.test.y[stream.rows])


@pytest.mark.parametrize("name", EXPECTED)
def test_categories_stay_valid(streams: dict, synthetic: ShiftDataset, name: str) -> None:
    stream = streams[(name, 0)]
    for column in synthetic.categorical:
        allowed = set(synthetic.train.X[column]) | set(synthetic.test.X[column])
        assert set(stream.X[column]) <= allowed


@pytest.mark.parametrize(
    "name", ["natural", "numerical", "categorical", "class_imbalance", "temporal"]
)
def test_resampling_scenarios_leave_features_untouched(
    streams: dict, synthetic: ShiftDataset, name: str
) -> None:
    stream = streams[(name, 0)]
    expected = synthetic.test.X.iloc[stream.rows].reset_index(drop=True)
    pd.testing.assert_frame_equal(stream.X, expected)


def test_natural_is_a_permutation_shared_by_the_corruptions(streams: dict) -> None:
    natural = streams[("natural", 0)]
    assert sorted(natural.rows.tolist()) == list(range(len(natural)))
    assert natural.rows.tolist() != list(range(len(natural)))  # actually shuffled
    for name in ("gaussian", "uniform", "random_drop", "column_drop"):
        np.testing.assert_array_equal(streams[(name, 0)].rows, natural.rows)


def test_every_scenario_on_heloc(heloc: ShiftDataset) -> None:
    """Real data: integer numerics, string categories; every scenario keeps the contract."""
    for name in EXPECTED:
        stream = shifts.apply(name, heloc, 0)
        assert len(stream) == len(heloc.test.y)
        assert list(stream.X.columns) == list(heloc.test.X.columns)
        for column in heloc.test.X.columns:
            expected = heloc.test.X[column].dtype
            if name in ("gaussian", "uniform") and column in heloc.numerical:
                expected = np.dtype(np.float64)  # documented: noise makes integers float
            assert stream.X[column].dtype == expected, (name, column)
        for column in heloc.categorical:
            assert set(stream.X[column]) <= set(heloc.train.X[column]) | set(heloc.test.X[column])

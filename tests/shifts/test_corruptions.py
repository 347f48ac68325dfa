"""Gaussian / uniform noise and random / column drop: magnitudes and rates match the definitions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from adaptable import datasets, shifts
from adaptable.datasets import ShiftDataset


@pytest.fixture(scope="module")
def large() -> ShiftDataset:
    """Enough test rows (4,000 x 4 numerical cells) to pin the noise statistics down."""
    return datasets.make_shift_dataset(n_train=1000, n_test=4000, seed=1)


def _noise_in_sigmas(dataset: ShiftDataset, name: str, seed: int = 0) -> np.ndarray:
    """(corrupted - clean) / sigma_j, per numerical column, shape (n, n_numerical)."""
    clean = shifts.apply("natural", dataset, seed).X
    noisy = shifts.apply(name, dataset, seed).X
    sigma = dataset.train.X[dataset.numerical].std(ddof=0).to_numpy()
    return (noisy[dataset.numerical] - clean[dataset.numerical]).to_numpy() / sigma


def test_gaussian_noise_has_std_point_one_sigma(large: ShiftDataset) -> None:
    noise = _noise_in_sigmas(large, "gaussian")
    n = noise.shape[0]
    # Sample std of n normals has standard error ~ 0.1 / sqrt(2n); allow 4 of them per column.
    tolerance = 4 * 0.1 / np.sqrt(2 * n)
    np.testing.assert_allclose(noise.std(axis=0), 0.1, atol=tolerance)
    np.testing.assert_allclose(noise.mean(axis=0), 0.0, atol=4 * 0.1 / np.sqrt(n))
    # Gaussian, not bounded: some draws lie beyond 0.25 sigma (P ~ 1.2 % per cell).
    assert np.abs(noise).max() > 0.25


def test_uniform_noise_stays_within_point_one_sigma(large: ShiftDataset) -> None:
    noise = _noise_in_sigmas(large, "uniform")
    assert np.abs(noise).max() <= 0.1 + 1e-12
    assert np.abs(noise).max() > 0.099  # and reaches the edge
    n = noise.shape[0]
    # U(-0.1, 0.1) has std 0.1 / sqrt(3).
    np.testing.assert_allclose(noise.std(axis=0), 0.1 / np.sqrt(3), atol=4 * 0.03 / np.sqrt(n))


@pytest.mark.parametrize("name", ["gaussian", "uniform"])
def test_noise_leaves_categorical_columns_alone(large: ShiftDataset, name: str) -> None:
    clean = shifts.apply("natural", large, 0).X
    noisy = shifts.apply(name, large, 0).X
    pd.testing.assert_frame_equal(noisy[large.categorical], clean[large.categorical])


def test_noise_scale_option(large: ShiftDataset) -> None:
    stream = shifts.apply("gaussian", large, 0, scale=0.5)
    clean = shifts.apply("natural", large, 0).X
    sigma = large.train.X["num_0"].std(ddof=0)
    assert (stream.X["num_0"] - clean["num_0"]).std() / sigma == pytest.approx(0.5, abs=0.03)


def test_integer_columns_become_float_under_noise(make_dataset) -> None:  # type: ignore[no-untyped-def]
    train = pd.DataFrame({"count": np.arange(50, dtype=np.int64), "kind": ["a", "b"] * 25})
    test = pd.DataFrame({"count": np.arange(20, dtype=np.int64), "kind": ["b"] * 20})
    ds = make_dataset(train, np.arange(50) % 2, test, np.arange(20) % 2, ["count"], ["kind"])
    stream = shifts.apply("gaussian", ds, 0)
    assert stream.X["count"].dtype == np.float64
    assert stream.X["kind"].dtype == ds.test.X["kind"].dtype
    # The drops keep integer columns integer: replacements are source integers.
    dropped = shifts.apply("random_drop", ds, 0).X
    assert dropped["count"].dtype == np.int64
    assert dropped["kind"].dtype == ds.test.X["kind"].dtype


def test_random_drop_replaces_about_a_fifth_of_cells_with_source_values(
    large: ShiftDataset,
) -> None:
    clean = shifts.apply("natural", large, 0).X
    stream = shifts.apply("random_drop", large, 0)
    numeric = large.numerical
    # Continuous columns: a replacement equals the original with probability ~0.
    changed = (stream.X[numeric] != clean[numeric]).to_numpy()
    tolerance = 4 * np.sqrt(0.2 * 0.8 / changed.size)
    assert changed.mean() == pytest.approx(0.2, abs=tolerance)
    assert stream.info["replaced_fraction"] == pytest.approx(0.2, abs=tolerance)
    # Per row, not per column: the drops are spread over every column.
    assert np.all(changed.mean(axis=0) > 0.15)
    for j, column in enumerate(numeric):
        replaced = stream.X[column].to_numpy()[changed[:, j]]
        assert np.isin(replaced, large.train.X[column].to_numpy()).all()


def test_random_drop_rate_option(large: ShiftDataset) -> None:
    clean = shifts.apply("natural", large, 0).X["num_1"]
    assert (shifts.apply("random_drop", large, 0, rate=0.0).X["num_1"] == clean).all()
    changed = shifts.apply("random_drop", large, 0, rate=0.5).X["num_1"] != clean
    assert changed.mean() == pytest.approx(0.5, abs=0.04)
    with pytest.raises(ValueError, match=r"rate must lie in \[0, 1\]"):
        shifts.apply("random_drop", large, 0, rate=1.5)


def test_column_drop_replaces_whole_columns(large: ShiftDataset) -> None:
    clean = shifts.apply("natural", large, 0).X
    for seed in range(6):
        stream = shifts.apply("column_drop", large, seed)
        clean = shifts.apply("natural", large, seed).X
        dropped = set(stream.info["dropped_columns"])
        for column in large.numerical:
            share_changed = float((stream.X[column] != clean[column]).mean())
            if column in dropped:
                assert share_changed > 0.99  # the whole column, bar chance repeats
                assert np.isin(stream.X[column], large.train.X[column]).all()
            else:
                assert share_changed == 0.0
        for column in large.categorical:
            if column not in dropped:
                assert stream.X[column].equals(clean[column])


def test_column_drop_rate_is_about_a_fifth(make_dataset) -> None:  # type: ignore[no-untyped-def]
    # A narrow frame, many seeds: the per-column drop probability, not the per-cell one.
    rng = np.random.default_rng(0)
    columns = [f"x{j}" for j in range(10)]
    train = pd.DataFrame(rng.normal(size=(30, 10)), columns=columns)
    test = pd.DataFrame(rng.normal(size=(8, 10)), columns=columns)
    ds = make_dataset(train, np.arange(30) % 2, test, np.arange(8) % 2, columns, [])
    n_dropped = [
        len(shifts.apply("column_drop", ds, s).info["dropped_columns"]) for s in range(300)
    ]
    rate = np.sum(n_dropped) / (300 * 10)
    assert rate == pytest.approx(0.2, abs=4 * np.sqrt(0.16 / 3000))

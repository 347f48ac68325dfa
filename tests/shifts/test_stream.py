"""The Stream type: batching, fixed order, input checks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from adaptable.shifts import Stream


def _stream(n: int = 150) -> Stream:
    X = pd.DataFrame({"a": np.arange(n, dtype=np.float64), "b": [f"c{i % 3}" for i in range(n)]})
    return Stream("natural", X, np.arange(n) % 2, seed=3, dataset="toy", info={"k": 1})


def test_batches_cover_the_stream_exactly_once_in_order() -> None:
    stream = _stream(150)
    batches = list(stream.batches(64))
    assert [len(y) for _, y in batches] == [64, 64, 22]
    assert stream.n_batches(64) == 3
    seen = np.concatenate([X["a"].to_numpy() for X, _ in batches])
    np.testing.assert_array_equal(seen, np.arange(150))
    np.testing.assert_array_equal(np.concatenate([y for _, y in batches]), stream.y)


def test_iterating_twice_gives_the_same_batches() -> None:
    stream = _stream(100)
    first = [X["a"].tolist() for X, _ in stream.batches(32)]
    second = [X["a"].tolist() for X, _ in stream.batches(32)]
    assert first == second


def test_labels_are_int64_and_rows_default_to_positions() -> None:
    stream = _stream(10)
    assert stream.y.dtype == np.int64
    np.testing.assert_array_equal(stream.rows, np.arange(10))
    assert len(stream) == 10
    assert stream.describe()["rows"] == 10 and stream.describe()["k"] == 1


def test_info_is_read_only() -> None:
    stream = _stream(10)
    with pytest.raises(TypeError):
        stream.info["k"] = 2  # type: ignore[index]


@pytest.mark.parametrize("bad", [0, -5])
def test_non_positive_batch_size_is_rejected(bad: int) -> None:
    with pytest.raises(ValueError, match="positive integer"):
        next(_stream().batches(bad))


def test_non_integer_batch_size_is_rejected() -> None:
    with pytest.raises(TypeError, match="positive integer"):
        next(_stream().batches(6.4))  # type: ignore[arg-type]


def test_mismatched_labels_are_rejected() -> None:
    X = pd.DataFrame({"a": [1.0, 2.0, 3.0]})
    with pytest.raises(ValueError, match="one label per row"):
        Stream("natural", X, np.array([0, 1]), seed=0)

"""A DataFrame-fitted AdapTable gives the model the fit's columns in the fit's order, whatever
order a batch brings them in: a model that reads by position sees what it was trained on."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

from adaptable import AdapTable
from adaptable.framework.fitted_columns import FittedColumns

WEIGHTS = np.array([[1.5, -1.5], [-0.5, 0.5], [0.0, 0.2]])


def positional_logits(X) -> np.ndarray:
    """A model that reads its input by position only (as a torch module on ``X.values``)."""
    return np.asarray(X, dtype=np.float64) @ WEIGHTS


def _frame(n: int, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    y = (X["a"] - X["b"] + rng.normal(scale=0.5, size=n) > 0).astype(int).to_numpy()
    return X, y


@pytest.fixture(scope="module")
def fitted() -> tuple[AdapTable, pd.DataFrame]:
    X, y = _frame(400, 0)
    adapter = AdapTable(output="logits", random_state=0)
    adapter.fit(positional_logits, X[:300], y[:300], X[300:], y[300:])
    return adapter, _frame(256, 1)[0]


def test_reordered_and_extra_columns_reach_the_model_in_the_fits_order(fitted) -> None:
    adapter, X = fitted
    adapter.reset()
    expected = [adapter.predict_proba(X.iloc[i : i + 64]) for i in range(0, 256, 64)]
    shuffled = X[["c", "a", "b"]].assign(extra=7.0)[["extra", "c", "a", "b"]]
    adapter.reset()
    for i, want in zip(range(0, 256, 64), expected, strict=True):
        np.testing.assert_array_equal(adapter.predict_proba(shuffled.iloc[i : i + 64]), want)
    with pytest.raises(ValueError, match="X_batch lacks 1 column\\(s\\) .*: 'b'"):
        adapter.predict_proba(X[["a", "c"]])


def test_the_columns_survive_save_load_and_pickle(fitted, tmp_path) -> None:
    adapter, X = fitted
    adapter.reset()
    adapter.save(tmp_path / "a.safetensors")
    loaded = AdapTable.load(tmp_path / "a.safetensors", model=positional_logits)
    copied = pickle.loads(pickle.dumps(adapter))
    batch = X.iloc[:64]
    want = adapter.predict_proba(batch)
    for other in (loaded, copied):
        assert other.columns_.names.tolist() == ["a", "b", "c"]
        np.testing.assert_array_equal(other.predict_proba(batch[["b", "c", "a"]]), want)


def test_validation_rows_are_read_in_the_fits_order_and_must_hold_its_columns() -> None:
    X, y = _frame(400, 2)
    plain = AdapTable(output="logits", random_state=0)
    plain.fit(positional_logits, X[:300], y[:300], X[300:], y[300:])
    tangled = AdapTable(output="logits", random_state=0)
    valid = X[300:][["b", "a", "c"]].assign(batch_id=1)  # reordered, one column more
    tangled.fit(positional_logits, X[:300], y[:300], valid, y[300:])
    batch = _frame(64, 3)[0]
    np.testing.assert_array_equal(tangled.predict_proba(batch), plain.predict_proba(batch))
    with pytest.raises(ValueError, match="X_valid lacks 1 column\\(s\\) .*: 'c'"):
        AdapTable(output="logits").fit(
            positional_logits, X[:300], y[:300], X[300:][["a", "b"]], y[300:]
        )


def test_names_a_file_cannot_hold_are_left_out_and_arrays_are_passed_as_given() -> None:
    tuples = pd.DataFrame(np.zeros((2, 2)), columns=pd.MultiIndex.from_tuples([("x", 1), ("y", 2)]))
    assert FittedColumns.of(tuples).to_list() is None
    assert FittedColumns.of(pd.DataFrame(np.zeros((2, 2)), columns=["a", "a"])) is None
    assert FittedColumns.of(np.zeros((2, 2))) is None
    columns = FittedColumns.of(pd.DataFrame({"a": [1.0], "b": [2.0]}))
    array = np.ones((3, 2))
    assert columns.conform(array, "X") is array


def test_a_batch_with_a_column_twice_is_refused_naming_it(fitted) -> None:
    adapter, X = fitted
    twice = pd.concat([X.iloc[:8], X.iloc[:8, :1]], axis=1)  # a, b, c, a
    with pytest.raises(ValueError, match="X_batch holds columns more than once: 'a'"):
        adapter.predict_proba(twice)
    assert FittedColumns.of(pd.DataFrame(index=range(3))) is None  # no columns: nothing to order


@pytest.mark.parametrize("names", [[0.5, 1.5, 2.5], list(np.arange(3, dtype=np.int64))])
def test_float_and_numpy_names_are_saved(names, tmp_path) -> None:
    X, y = _frame(400, 4)
    X.columns = names
    adapter = AdapTable(output="logits", random_state=0)
    adapter.fit(positional_logits, X[:300], y[:300], X[300:], y[300:])
    adapter.save(tmp_path / "n.safetensors")
    loaded = AdapTable.load(tmp_path / "n.safetensors", model=positional_logits)
    batch = X.iloc[300:364]
    want = adapter.predict_proba(batch)
    np.testing.assert_array_equal(loaded.predict_proba(batch[batch.columns[::-1]]), want)


def test_names_a_file_cannot_hold_are_announced_at_save(tmp_path) -> None:
    X, y = _frame(400, 5)
    X.columns = pd.MultiIndex.from_tuples([("x", 1), ("x", 2), ("y", 1)])
    adapter = AdapTable(output="logits", preset="paper", calibrator="none", random_state=0)
    adapter.fit(positional_logits, X[:300], y[:300], X[300:], y[300:])
    with pytest.warns(UserWarning, match="cannot be written to the file"):
        adapter.save(tmp_path / "m.safetensors")


def test_a_pickled_columns_object_keeps_the_names_not_the_last_batch_it_saw() -> None:
    columns = FittedColumns.of(pd.DataFrame({"a": [1], "b": [2]}))
    batch = pd.DataFrame({"a": [3, 4], "b": [5, 6]})
    columns.conform(batch, "X_batch")
    copied = pickle.loads(pickle.dumps(columns))
    assert copied.names.equals(columns.names) and copied._seen is None
    assert copied.conform(batch.iloc[:, ::-1], "X_batch").columns.tolist() == ["a", "b"]

"""Encoder against hand-computed values: standardisation with NaN -> 0, one-hot layout, unknown
categories, schema blocks, JSON round trip, positional arrays, errors."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from adaptable import datasets
from adaptable.datasets import Encoder, FeatureBlock
from adaptable.encoding import UnseenCategoryWarning


@pytest.fixture()
def frame() -> pd.DataFrame:
    # Categorical column first: the layout must still put numerical columns first.
    return pd.DataFrame(
        {
            "colour": ["red", "blue", "red", None],
            "a": [1.0, np.nan, 3.0, 4.0],
            "b": [10, 20, 30, 40],
            "flag": ["y", "n", "n", "n"],
        }
    )


def test_hand_computed_transform(frame: pd.DataFrame) -> None:
    enc = Encoder().fit(frame)
    out = enc.transform(frame)
    assert out.dtype == np.float32 and out.shape == (4, 2 + 3 + 2)
    # a: NaN -> 0 gives [1, 0, 3, 4]: mean 2, population sd sqrt(10/4).
    sd_a = math.sqrt(2.5)
    np.testing.assert_allclose(out[:, 0], [-1 / sd_a, -2 / sd_a, 1 / sd_a, 2 / sd_a], rtol=1e-6)
    # b: mean 25, sd sqrt(125).
    np.testing.assert_allclose(out[:, 1], np.array([-15, -5, 5, 15]) / math.sqrt(125), rtol=1e-6)
    # colour: categories sorted as strings, missing is its own level "nan".
    np.testing.assert_array_equal(
        out[:, 2:5], [[0, 0, 1], [1, 0, 0], [0, 0, 1], [0, 1, 0]]
    )  # blue, nan, red
    np.testing.assert_array_equal(out[:, 5:7], [[0, 1], [1, 0], [1, 0], [1, 0]])  # n, y


def test_schema_blocks(frame: pd.DataFrame) -> None:
    enc = Encoder().fit(frame)
    assert enc.schema == [
        FeatureBlock("a", "numerical", 0, 1),
        FeatureBlock("b", "numerical", 1, 2),
        FeatureBlock("colour", "categorical", 2, 5, ("blue", "nan", "red")),
        FeatureBlock("flag", "categorical", 5, 7, ("n", "y")),
    ]
    assert [b.name for b in enc.numerical_blocks] == ["a", "b"]
    assert [b.width for b in enc.categorical_blocks] == [3, 2]
    assert enc.cardinalities == [3, 2]
    assert enc.n_features_out_ == 7


def test_unknown_category_is_all_zero_and_code_minus_one(frame: pd.DataFrame) -> None:
    enc = Encoder().fit(frame)
    new = pd.DataFrame(
        {"colour": ["green", "blue"], "a": [2.0, 2.0], "b": [25, 25], "flag": ["y", "?"]}
    )
    out = enc.transform(new)
    np.testing.assert_array_equal(out[:, :2], 0.0)  # the means standardise to 0
    np.testing.assert_array_equal(out[0, 2:5], 0.0)
    np.testing.assert_array_equal(out[1, 5:7], 0.0)
    np.testing.assert_array_equal(enc.category_codes(new), [[-1, 1], [0, -1]])


def test_declared_kinds_and_constant_column() -> None:
    X = pd.DataFrame({"code": [1, 2, 1], "const": [5.0, 5.0, 5.0]})
    enc = Encoder(numerical=["const"], categorical=["code"]).fit(X)
    out = enc.transform(X)
    np.testing.assert_array_equal(out[:, 0], 0.0)  # constant: scale 1, no division by zero
    np.testing.assert_array_equal(out[:, 1:], [[1, 0], [0, 1], [1, 0]])  # "1", "2"


def test_dict_round_trip_through_json(frame: pd.DataFrame) -> None:
    enc = Encoder().fit(frame)
    state = json.loads(json.dumps(enc.to_dict()))
    again = Encoder.from_dict(state)
    np.testing.assert_array_equal(again.transform(frame), enc.transform(frame))
    assert again.schema == enc.schema
    assert again.cardinalities == enc.cardinalities


def test_positional_arrays() -> None:
    X = np.array([[1.0, 2.0], [3.0, 6.0]])
    enc = Encoder().fit(X)
    assert [b.kind for b in enc.schema] == ["numerical", "numerical"]
    np.testing.assert_allclose(enc.transform(X), [[-1, -1], [1, 1]])
    again = Encoder.from_dict(json.loads(json.dumps(enc.to_dict())))
    np.testing.assert_allclose(again.transform(X), [[-1, -1], [1, 1]])
    with pytest.raises(ValueError, match="Expected 2 columns"):
        enc.transform(np.ones((2, 3)))
    with pytest.raises(ValueError, match="2-D"):
        enc.transform(np.ones(3))


def test_errors(frame: pd.DataFrame) -> None:
    with pytest.raises(RuntimeError, match="not fitted"):
        Encoder().transform(frame)
    with pytest.raises(ValueError, match="at least one row"):
        Encoder().fit(frame.iloc[:0])
    with pytest.raises(ValueError, match="both numerical and categorical"):
        Encoder(numerical=["a"], categorical=["a"]).fit(frame)
    enc = Encoder().fit(frame)
    with pytest.raises(ValueError, match="missing from the input.*flag"):
        enc.transform(frame.drop(columns=["flag"]))
    bad = frame.assign(a=[1.0, np.inf, 0.0, 0.0])
    with pytest.raises(ValueError, match="infinite"):
        enc.transform(bad)
    with pytest.raises(ValueError, match="must hold numbers"):
        enc.transform(frame.assign(b=["x", "y", "z", "w"]))


def test_fit_encoder_uses_train_and_valid(synthetic: datasets.ShiftDataset) -> None:
    enc = datasets.fit_encoder(synthetic)
    both = pd.concat([synthetic.train.X, synthetic.valid.X], ignore_index=True)
    col = synthetic.numerical[0]
    assert enc.mean_[0] == pytest.approx(both[col].mean())
    assert enc.mean_[0] != pytest.approx(synthetic.train.X[col].mean())
    z = enc.transform(both)[:, 0]
    assert z.mean() == pytest.approx(0.0, abs=1e-5) and z.std() == pytest.approx(1.0, abs=1e-5)


# --------------------------------------------------------------------------- one encoding, codes
def _reference_transform(enc: Encoder, X: pd.DataFrame) -> np.ndarray:
    """The transform as it was before vectorisation (one dict lookup per value), kept to pin
    that the vectorised Encoder gives the same floats on the loaders' data."""
    num = np.nan_to_num(X[enc.numerical_].to_numpy(dtype=np.float64, na_value=np.nan), nan=0.0)
    out = np.zeros((len(X), enc.n_features_out_), dtype=np.float32)
    out[:, : len(enc.numerical_)] = (num - enc.mean_) / enc.scale_
    for block, column in zip(enc.categorical_blocks, enc.categorical_, strict=True):
        lookup = {c: j for j, c in enumerate(block.categories)}
        for i, v in enumerate(X[column].to_numpy(dtype=object)):
            key = v if type(v) is str else ("nan" if pd.isna(v) else str(v))
            if key in lookup:
                out[i, block.start + lookup[key]] = 1.0
    return out


def _with_unseen_and_missing(ds: datasets.ShiftDataset, rows: int) -> pd.DataFrame:
    """Test rows with 5 % unseen categories, 5 % missing categories and 5 % NaN numbers."""
    rng = np.random.default_rng(0)
    X = ds.test.X.iloc[:rows].copy()
    for c in ds.categorical:
        X.loc[rng.random(len(X)) < 0.05, c] = "never-seen"
        X.loc[rng.random(len(X)) < 0.05, c] = None
    for c in ds.numerical[:3]:
        X[c] = X[c].astype(np.float64)
        X.loc[rng.random(len(X)) < 0.05, c] = np.nan
    return X


@pytest.mark.parametrize("task", ["readmission", "heloc"])
def test_vectorised_transform_equals_the_reference_on_real_rows(
    task: str, request: pytest.FixtureRequest
) -> None:
    ds = request.getfixturevalue(task)
    enc = datasets.fit_encoder(ds)
    X = _with_unseen_and_missing(ds, 2000)
    # 2,000 rows take the column-selection path; 64-row batches the whole-frame one.
    np.testing.assert_array_equal(enc.transform(X), _reference_transform(enc, X))
    for start in range(0, 640, 64):
        batch = X.iloc[start : start + 64]
        np.testing.assert_array_equal(enc.transform(batch), _reference_transform(enc, batch))


def test_encode_onehot_and_transform_agree(readmission: datasets.ShiftDataset) -> None:
    enc = datasets.fit_encoder(readmission)
    X = _with_unseen_and_missing(readmission, 300)
    encoded = enc.encode(X)
    dense = enc.transform(X)
    n_num = len(enc.numerical_)
    assert encoded.numeric.dtype == np.float32 and encoded.numeric.shape == (300, n_num)
    assert encoded.codes.dtype == np.int64 and encoded.codes.shape == (300, len(enc.categorical_))
    np.testing.assert_array_equal(encoded.codes, enc.category_codes(X))
    assert (encoded.codes == -1).any()  # the unseen ones
    np.testing.assert_array_equal(enc.transform_from(encoded), dense)
    np.testing.assert_array_equal(enc.onehot(encoded.codes), dense[:, n_num:])
    np.testing.assert_array_equal(encoded.numeric, dense[:, :n_num])
    # Each known code puts its one at block start + code.
    first = enc.categorical_blocks[0]
    row = int(np.flatnonzero(encoded.codes[:, 0] >= 0)[0])
    assert dense[row, first.start + encoded.codes[row, 0]] == 1.0
    assert dense[row, first.start : first.stop].sum() == 1.0


def test_onehot_rejects_codes_of_the_wrong_shape_or_range(frame: pd.DataFrame) -> None:
    enc = Encoder().fit(frame)
    np.testing.assert_array_equal(enc.onehot(np.array([[2, -1]])), [[0, 0, 1, 0, 0]])
    with pytest.raises(ValueError, match="shape"):
        enc.onehot(np.array([[0]]))
    with pytest.raises(ValueError, match="lie in"):
        enc.onehot(np.array([[3, 0]]))  # colour has 3 categories
    with pytest.raises(ValueError, match="lie in"):
        enc.onehot(np.array([[0, -2]]))


# --------------------------------------------------------------------------- numbers as categories
def test_integers_match_categories_stored_as_the_loaders_strings() -> None:
    X = pd.DataFrame({"x": [1.0, 2.0, 3.0], "delq": ["6.0", "7.0", "-9.0"]})
    enc = Encoder().fit(X)
    as_strings = enc.transform(X)
    for values in ([6, 7, -9], np.array([6, 7, -9], dtype=np.int64), [6.0, 7.0, -9.0]):
        again = X.assign(delq=pd.Series(values, dtype=object if isinstance(values, list) else None))
        np.testing.assert_array_equal(enc.transform(again), as_strings)
    # categories sorted as strings: "-9.0", "6.0", "7.0"
    np.testing.assert_array_equal(enc.category_codes(X.assign(delq=[7, 8, 6])), [[2], [-1], [1]])


def test_number_matching_rules() -> None:
    X = pd.DataFrame({"c": ["6", "0.1", "x", "True", "nan", "6.5"]})
    enc = Encoder(numerical=[]).fit(X)
    codes = lambda *vs: enc.category_codes(pd.DataFrame({"c": list(vs)}))[:, 0].tolist()  # noqa: E731
    cats = list(enc.categories_[0])  # ['0.1', '6', '6.5', 'True', 'nan', 'x']
    # by value, at float64 and at float32 precision (the loaders narrow numbers to float32)
    assert codes(6, 6.0, np.int64(6), np.float32(0.1), 0.1, 6.5) == [
        cats.index(v) for v in ("6", "6", "6", "0.1", "0.1", "6.5")
    ]
    assert codes(True, None, np.nan, "06", "6.0", 7) == [
        cats.index("True"), cats.index("nan"), cats.index("nan"), -1, -1, -1
    ]  # fmt: skip
    # two categories with one value: the exact string wins, no guess otherwise
    both = Encoder(numerical=[]).fit(pd.DataFrame({"c": ["6", "6.0", "6.00"]}))
    given = pd.DataFrame({"c": pd.Series([6, 6.0, np.float32(6)], dtype=object)})
    got = both.category_codes(given)[:, 0].tolist()
    assert got == [0, 1, 1]  # str(6) = "6", str(6.0) = str(np.float32(6)) = "6.0"
    # No exact string and two categories of that value: unseen rather than a guess.
    two = Encoder(numerical=[]).fit(pd.DataFrame({"c": ["6.0", "6.00", "x"]}))
    with pytest.warns(UnseenCategoryWarning, match="type int.*type or format mismatch"):
        assert two.category_codes(pd.DataFrame({"c": [6]}))[0, 0] == -1


def test_mixed_object_column_is_coded_cell_by_cell() -> None:
    enc = Encoder(numerical=[]).fit(pd.DataFrame({"c": ["6.0", "True", "nan", "x"]}))
    given = pd.Series(["x", 6, 6.0, True, None, np.nan, "6", ["x"]], dtype=object)
    codes = enc.category_codes(pd.DataFrame({"c": given}))[:, 0].tolist()
    # categories: "6.0", "True", "nan", "x"; a list is str()-ed, as before: unseen
    assert codes == [3, 0, 0, 1, 2, 2, -1, -1]


def test_raw_heloc_rows_encode_like_the_loaders(heloc: datasets.ShiftDataset) -> None:
    # The raw FICO file holds integer codes (6); the loader stores them as strings ("6.0").
    enc = datasets.fit_encoder(heloc)
    X = heloc.test.X.iloc[:500]
    raw = X.copy()
    for c in heloc.categorical:
        raw[c] = raw[c].astype(np.float64).astype(np.int64)
    assert raw[heloc.categorical[0]].dtype == np.int64
    np.testing.assert_array_equal(enc.transform(raw), enc.transform(X))


def test_warns_when_most_categories_are_unseen(frame: pd.DataFrame) -> None:
    import warnings

    enc = Encoder().fit(frame)
    half = frame.assign(colour=["green", "pink", "red", "blue"])  # 2 of 8 cells unseen
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        enc.transform(half)
    mostly = frame.assign(colour=["green", "pink", "grey", "blue"], flag=["?", "?", "n", "y"])
    with pytest.warns(UnseenCategoryWarning, match="'colour'.*type str.*categories the source"):
        enc.transform(mostly)  # 5 of 8 unseen
    with pytest.warns(UnseenCategoryWarning):
        enc.category_codes(mostly)
    # The message lists the fitted categories (the first three), not the stream's values.
    with pytest.warns(UnseenCategoryWarning, match=r"fitted with \('blue', 'nan', 'red'\)\."):
        enc.transform(mostly)
    wide = Encoder().fit(pd.DataFrame({"c": list("abcde"), "x": [1.0, 2, 3, 4, 5]}))
    with pytest.warns(UnseenCategoryWarning, match=r"fitted with \('a', 'b', 'c', \.\.\.\)\."):
        wide.transform(pd.DataFrame({"c": list("zzzzz"), "x": [1.0, 2, 3, 4, 5]}))


def test_duplicated_column_name_is_a_clear_error(frame: pd.DataFrame) -> None:
    enc = Encoder().fit(frame)
    doubled = pd.concat([frame, frame[["flag"]]], axis=1)
    with pytest.raises(ValueError, match=r"duplicated column name.*'flag' \(2 times\)"):
        enc.transform(doubled)
    with pytest.raises(ValueError, match="duplicated column name.*'flag'"):
        enc.encode(doubled)
    with pytest.raises(ValueError, match="duplicated column name.*'flag'"):
        Encoder().fit(doubled)
    # A repeated column the encoder does not use is no error.
    extra = pd.concat(
        [frame, pd.DataFrame({"note": [1] * 4}), pd.DataFrame({"note": [2] * 4})], axis=1
    )
    np.testing.assert_array_equal(enc.transform(extra), enc.transform(frame))


def test_batches_with_other_column_order_are_encoded_by_name(frame: pd.DataFrame) -> None:
    enc = Encoder().fit(frame)
    expected = enc.transform(frame)
    enc.transform(frame)  # caches this column index's positions
    np.testing.assert_array_equal(enc.transform(frame[frame.columns[::-1]]), expected)
    np.testing.assert_array_equal(enc.transform(frame), expected)


def test_from_dict_reads_the_saved_format() -> None:
    # A state written by an earlier version (same keys): must load and encode the same way.
    state = {
        "numerical": ["a"],
        "categorical": ["c"],
        "mean": [2.0],
        "scale": [0.5],
        "categories": [["p", "q"]],
        "positional": False,
        "schema": [
            {"name": "a", "kind": "numerical", "start": 0, "stop": 1, "categories": []},
            {"name": "c", "kind": "categorical", "start": 1, "stop": 3, "categories": ["p", "q"]},
        ],
    }
    enc = Encoder.from_dict(state)
    out = enc.transform(pd.DataFrame({"a": [3.0, np.nan], "c": ["q", "z"]}))
    np.testing.assert_array_equal(out, [[2.0, 0.0, 1.0], [-4.0, 0.0, 0.0]])
    assert json.loads(json.dumps(enc.to_dict())) == state


def _unseen_warnings_per_batch(
    enc: Encoder, batch: pd.DataFrame, batches: int, action: str = "default"
) -> int:
    """How many UnseenCategoryWarnings ``batches`` calls of ``enc.transform(batch)`` show under
    the filter ``action`` (one recording block), a ``catch_warnings()`` entered and left
    between calls as pandas and scikit-learn do on theirs (which resets Python's
    once-per-location memory)."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter(action)
        for _ in range(batches):
            with warnings.catch_warnings():
                pass  # a library's own block
            enc.transform(batch)
    return sum(issubclass(w.category, UnseenCategoryWarning) for w in caught)


def test_unseen_category_warns_once_per_encoder_and_cause(frame: pd.DataFrame) -> None:
    import copy
    import pickle
    import warnings

    enc = Encoder().fit(frame)
    state = enc.to_dict()
    new_text = frame.assign(colour=["green"] * 4, flag=["?"] * 4)
    assert _unseen_warnings_per_batch(enc, new_text, 5) == 1
    # a new recording block (pytest's recwarn, a monitoring loop) sees it once more, as
    # Python's own memory would show it there
    assert _unseen_warnings_per_batch(enc, new_text, 5) == 1
    # Another cause (a missing value in a column fitted without any) warns once too.
    missing = frame.assign(colour=["green", "red", "red", "red"], flag=[None] * 4)
    assert _unseen_warnings_per_batch(enc, missing, 5) == 1
    # Filters that show every warning, or raise it, still see every batch's.
    assert _unseen_warnings_per_batch(enc, new_text, 3, action="always") == 3
    for _ in range(2):
        with warnings.catch_warnings(), pytest.raises(UnseenCategoryWarning):
            warnings.simplefilter("error")
            enc.transform(new_text)
    # The memory is no part of the state; a copy starts without it and may warn once more.
    assert enc.to_dict() == state
    assert "_warned_causes" not in enc.__getstate__()
    for again in (pickle.loads(pickle.dumps(enc)), copy.deepcopy(enc), copy.copy(enc)):
        assert _unseen_warnings_per_batch(again, new_text, 3) == 1
    assert _unseen_warnings_per_batch(Encoder.from_dict(state), new_text, 3) == 1
    # A warning ignored when first raised was not seen: it shows once the filter lets it.
    quiet = Encoder().fit(frame)
    assert _unseen_warnings_per_batch(quiet, new_text, 2, action="ignore") == 0
    assert _unseen_warnings_per_batch(quiet, new_text, 2) == 1


def test_missing_category_value_is_named_as_missing_and_small_batches_are_counted() -> None:
    enc = Encoder(numerical=["x"], categorical=["job"]).fit(
        pd.DataFrame({"x": [1.0, 2.0, 3.0], "job": ["a", "b", "c"]})
    )
    row = pd.DataFrame({"x": [1.0], "job": [np.nan]})
    with pytest.warns(UnseenCategoryWarning) as caught:
        enc.transform(row)
    message = str(caught[0].message)
    assert message.startswith(
        "Encoder: 1 of the 1 categorical value in this batch of 1 row was not seen at fit time "
        "and is encoded as unknown; column 'job' holds missing values"
    )
    assert "type float" not in message and "type or format mismatch" not in message
    assert "more than 50%" not in message
    # A share is worded as such only from UNSEEN_WARNING_MIN_ROWS rows on.
    for rows, share in ((19, False), (20, True)):
        batch = pd.DataFrame({"x": [1.0] * rows, "job": [None] * rows})
        with pytest.warns(UnseenCategoryWarning) as caught:
            enc.transform(batch)
        message = str(caught[0].message)
        assert message.startswith("Encoder: more than 50% of this batch's") == share, message
        assert (f"in this batch of {rows} rows were not seen" in message) != share, message
        assert "'job' holds missing values" in message


def test_non_numeric_cell_error_names_the_column_and_row(frame: pd.DataFrame) -> None:
    enc = Encoder().fit(frame)
    bad = frame.astype({"a": object, "b": object}).set_axis([10, 11, 12, 13])
    bad.loc[12, "b"] = "N/A"
    with pytest.raises(ValueError, match=r"^Numerical column 'b' must hold numbers, but row 12 "):
        enc.transform(bad)
    with pytest.raises(ValueError, match=r"column 'b' must hold numbers, but row 12 holds 'N/A'\."):
        enc.encode(bad)
    bad.loc[11, "a"] = ""
    with pytest.raises(ValueError, match=r"columns 'a', 'b' must hold numbers, but row 11 of 'a'"):
        enc.transform(bad)
    # the first offending row of a long column, and at fit time
    long = pd.DataFrame({"x": np.arange(100_000, dtype=object), "c": "p"})
    long.loc[77_777, "x"] = "?"
    long.loc[88_888, "x"] = "?"
    with pytest.raises(ValueError, match=r"'x' must hold numbers, but row 77777 holds '\?'\."):
        Encoder(numerical=["x"], categorical=["c"]).fit(long)


def test_array_fitted_encoder_given_a_dataframe_says_it_reads_by_position() -> None:
    enc = Encoder().fit(np.array([[1.0, 2.0], [3.0, 6.0]]))
    named = pd.DataFrame({"p": [1.0], "q": [2.0]})
    expected = r"Fitted on an array, so an array of 2 columns, read by position.*\('p', 'q'\)"
    for method in (enc.transform, enc.encode):
        with pytest.raises(ValueError, match=expected):
            method(named)
    # a DataFrame whose columns are the positions is read as before
    np.testing.assert_allclose(enc.transform(pd.DataFrame([[3.0, 6.0]])), [[1.0, 1.0]])

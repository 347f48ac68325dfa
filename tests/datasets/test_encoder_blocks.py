"""The Encoder reads a DataFrame's columns from its blocks: the same numbers, codes and memory
layout as the whole-frame conversion, on every kind of column, and the same errors."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from adaptable import encoding
from adaptable.encoding import Encoder


def encoded_both_ways(encoder: Encoder, frame: pd.DataFrame, monkeypatch):
    fast = encoder.encode(frame)
    with monkeypatch.context() as patch:
        patch.setattr(encoding, "_from_blocks", lambda *args: (None, None))
        usual = encoder.encode(frame)
    return fast, usual


def mixed_frame(rows: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    numbers = rng.normal(size=rows) * 1e3
    numbers[rng.random(rows) < 0.2] = np.nan
    return pd.DataFrame(
        {
            "int": rng.integers(-5, 50, rows),
            "job": pd.Series(rng.choice(["a", "b", "c", None], rows), dtype=object),
            "float32": rng.normal(size=rows).astype(np.float32),
            "nan": numbers,
            "flag": rng.random(rows) < 0.5,
            "code": pd.Series(
                [[1.0, 2, np.nan, "x"][k] for k in rng.integers(0, 4, rows)], dtype=object
            ),
            "int32": rng.integers(0, 9, rows).astype(np.int32),
        }
    )


@pytest.mark.parametrize("rows", [1, 7, 64, 3000])
def test_blocks_give_the_whole_frame_conversions_values_and_layout(rows, monkeypatch) -> None:
    train = mixed_frame(500, seed=0)
    encoder = Encoder(
        numerical=["int", "float32", "nan", "flag", "int32"], categorical=["job", "code"]
    ).fit(train)
    for frame in (
        mixed_frame(rows, seed=1),
        mixed_frame(rows, seed=2)[list(reversed(train.columns))],  # other column order
        mixed_frame(rows, seed=3).copy(),  # consolidated: one block per dtype
        pd.concat([mixed_frame(rows, seed=4)] * 2, ignore_index=True).iloc[rows // 2 :],
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fast, usual = encoded_both_ways(encoder, frame, monkeypatch)
        assert np.array_equal(fast.numeric, usual.numeric)
        assert fast.numeric.dtype == usual.numeric.dtype == np.float32
        # sums over rows read the layout: it must be the same
        assert fast.numeric.flags.f_contiguous == usual.numeric.flags.f_contiguous
        assert fast.numeric.flags.c_contiguous == usual.numeric.flags.c_contiguous
        assert np.array_equal(fast.codes, usual.codes)


def test_columns_the_blocks_cannot_give_take_the_usual_path(monkeypatch) -> None:
    train = pd.DataFrame({"n": [1.0, 2.0, 3.0], "c": ["a", "b", "a"]})
    encoder = Encoder(numerical=["n"], categorical=["c"]).fit(train)
    nullable = pd.DataFrame({"n": pd.array([1, None, 3], dtype="Int64"), "c": ["a", "b", "z"]})
    category = pd.DataFrame({"n": [1.0, 2.0, 3.0], "c": pd.Categorical(["b", "a", "b"])})
    text = pd.DataFrame({"n": [1.0, 2.0, 3.0], "c": pd.array(["b", "a", None], dtype="str")})
    for frame in (nullable, category, text):
        fast, usual = encoded_both_ways(encoder, frame, monkeypatch)
        assert np.array_equal(fast.numeric, usual.numeric)
        assert np.array_equal(fast.codes, usual.codes)
    assert encoder.encode(nullable).numeric[:, 0].tolist() == pytest.approx(
        [-1.2247, -2.4495, 1.2247], abs=1e-4
    )
    assert encoder.encode(category).codes[:, 0].tolist() == [1, 0, 1]
    # numbers only, or categories only
    numbers = Encoder().fit(pd.DataFrame({"a": [1, 2], "b": [0.5, 1.5]}))
    assert numbers.encode(pd.DataFrame({"a": [3], "b": [0.5]})).numeric.tolist() == [[3.0, -1.0]]
    words = Encoder().fit(pd.DataFrame({"a": ["x", "y"]}))
    batch = words.encode(pd.DataFrame({"a": ["y", "x"]}))
    assert batch.numeric.shape == (2, 0) and batch.codes.tolist() == [[1], [0]]


def test_an_infinite_number_is_still_refused_by_name() -> None:
    encoder = Encoder().fit(pd.DataFrame({"n": [1.0, 2.0], "m": [1, 2]}))
    with pytest.raises(ValueError, match="infinite values: n"):
        encoder.encode(pd.DataFrame({"n": [np.inf, 2.0], "m": [1, 2]}))


@pytest.mark.parametrize("dtype", ["str", pd.StringDtype("python"), object])
@pytest.mark.parametrize("rows", [1, 64])
def test_text_of_pandas_string_dtype_is_read_from_its_blocks(dtype, rows, monkeypatch) -> None:
    """pandas' own string dtype (the default for text from pandas 3, and what a frame built
    from one dict row gets) is read from its blocks as object columns are, to the same codes."""
    train = mixed_frame(500, seed=0)
    encoder = Encoder(
        numerical=["int", "float32", "nan", "flag", "int32"], categorical=["job", "code"]
    ).fit(train)
    frame = mixed_frame(rows, seed=5).astype({"job": dtype})
    numeric_pos, category_pos = encoder._column_positions(frame, "transform")
    numbers, categories = encoding._from_blocks(frame, numeric_pos, category_pos)
    assert numbers is not None and categories is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast, usual = encoded_both_ways(encoder, frame, monkeypatch)
        as_objects = encoder.encode(frame.astype({"job": object}))
    assert np.array_equal(fast.codes, usual.codes)
    assert np.array_equal(fast.codes, as_objects.codes)
    assert np.array_equal(fast.numeric, usual.numeric)

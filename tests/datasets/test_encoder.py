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

"""Rows one at a time (a dict, a pandas Series) and columns holding dates: what a new user
passes first, and what AdapTable makes of it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from adaptable import AdapTable
from adaptable.encoding import Encoder
from adaptable.framework.rows import as_table

RNG = np.random.default_rng(0)
N = 400
FRAME = pd.DataFrame(
    {
        "age": RNG.normal(50, 10, size=N),
        "visits": RNG.integers(0, 5, size=N),
        "city": RNG.choice(["Lyon", "Nice", "Metz"], size=N),
    }
)
Y = np.where(FRAME["age"] + 5 * (FRAME["city"] == "Nice") + RNG.normal(0, 5, N) > 52, 1, 0)
PRESETS = [{}, {"preset": "paper", "epochs": 2}]


def _model(columns=("age", "visits", "city")):
    numbers = [c for c in columns if c != "city"]
    prepare = make_column_transformer(
        ("passthrough", numbers), (OneHotEncoder(handle_unknown="ignore"), ["city"])
    )
    return make_pipeline(prepare, LogisticRegression(max_iter=500))


def _adapter(X=FRAME, **options) -> AdapTable:
    model = _model().fit(X, Y)
    adapter = AdapTable(random_state=0, **options)
    return adapter.fit(model, X.iloc[:300], Y[:300], X.iloc[300:], Y[300:])


@pytest.mark.parametrize("options", PRESETS, ids=["default", "paper"])
def test_one_row_as_a_dict_or_a_series_is_a_one_row_table(options) -> None:
    adapter = _adapter(**options)
    rows = FRAME.iloc[300:304]
    as_frames = [adapter.predict_proba(rows.iloc[[i]]) for i in range(4)]
    adapter.reset()
    given = [
        adapter.predict_proba(rows.iloc[0]),  # a Series (index = columns), object dtype
        adapter.predict_proba(rows.iloc[1].to_dict()),  # a dict, Python values
        adapter.predict_proba({k: v for k, v in reversed(rows.iloc[2].to_dict().items())}),
        adapter.predict_proba(dict(rows.iloc[3])),  # numpy scalars
    ]
    for got, expected in zip(given, as_frames, strict=True):
        assert got.shape == (1, 2)
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    adapter.reset()
    assert adapter.predict(rows.iloc[0].to_dict()).shape == (1,)


def test_partial_fit_and_adapt_logits_take_one_row_too() -> None:
    adapter = _adapter()
    row = FRAME.iloc[300]
    adapter.predict_proba(row)
    adapter.partial_fit(row, [Y[300]], rows=[0])
    adapter.partial_fit(row.to_dict(), [Y[300]], rows=[0])  # sent again: counts once
    model_logits = np.log(_model().fit(FRAME, Y).predict_proba(FRAME.iloc[[301]]))
    assert adapter.adapt_logits(model_logits, FRAME.iloc[301].to_dict()).shape == (1, 2)
    assert len(adapter.report()) == 2


def test_several_rows_in_a_dict_are_refused_with_what_to_pass() -> None:
    adapter = _adapter()
    with pytest.raises(ValueError, match=r"dict is read as one row .* column 'age' holds list"):
        adapter.predict_proba({"age": [50.0, 60.0], "visits": [1, 2], "city": ["Lyon", "Nice"]})
    with pytest.raises(ValueError, match="empty dict"):
        adapter.predict_proba({})
    with pytest.raises(ValueError, match="lacks 1 column"):
        adapter.predict_proba({"age": 50.0, "visits": 1})
    assert as_table([[1.0, 2.0]]) == [[1.0, 2.0]]  # anything else is left to the batch checks


def _dated(kind: str) -> pd.Series:
    days = pd.Series(pd.date_range("2020-01-01", periods=N, freq="D"))
    return {
        "datetime64": days,
        "tz-aware": days.dt.tz_localize("UTC"),
        "Timestamp objects": days.astype(object),
        "date objects": pd.Series([d.date() for d in days], dtype=object),
        "mixed with text": pd.Series(["unknown", *days.iloc[1:]], dtype=object),
    }[kind]


@pytest.mark.parametrize("options", PRESETS, ids=["default", "paper"])
@pytest.mark.parametrize(
    "kind", ["datetime64", "tz-aware", "Timestamp objects", "date objects", "mixed with text"]
)
def test_a_column_of_dates_is_refused_at_fit_naming_it(options, kind) -> None:
    X = FRAME.assign(admitted=_dated(kind))
    model = _model().fit(X, Y)  # the model itself leaves the dates out
    with pytest.raises(ValueError, match=r"Column\(s\) 'admitted' hold dates or times"):
        AdapTable(random_state=0, **options).fit(model, X.iloc[:300], Y[:300], X, Y)


@pytest.mark.parametrize("options", PRESETS, ids=["default", "paper"])
def test_dates_where_the_fit_had_numbers_are_refused_at_predict(options) -> None:
    X = FRAME.assign(admitted=np.arange(N, dtype=float))
    adapter = _adapter(X, **options)
    batch = X.iloc[300:364]
    for dated in (_dated("datetime64"), _dated("Timestamp objects")):
        with pytest.raises(ValueError, match=r"Column\(s\) 'admitted' hold dates or times"):
            adapter.predict_proba(batch.assign(admitted=dated.iloc[300:364].to_numpy()))
    assert adapter.state.n_batches == 0  # nothing adapted
    assert adapter.predict_proba(batch).shape == (64, 2)


def test_columns_left_out_of_those_read_go_to_the_model_as_given() -> None:
    """Both kinds declared: the adapter reads those columns only, and the model gets all."""
    X = FRAME.assign(admitted=_dated("datetime64"))
    adapter = _adapter(X, numerical=["age", "visits"], categorical=["city"])
    assert adapter.predict_proba(X.iloc[300:364]).shape == (64, 2)
    assert adapter.predict_proba(X.iloc[364]).shape == (1, 2)


def test_the_encoder_names_every_dated_column_and_how_to_convert() -> None:
    X = FRAME.assign(a=_dated("datetime64"), b=_dated("date objects"))
    with pytest.raises(ValueError) as info:
        Encoder().fit(X)
    message = str(info.value)
    assert "Column(s) 'a', 'b' hold dates or times (datetime64" in message
    assert "X['a'].dt.dayofweek" in message and "numerical= and categorical=" in message
    days = X["a"] - X["a"].iloc[0]  # converted: days since the first, a number
    converted = X.assign(a=days.dt.days, b=[d.toordinal() for d in X["b"]])
    assert Encoder().fit(converted).n_features_in_ == 5

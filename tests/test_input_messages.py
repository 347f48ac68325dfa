"""Messages a user meets on inputs of the wrong kind: they say what is expected."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

from adaptable import AdapTable, methods
from adaptable.encoding import Encoder

RNG = np.random.default_rng(0)
FRAME = pd.DataFrame(
    {
        "age": RNG.normal(size=200),
        "income": RNG.normal(size=200),
        "city": RNG.choice(["a", "b"], 200),
    }
)


def test_an_array_given_to_an_encoder_fitted_on_a_frame_says_a_frame_is_expected() -> None:
    encoder = Encoder().fit(FRAME)
    for method in (encoder.transform, encoder.category_codes):
        with pytest.raises(ValueError) as info:
            method(FRAME.to_numpy()[:5])
        message = str(info.value)
        assert (
            "a pandas DataFrame with the columns ('age', 'income', 'city') is expected" in message
        )
        assert "got ndarray of shape (5, 3), which has no column names" in message
    # a frame with the columns in another order, and positional arrays, still encode
    assert encoder.transform(FRAME[["city", "income", "age"]].iloc[:5]).shape == (5, 4)
    positional = Encoder().fit(FRAME[["age", "income"]].to_numpy())
    assert positional.transform(FRAME[["age", "income"]].to_numpy()[:5]).shape == (5, 2)
    # a frame whose column names are positions accepts an array of the same width
    numbered = Encoder().fit(pd.DataFrame(FRAME[["age", "income"]].to_numpy()))
    assert numbered.transform(FRAME[["age", "income"]].to_numpy()[:5]).shape == (5, 2)


def test_adaptable_fitted_on_a_frame_says_the_same_for_an_array_batch() -> None:
    X = FRAME[["age", "income"]]
    y = (X["age"] > 0).astype(int)
    model = LogisticRegression().fit(X, y)
    adapter = AdapTable().fit(model, X[:150], y[:150], X[150:], y[150:])
    with pytest.raises(ValueError, match="a pandas DataFrame with the columns"):
        adapter.predict_proba(X.to_numpy()[:64])


@pytest.mark.parametrize("name", ["adaptable", "source", "em"])
@pytest.mark.parametrize(
    "missing",
    [np.nan, None, pd.NA],
    ids=["nan", "none", "pd.NA"],
)
def test_a_missing_label_is_named_as_such(name: str, missing: object) -> None:
    """Object labels with a gap used to give 'Unknown label type: unknown' (numbers) or a raw
    TypeError from sorting (strings)."""
    X = FRAME[["age", "income"]].to_numpy()
    for labels in (np.where(X[:, 0] > 0, "yes", "no"), (X[:, 0] > 0).astype(int)):
        model = LogisticRegression().fit(X, labels)
        y = labels.astype(object)
        y[3] = missing
        with pytest.raises(ValueError, match=r"y_source holds 1 missing label"):
            methods.create(name).fit(model, X[:150], y[:150], X[150:], labels[150:])

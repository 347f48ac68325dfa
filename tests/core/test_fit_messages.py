"""What fit says about labels it cannot use: it names the argument and what is wrong."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

from adaptable import AdapTable

RNG = np.random.default_rng(0)
X = RNG.normal(size=(300, 2))
Y2 = (X[:, 0] > 0).astype(int)
Y3 = np.digitize(X[:, 0], [-0.5, 0.5])


@pytest.mark.parametrize("preset", ["paper", "default"])
def test_platt_on_a_one_class_y_valid_names_y_valid(preset) -> None:
    model = LogisticRegression().fit(X, Y2)
    method = AdapTable(preset=preset, calibrator="platt")
    with pytest.raises(ValueError, match=r"y_valid .*1 of the 2 classes .*\[1\] absent"):
        method.fit(model, X[:200], Y2[:200], X[200:], np.zeros(100, dtype=int))


def test_platt_on_a_y_valid_lacking_one_of_three_classes_is_refused_at_fit() -> None:
    # It used to fit, then fail on the first batch with an IndexError.
    model = LogisticRegression().fit(X, Y3)
    y_valid = np.where(Y3[200:] == 2, 1, Y3[200:])
    method = AdapTable(preset="paper", calibrator="platt")
    with pytest.raises(ValueError, match=r"y_valid .*2 of the 3 classes .*\[2\] absent"):
        method.fit(model, X[:200], Y3[:200], X[200:], y_valid)
    # the calibrators that need no class of their own still fit on it
    AdapTable(preset="paper", calibrator="isotonic").fit(model, X[:200], Y3[:200], X[200:], y_valid)


def test_a_missing_label_in_y_valid_is_named() -> None:
    model = LogisticRegression().fit(X, Y2)
    y_valid = Y2[200:].astype(float)
    y_valid[[5, 9]] = np.nan
    with pytest.raises(
        ValueError, match=r"y_valid holds 2 missing label\(s\).*first at row 5 \(all at rows 5, 9\)"
    ):
        AdapTable(preset="paper", calibrator="none").fit(model, X[:200], Y2[:200], X[200:], y_valid)


@pytest.mark.parametrize("kind", ["object array", "list", "series"])
def test_labels_mixing_strings_and_numbers_are_named(kind) -> None:
    """A list is refused before numpy turns its numbers into strings ('0' beside 0)."""
    values = ["yes" if v else 0 for v in Y2]
    mixed = {"object array": np.array(values, dtype=object), "list": values}.get(kind)
    mixed = pd.Series(values) if mixed is None else mixed
    with pytest.raises(
        ValueError,
        match=r"y_source mixes strings and other labels \(e.g. 0 and 'yes', of types int",
    ):
        AdapTable(output="logits").fit(lambda A: np.zeros((len(A), 2)), X, mixed)
    model = LogisticRegression().fit(X, Y2)
    method = AdapTable(random_state=0).fit(model, X[:200], Y2[:200], X[200:], Y2[200:])
    method.predict(X[:4])
    with pytest.raises(ValueError, match=r"y mixes strings and other labels"):
        method.partial_fit(X[:2], [0, "1"])


def test_a_sparse_batch_is_refused_with_what_to_pass() -> None:
    scipy_sparse = pytest.importorskip("scipy.sparse")
    method = AdapTable(random_state=0).fit(
        LogisticRegression().fit(X, Y2), X[:200], Y2[:200], X[200:], Y2[200:]
    )
    with pytest.raises(ValueError, match=r"scipy sparse matrix; pass its dense rows"):
        method.predict(scipy_sparse.csr_matrix(X[:5]))
    with pytest.raises(ValueError, match=r"X_source is a scipy sparse matrix"):
        AdapTable().fit(LogisticRegression().fit(X, Y2), scipy_sparse.csr_matrix(X), Y2)

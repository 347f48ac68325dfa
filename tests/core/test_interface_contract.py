"""TestTimeMethod's shared contract: labels, refits, n_classes_, batch checks and their messages.

A minimal method (``_Probe``) exercises the base class alone, so each test is a few
milliseconds: no backbone, no adaptation, only what :class:`TestTimeMethod` itself does.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import scipy.sparse
from sklearn.exceptions import DataConversionWarning, NotFittedError
from sklearn.linear_model import LogisticRegression

from adaptable.framework import method as interface


class _Probe(interface.TestTimeMethod):
    """Records what fit passed down; optionally claims ``n_classes_`` class columns."""

    name = "probe"

    def __init__(self, n_classes: int | None = None) -> None:
        self.n_classes = n_classes

    def _fit(self, model, source: interface.SourceData) -> None:
        self.model_ = model
        self.source_ = source
        if self.n_classes is not None:
            self.n_classes_ = self.n_classes

    def predict_proba(self, X_batch) -> np.ndarray:
        self._check_fitted()
        n = self._check_batch(X_batch)
        width = len(self.classes_) if self.classes_ is not None else 3
        # the last column wins on every row, so predict is the last class / index
        return np.tile(np.arange(1.0, width + 1.0) / width, (n, 1))

    def reset(self) -> None:
        self._check_fitted()

    # The base class's hooks for subclasses, as the probe's own public methods.
    def rows(self, X_batch) -> int:
        return self._check_batch(X_batch)

    def codes(self, y, what: str) -> np.ndarray:
        return self._label_codes(y, what)


X4 = np.arange(8.0).reshape(4, 2)


def _exact(message: str) -> str:
    """A pytest ``match`` pattern for exactly this message."""
    return "^" + re.escape(message) + "$"


def _unfitted(method: _Probe) -> None:
    assert "classes_" not in method.__dict__
    with pytest.raises(NotFittedError, match=_exact(_NOT_FITTED)):
        method.predict_proba(X4)


_NOT_FITTED = "This 'probe' method is not fitted yet; call fit(model, X, y) first."


# ------------------------------------------------------------------------- fit, refit
def test_not_fitted_error_names_the_method() -> None:
    _unfitted(_Probe())


def test_fit_encodes_labels_and_passes_codes_down() -> None:
    y = np.array(["yes", "no", "yes", "no"])
    y_valid = np.array(["no", "yes"])
    method = _Probe().fit(None, X4, y, X4[:2], y_valid)
    assert method.classes_.tolist() == ["no", "yes"]
    assert method.source_.y.tolist() == [1, 0, 1, 0]
    assert method.source_.y.dtype == np.int64
    assert method.source_.y_valid.tolist() == [0, 1]
    assert method.source_.X is X4
    assert method.predict(X4).tolist() == ["yes"] * 4


def test_failed_refit_leaves_the_method_unfitted() -> None:
    method = _Probe().fit(None, X4, [0, 1, 0, 1])
    assert method.classes_.tolist() == [0, 1]
    with pytest.raises(ValueError, match="single class"):
        method.fit(None, X4, [1, 1, 1, 1])
    _unfitted(method)


def test_failed_refit_on_model_classes_leaves_the_method_unfitted() -> None:
    method = _Probe().fit(None, X4, ["a", "b", "a", "b"])
    model = LogisticRegression().fit(X4, ["x", "y", "x", "y"])
    with pytest.raises(ValueError, match="classes_"):
        method.fit(model, X4, ["a", "b", "a", "b"])
    _unfitted(method)


def test_single_class_message_names_the_method_and_the_class() -> None:
    with pytest.raises(ValueError) as info:
        _Probe().fit(None, X4, ["a", "a", "a", "a"])
    assert str(info.value) == (
        "probe: the labels hold a single class (['a']); test-time adaptation needs a "
        "classifier of at least two classes, all present in the source labels."
    )


def test_label_errors_name_the_method_and_the_argument() -> None:
    with pytest.raises(ValueError, match=r"^probe: y_source: Found input variables"):
        _Probe().fit(None, X4, [0, 1, 0])  # 3 labels for 4 rows
    with pytest.raises(ValueError, match=r"^probe: y_valid: Unknown label type"):
        _Probe().fit(None, X4, [0, 1, 0, 1], X4[:2], [0.5, 1.5])


def test_mixed_label_types_name_the_method() -> None:
    with pytest.raises(ValueError, match=r"^probe: Mix of label input types \(string and number\)"):
        _Probe().fit(None, X4, [0, 1, 0, 1], X4[:2], ["a", "b"])


def test_column_vector_labels_warn_and_are_raveled() -> None:
    y = np.array([[0], [1], [0], [1]])
    with pytest.warns(DataConversionWarning, match="column-vector y"):
        method = _Probe().fit(None, X4, y)
    assert method.classes_.tolist() == [0, 1]
    assert method.source_.y.tolist() == [0, 1, 0, 1]


# -------------------------------------------------------------- the model's classes_
def test_model_trained_on_codes_is_accepted_for_string_labels() -> None:
    model = LogisticRegression().fit(X4, [0, 1, 0, 1])
    method = _Probe().fit(model, X4, ["no", "yes", "no", "yes"])
    assert method.classes_.tolist() == ["no", "yes"]
    assert method.predict(X4).tolist() == ["yes"] * 4


def test_model_with_the_same_classes_is_accepted() -> None:
    model = LogisticRegression().fit(X4, ["no", "yes", "no", "yes"])
    assert _Probe().fit(model, X4, ["no", "yes", "no", "yes"]).classes_.tolist() == ["no", "yes"]


def test_model_with_other_classes_is_rejected_with_both_lists() -> None:
    model = LogisticRegression().fit(X4, ["x", "y", "x", "y"])
    message = (
        "probe: the model's classes_ ['x', 'y'] are not the labels' classes ['a', 'b']; "
        "probability column j must be class j of the sorted labels."
    )
    with pytest.raises(ValueError, match=_exact(message)):
        _Probe().fit(model, X4, ["a", "b", "a", "b"])


def test_model_classes_message_lists_ten_classes_of_each() -> None:
    class Model:
        classes_ = np.arange(100, 112)

    y = np.arange(12)
    message = (
        f"probe: the model's classes_ {list(range(100, 110))} are not the labels' classes "
        f"{list(range(10))}; probability column j must be class j of the sorted labels."
    )
    with pytest.raises(ValueError, match=_exact(message)):
        _Probe().fit(Model(), np.zeros((12, 1)), y)


def test_model_with_fewer_classes_is_rejected() -> None:
    class Model:
        classes_ = np.array([0, 1])

    with pytest.raises(ValueError, match=r"^probe: the model's classes_ \[0, 1\] are not"):
        _Probe().fit(Model(), np.zeros((3, 1)), [0, 1, 2])


# ------------------------------------------------------------------------ n_classes_
def test_n_classes_mismatch_is_an_error_naming_both_counts() -> None:
    message = (
        "probe: the model gives 3 class columns but the labels hold 2 classes ['a', 'b']; "
        "every class must occur in y_source / y_valid, in the order of the model's columns "
        "(sorted labels)."
    )
    with pytest.raises(ValueError, match=_exact(message)):
        _Probe(n_classes=3).fit(None, X4, ["a", "b", "a", "b"])


def test_n_classes_mismatch_lists_ten_classes() -> None:
    message = (
        f"probe: the model gives 13 class columns but the labels hold 12 classes "
        f"{list(range(10))}; every class must occur in y_source / y_valid, in the order of "
        "the model's columns (sorted labels)."
    )
    with pytest.raises(ValueError, match=_exact(message)):
        _Probe(n_classes=13).fit(None, np.zeros((12, 1)), np.arange(12))


def test_n_classes_mismatch_leaves_the_method_unfitted() -> None:
    method = _Probe(n_classes=2).fit(None, X4, [0, 1, 0, 1])
    method.set_params(n_classes=3)
    with pytest.raises(ValueError, match="3 class columns"):
        method.fit(None, X4, [0, 1, 0, 1])
    _unfitted(method)


def test_n_classes_matching_the_labels_is_accepted() -> None:
    method = _Probe(n_classes=2).fit(None, X4, ["a", "b", "a", "b"])
    assert method.classes_.tolist() == ["a", "b"]


def test_without_labels_classes_are_the_column_indices() -> None:
    method = _Probe(n_classes=3).fit(None)
    assert isinstance(method.classes_, np.ndarray)
    np.testing.assert_array_equal(method.classes_, [0, 1, 2])
    assert method.predict(X4).tolist() == [2, 2, 2, 2]


def test_without_labels_nor_n_classes_classes_is_none_and_predict_gives_indices() -> None:
    method = _Probe().fit(None, X4)
    assert method.classes_ is None
    assert "classes_" in method.__dict__  # fitted, though without labels
    method.reset()
    index = method.predict(X4)
    assert index.tolist() == [2, 2, 2, 2]
    assert index.dtype.kind == "i"


# ------------------------------------------------------------------------ _check_batch
def test_check_batch_rejects_none_naming_the_method() -> None:
    method = _Probe().fit(None, X4, [0, 1, 0, 1])
    with pytest.raises(
        ValueError, match=_exact("probe: X_batch is None; expected a table of rows.")
    ):
        method.predict_proba(None)


@pytest.mark.parametrize(
    ("batch", "described"),
    [
        (np.zeros(3), "ndarray with shape (3,)"),
        (np.zeros((2, 3, 4)), "ndarray with shape (2, 3, 4)"),
        (pd.Series([1.0, 2.0]), "Series with shape (2,)"),
    ],
)
def test_check_batch_rejects_non_2d_naming_type_and_shape(batch, described) -> None:
    method = _Probe().fit(None, X4, [0, 1, 0, 1])
    message = f"probe: X_batch must be a 2-D table (rows x columns); got {described}."
    with pytest.raises(ValueError, match=_exact(message)):
        method.predict_proba(batch)


@pytest.mark.parametrize(
    "batch",
    [
        np.zeros((0, 2)),
        pd.DataFrame({"a": []}),
        [],
        scipy.sparse.csr_matrix((0, 2)),
    ],
    ids=["array", "frame", "list", "sparse"],
)
def test_check_batch_rejects_empty_batches(batch) -> None:
    method = _Probe().fit(None, X4, [0, 1, 0, 1])
    with pytest.raises(ValueError, match=_exact("probe: Empty batch: X_batch has no rows.")):
        method.predict_proba(batch)


def test_check_batch_counts_rows_of_every_table_kind() -> None:
    method = _Probe().fit(None, X4, [0, 1, 0, 1])
    assert method.rows(np.zeros((3, 2))) == 3
    assert method.rows(pd.DataFrame({"a": [1, 2], "b": [3, 4]})) == 2
    # no shape: rows counted with len()
    assert method.rows([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0], [9.0, 0.0]]) == 5
    # a shape but no len(): rows read from the shape
    assert method.rows(scipy.sparse.csr_matrix(np.eye(4)[:3])) == 3
    assert method.predict_proba([[0.0, 1.0]]).shape == (1, 2)


# ------------------------------------------------------------------------ _label_codes
def _fitted(classes) -> _Probe:
    classes = np.asarray(classes)
    return _Probe().fit(None, np.zeros((len(classes), 1)), classes)


def test_label_codes_map_labels_to_column_indices() -> None:
    method = _fitted(["a", "c", "e"])
    codes = method.codes(["e", "a", "c", "a"], "y_stream")
    assert codes.tolist() == [2, 0, 1, 0]
    assert codes.dtype == np.int64


@pytest.mark.parametrize(
    ("classes", "labels"),
    [
        (["a", "c", "e"], ["e", "a", "c", "a"]),
        ([0, 1, 2], [2, 0, 1, 1]),
        ([1.0, 2.0], [2.0, 1.0, 1.0]),
        ([False, True], [True, False, True]),
        (np.array(["x", "y"], dtype=object), np.array(["y", "x"], dtype=object)),
    ],
)
def test_label_codes_are_the_same_for_an_array_a_list_and_a_series(classes, labels) -> None:
    method = _fitted(classes)
    want = method.codes(list(labels), "y")
    for given in (np.asarray(labels), pd.Series(labels), np.asarray(labels)[:, None]):
        if getattr(given, "ndim", 1) == 2:
            with pytest.warns(DataConversionWarning):
                got = method.codes(given, "y")
        else:
            got = method.codes(given, "y")
        assert got.tolist() == want.tolist() and got.dtype == np.int64
    with pytest.raises(ValueError, match="unseen at fit"):
        method.codes(np.asarray([*labels[:1], "zz" if isinstance(labels[0], str) else 99]), "y")


def test_label_codes_reject_labels_between_known_classes() -> None:
    method = _fitted(["a", "c"])
    message = "probe: y_stream holds labels unseen at fit ['b']; the classes are ['a', 'c']."
    with pytest.raises(ValueError, match=_exact(message)):
        method.codes(["a", "b", "c"], "y_stream")


@pytest.mark.parametrize(("label", "shown"), [("z", "'z'"), ("0", "'0'")])
def test_label_codes_reject_labels_beyond_the_ends(label, shown) -> None:
    method = _fitted(["b", "c"])
    with pytest.raises(ValueError, match=re.escape(f"unseen at fit [{shown}]")):
        method.codes(["b", label], "oracle_labels")


def test_label_codes_message_lists_five_unseen_and_ten_classes() -> None:
    method = _fitted(np.arange(0, 24, 2))  # 12 even classes
    message = (
        "probe: y_stream holds labels unseen at fit [1, 3, 5, 7, 9]; the classes are "
        f"{list(range(0, 20, 2))}."
    )
    with pytest.raises(ValueError, match=_exact(message)):
        method.codes([0, 1, 3, 5, 7, 9, 11, 13], "y_stream")


def test_label_codes_warn_on_column_vectors() -> None:
    method = _fitted([0, 1])
    with pytest.warns(DataConversionWarning, match="column-vector y"):
        codes = method.codes(np.array([[1], [0]]), "y_stream")
    assert codes.tolist() == [1, 0]


def test_label_codes_without_classes_are_int64_as_given() -> None:
    method = _Probe().fit(None, X4)
    codes = method.codes(np.array([2, 0, 1]), "y_stream")
    assert codes.tolist() == [2, 0, 1]
    assert codes.dtype == np.int64
    codes = method.codes([1.0, 0.0], "y_stream")
    assert codes.dtype == np.int64


# ------------------------------------------------------------------------ a classifier
def test_a_fitted_method_is_a_scikit_learn_classifier_with_score() -> None:
    from sklearn.base import is_classifier

    from adaptable import AdapTable

    method = _Probe().fit(None, X4, ["no", "yes", "no", "yes"])
    assert is_classifier(method) and is_classifier(AdapTable())
    assert method.classes_.tolist() == ["no", "yes"]
    # the probe predicts the last class on every row: 3 of these 4 labels
    assert method.score(X4, ["yes", "yes", "no", "yes"]) == 0.75
    assert method.score(X4, ["yes", "yes", "no", "yes"], sample_weight=[1, 1, 2, 0]) == 0.5


def test_score_adapts_on_its_rows_like_predict(synthetic, frame_logreg) -> None:
    from adaptable import AdapTable

    method = AdapTable(preset="paper", calibrator="none").fit(
        frame_logreg(synthetic), synthetic.train.X, synthetic.train.y
    )
    rows, labels = synthetic.test.X.iloc[:64], synthetic.test.y[:64]
    first = method.score(rows, labels)
    assert method.state.n_batches == 1  # the online state moved
    method.reset()
    assert first == np.mean(method.predict(rows) == labels)

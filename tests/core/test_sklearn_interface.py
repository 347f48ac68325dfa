"""Scikit-learn's parameter interface without scikit-learn's base class
(``adaptable/framework/sklearn_interface.py``): nested parameters, the repr's layout, pickling,
and what scikit-learn's own tools read. (Importing a method loads no scikit-learn:
``tests/test_optional_dependencies.py``.)"""

from __future__ import annotations

import copy
import pickle

import pytest
from sklearn.base import clone, is_classifier
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.utils.validation import check_is_fitted

from adaptable import AdapTable
from adaptable.framework.sklearn_interface import ScikitLearnInterface


class Holder(ScikitLearnInterface):
    """A classifier holding another estimator as a parameter."""

    def __init__(self, inner=None, *, weight=1.0):
        self.inner = inner
        self.weight = weight

    def fit(self, X, y):
        self.classes_ = sorted(set(y))
        return self


def test_nested_parameters_are_read_and_set_through_the_holder() -> None:
    holder = Holder(LogisticRegression(C=0.5), weight=2.0)
    deep = holder.get_params(deep=True)
    assert deep["inner__C"] == 0.5 and deep["weight"] == 2.0
    assert set(holder.get_params(deep=False)) == {"inner", "weight"}
    assert holder.set_params(inner__C=3.0, weight=0.5) is holder
    assert (holder.inner.C, holder.weight) == (3.0, 0.5)
    # the new inner estimator first, then its parameter
    holder.set_params(inner=LogisticRegression(), inner__max_iter=7)
    assert holder.inner.max_iter == 7
    with pytest.raises(ValueError, match="Invalid parameter 'outer' for estimator Holder"):
        holder.set_params(outer=1)


def test_scikit_learn_tools_read_it_as_a_classifier() -> None:
    holder = Holder(LogisticRegression(C=0.5))
    copied = clone(holder)
    assert copied is not holder and copied.inner is not holder.inner
    assert copied.inner.C == 0.5 and is_classifier(copied)
    with pytest.raises(NotFittedError):
        check_is_fitted(holder)
    check_is_fitted(holder.fit(None, [1, 0]))


def test_pickle_and_copy_keep_every_attribute() -> None:
    holder = Holder(LogisticRegression(C=0.5), weight=2.0)
    holder.fitted_ = [1, 2]
    for twin in (pickle.loads(pickle.dumps(holder)), copy.deepcopy(holder)):
        assert twin.weight == 2.0 and twin.inner.C == 0.5 and twin.fitted_ == [1, 2]


def test_a_constructor_with_args_has_no_parameter_names() -> None:
    class Loose(ScikitLearnInterface):
        def __init__(self, *values):
            self.values = values

    with pytest.raises(TypeError, match=r"\*args"):
        Loose(1, 2).get_params()


def test_the_repr_is_laid_out_as_scikit_learn_lays_out_its_estimators() -> None:
    """The changed parameters, sorted, broken at 80 characters under the first one; a long
    list broken between its items and cut after 30 of them."""
    assert repr(Holder()) == "Holder()"
    method = AdapTable(
        preset="paper",
        alpha=0.2,
        calibrator="none",
        numerical=[f"col{i}" for i in range(12)],
        objective="accuracy",
        q_low=0.1,
        q_high=0.9,
        random_state=3,
    )
    assert repr(method) == (
        "AdapTable(alpha=0.2, calibrator='none',\n"
        "          numerical=['col0', 'col1', 'col2', 'col3', 'col4', 'col5', 'col6',\n"
        "                     'col7', 'col8', 'col9', 'col10', 'col11'],\n"
        "          objective='accuracy', preset='paper', q_high=0.9, q_low=0.1,\n"
        "          random_state=3)"
    )
    method = AdapTable(numerical=[f"c{i}" for i in range(40)], categorical=("x", "y"))
    assert repr(method) == (
        "AdapTable(categorical=('x', 'y'),\n"
        "          numerical=['c0', 'c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7', 'c8', 'c9',\n"
        "                     'c10', 'c11', 'c12', 'c13', 'c14', 'c15', 'c16', 'c17',\n"
        "                     'c18', 'c19', 'c20', 'c21', 'c22', 'c23', 'c24', 'c25',\n"
        "                     'c26', 'c27', 'c28', 'c29', ...])"
    )
    method = AdapTable(numerical=[f"column_number_{i}" for i in range(60)])
    assert repr(method).splitlines()[-1] == (
        "                     'column_number_27', 'column_number_28', 'column_number_29', ...])"
    )

"""Every baseline checks its parameters the way AdapTable does: at construction, in
``set_params`` (what ``clone`` and ``GridSearchCV`` use) and in ``fit``."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone

from adaptable import methods
from adaptable.baselines.common import CheckedParameters
from adaptable.framework.parameters import InvalidParameterError

BASELINES = [name for name in methods.names() if name != "adaptable"]


@pytest.mark.parametrize("name", BASELINES)
def test_every_parameter_of_every_baseline_has_a_constraint(name: str) -> None:
    cls = methods.method_class(name)
    assert issubclass(cls, CheckedParameters)
    assert set(cls._parameter_constraints) == set(cls._get_param_names()), name
    method = cls()
    assert clone(method).get_params() == method.get_params()  # the defaults pass


@pytest.mark.parametrize("name", BASELINES)
def test_a_wrong_value_is_refused_everywhere_naming_the_parameter(name: str) -> None:
    """A string is nothing any baseline parameter accepts: each one is refused by name."""
    cls = methods.method_class(name)
    for parameter in cls._get_param_names():
        message = f"'{parameter}' parameter of {cls.__name__}"
        with pytest.raises(InvalidParameterError, match=message):
            cls(**{parameter: "abc"})
        method = cls()
        before = method.get_params()
        with pytest.raises(InvalidParameterError, match=message):
            method.set_params(**{parameter: "abc"})
        assert method.get_params() == before  # nothing changed
        setattr(method, parameter, "abc")
        with pytest.raises(InvalidParameterError, match=message):
            method.fit(None)  # refused before the model is even looked at


@pytest.mark.parametrize(
    "name, parameter, value",
    [
        ("em", "max_iter", -5),
        ("em", "max_iter", 2.5),
        ("em", "alpha", "abc"),
        ("em", "alpha", 1.5),
        ("em", "tol", float("nan")),
        ("bbse", "soft", "yes"),
        ("lame", "knn", 0),
        ("lame", "bound_lambda", -1.0),
        ("tent", "lr", -1),
        ("tent", "lr", 0.0),
        ("tent", "steps", -1),
        ("pl", "seed", -3),
        ("sar", "rho", 0.0),
        ("eata", "probs_momentum", 1.0),
        ("ttt++", "loss_weights", (1.0, 0.1)),
        ("ttt++", "loss_weights", (1.0, -0.1, 1.0)),
        ("ttt++", "head_lr", 0.0),
        ("ftat", "learning_rates", ()),
        ("ftat", "learning_rates", (1e-3, 0.0)),
        ("ftat", "confidence", 1.0),
        ("fth", "calibrate", 1),
        ("ogd", "floor", 0.5),
        ("ogd", "horizon", 0),
        ("flh_ftl", "max_experts", 1),
    ],
)
def test_the_reported_bad_values(name: str, parameter: str, value: object) -> None:
    """``set_params`` used to let em(max_iter=-5) and lame(knn=0) fit and predict, and
    tent(lr=-1) / em(alpha='abc') fail later with torch's or numpy's own messages."""
    message = f"'{parameter}' parameter of {methods.method_class(name).__name__} must be"
    with pytest.raises(InvalidParameterError, match=message):
        methods.create(name, **{parameter: value})
    method = methods.create(name)
    with pytest.raises(InvalidParameterError, match=message):
        method.set_params(**{parameter: value})
    with pytest.raises(InvalidParameterError, match=message):
        clone(method).set_params(**{parameter: value})


def test_good_values_of_other_types_are_accepted() -> None:
    """numpy scalars and booleans, lists for sequences: what a grid search hands over."""
    method = methods.create("em").set_params(max_iter=np.int64(5), alpha=np.float32(0.5))
    assert method.max_iter == 5
    methods.create("bbse").set_params(soft=np.bool_(True))
    methods.create("ftat").set_params(learning_rates=[1e-3, 2e-3])
    methods.create("ttt++").set_params(loss_weights=[1.0, 0.0, 1.0], head_max_rows=None)
    methods.create("ogd").set_params(lr=None, horizon=None)

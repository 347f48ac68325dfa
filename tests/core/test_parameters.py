"""The parameter constraints: what each accepts, and the message that names a bad value."""

from __future__ import annotations

import math
from numbers import Integral, Real

import pytest

from adaptable.framework.parameters import (
    ColumnNames,
    Interval,
    InvalidParameterError,
    StrOptions,
    validate_parameters,
)


@pytest.mark.parametrize(
    "interval, text",
    [
        (Interval(Real, 0, 1, closed="both"), "a finite real number in [0, 1]"),
        (Interval(Real, 0, 1, closed="neither"), "a finite real number in (0, 1)"),
        (Interval(Real, 0, 1, closed="left"), "a finite real number in [0, 1)"),
        (Interval(Real, 0, 1, closed="right"), "a finite real number in (0, 1]"),
        (Interval(Integral, 1, None, closed="left"), "an integer in [1, inf)"),
        (Interval(Real, None, 2.5, closed="both"), "a finite real number in (-inf, 2.5]"),
        (Interval(Real, None, None, closed="neither"), "a finite real number in (-inf, inf)"),
    ],
)
def test_interval_text(interval, text) -> None:
    assert str(interval) == text


@pytest.mark.parametrize(
    "closed, inside",
    [
        ("both", [0, 0.5, 1]),
        ("neither", [0.5]),
        ("left", [0, 0.5]),
        ("right", [0.5, 1]),
    ],
)
def test_interval_ends(closed, inside) -> None:
    interval = Interval(Real, 0, 1, closed=closed)
    for value in (0, 0.5, 1, -0.1, 1.1):
        assert interval.accepts(value) is (value in inside), (closed, value)


def test_interval_refuses_other_kinds_booleans_and_non_finite() -> None:
    integers = Interval(Integral, 1, 10, closed="both")
    assert integers.accepts(1) and integers.accepts(10)
    assert not integers.accepts(2.0) and not integers.accepts(True) and not integers.accepts("3")
    reals = Interval(Real, None, None, closed="neither")
    assert reals.accepts(-1e300) and reals.accepts(7)
    for value in (math.nan, math.inf, -math.inf, False):
        assert not reals.accepts(value)


def test_str_options_and_column_names() -> None:
    options = StrOptions(["b", "a"])
    assert str(options) == "one of ['a', 'b']"
    assert options.accepts("a") and not options.accepts("c") and not options.accepts(None)
    names = ColumnNames()
    assert names.accepts(["x", 0]) and names.accepts(())
    assert not names.accepts("x") and not names.accepts([True]) and not names.accepts(3)
    assert str(names) == "a list of column names"


def test_validate_parameters_names_the_parameter_and_every_allowed_form() -> None:
    constraints = {
        "alpha": [Interval(Real, 0, 1, closed="both")],
        "temperature": [Interval(Real, 0, None, closed="neither"), None],
        "hook": [callable, None],
        "name": [StrOptions(["x"]), str],
    }
    validate_parameters(constraints, {"alpha": 0.5, "temperature": None, "hook": print}, "M")
    validate_parameters(constraints, {"name": "anything"}, "M")  # a plain str is allowed too
    with pytest.raises(InvalidParameterError) as err:
        validate_parameters(constraints, {"alpha": 0.5, "temperature": -1.0}, "M")
    assert str(err.value) == (
        "The 'temperature' parameter of M must be a finite real number in (0, inf) or None; "
        "got -1.0."
    )
    assert isinstance(err.value, ValueError) and isinstance(err.value, TypeError)
    with pytest.raises(
        InvalidParameterError, match="'hook' parameter of M must be a callable or None"
    ):
        validate_parameters(constraints, {"hook": 3}, "M")
    with pytest.raises(InvalidParameterError, match="one of \\['x'\\] or a str; got 3"):
        validate_parameters(constraints, {"name": 3}, "M")

"""Constructor-parameter constraints, read the way scikit-learn declares them.

An estimator lists ``_parameter_constraints = {"alpha": [Interval(Real, 0, 1, closed="both")],
"calibrator": [StrOptions({...})], "temperature": [Interval(...), None], ...}``: each parameter
must satisfy one of its constraints (``None`` allows None, a type allows its instances, e.g.
``callable``). :func:`validate_parameters` raises :class:`InvalidParameterError` naming the
parameter, what it accepts and what it got.

Why our own and not ``sklearn.utils._param_validation``: that module is private (its leading
underscore; absent from scikit-learn's developer guide), and we depend on ``scikit-learn>=1.4``
without an upper bound. A hundred lines here cost less than an estimator
that breaks on a scikit-learn release; the names and semantics are the same, so swapping in
scikit-learn's if it ever becomes public is a one-line change.

Example:
    >>> from numbers import Real
    >>> constraints = {"alpha": [Interval(Real, 0, 1, closed="both")]}
    >>> try:
    ...     validate_parameters(constraints, {"alpha": "abc"}, "AdapTable")
    ... except InvalidParameterError as err:
    ...     print(err)
    The 'alpha' parameter of AdapTable must be a finite real number in [0, 1]; got 'abc'.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from numbers import Integral
from typing import Any, Literal


class InvalidParameterError(ValueError, TypeError):
    """A constructor parameter of the wrong type or value (both a ValueError and a TypeError)."""


@dataclass(frozen=True)
class Interval:
    """Numbers of ``kind`` (``Real`` or ``Integral``) between ``left`` and ``right``.

    ``None`` leaves a side open-ended; ``closed`` says which ends belong to the interval. NaN and
    infinities are never inside, nor are booleans.
    """

    kind: type
    left: float | None
    right: float | None
    closed: Literal["left", "right", "both", "neither"] = "left"

    def accepts(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, self.kind):
            return False
        if not isinstance(value, Integral) and not math.isfinite(value):
            return False
        if self.left is not None:
            if value < self.left or (value == self.left and self.closed in ("right", "neither")):
                return False
        if self.right is not None:
            if value > self.right or (value == self.right and self.closed in ("left", "neither")):
                return False
        return True

    def __str__(self) -> str:
        kind = "an integer" if self.kind is Integral else "a finite real number"
        low = "-inf" if self.left is None else f"{self.left:g}"
        high = "inf" if self.right is None else f"{self.right:g}"
        left = "[" if self.closed in ("left", "both") and self.left is not None else "("
        right = "]" if self.closed in ("right", "both") and self.right is not None else ")"
        return f"{kind} in {left}{low}, {high}{right}"


@dataclass(frozen=True)
class StrOptions:
    """One of the given strings."""

    options: frozenset[str]

    def __init__(self, options: Iterable[str]) -> None:
        object.__setattr__(self, "options", frozenset(options))

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str) and value in self.options

    def __str__(self) -> str:
        return f"one of {sorted(self.options)}"


@dataclass(frozen=True)
class ColumnNames:
    """A list (tuple, array, pandas Index) of column names or positions."""

    def accepts(self, value: Any) -> bool:
        if isinstance(value, str | bytes) or not isinstance(value, Collection):
            return False
        return all(isinstance(v, str | Integral) and not isinstance(v, bool) for v in value)

    def __str__(self) -> str:
        return "a list of column names"


Constraint = Interval | StrOptions | ColumnNames | type | Callable[..., Any] | None


def validate_parameters(
    constraints: Mapping[str, list[Constraint]], params: Mapping[str, Any], owner: str
) -> None:
    """Raise :class:`InvalidParameterError` for the first parameter that meets no constraint."""
    for name, allowed in constraints.items():
        if name in params and not any(_meets(params[name], c) for c in allowed):
            accepted = " or ".join(_describe(c) for c in allowed)
            raise InvalidParameterError(
                f"The {name!r} parameter of {owner} must be {accepted}; got {params[name]!r}."
            )


def _meets(value: Any, constraint: Constraint) -> bool:
    if constraint is None:
        return value is None
    if constraint is callable:
        return callable(value)
    if isinstance(constraint, type):
        return isinstance(value, constraint)
    return constraint.accepts(value)


def _describe(constraint: Constraint) -> str:
    if constraint is None:
        return "None"
    if constraint is callable:
        return "a callable"
    if isinstance(constraint, type):
        return f"a {constraint.__name__}"
    return str(constraint)

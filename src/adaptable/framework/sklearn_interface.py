"""Scikit-learn's classifier interface, written out here so that importing a method stays quick.

:class:`ScikitLearnInterface` gives a class what scikit-learn's ``BaseEstimator`` and
``ClassifierMixin`` give their subclasses and what scikit-learn's tools read: ``get_params``,
``set_params`` (nested ``part__name`` keys too), a ``repr`` of the parameters that differ from the
defaults, the classifier tags (``sklearn.base.is_classifier``) and plain pickling. Scikit-learn
reads these by name, so ``clone``, ``is_classifier`` and ``check_is_fitted`` work on a subclass
as on one of its own estimators. Inheriting ``BaseEstimator`` instead would import scikit-learn,
and with it SciPy, whenever a method is imported; here scikit-learn is imported only by the one
method that builds its objects (:meth:`ScikitLearnInterface.__sklearn_tags__`), which only
scikit-learn calls.

A subclass keeps every constructor argument as an attribute of the same name (no ``*args``).

Example:
    >>> class Smoother(ScikitLearnInterface):
    ...     def __init__(self, *, strength=1.0, labels=None):
    ...         self.strength, self.labels = strength, labels
    >>> Smoother(strength=2.0)
    Smoother(strength=2.0)
    >>> Smoother().set_params(labels=["a", "b"]).get_params()
    {'labels': ['a', 'b'], 'strength': 1.0}
"""

from __future__ import annotations

import inspect
from collections import defaultdict
from collections.abc import Callable
from typing import Any

#: a sequence parameter longer than this is shown by its first items and "..." in the repr
_SHOWN_ITEMS = 30
#: the repr's width: longer lines are broken, continuing under the first parameter
_WIDTH = 80


class ScikitLearnInterface:
    """The parameters of a scikit-learn classifier: ``get_params``, ``set_params``, ``repr``,
    the tags ``is_classifier`` reads, pickling; see the module docstring."""

    #: what ``sklearn.base.is_classifier`` read before scikit-learn 1.6 (the tags since)
    _estimator_type = "classifier"

    @classmethod
    def _get_param_names(cls) -> list[str]:
        """The constructor's parameter names, sorted (``self`` and ``**kwargs`` left out).

        Raises:
            TypeError: the constructor takes ``*args``, whose values have no name to keep.
        """
        if cls.__init__ is object.__init__:
            return []
        parameters = inspect.signature(cls.__init__).parameters.values()
        if any(p.kind is p.VAR_POSITIONAL for p in parameters):
            raise TypeError(
                f"{cls.__name__}: a scikit-learn estimator names every constructor parameter; "
                "its __init__ takes *args."
            )
        return sorted(
            p.name for p in parameters if p.name != "self" and p.kind is not p.VAR_KEYWORD
        )

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor arguments, as the attributes of the same names hold them now.

        Args:
            deep: also the parameters of each argument that has ``get_params`` itself (an
                estimator), as ``"<argument>__<its parameter>"``.

        Returns:
            parameter name -> value.
        """
        params: dict[str, Any] = {}
        for name in self._get_param_names():
            value = getattr(self, name)
            if deep and not isinstance(value, type) and hasattr(value, "get_params"):
                params.update((f"{name}__{key}", v) for key, v in value.get_params().items())
            params[name] = value
        return params

    def set_params(self, **params: Any) -> Any:
        """Set constructor arguments; ``"<argument>__<its parameter>"`` sets one of an argument's.

        Returns:
            self.

        Raises:
            ValueError: a name that is not a constructor parameter (``Invalid parameter ...``).
        """
        names = self._get_param_names()
        nested: dict[str, dict[str, Any]] = defaultdict(dict)
        for key, value in params.items():
            name, nests, inner = key.partition("__")
            if name not in names:
                raise ValueError(
                    f"Invalid parameter {name!r} for estimator {self}. "
                    f"Valid parameters are: {names!r}."
                )
            if nests:
                nested[name][inner] = value
            else:
                setattr(self, name, value)
        for name, inner_params in nested.items():
            getattr(self, name).set_params(**inner_params)
        return self

    def __repr__(self) -> str:
        """``Name(parameter=value, ...)``: the parameters whose values differ from the defaults,
        sorted by name, laid out as scikit-learn lays out its estimators (wrapped at 80
        characters, a sequence of more than 30 items cut to its first 30 and ``...``)."""
        defaults = inspect.signature(type(self).__init__).parameters
        items = []
        for name, value in self.get_params(deep=False).items():
            default = defaults[name].default if name in defaults else inspect.Parameter.empty
            if default is inspect.Parameter.empty or repr(value) != repr(default):
                items.append(_item(f"{name}=", value))
        return _layout(f"{type(self).__name__}(", items, ")", column=0)

    def __sklearn_tags__(self) -> Any:
        """A classifier's tags, which scikit-learn (1.6 and later) reads; only it calls this."""
        from sklearn.utils import ClassifierTags, Tags, TargetTags

        return Tags(
            estimator_type="classifier",
            target_tags=TargetTags(required=True),
            classifier_tags=ClassifierTags(),
        )

    def __getstate__(self) -> dict[str, Any]:
        """The attributes, as pickle and ``copy`` take them."""
        return dict(self.__dict__)

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restore :meth:`__getstate__`'s attributes."""
        self.__dict__.update(state)


#: one item of a repr: its text on one line, and how to write it over several lines from a
#: given column (``None``: it is never broken)
_Item = tuple[str, Callable[[int, int], str] | None]


def _item(prefix: str, value: Any) -> _Item:
    """``prefix`` and ``repr(value)``; a list or tuple of two or more items may be broken
    between its items, and shows its first 30 and ``...``."""
    if not isinstance(value, list | tuple) or len(value) < 2:
        return prefix + repr(value), None
    parts = [repr(v) for v in value[:_SHOWN_ITEMS]] + ["..."] * (len(value) > _SHOWN_ITEMS)
    opening, closing = ("[", "]") if isinstance(value, list) else ("(", ")")
    inner: list[_Item] = [(part, None) for part in parts]
    return prefix + opening + ", ".join(parts) + closing, lambda column, after: _layout(
        prefix + opening, inner, closing, column, after
    )


def _layout(head: str, items: list[_Item], tail: str, column: int, after: int = 0) -> str:
    """``head``, the items separated by ", ", then ``tail``, written from ``column`` on, as
    scikit-learn's repr lays them out: on one line where it fits in 80 characters; else an item
    that does not fit on its line starts the next one, under the first item, an item too long for
    any line is broken (where it can be) and the item after it starts a line, and ``...`` stays
    beside the item before it. ``after``: how many characters follow ``tail`` on its line."""
    one_line = head + ", ".join(flat for flat, _ in items) + tail
    if column + len(one_line) + after <= _WIDTH:
        return one_line
    indent = column + len(head)
    text, at, overflowed = head, indent, False
    for i, (flat, broken) in enumerate(items):
        last = i == len(items) - 1
        follows = len(tail) + after if last else 1  # the closing characters, or the comma
        if i:
            # (one more character is kept free beside the last item, as scikit-learn does)
            crowded = overflowed or at + 2 + len(flat) + follows + last > _WIDTH
            if crowded and flat != "...":
                text, at = text + ",\n" + " " * indent, indent
            else:
                text, at = text + ", ", at + 2
        overflowed = at + len(flat) + follows > _WIDTH
        if overflowed and broken is not None:
            piece = broken(at, follows)
        else:  # a nested estimator's repr continues under its first line
            piece = flat.replace("\n", "\n" + " " * at)
        text += piece
        at = len(piece) - piece.rfind("\n") - 1 if "\n" in piece else at + len(piece)
    return text + tail

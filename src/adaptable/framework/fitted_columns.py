"""The columns an adapter was fitted with, and a batch's columns put back in that order.

An adapter fitted on a pandas DataFrame reads its own features by column name, but a model may
read its input by position (a torch module, a callable that takes ``X.to_numpy()``). A batch
whose columns come in another order, or with columns the fit never saw, would then reach the
model shifted while the adapter read it right. :class:`FittedColumns` gives the model, and
everything else, the fit's columns in the fit's order: the same rows, columns chosen by name.

Example:
    >>> import pandas as pd
    >>> columns = FittedColumns.of(pd.DataFrame({"a": [1], "b": [2]}))
    >>> columns.conform(pd.DataFrame({"b": [2], "extra": [0], "a": [1]}), "X_batch").columns.tolist()
    ['a', 'b']
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from adaptable.values import python_value


class FittedColumns:
    """The fit's column names (a pandas Index, unique), and the values behind the last batch
    Index found equal to them: the row slices of one frame each get an Index of their own
    but share its values, so one identity test per batch replaces a comparison of names."""

    def __init__(self, names: pd.Index) -> None:
        self.names = names
        self._seen: Any = None

    @classmethod
    def of(cls, X: Any) -> FittedColumns | None:
        """The columns of a DataFrame with unique column names; ``None`` for anything else
        (an array is read by position; duplicate names cannot be put in order)."""
        if not isinstance(X, pd.DataFrame) or not X.columns.is_unique or not len(X.columns):
            return None
        return cls(X.columns.copy())

    def conform(self, X: Any, what: str) -> Any:
        """``X`` with the fit's columns in the fit's order (extra columns left out); ``X``
        itself where its columns are those already, or where it is no DataFrame (an array is
        refused later, by the Encoder, with its own message).

        Raises:
            ValueError: a column of the fit is missing from ``X`` (named, with ``what``).
        """
        if not isinstance(X, pd.DataFrame):
            return X
        columns = X.columns
        # (an Index is immutable: the same values object means the same names)
        values = getattr(columns, "_values", columns)
        if values is self._seen:
            return X
        if columns.equals(self.names):
            self._seen = values
            return X
        if not columns.is_unique:  # which of two same-named columns the model wants is unknown
            twice = ", ".join(repr(name) for name in columns[columns.duplicated()].unique()[:5])
            raise ValueError(f"adaptable: {what} holds columns more than once: {twice}.")
        missing = self.names.difference(columns, sort=False)
        if len(missing):
            shown = ", ".join(repr(name) for name in missing[:5])
            more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            raise ValueError(
                f"adaptable: {what} lacks {len(missing)} column(s) the adapter was fitted "
                f"with: {shown}{more}."
            )
        return X.loc[:, self.names]

    def __getstate__(self) -> dict[str, Any]:
        return {"names": self.names, "_seen": None}  # the cache is not worth pickling

    def to_list(self) -> list[Any] | None:
        """The names for a file's JSON metadata (numpy scalars as Python values); ``None``
        where a name is no string, integer or finite float (a tuple of a MultiIndex, a date):
        those are not saved, and a loaded adapter passes batches as given."""
        names = [python_value(n) for n in self.names.tolist()]
        return names if all(is_saved_name(n) for n in names) else None


def is_saved_name(name: Any) -> bool:
    """Whether a column name goes into a file's JSON as itself: a string, an integer or a
    finite float (a bool would come back as a number's equal, so it does not)."""
    if isinstance(name, bool):
        return False
    return isinstance(name, str | int) or isinstance(name, float) and math.isfinite(name)

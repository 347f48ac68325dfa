"""One row given on its own, as a dict or a pandas Series, read as a one-row table.

A service that scores rows as they come holds each one as a ``dict`` (column -> value, a JSON
record) or as one row of a DataFrame (``frame.iloc[i]``, a Series whose index is the columns).
:func:`as_table` turns either into the one-row DataFrame a model and an adapter read, and
leaves every other input (a DataFrame, an array, a list of rows) as it is, for the checks of a
batch to judge.

Example:
    >>> as_table({"age": 41, "city": "Lyon"})
       age  city
    0   41  Lyon
    >>> import pandas as pd
    >>> row = pd.DataFrame({"age": [41, 52], "city": ["Lyon", "Nice"]}).iloc[1]
    >>> row.dtype, [str(dtype) for dtype in as_table(row).dtypes]
    (dtype('O'), ['int64', 'str'])
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd


def as_table(X: Any) -> Any:
    """``X`` as a one-row DataFrame where it is one row: a mapping (column -> value) or a
    pandas Series (index = columns); anything else as given.

    Each column takes the dtype its value says (numbers as numbers, text as text), as it
    would in a DataFrame of such rows; the Series' name becomes the row's index.

    Raises:
        ValueError: a mapping with a list, array or Series among its values (several rows:
            pass them as a DataFrame), or with no column at all.
    """
    if isinstance(X, pd.Series):
        return pd.DataFrame([X])
    if not isinstance(X, Mapping):
        return X
    if not X:
        raise ValueError("adaptable: the row is an empty dict; expected column -> value.")
    several = [name for name, value in X.items() if not _is_one_value(value)]
    if several:
        raise ValueError(
            f"adaptable: a dict is read as one row (column -> value), but column "
            f"{several[0]!r} holds {type(X[several[0]]).__name__}; pass several rows as a "
            "DataFrame (pandas.DataFrame(rows))."
        )
    return pd.DataFrame([X])


def _is_one_value(value: Any) -> bool:
    """A scalar cell: not a list, tuple, set, array or Series (a string is one value)."""
    return isinstance(value, str | bytes) or not isinstance(
        value, list | tuple | set | np.ndarray | pd.Series | pd.Index | Mapping
    )

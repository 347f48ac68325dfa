"""A table's columns as per-column drift reads them: numbers, and category counts.

:class:`ColumnReader` reads the columns of the table ``fit`` was given by position (a batch has
them in fit's order once :class:`~adaptable.framework.fitted_columns.FittedColumns` has put it
so): the numerical ones as one float matrix (a value that is no number is missing), the
categorical ones as counts of bins: the held-out rows' categories (as text, the Encoder's
convention: ``str`` of a value that is no string), then one bin for a missing value and one for
a category the held-out rows never held. Each batch is read in a few vectorised calls per
column kind.

Example:
    >>> import pandas as pd
    >>> held_out = pd.DataFrame({"age": [30, 40, 50], "city": ["a", "b", "a"]})
    >>> reader = ColumnReader.of(held_out)
    >>> reader.kinds, reader.categories
    (['numerical', 'categorical'], [('a', 'b')])
    >>> numbers, counts = reader.read(pd.DataFrame({"age": [1, None], "city": ["z", "a"]}))
    >>> numbers.tolist(), counts.tolist()  # bins of city: a, b, missing, unseen
    ([[1.0], [nan]], [1, 0, 0, 1])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from adaptable.encoding import kinds_by_dtype
from adaptable.optional import loaded

#: a column's kind
KINDS = ("numerical", "categorical")
#: a DataFrame batch of at most this many cells is read by one conversion to an object array,
#: faster on small batches than one selection per kind (the Encoder's rule)
SMALL_BATCH_CELLS = 65_536


class ColumnReader:
    """The columns of fit's table, by position, with their kinds and categories.

    Args:
        names: the columns' names, in the table's order.
        kinds: each column's kind, ``"numerical"`` or ``"categorical"``.
        categories: per categorical column (in table order), its held-out categories as
            text, sorted and distinct.

    Raises:
        ValueError: ``kinds`` not one kind per name, or not one category list per
            categorical column.
    """

    def __init__(
        self, names: Sequence[Any], kinds: Sequence[str], categories: Sequence[Sequence[str]]
    ) -> None:
        if len(kinds) != len(names) or not set(kinds) <= set(KINDS):
            raise ValueError(f"ColumnReader: one kind of {KINDS} per column; got {list(kinds)}.")
        self.names, self.kinds = list(names), list(kinds)
        self.numerical = np.flatnonzero(np.array(kinds, dtype=object) == "numerical")
        self.categorical = np.flatnonzero(np.array(kinds, dtype=object) == "categorical")
        if len(categories) != len(self.categorical):
            raise ValueError(
                f"ColumnReader: {len(self.categorical)} categorical columns but "
                f"{len(categories)} category lists."
            )
        self.categories = [tuple(c) for c in categories]
        self._prepare()

    def _prepare(self) -> None:
        """The lookups of :meth:`read`: one vocabulary over every column's categories, and a
        table (column, word) -> bin in the counts of all columns one after the other."""
        words = sorted(set().union(*self.categories)) if self.categories else []
        self._word_of = {word: i for i, word in enumerate(words)}
        starts = self.starts
        # two extra words: one no column holds (unseen), and a missing value
        self._bin_of = np.empty((len(self.categories), len(words) + 2), dtype=np.int64)
        for j, categories in enumerate(self.categories):
            missing = starts[j] + len(categories)
            self._bin_of[j] = missing + 1  # unseen
            self._bin_of[j, -1] = missing
            self._bin_of[j, [self._word_of[c] for c in categories]] = starts[j] + np.arange(
                len(categories)
            )

    @classmethod
    def of(
        cls,
        rows: Any,
        numerical: Sequence[Any] | None = None,
        categorical: Sequence[Any] | None = None,
    ) -> ColumnReader:
        """The columns of ``rows`` (a table of at least one row and column), their kinds and
        the categories the categorical ones hold.

        A column named in ``numerical`` or ``categorical`` takes that kind; any other column
        the kind its dtype says (the Encoder's rule: object, bool, category and string columns
        are categorical), numerical only where its dtype is a number's.
        """
        frame = as_table(rows)
        numerical, categorical = set(numerical or ()), set(categorical or ())
        inferred = set(kinds_by_dtype(frame)[1])
        kinds = []
        for position, name in enumerate(frame.columns):
            if name in numerical or name in categorical:
                kinds.append("numerical" if name in numerical else "categorical")
            else:
                is_number = pd.api.types.is_numeric_dtype(frame.iloc[:, position])
                numeric = name not in inferred and is_number
                kinds.append("numerical" if numeric else "categorical")
        categories = []
        for position in np.flatnonzero(np.array(kinds, dtype=object) == "categorical"):
            values = frame.iloc[:, position].to_numpy(dtype=object)
            present = values[~pd.isna(values)]
            categories.append(tuple(sorted(set(_as_text(present)))))
        return cls(list(frame.columns), kinds, categories)

    @property
    def bins(self) -> list[int]:
        """Bins per categorical column: its categories, then missing, then unseen."""
        return [len(c) + 2 for c in self.categories]

    @property
    def starts(self) -> np.ndarray:
        """Where each categorical column's bins start in the counts of :meth:`read`."""
        return np.concatenate([[0], np.cumsum(self.bins)[:-1]]).astype(np.int64)

    def width(self, table: Any) -> int | None:
        """Columns of ``table`` (a DataFrame or an array), or ``None`` where it is no
        two-dimensional table."""
        shape = getattr(table, "shape", None)
        if shape is None or len(shape) != 2:
            return None
        return int(shape[1])

    def read(self, table: Any) -> tuple[np.ndarray, np.ndarray]:
        """The numerical columns and the categorical columns' bin counts of ``table`` (a
        DataFrame or an array, its columns as fit's, by position).

        Returns:
            the numbers, float64 (n, numerical columns), NaN for a missing value or one that
            is no number; and the count of rows in each bin of each categorical column, the
            columns one after the other (:attr:`bins`, :attr:`starts`), int64.
        """
        values = None
        if isinstance(table, pd.DataFrame):
            if table.size <= SMALL_BATCH_CELLS:  # one conversion of the whole frame
                values = _object_values(table)
            if values is None:
                numbers = _frame_numbers(table.iloc[:, self.numerical])
                cells = table.iloc[:, self.categorical].to_numpy(dtype=object)
        else:
            values = np.asarray(table)
        if values is not None:
            numbers = _array_numbers(values[:, self.numerical])
            cells = values[:, self.categorical]
        return numbers, self._counts(cells)

    def _counts(self, cells: np.ndarray) -> np.ndarray:
        """The bin counts of an array (n, categorical columns) of raw values."""
        total = int(sum(self.bins))
        n, width = cells.shape
        if not width or not n:
            return np.zeros(total, dtype=np.int64)
        flat = cells.ravel()
        unseen, missing = len(self._word_of), len(self._word_of) + 1
        try:
            found, uniques = pd.factorize(flat)  # a missing value -> -1
        except TypeError:  # an unhashable cell: each cell read as text
            found, uniques = np.arange(len(flat)), flat
        listed = uniques.tolist() if hasattr(uniques, "tolist") else list(uniques)
        word_of = self._word_of
        words = np.array(
            [word_of.get(u, unseen) if type(u) is str else unseen for u in listed] + [missing],
            dtype=np.intp,
        )  # index -1: a missing value
        word = words[found]
        # Values that are no text (numbers, booleans) are read as their text, cell by cell:
        # factorize would merge 1, 1.0 and True, whose texts differ.
        special = np.flatnonzero([type(u) is not str for u in listed])
        if special.size:
            for i in np.flatnonzero(np.isin(found, special)).tolist():
                value = flat[i]
                word[i] = missing if _is_missing(value) else word_of.get(str(value), unseen)
        bins = self._bin_of[np.arange(width), word.reshape(n, width)].ravel()
        return np.bincount(bins, minlength=total).astype(np.int64)

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("_word_of", "_bin_of")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._prepare()


def as_table(rows: Any) -> pd.DataFrame:
    """``rows`` as a DataFrame: a DataFrame as it is, anything else (an array, a list of
    rows, a torch tensor) by position.

    Raises:
        ValueError: ``rows`` is no two-dimensional table of at least one row and column.
    """
    if not isinstance(rows, pd.DataFrame):
        torch = loaded("torch")
        if torch is not None and isinstance(rows, torch.Tensor):
            rows = rows.detach().cpu().numpy()
        array = np.asarray(rows)
        if array.ndim != 2:
            raise ValueError(f"a table of rows and columns is needed; got shape {array.shape}.")
        rows = pd.DataFrame(array)
    if rows.shape[0] == 0 or rows.shape[1] == 0:
        raise ValueError(f"a table of at least one row and column is needed; got {rows.shape}.")
    return rows


def _as_text(values: np.ndarray) -> list[str]:
    """Category values as text: a string as it is, anything else as ``str`` of it."""
    return [v if isinstance(v, str) else str(v) for v in values]


def _object_values(frame: pd.DataFrame) -> np.ndarray | None:
    try:
        return frame.to_numpy(dtype=object)
    except (TypeError, ValueError):
        return None


def _frame_numbers(block: pd.DataFrame) -> np.ndarray:
    """A frame's columns as float64, a value that is no number NaN."""
    try:
        return block.to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError):  # a column of text: read value by value
        return _column_numbers([block.iloc[:, j] for j in range(block.shape[1])], len(block))


def _array_numbers(values: np.ndarray) -> np.ndarray:
    """An array's columns as float64, a value that is no number NaN."""
    try:
        return values.astype(np.float64)
    except (TypeError, ValueError):
        return _column_numbers(
            [pd.Series(values[:, j]) for j in range(values.shape[1])], len(values)
        )


def _column_numbers(columns: list[pd.Series], n: int) -> np.ndarray:
    numbers = [pd.to_numeric(c, errors="coerce").to_numpy(np.float64) for c in columns]
    return np.column_stack(numbers) if numbers else np.empty((n, 0))


def _is_missing(value: Any) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False

"""Tables of rows kept by position: a uniform reservoir of rows with their labels, and the
helpers that take, stack and convert rows of a DataFrame or an array alike.

The model updates keep the rows as the model reads them (a DataFrame stays a DataFrame), so a
refitted copy of the model and the patch's Encoder read them as they read the source rows.

Example:
    >>> import numpy as np
    >>> kept = TableReservoir(capacity=3, seed=0)
    >>> kept.add(np.arange(10).reshape(5, 2), np.array([0, 1, 0, 1, 1]))
    >>> kept.size, kept.n_seen, kept.rows().shape
    (3, 5, (3, 2))
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


class TableReservoir:
    """A uniform sample (Algorithm R) of table rows, each with a label code and a vector of
    ``width`` numbers; the draws are keyed by a row's position, as in
    :class:`adaptable.core.labels.LabelledReservoir`, so the sample does not depend on how
    the rows were split into calls. The rows stay in the tables they came in until
    :meth:`rows` (or too many tables) gathers them into one."""

    def __init__(self, capacity: int, seed: int, width: int = 0) -> None:
        self.capacity, self.seed = int(capacity), int(seed)
        self.n_seen = 0
        self.size = 0
        self._chunks: list[Any] = []
        self._held = 0  # rows in self._chunks
        self._where = np.zeros((self.capacity, 2), dtype=np.int64)  # (table, row) per slot
        self._labels = np.zeros(self.capacity, dtype=np.int64)
        self._values = np.zeros((self.capacity, width))

    @property
    def labels(self) -> np.ndarray:
        return self._labels[: self.size]

    @property
    def values(self) -> np.ndarray:
        return self._values[: self.size]

    def add(self, X: Any, labels: np.ndarray, values: np.ndarray | None = None) -> None:
        n = len(labels)
        if n == 0:
            return
        table = len(self._chunks)
        self._chunks.append(X)
        self._held += n
        room = min(self.capacity - self.size, n)
        slots = np.arange(self.size, self.size + room)
        rows = np.arange(room)
        if room < n:
            first, rest = self.n_seen + room, n - room
            drawn = (self._uniforms(first, rest) * np.arange(first + 1, first + 1 + rest)).astype(
                np.int64
            )
            keep = np.flatnonzero(drawn < self.capacity)
            slots = np.concatenate([slots, drawn[keep]])
            rows = np.concatenate([rows, room + keep])
        # in order: a later row drawn to the same slot overwrites an earlier one
        self._where[slots, 0] = table
        self._where[slots, 1] = rows
        self._labels[slots] = labels[rows]
        if values is not None:
            self._values[slots] = values[rows]
        self.size += room
        self.n_seen += n
        if self._held > 2 * self.capacity:
            self._gather()

    def rows(self) -> Any:
        """The kept rows as one table, slot order (``None`` before any)."""
        if self.size == 0:
            return None
        self._gather()
        return self._chunks[0]

    def _gather(self) -> None:
        where = self._where[: self.size]
        pieces, order = [], []
        for table in np.unique(where[:, 0]):
            slots = np.flatnonzero(where[:, 0] == table)
            pieces.append(take_rows(self._chunks[table], where[slots, 1]))
            order.append(slots)
        gathered = concat_tables(pieces)
        order_all = np.concatenate(order)
        if not np.array_equal(order_all, np.arange(self.size)):
            position = np.empty(self.size, dtype=np.int64)
            position[order_all] = np.arange(self.size)
            gathered = take_rows(gathered, position)
        self._chunks = [gathered]
        self._held = self.size
        self._where[: self.size, 0] = 0
        self._where[: self.size, 1] = np.arange(self.size)

    def _uniforms(self, first: int, count: int) -> np.ndarray:
        parts = []
        while count > 0:
            block, offset = divmod(first, self.capacity)
            draws = np.random.default_rng([self.seed, block]).random(self.capacity)
            take = min(count, self.capacity - offset)
            parts.append(draws[offset : offset + take])
            first, count = first + take, count - take
        return np.concatenate(parts)


def as_table(X: Any) -> Any:
    """A frame stays a frame; anything else becomes an array."""
    return X if isinstance(X, pd.DataFrame) else np.asarray(X)


def take_rows(X: Any, rows: np.ndarray) -> Any:
    return X.iloc[rows].reset_index(drop=True) if isinstance(X, pd.DataFrame) else X[rows]


def concat_tables(tables: list[Any]) -> Any:
    frames = [t for t in tables if isinstance(t, pd.DataFrame)]
    if not frames:
        return np.concatenate(tables)
    columns = frames[0].columns
    return pd.concat(
        [t if isinstance(t, pd.DataFrame) else pd.DataFrame(t, columns=columns) for t in tables],
        ignore_index=True,
    )

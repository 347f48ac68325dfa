"""The test stream type: rows in the fixed order a test-time method sees them."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd


@dataclass(frozen=True, eq=False)
class Stream:
    """A shift scenario's test stream: raw features and labels in the order they arrive.

    Built by :func:`adaptable.shifts.apply`; every model and every method sees exactly these
    rows in exactly this order, so results across methods are paired.

    Attributes:
        name: the scenario's registry name (``"natural"``, ``"gaussian"``, ...).
        X: raw features, shape ``(n, D)``, with a fresh ``RangeIndex``. Same columns, in the same
            order, as the dataset's test split, and the same dtypes with one exception: noise
            scenarios (``gaussian``, ``uniform``) turn integer numerical columns into ``float64``
            (rounding the noise away would undo the corruption). Categorical columns hold only
            values that occur in the dataset (its test split or, for replaced cells, its train
            split).
        y: labels, ``int64`` array of shape ``(n,)``.
        seed: the seed the stream was drawn with.
        dataset: name of the dataset the stream comes from.
        rows: ``int64`` array of shape ``(n,)``: for each stream row, its position in the
            dataset's test split (a permutation for ``natural`` and the corruptions, draws with
            replacement for the resampling scenarios).
        info: scenario metadata for reports, read-only (e.g. ``"column"`` for the numerical and
            categorical shifts, ``"dropped_columns"`` for column drop).

    Example:
        >>> from adaptable import datasets, shifts
        >>> stream = shifts.apply("natural", datasets.make_shift_dataset(seed=0), seed=0)
        >>> sum(len(y) for _, y in stream.batches(64)) == len(stream)
        True
    """

    name: str
    X: pd.DataFrame
    y: np.ndarray
    seed: int
    dataset: str = ""
    rows: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    info: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.X, pd.DataFrame):
            raise TypeError(f"Stream.X must be a pandas DataFrame; got {type(self.X).__name__}")
        y = np.asarray(self.y)
        if y.ndim != 1 or len(y) != len(self.X):
            raise ValueError(
                f"Stream.y must be 1-D with one label per row of X ({len(self.X)} rows); "
                f"got shape {y.shape}"
            )
        rows = np.asarray(self.rows)
        if rows.size == 0:
            rows = np.arange(len(y))
        if rows.shape != y.shape:
            raise ValueError(f"Stream.rows must have shape {y.shape}; got {rows.shape}")
        # Frozen dataclass: normalise through object.__setattr__ once, at construction.
        object.__setattr__(self, "X", self.X.reset_index(drop=True))
        object.__setattr__(self, "y", y.astype(np.int64, copy=False))
        object.__setattr__(self, "rows", rows.astype(np.int64, copy=False))
        object.__setattr__(self, "info", MappingProxyType(dict(self.info)))

    def __len__(self) -> int:
        return len(self.y)

    def n_batches(self, batch_size: int = 64) -> int:
        """How many batches :meth:`batches` yields (the last one may be smaller)."""
        _check_batch_size(batch_size)
        return -(-len(self) // batch_size)

    def batches(self, batch_size: int = 64) -> Iterator[tuple[pd.DataFrame, np.ndarray]]:
        """Yield ``(X_batch, y_batch)`` in stream order, every row exactly once.

        The order is fixed: iterating twice gives the same batches (no reshuffle), because an
        online method's result depends on it. The last batch holds the remainder
        (``len(self) % batch_size`` rows) when the length is not a multiple; it is kept, as the
        authors' test loader keeps it.

        Args:
            batch_size: rows per batch (the paper uses 64).

        Yields:
            ``X_batch`` (DataFrame, ``(b, D)``, index continuing the stream's positions) and
            ``y_batch`` (``int64``, ``(b,)``).
        """
        _check_batch_size(batch_size)
        for start in range(0, len(self), batch_size):
            stop = min(start + batch_size, len(self))
            yield self.X.iloc[start:stop], self.y[start:stop]

    def label_counts(self, n_classes: int | None = None) -> np.ndarray:
        """Number of stream rows per class, shape ``(n_classes,)``."""
        minlength = 0 if n_classes is None else n_classes
        return np.bincount(self.y, minlength=minlength)

    def describe(self) -> dict[str, Any]:
        """A flat summary for reports: scenario, dataset, seed, length and the metadata."""
        return {
            "scenario": self.name,
            "dataset": self.dataset,
            "seed": self.seed,
            "rows": len(self),
            **dict(self.info),
        }

    def __repr__(self) -> str:
        return (
            f"Stream({self.name!r}, dataset={self.dataset!r}, seed={self.seed}, rows={len(self)}, "
            f"columns={self.X.shape[1]})"
        )


def _check_batch_size(batch_size: int) -> None:
    if isinstance(batch_size, bool) or not isinstance(batch_size, int | np.integer):
        raise TypeError(f"batch_size must be a positive integer; got {batch_size!r}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer; got {batch_size}")

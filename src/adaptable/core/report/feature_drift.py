"""Per-column drift: each column of the stream against the same column of the held-out rows.

:class:`FeatureMonitor` is fitted on the held-out rows ``fit`` was given (``X_valid``; the
training rows where there are none) and reads every batch the adapter adapts. Its memory on the
stream side is fixed, whatever the stream's length:

- numerical columns: a uniform sample of :data:`SAMPLE_SIZE` rows of the stream
  (:class:`~adaptable.core.report.row_reservoir.RowReservoir`, one seeded reservoir for all
  numerical columns), tested against a sample of at most as many held-out rows;
- categorical columns: the count of the stream's rows in each held-out category, plus one bin
  for a missing value and one for a category the held-out rows never held (all held-out rows
  count).

:meth:`FeatureMonitor.frame` tests each column (:mod:`~adaptable.core.report.column_tests`: the
Kolmogorov-Smirnov test for a numerical column, the chi-square test of homogeneity for a
categorical one) and flags at ``level`` after Holm's correction across the columns.

Example:
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> held_out = pd.DataFrame({"a": rng.normal(size=500), "b": rng.normal(size=500)})
    >>> monitor = FeatureMonitor.of(held_out, seed=0)
    >>> for _ in range(10):
    ...     monitor.update(pd.DataFrame({"a": rng.normal(size=64), "b": rng.normal(1, size=64)}))
    >>> frame = monitor.frame()
    >>> frame["column"].tolist(), frame["flagged"].tolist()
    (['b', 'a'], [True, False])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from adaptable.core.report.column_reading import ColumnReader, as_table
from adaptable.core.report.column_tests import categorical_test, holm, numerical_test
from adaptable.core.report.row_reservoir import RowReservoir
from adaptable.optional import loaded

#: rows of the stream kept for the numerical columns' tests, and held-out rows tested against
SAMPLE_SIZE = 2048
#: the family-wise level of :meth:`FeatureMonitor.frame`'s flags
LEVEL = 0.05
#: :meth:`FeatureMonitor.frame`'s columns, in order
FRAME_COLUMNS = (
    "column", "kind", "statistic_name", "statistic", "p_value", "p_value_holm",
    "distance_name", "distance", "rows_seen", "rows_tested", "reference_rows",
    "missing_share", "unseen_share", "flagged",
)  # fmt: skip


class FeatureMonitor:
    """The held-out rows' columns, and a bounded record of the stream's.

    Build one with :meth:`of`; a saved file's is rebuilt by
    :mod:`~adaptable.core.report.feature_drift_fields`.

    Args:
        reader: the columns, their kinds and categories.
        reference: the held-out sample of the numerical columns, (rows, numerical columns),
            NaN for a missing value.
        reference_counts: the held-out rows' count in each bin of each categorical column,
            the columns one after the other (:meth:`ColumnReader.read`).
        reference_rows: the held-out rows (all of them; ``reference`` may hold fewer).
        sample_size: rows of the stream kept for the numerical columns.
        seed: seeds the choice of the stream rows kept.
    """

    def __init__(
        self,
        reader: ColumnReader,
        reference: np.ndarray,
        reference_counts: np.ndarray,
        reference_rows: int,
        *,
        sample_size: int = SAMPLE_SIZE,
        seed: int = 0,
    ) -> None:
        self.reader = reader
        self.reference = reference
        self.reference_counts = reference_counts
        self.reference_rows = reference_rows
        self.sample_size, self.seed = sample_size, seed
        self.reservoir = RowReservoir(width=len(reader.numerical), size=sample_size, seed=seed)
        self.stream_counts = np.zeros_like(reference_counts)

    @classmethod
    def of(
        cls,
        rows: Any,
        *,
        numerical: Sequence[Any] | None = None,
        categorical: Sequence[Any] | None = None,
        seed: int = 0,
        sample_size: int = SAMPLE_SIZE,
    ) -> FeatureMonitor:
        """A monitor of the columns of ``rows``, the held-out rows (a DataFrame, or an array
        read by position).

        Args:
            rows: the held-out rows, at least one row and one column.
            numerical, categorical: columns whose kind is given (the others: by dtype,
                :meth:`~adaptable.core.report.column_reading.ColumnReader.of`).
            seed: seeds the held-out sample (where there are more than ``sample_size`` rows)
                and the stream's.
            sample_size: rows kept on each side for the numerical columns.

        Raises:
            ValueError: ``rows`` is no table of at least one row and column.
        """
        frame = as_table(rows)
        reader = ColumnReader.of(frame, numerical, categorical)
        numbers, counts = reader.read(frame)
        if len(numbers) > sample_size:  # a uniform sample of the held-out rows, seeded
            kept = np.random.default_rng([seed, 1]).choice(len(numbers), sample_size, False)
            numbers = numbers[np.sort(kept)]
        return cls(reader, numbers, counts, len(frame), sample_size=sample_size, seed=seed)

    @property
    def rows_seen(self) -> int:
        """Stream rows read since fit / reset (or the file's count, after a load)."""
        return self.reservoir.rows_seen

    def update(self, batch: Any) -> None:
        """Read one batch of the stream (its columns in fit's order, by position); a batch
        that is no table of fit's number of columns is not read."""
        torch = loaded("torch")
        if torch is not None and isinstance(batch, torch.Tensor):
            batch = batch.detach().cpu().numpy()
        elif not isinstance(batch, pd.DataFrame | np.ndarray):
            batch = np.asarray(batch, dtype=object)
        if self.reader.width(batch) != len(self.reader.names) or not len(batch):
            return
        numbers, counts = self.reader.read(batch)
        self.reservoir.add(numbers)
        self.stream_counts += counts

    def reset(self) -> None:
        """Forget the stream (the held-out side stays)."""
        self.reservoir.reset()
        self.stream_counts[:] = 0

    @property
    def nbytes(self) -> int:
        """Bytes of the stream's record: the reservoir's buffer and the category counts (fixed
        after fit, whatever the stream's length)."""
        return self.reservoir.nbytes + self.stream_counts.nbytes

    def frame(self, level: float = LEVEL) -> pd.DataFrame:
        """One row per column, tested against the held-out rows; the flagged columns first,
        then by distance, largest first (then by p-value).

        Args:
            level: the family-wise level: a column is flagged where its Holm-adjusted p-value
                is at most ``level``.

        Returns:
            a DataFrame with the columns of :data:`FRAME_COLUMNS`: the column's name and
            kind, the test (``statistic_name``, ``statistic``, ``p_value``, ``p_value_holm``),
            the distance (``distance_name``: ``"kolmogorov_smirnov"`` or
            ``"total_variation"``, ``distance``), the stream rows read (``rows_seen``) and
            those tested (``rows_tested``: the sample's for a numerical column), the held-out
            rows tested (``reference_rows``), the stream's share of missing values
            (``missing_share``) and of categories the held-out rows never held
            (``unseen_share``, NaN for a numerical column), and ``flagged``.

        Raises:
            ValueError: ``level`` outside (0, 1), or no stream row read yet.
        """
        if not 0 < level < 1:  # NaN fails this too
            raise ValueError(f"adaptable: level must be in (0, 1); got {level!r}.")
        if self.rows_seen == 0:
            raise ValueError(
                "adaptable: feature_drift() needs at least one batch adapted since fit / reset."
            )
        rows: list[dict[str, Any]] = []
        sample = self.reservoir.sample
        for j, position in enumerate(self.reader.numerical):
            test = numerical_test(self.reference[:, j], sample[:, j])
            missing = float(np.isnan(sample[:, j]).mean())
            rows.append(self._row(position, test, len(sample), len(self.reference), missing))
        starts, bins = self.reader.starts, self.reader.bins
        for j, position in enumerate(self.reader.categorical):
            column = slice(starts[j], starts[j] + bins[j])
            reference, stream = self.reference_counts[column], self.stream_counts[column]
            test = categorical_test(reference, stream)
            rows.append(
                self._row(
                    position, test, self.rows_seen, self.reference_rows,
                    stream[-2] / self.rows_seen, stream[-1] / self.rows_seen,
                )
            )  # fmt: skip
        frame = pd.DataFrame(rows)
        frame["p_value_holm"] = holm(frame["p_value"].to_numpy())
        frame["flagged"] = frame["p_value_holm"] <= level
        frame = frame.sort_values(
            ["flagged", "distance", "p_value"], ascending=[False, False, True], kind="stable"
        )
        return frame.loc[:, list(FRAME_COLUMNS)].reset_index(drop=True)

    def _row(
        self, position: int, test: Any, tested: int, reference: int, missing: float,
        unseen: float = float("nan"),
    ) -> dict[str, Any]:  # fmt: skip
        return {
            "column": self.reader.names[position],
            "kind": self.reader.kinds[position],
            "statistic_name": test.statistic_name,
            "statistic": test.statistic,
            "p_value": test.p_value,
            "distance_name": test.distance_name,
            "distance": test.distance,
            "rows_seen": self.rows_seen,
            "rows_tested": tested,
            "reference_rows": reference,
            "missing_share": float(missing),
            "unseen_share": float(unseen),
        }


def monitor_of(
    rows: Any,
    *,
    numerical: Sequence[Any] | None = None,
    categorical: Sequence[Any] | None = None,
    seed: int = 0,
) -> FeatureMonitor | None:
    """:meth:`FeatureMonitor.of` the held-out ``rows``; ``None`` where they are no table of
    rows and columns (a model of texts or images: there is no column to follow)."""
    try:
        table = as_table(rows)
    except ValueError:
        return None
    return FeatureMonitor.of(table, numerical=numerical, categorical=categorical, seed=seed)

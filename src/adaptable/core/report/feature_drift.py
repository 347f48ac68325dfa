"""Per-column drift: each column of the stream against the same column of the held-out rows.

:class:`FeatureMonitor` reads the columns as an :class:`~adaptable.encoding.Encoder` reads them
(:class:`~adaptable.encoding.EncodedBatch`: numerical columns standardised, a missing number
read as 0 before scaling; categorical columns as codes of the categories seen at fit, -1 for an
unseen one, a missing value as the category ``"nan"`` where the fit saw one). The adapter hands
it the batch it encoded anyway (the default preset, or the graph calibrator), so that following
the columns adds no second reading of the rows; an adapter that encodes nothing has the monitor
encode the batch with an Encoder of its own.

It is fitted on the held-out rows ``fit`` was given (``X_valid``; the training rows where there
are none), and its memory on the stream side is fixed, whatever the stream's length:

- numerical columns: a uniform sample of :data:`SAMPLE_SIZE` rows of the stream
  (:class:`~adaptable.core.report.row_reservoir.RowReservoir`, one seeded reservoir for all
  numerical columns), tested against a sample of at most as many held-out rows;
- categorical columns: the count of the stream's rows in each category, plus one bin for an
  unseen category (all stream rows and all held-out rows count).

:meth:`FeatureMonitor.frame` tests each column (:mod:`~adaptable.core.report.column_tests`: the
Kolmogorov-Smirnov test for a numerical column, which standardising does not change, the
chi-square test of homogeneity for a categorical one) and flags at ``level`` after Holm's
correction across the columns.

Example:
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> held_out = pd.DataFrame({"a": rng.normal(size=500), "b": rng.normal(size=500)})
    >>> monitor = monitor_of(held_out, held_out, seed=0)
    >>> for _ in range(10):
    ...     batch = pd.DataFrame({"a": rng.normal(size=64), "b": rng.normal(1, size=64)})
    ...     monitor.update(monitor.encode(batch))
    >>> frame = monitor.frame()
    >>> frame["column"].tolist(), frame["flagged"].tolist()
    (['b', 'a'], [True, False])
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from adaptable.core.report.column_tests import categorical_test, holm, numerical_test
from adaptable.core.report.row_reservoir import RowReservoir
from adaptable.encoding import EncodedBatch, Encoder, UnseenCategoryWarning

#: rows of the stream kept for the numerical columns' tests, and held-out rows tested against
SAMPLE_SIZE = 2048
#: the family-wise level of :meth:`FeatureMonitor.frame`'s flags
LEVEL = 0.05
#: :meth:`FeatureMonitor.frame`'s columns, in order
FRAME_COLUMNS = (
    "column", "kind", "statistic_name", "statistic", "p_value", "p_value_holm",
    "distance_name", "distance", "rows_seen", "rows_tested", "reference_rows", "unseen_share",
    "flagged",
)  # fmt: skip


class FeatureMonitor:
    """The held-out rows' columns, and a bounded record of the stream's.

    Build one with :func:`monitor_of`; a saved file's is rebuilt by
    :mod:`~adaptable.core.report.feature_drift_fields`.

    Args:
        encoder: the Encoder the columns are read through (fitted).
        own_encoder: whether the monitor encodes the batches itself (else the adapter hands
            it the batches its parts encoded with the same Encoder).
        reference: the held-out sample of the numerical columns, standardised,
            (rows, numerical columns).
        reference_counts: the held-out rows' count in each bin of each categorical column, the
            columns one after the other (:attr:`bins`).
        reference_rows: the held-out rows (all of them; ``reference`` may hold fewer).
        sample_size: rows of the stream kept for the numerical columns.
        seed: seeds the choice of the stream rows kept.
    """

    def __init__(
        self,
        encoder: Encoder,
        own_encoder: bool,
        reference: np.ndarray,
        reference_counts: np.ndarray,
        reference_rows: int,
        *,
        sample_size: int = SAMPLE_SIZE,
        seed: int = 0,
    ) -> None:
        self.encoder, self.own_encoder = encoder, own_encoder
        self.reference = reference
        self.reference_counts = reference_counts
        self.reference_rows = reference_rows
        self.sample_size, self.seed = sample_size, seed
        width = len(encoder.numerical_)
        self.reservoir = RowReservoir(width=width, size=sample_size, seed=seed)
        self.stream_counts = np.zeros_like(reference_counts)
        self._bins, self._offsets = np.asarray(self.bins, dtype=np.int64), self.starts

    @property
    def bins(self) -> list[int]:
        """Bins per categorical column: its categories, then one for an unseen category."""
        return [len(c) + 1 for c in self.encoder.categories_]

    @property
    def starts(self) -> np.ndarray:
        """Where each categorical column's bins start in the counts."""
        return np.cumsum([0, *self.bins], dtype=np.int64)[:-1]

    @property
    def rows_seen(self) -> int:
        """Stream rows read since fit / reset (or the file's count, after a load)."""
        return self.reservoir.rows_seen

    def encode(self, rows: Any) -> EncodedBatch:
        """``rows`` (a table, its columns as fit's) read by the monitor's Encoder, without the
        Encoder's warning about unseen categories (the monitor reports those itself).

        Raises:
            ValueError: as :meth:`adaptable.encoding.Encoder.encode`.
        """
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnseenCategoryWarning)
            return self.encoder.encode(rows)

    def update(self, encoded: EncodedBatch) -> None:
        """Read one batch of the stream, as the monitor's Encoder encoded it."""
        self.reservoir.add(encoded.numeric.astype(np.float64))
        self.stream_counts += category_counts(encoded.codes, self._bins, self._offsets)

    def observe(self, rows: Any, encoded: EncodedBatch | None) -> None:
        """Read one adapted batch: as the adapter's parts ``encoded`` it, or (``None``: no part
        encodes) ``rows`` (as the model read them, fit's columns in order) encoded by the
        monitor; a batch its Encoder cannot read, which the model took, is left out."""
        if encoded is None:
            try:
                encoded = self.encode(rows)
            except (TypeError, ValueError, IndexError, KeyError):
                return
        self.update(encoded)

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
            rows tested (``reference_rows``), the stream's share of categories the fit never
            saw (``unseen_share``, NaN for a numerical column), and ``flagged``.

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
        for j, name in enumerate(self.encoder.numerical_):
            test = numerical_test(self.reference[:, j], sample[:, j])
            rows.append(self._row(name, "numerical", test, len(sample), len(self.reference)))
        for name, start, bins in zip(
            self.encoder.categorical_, self.starts, self.bins, strict=True
        ):
            column = slice(start, start + bins)
            reference, stream = self.reference_counts[column], self.stream_counts[column]
            test = categorical_test(reference, stream)
            unseen = stream[-1] / self.rows_seen
            rows.append(
                self._row(name, "categorical", test, self.rows_seen, self.reference_rows, unseen)
            )
        frame = pd.DataFrame(rows, columns=[c for c in FRAME_COLUMNS if c != "p_value_holm"])
        frame["p_value_holm"] = holm(frame["p_value"].to_numpy())
        frame["flagged"] = frame["p_value_holm"] <= level
        frame = frame.sort_values(
            ["flagged", "distance", "p_value"], ascending=[False, False, True], kind="stable"
        )
        return frame.loc[:, list(FRAME_COLUMNS)].reset_index(drop=True)

    def _row(
        self, name: Any, kind: str, test: Any, tested: int, reference: int,
        unseen: float = float("nan"),
    ) -> dict[str, Any]:  # fmt: skip
        return {
            "column": name,
            "kind": kind,
            "statistic_name": test.statistic_name,
            "statistic": test.statistic,
            "p_value": test.p_value,
            "distance_name": test.distance_name,
            "distance": test.distance,
            "rows_seen": self.rows_seen,
            "rows_tested": tested,
            "reference_rows": reference,
            "unseen_share": float(unseen),
        }

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("_bins", "_offsets")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._bins, self._offsets = np.asarray(self.bins, dtype=np.int64), self.starts


def category_counts(codes: np.ndarray, bins: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The count of rows in each bin of each categorical column, the columns one after the
    other.

    Args:
        codes: the Encoder's category codes, (n, categorical columns), -1 for an unseen one.
        bins: each column's bins, its categories and one for an unseen category, (columns,).
        starts: where each column's bins start, (columns,).

    Returns:
        the counts, (sum of ``bins``,) int64.
    """
    placed = np.where(codes < 0, bins - 1, codes) + starts
    return np.bincount(placed.ravel(), minlength=int(bins.sum())).astype(np.int64)


def monitor_of(
    source_rows: Any,
    held_out: Any,
    *,
    encoder: Encoder | None = None,
    numerical: Sequence[Any] | None = None,
    categorical: Sequence[Any] | None = None,
    seed: int = 0,
    sample_size: int = SAMPLE_SIZE,
) -> FeatureMonitor | None:
    """A monitor of the columns of ``held_out``, read through ``encoder`` (the adapter's),
    or through an Encoder of its own fitted on ``source_rows`` as the adapter's would be.

    Args:
        source_rows: the training and held-out rows (where ``encoder`` is ``None``).
        held_out: the held-out rows the stream is tested against.
        encoder: the adapter's fitted Encoder, whose encodings of the batches the adapter
            hands over; ``None``: the monitor encodes the batches itself.
        numerical, categorical: the column kinds for an Encoder of its own.
        seed: seeds the held-out sample (where there are more than ``sample_size`` rows)
            and the stream's.
        sample_size: rows kept on each side for the numerical columns.

    Returns:
        the monitor; ``None`` where the rows are no table the Encoder reads (texts or images
        given to a model that takes them: no column to follow).
    """
    own = encoder is None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnseenCategoryWarning)
            if encoder is None:
                encoder = Encoder(numerical, categorical).fit(source_rows)
            encoded = encoder.encode(held_out)
    except (TypeError, ValueError):
        return None
    numbers = encoded.numeric.astype(np.float64)
    if len(numbers) > sample_size:  # a uniform sample of the held-out rows, seeded
        kept = np.random.default_rng([seed, 1]).choice(len(numbers), sample_size, replace=False)
        numbers = numbers[np.sort(kept)]
    bins = np.array([len(c) + 1 for c in encoder.categories_], dtype=np.int64)
    starts = np.cumsum([0, *bins], dtype=np.int64)[:-1]
    counts = category_counts(encoded.codes, bins, starts)
    return FeatureMonitor(
        encoder, own, numbers, counts, len(encoded), sample_size=sample_size, seed=seed
    )


def drift_frame(monitor: FeatureMonitor | None, level: float = LEVEL) -> pd.DataFrame:
    """Per-column drift (``AdapTable.feature_drift``): each column of the table given to
    ``fit`` on the stream adapted since fit / reset (or in the saved file, then since load),
    tested against the held-out rows (``X_valid``; ``X_source`` where none was given).

    The columns are read as the Encoder reads them (a missing number as 0; a category unseen at
    fit in a bin of its own). A numerical column is tested by the two-sample
    Kolmogorov-Smirnov test on a uniform sample of 2,048 stream rows, its distance the test's D;
    a categorical column by the chi-square test of homogeneity of its category counts over all
    stream rows, its distance the total variation. Both distances are in [0, 1]. Memory on the
    stream side is fixed, whatever the stream's length.

    Args:
        monitor: the adapter's record (``None``: it keeps none).
        level: the family-wise level: a column is flagged where its p-value, adjusted by Holm's
            method across the columns, is at most ``level``; where no column moved, any column
            is flagged with a chance of at most ``level``.

    Returns:
        one row per column, the flagged columns first, then by distance (largest first);
        columns :data:`FRAME_COLUMNS` (:meth:`FeatureMonitor.frame`).

    Raises:
        ValueError: no batch adapted yet, ``level`` outside (0, 1), or no per-column record
            kept (``fit`` had no table of columns, or the file holds none).
    """
    if monitor is None:
        raise ValueError(
            "adaptable: feature_drift() has no per-column record: fit's rows were no "
            "table of columns, or the adapter was loaded from a file without one (written "
            "by an earlier version, or with column names a file cannot hold)."
        )
    return monitor.frame(level)

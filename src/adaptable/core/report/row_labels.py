"""Late labels matched to the drift report's kept rows by row id: which batch holds a row, whether
an id names a predicted row, which labels are new, and the kept logits of earlier rows.

:class:`DriftLogRows` is mixed into :class:`~adaptable.core.report.drift_log.DriftLog` (it reads
the log's fields below); it is not used on its own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adaptable.values import python_value


class DriftLogRows:
    """``_by_batch``, ``check_ids``, ``new_labels`` and ``kept_logits``, mixed into
    :class:`~adaptable.core.report.drift_log.DriftLog`."""

    n_classes: int
    n_rows: int
    prediction_rows: int
    dropped: int
    _batches: list
    _start_buffer: np.ndarray
    _start_base: int
    _logits: dict[int, np.ndarray]
    _given: dict[int, np.ndarray]

    def kept_logits(self, row_ids: np.ndarray) -> np.ndarray:
        """The model's logits of earlier rows, by row id, as recorded when they were
        predicted, (n, C).

        Raises:
            ValueError: an id naming no row predicted so far, or a row whose logits are no
                longer kept (older than the last ``prediction_rows`` rows, or predicted before
                a load from a file that did not hold them).
        """
        row_ids = np.asarray(row_ids, dtype=np.int64)
        self.check_ids(row_ids)
        out = np.empty((len(row_ids), self.n_classes))
        if not len(row_ids):
            return out
        for index, part, offsets in self._by_batch(row_ids):
            logits = self._logits.get(index)
            if logits is None:
                raise ValueError(
                    f"adaptable: the scores of row {int(row_ids[part].min())} are no longer "
                    f"kept (the last {self.prediction_rows} rows are); pass the rows' features "
                    "(partial_fit(X, y, rows=...)) to score them again."
                )
            out[part] = logits[offsets]
        return out

    def _by_batch(self, row_ids: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """The ids grouped by the batch that holds them: (batch number, the ids' positions in
        ``row_ids``, their offsets in the batch) per batch; one sort, O(n log n) whatever the
        stream's length. Ids older than the batches whose starts are kept share a number that
        no store holds."""
        starts = self._start_buffer[: self.dropped + len(self._batches) - self._start_base]
        batch = np.searchsorted(starts, row_ids, side="right") - 1
        order = np.argsort(batch, kind="stable")
        indices, first = np.unique(batch[order], return_index=True)
        parts = np.split(order, first[1:])
        return [
            (self._start_base + index, part, row_ids[part] - starts[max(index, 0)])
            for index, part in zip(indices.tolist(), parts, strict=True)
        ]

    def check_ids(self, row_ids: np.ndarray) -> None:
        """Raise ``ValueError`` unless every id names a row predicted so far."""
        row_ids = np.asarray(row_ids, dtype=np.int64)
        if len(row_ids) and self.n_rows == 0:
            raise ValueError(
                "row ids must name rows already predicted; no row has been predicted since fit "
                "/ reset yet."
            )
        if len(row_ids) and (row_ids.min() < 0 or row_ids.max() >= self.n_rows):
            raise ValueError(
                f"row ids must name rows already predicted, 0 .. {self.n_rows - 1} since fit / "
                f"reset; got ids from {row_ids.min()} to {row_ids.max()}."
            )

    def new_labels(
        self, row_ids: np.ndarray, labels: np.ndarray, classes: Any = None
    ) -> np.ndarray:
        """Which of the labels given by row id are new: a mask (n,) that drops the repeats of
        a label already given for its row (earlier, or earlier in the same call), so that a
        feed which sends a label twice counts it once. Rows older than the kept predictions
        (``prediction_rows``) cannot be checked and count as new. Changes nothing.
        ``classes`` names the label codes in the error (default: the codes).

        Raises:
            ValueError: an id naming no row predicted so far, or a row given two different
                labels (in this call, or one earlier and one now): a row has one label.
        """
        row_ids = np.asarray(row_ids, dtype=np.int64)
        labels = np.asarray(labels, dtype=np.int64)
        self.check_ids(row_ids)
        fresh = np.ones(len(row_ids), dtype=bool)
        if not len(row_ids):
            return fresh
        # repeats within the call: the first of each id is the one kept
        unique, first, inverse = np.unique(row_ids, return_index=True, return_inverse=True)
        if len(unique) < len(row_ids):
            clash = labels != labels[first][inverse]
            if clash.any():
                at = int(np.flatnonzero(clash)[0])
                raise _conflict(int(row_ids[at]), labels[first][inverse][at], labels[at], classes)
            fresh[:] = False
            fresh[first] = True
        for index, part, offsets in self._by_batch(row_ids):
            given = self._given.get(index)
            if given is None:
                continue
            before = given[offsets]
            known = before >= 0
            clash = known & (before != labels[part])
            if clash.any():
                at = int(np.flatnonzero(clash)[0])
                row, new = int(row_ids[part][at]), labels[part][at]
                raise _conflict(row, before[at], new, classes)
            fresh[part[known]] = False
        return fresh


def _conflict(row: int, first: Any, second: Any, classes: Any) -> ValueError:
    """The error for a row given two different labels (codes, named by ``classes``)."""
    first, second = int(first), int(second)
    if classes is not None:  # the user's labels
        first, second = python_value(classes[first]), python_value(classes[second])
    return ValueError(
        f"adaptable: row {row} was given two different labels, {first!r} and {second!r}; a "
        "row has one label, and a label once given is kept."
    )

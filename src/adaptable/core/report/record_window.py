"""The drift report's window of records: one record per batch, the oldest forgotten past a bound.

:class:`RecordWindow` holds the :class:`BatchRecord` of each of the last ``max_batches`` batches
(up to a quarter more, at least one, before the oldest are forgotten), numbered from the
stream's start: record ``i`` of :attr:`RecordWindow.records` is batch ``dropped + i``. A record
given the adapter's posteriors instead of its expected confusion matrices waits in
:attr:`RecordWindow.pending` until :meth:`RecordWindow.settle` computes them for every waiting
record in one pass. :meth:`RecordWindow.arrays` and :meth:`RecordWindow.restore` are the
records' part of the saved report (the array names are a file format).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from adaptable.core.report.heldout_estimate import class_offsets


@dataclass
class BatchRecord:
    """One batch's record (see :meth:`~adaptable.core.report.drift_log.DriftLog.record`)."""

    first_row: int
    rows: int
    rule: str
    shift_statistic: float
    shift_threshold: float
    prior_statistic: float
    prior_critical: float
    n_labelled: int
    prior_total: float
    target_prior: np.ndarray
    labelled_counts: np.ndarray
    expected: np.ndarray | None  # (2, C, C): argmax, adapter (None: pending, see RecordWindow)
    realised: np.ndarray | None = None  # (2, C, C); None until a label arrives
    #: the adapter's class offsets on the model's posteriors
    #: (:func:`~adaptable.core.report.heldout_estimate.class_offsets`), (C,), NaN where its rule
    #: is no offset; and the sum of the outer products of the model's posteriors over the
    #: batch's rows, (C, C), whose rows sum to the posteriors' sum. None where not known (a
    #: record given its expected matrices)
    offset: np.ndarray | None = None
    model_moment: np.ndarray | None = None


#: the per-batch numbers saved as one (batches, len) array, in this order
SCALARS = (
    "first_row",
    "rows",
    "shift_statistic",
    "shift_threshold",
    "prior_statistic",
    "prior_critical",
    "n_labelled",
    "prior_total",
)

#: a record waiting for its expected matrices: (its position in ``records``, the posteriors the
#: adapter believes (rows, C), the model's posteriors (rows, C), the adapter's predicted codes
#: (rows,), its output probabilities (rows, C) or None); the arrays as the caller gave them
PendingBatch = tuple[int, np.ndarray, np.ndarray, np.ndarray, Any]


class RecordWindow:
    """The records of the last ``max_batches`` batches, and those waiting to be settled.

    Args:
        n_classes: C.
        max_batches: records kept (>= 1): once a quarter more (at least one) are held,
            :meth:`trim` forgets the oldest down to this many.

    Attributes:
        records: the kept records, oldest first; ``records[i]`` is batch ``dropped + i``.
        dropped: records forgotten since the last reset (the first kept record's number).
        pending: the records whose expected matrices are still to compute, in order.
        pending_rows: the rows of the pending records.
    """

    def __init__(self, n_classes: int, max_batches: int) -> None:
        self.n_classes = int(n_classes)
        self.max_batches = int(max_batches)
        self.reset()

    def reset(self) -> None:
        """Forget every record."""
        self.records: list[BatchRecord] = []
        self.dropped = 0
        self.pending: list[PendingBatch] = []
        self.pending_rows = 0

    def __len__(self) -> int:
        return len(self.records)

    @property
    def n_batches(self) -> int:
        """Batches recorded since the last reset, forgotten ones included (the next number)."""
        return self.dropped + len(self.records)

    def append(
        self,
        record: BatchRecord,
        believed: np.ndarray | None = None,
        model_proba: np.ndarray | None = None,
        predictions: np.ndarray | None = None,
        output: np.ndarray | None = None,
    ) -> None:
        """The next batch's record. A record without ``expected`` waits for :meth:`settle` with
        ``believed``, ``model_proba`` and ``predictions`` (and ``output``, or None), which are
        kept, not copied, until then."""
        if record.expected is None:
            self.pending.append((len(self.records), believed, model_proba, predictions, output))
            self.pending_rows += record.rows
        self.records.append(record)

    def at(self, number: int) -> BatchRecord | None:
        """The record of batch ``number``; None where it is forgotten."""
        return None if number < self.dropped else self.records[number - self.dropped]

    def realised(self, record: BatchRecord) -> np.ndarray:
        """The record's realised confusion matrices, (2, C, C): zeros before any label."""
        c = self.n_classes
        return np.zeros((2, c, c)) if record.realised is None else record.realised

    def over_window(self) -> bool:
        """Whether a quarter more records than ``max_batches`` (at least one) are held."""
        return len(self.records) > self.max_batches + max(self.max_batches // 4, 1)

    def trim(self) -> None:
        """Forget the oldest records down to ``max_batches``; batch numbers stay counted from
        the stream's start."""
        self.settle()  # the pending records are addressed by position
        excess = len(self.records) - self.max_batches
        if excess <= 0:
            return
        del self.records[:excess]
        self.dropped += excess

    def settled_from(self, first: int) -> list[BatchRecord]:
        """The records from position ``first`` on (at least one), every one settled.

        Raises:
            ValueError: ``first`` negative, or no record from it on.
        """
        if first < 0:
            raise ValueError(f"drift report: the first batch must be >= 0; got {first}.")
        self.settle()
        kept = self.records[first:]
        if not kept:
            raise ValueError(f"drift report: no batch from batch {first} on.")
        return kept

    def settle(self) -> None:
        """The pending records' expected confusion matrices, class offsets and posteriors'
        moments, in one pass over their rows."""
        if not self.pending:
            return
        pending, self.pending, self.pending_rows = self.pending, [], 0
        c = self.n_classes
        positions, believed, model, predicted, outputs = zip(*pending, strict=True)
        sizes = [len(p) for p in predicted]
        posteriors = np.concatenate(believed).astype(np.float64, copy=False)
        model_proba = np.concatenate(model).astype(np.float64, copy=False)
        source = model_proba.argmax(axis=1)
        adapter = np.concatenate(predicted)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        nonempty = np.asarray(sizes) > 0
        sums = np.zeros((len(pending), 2, c, c))
        moments = np.zeros((len(pending), c, c))
        offsets = np.full((len(pending), c), np.nan)
        if nonempty.any():
            starts = starts[nonempty]
            outer = model_proba[:, :, None] * model_proba[:, None, :]
            moments[nonempty] = np.add.reduceat(outer, starts, axis=0)
            if all(output is not None for output in outputs):
                output = np.concatenate(outputs)
                offsets[nonempty] = class_offsets(output, model_proba, adapter, starts)
            # column k of rule r: each batch's sum of the posteriors of the rows r predicts k
            # (one segmented sum over the rows per column: fewer, larger numpy calls than a
            # product per batch)
            for rule, codes in enumerate((source, adapter)):
                for k in range(c):
                    rows = posteriors * (codes == k)[:, None]
                    sums[nonempty, rule, :, k] = np.add.reduceat(rows, starts, axis=0)
        for position, matrices, offset, moment in zip(
            positions, sums, offsets, moments, strict=True
        ):
            record = self.records[position]
            record.expected, record.offset, record.model_moment = matrices, offset, moment

    # ------------------------------------------------------------------ saved layout
    def arrays(self) -> dict[str, np.ndarray]:
        """The kept records as arrays, every one settled (rule names as UTF-8 bytes; a value
        not computed, NaN, is saved as 0 with a mask: checked readers refuse NaN)."""
        self.settle()
        b, c = self.records, self.n_classes
        width = len(SCALARS)
        scalars = np.array([[float(getattr(x, k)) for k in SCALARS] for x in b]).reshape(-1, width)
        vectors = (
            np.stack([np.stack([x.target_prior, x.labelled_counts]) for x in b])
            if b
            else np.zeros((0, 2, c))
        )
        matrices = (
            np.stack([np.concatenate([x.expected, self.realised(x)]) for x in b])
            if b
            else np.zeros((0, 4, c, c))
        )
        # per batch: the rule's offsets, then the rows of the posteriors' moment
        nan, nan_moment = np.full(c, np.nan), np.full((c, c), np.nan)
        inputs = np.array(
            [
                np.vstack(
                    [
                        nan if x.offset is None else x.offset,
                        nan_moment if x.model_moment is None else x.model_moment,
                    ]
                )
                for x in b
            ]
        ).reshape(-1, 1 + c, c)
        rules = "\n".join(x.rule for x in b).encode()
        return {
            "scalars": np.nan_to_num(scalars),
            "scalars_missing": np.isnan(scalars).astype(np.uint8),
            "vectors": np.nan_to_num(vectors),
            "vectors_missing": np.isnan(vectors).astype(np.uint8),
            "inputs": np.nan_to_num(inputs),
            "inputs_missing": np.isnan(inputs).astype(np.uint8),
            "matrices": matrices,
            "rules": np.frombuffer(rules, dtype=np.uint8).copy(),
        }

    def restore(self, arrays: dict[str, np.ndarray], dropped: int, max_batches: int) -> None:
        """Inverse of :meth:`arrays` (empty arrays may be missing), the first record being batch
        ``dropped``, the window ``max_batches``.

        Raises:
            ValueError: malformed or inconsistent arrays, ``dropped`` < 0 or
                ``max_batches`` < 1.
        """
        c, width = self.n_classes, len(SCALARS)
        self.reset()
        scalars = np.array(arrays.get("scalars", np.zeros((0, width))), dtype=np.float64)
        n = len(scalars)
        vectors = np.array(arrays.get("vectors", np.zeros((0, 2, c))), dtype=np.float64)
        matrices = np.asarray(arrays.get("matrices", np.zeros((0, 4, c, c))), dtype=np.float64)
        # a file written before the calibration-free columns existed holds no inputs: NaN
        inputs = np.array(arrays.get("inputs", np.full((n, 1 + c, c), np.nan)), dtype=np.float64)
        for name, values in (("scalars", scalars), ("vectors", vectors), ("inputs", inputs)):
            missing = np.asarray(arrays.get(f"{name}_missing", np.zeros(0)), dtype=bool)
            if missing.size:
                if missing.shape != values.shape:
                    raise ValueError(f"drift report: {name}_missing does not match {name}.")
                values[missing] = np.nan
        rules_bytes = np.asarray(arrays.get("rules", np.zeros(0)), dtype=np.uint8).tobytes()
        rules = rules_bytes.decode().split("\n") if n else []
        if (
            dropped < 0
            or max_batches < 1
            or scalars.shape != (n, width)
            or vectors.shape != (n, 2, c)
            or matrices.shape != (n, 4, c, c)
            or inputs.shape != (n, 1 + c, c)
            or len(rules) != n
        ):
            raise ValueError("drift report: arrays of inconsistent shapes.")
        for i in range(n):
            s = scalars[i]
            self.records.append(
                BatchRecord(
                    int(s[0]),
                    int(s[1]),
                    rules[i],
                    *(float(v) for v in s[2:6]),
                    int(s[6]),
                    float(s[7]),
                    vectors[i, 0].copy(),
                    vectors[i, 1].copy(),
                    matrices[i, :2].copy(),
                    matrices[i, 2:].copy(),
                    inputs[i, 0].copy(),
                    None if np.isnan(inputs[i, 1:]).all() else inputs[i, 1:].copy(),
                )
            )
        self.dropped, self.max_batches = dropped, max_batches

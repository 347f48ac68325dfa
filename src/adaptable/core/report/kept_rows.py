"""The drift report's kept rows: the last rows' predictions, found by row id when their labels
arrive late.

A row's id is its position in the stream since fit / reset (the first batch's rows are
0 .. n - 1, the next batch's follow). :class:`KeptRows` keeps, for the batches holding the last
``prediction_rows`` rows, each batch's predicted class codes and, where given, the model's
logits, the posteriors the adapter believed and the labels given by row id; it finds the batch
and offset of a row id (:meth:`KeptRows.by_batch`), tells a repeated label from a new one
(:meth:`KeptRows.new_labels`) and hands back the logits of earlier rows
(:meth:`KeptRows.kept_logits`). :meth:`KeptRows.arrays` and :meth:`KeptRows.restore` are the
kept rows' part of the saved report (the array names are a file format).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adaptable.values import python_value


class KeptRows:
    """The predictions of the last ``prediction_rows`` rows, by batch number, and the labels
    given for them by row id.

    A batch's rows are kept whole: the oldest batch goes once the batches after it hold
    ``prediction_rows`` rows. The per-batch stores below are keyed by batch number (counted
    from the stream's start) and hold only batches from ``oldest`` on.

    Args:
        n_classes: C.
        prediction_rows: rows whose predictions are kept.

    Attributes:
        n_rows: rows recorded since the last reset (the next row's id).
        n_batches: batches recorded since the last reset (the next batch's number).
        oldest: the oldest batch whose rows are kept.
        kept: rows kept.
        codes: the adapter's predicted class codes of each kept batch, int16 (rows,).
        logits: the model's logits of the kept batches that were given them (rows, C).
        believed: the posteriors the adapter believed for the kept batches that were given
            them (rows, C); kept as given, not copied.
        given: the label codes given by row id, -1 where none, int16 (rows,); only for the
            kept batches that received one.
    """

    def __init__(self, n_classes: int, prediction_rows: int) -> None:
        self.n_classes = int(n_classes)
        self.prediction_rows = int(prediction_rows)
        self.reset()

    def reset(self) -> None:
        """Forget every row."""
        self.n_rows = 0
        self.n_batches = 0
        self.oldest = 0
        self.kept = 0
        self.codes: dict[int, np.ndarray] = {}
        self.logits: dict[int, np.ndarray] = {}
        self.believed: dict[int, np.ndarray] = {}
        self.given: dict[int, np.ndarray] = {}
        #: the first row id of each batch from batch ``_starts_from`` (at most ``oldest``) on,
        #: a buffer grown by doubling; the starts of batches no longer kept are cut off when
        #: the buffer fills and they take half of it
        self._starts = np.zeros(64, dtype=np.int64)
        self._starts_from = 0

    def add_batch(
        self,
        rows: int,
        codes: np.ndarray,
        logits: np.ndarray | None = None,
        believed: np.ndarray | None = None,
    ) -> None:
        """The next batch: its ``rows`` (the next ``rows`` row ids), the adapter's predicted
        ``codes`` (rows,) (kept as int16), the model's ``logits`` (copied) and the posteriors
        the adapter ``believed`` (kept, not copied); the oldest batches are let go past
        ``prediction_rows`` rows."""
        number = self.n_batches
        self._append_start(self.n_rows)
        self.n_batches += 1
        if logits is not None:
            self.logits[number] = np.array(logits, dtype=np.float64)
        if believed is not None:
            self.believed[number] = believed
        self.codes[number] = np.asarray(codes, dtype=np.int16)
        self.kept += len(codes)
        while self.kept - len(self.codes[self.oldest]) >= self.prediction_rows:
            self.kept -= len(self.codes.pop(self.oldest))
            self.logits.pop(self.oldest, None)
            self.believed.pop(self.oldest, None)
            self.given.pop(self.oldest, None)
            self.oldest += 1
        self.n_rows += int(rows)

    def _append_start(self, start: int) -> None:
        index = self.n_batches - self._starts_from
        if index == len(self._starts):
            unused = self.oldest - self._starts_from
            if 2 * unused >= len(self._starts):  # cut off the batches no longer kept
                self._starts[: index - unused] = self._starts[unused:index].copy()
                self._starts_from, index = self.oldest, index - unused
            else:
                self._starts = np.concatenate([self._starts, self._starts])
        self._starts[index] = start

    def forget_believed_before(self, number: int) -> None:
        """Let go of the believed posteriors of the batches before ``number`` (their records
        are forgotten: nothing reads them any more)."""
        for old in [k for k in self.believed if k < number]:
            del self.believed[old]

    def remember_labels(self, number: int, offsets: np.ndarray, labels: np.ndarray) -> None:
        """The ``labels`` given for the rows at ``offsets`` of kept batch ``number``."""
        given = self.given.get(number)
        if given is None:
            given = self.given[number] = np.full(len(self.codes[number]), -1, dtype=np.int16)
        given[offsets] = labels

    # ------------------------------------------------------------------ by row id
    def by_batch(self, row_ids: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """The ids grouped by the batch that holds them: (batch number, the ids' positions in
        ``row_ids``, their offsets in the batch) per batch, in the batches' order; one sort,
        O(n log n) whatever the stream's length. Ids of batches no longer kept may share a
        number, one that no store holds."""
        starts = self._starts[: self.n_batches - self._starts_from]
        batch = np.searchsorted(starts, row_ids, side="right") - 1
        order = np.argsort(batch, kind="stable")
        indices, first = np.unique(batch[order], return_index=True)
        parts = np.split(order, first[1:])
        return [
            (self._starts_from + index, part, row_ids[part] - starts[max(index, 0)])
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

    def kept_predictions(self, row_ids: np.ndarray) -> np.ndarray:
        """The adapter's predicted classes of earlier rows, by row id, -1 where no longer
        kept, (n,) int64."""
        row_ids = np.asarray(row_ids, dtype=np.int64)
        out = np.full(len(row_ids), -1, dtype=np.int64)
        if len(row_ids) and self.n_batches:
            for number, part, offsets in self.by_batch(row_ids):
                codes = self.codes.get(number)
                if codes is not None:
                    out[part] = codes[offsets]
        return out

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
        for number, part, offsets in self.by_batch(row_ids):
            logits = self.logits.get(number)
            if logits is None:
                raise ValueError(
                    f"adaptable: the scores of row {int(row_ids[part].min())} are no longer "
                    f"kept (the last {self.prediction_rows} rows are); pass the rows' features "
                    "(partial_fit(X, y, rows=...)) to score them again."
                )
            out[part] = logits[offsets]
        return out

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
        for number, part, offsets in self.by_batch(row_ids):
            given = self.given.get(number)
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

    # ------------------------------------------------------------------ saved layout
    def arrays(self) -> dict[str, np.ndarray]:
        """The kept rows as arrays: the codes (``predictions``) and the rows per kept batch
        (``kept_sizes``); the logits and believed posteriors with a mask of the kept batches
        that have them (``logits_batches``, ``believed_batches``; none where no batch has
        any); the labels given by row id, -1 where none (``given``, where any was)."""
        codes = list(self.codes.values())
        out = {
            "predictions": np.concatenate(codes).astype(np.int64) if codes else np.zeros(0),
            "kept_sizes": np.array([len(k) for k in codes], dtype=np.int64),
        }
        for name, store in (("logits", self.logits), ("believed", self.believed)):
            out |= _with_mask(name, store, self.codes, self.n_classes)
        if self.given:
            out["given"] = np.concatenate(
                [self.given.get(number, np.full(len(k), -1)) for number, k in self.codes.items()]
            ).astype(np.int64)
        return out

    def restore(
        self,
        arrays: dict[str, np.ndarray],
        n_rows: int,
        oldest: int,
        n_batches: int,
        sizes_without_file: list[int],
    ) -> None:
        """Inverse of :meth:`arrays` (empty arrays may be missing): ``n_rows`` rows and
        ``n_batches`` batches recorded, the batches from ``oldest`` on kept. A file written
        before ``kept_sizes`` existed kept the rows of the kept records:
        ``sizes_without_file`` (the recorded rows of the batches from ``oldest`` on).

        Raises:
            ValueError: kept arrays that do not match the batches or one another.
        """
        self.reset()
        c = self.n_classes
        codes = np.asarray(arrays.get("predictions", np.zeros(0)), dtype=np.int64)
        if "kept_sizes" in arrays:
            sizes = np.asarray(arrays["kept_sizes"], dtype=np.int64).reshape(-1).tolist()
        else:
            sizes = list(sizes_without_file)
        if (
            not 0 <= oldest <= n_batches
            or len(sizes) != n_batches - oldest
            or min(sizes, default=0) < 0
            or sum(sizes) != len(codes)
            or len(codes) > n_rows
        ):
            raise ValueError("drift report: kept predictions do not match the batches' rows.")
        # the kept batches' rows are the last ones recorded
        first_kept = n_rows - sum(sizes)
        starts = first_kept + np.cumsum([0, *sizes])[:-1]
        self._starts = np.zeros(max(64, 2 * len(sizes)), dtype=np.int64)
        self._starts[: len(sizes)] = starts
        self._starts_from = oldest
        masked: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for name in ("logits", "believed"):
            if name in arrays:
                values = np.asarray(arrays[name], dtype=np.float64)
                # files written before the mask hold every kept batch's rows or none
                mask = np.asarray(arrays.get(f"{name}_batches", np.ones(len(sizes))), bool)
                if (
                    values.shape != (len(codes), c)
                    or not np.isfinite(values).all()
                    or mask.shape != (len(sizes),)
                ):
                    raise ValueError(
                        f"drift report: kept {name} must be finite, one row per code, with a "
                        "mask of one entry per kept batch."
                    )
                masked[name] = (values, mask)
        stores = {"logits": self.logits, "believed": self.believed}
        # a file written before the given labels were kept holds none: repeats of its labels
        # count as new
        given = np.asarray(arrays.get("given", np.full(len(codes), -1)), dtype=np.int64)
        if given.shape != codes.shape or given.min(initial=0) < -1 or given.max(initial=0) >= c:
            raise ValueError("drift report: given labels must be one code (or -1) per kept row.")
        offset = 0
        for position, (number, rows) in enumerate(enumerate(sizes, start=oldest)):
            self.codes[number] = codes[offset : offset + rows].astype(np.int16)
            for name, (values, mask) in masked.items():
                if mask[position]:
                    stores[name][number] = values[offset : offset + rows].copy()
            if (given[offset : offset + rows] >= 0).any():
                self.given[number] = given[offset : offset + rows].astype(np.int16)
            offset += rows
        self.n_rows, self.n_batches = n_rows, n_batches
        self.oldest, self.kept = oldest, len(codes)


def _with_mask(
    name: str, store: dict[int, np.ndarray], codes: dict[int, np.ndarray], n_classes: int
) -> dict[str, np.ndarray]:
    """The kept batches' rows of ``store`` as one array (zeros where a batch has none) and the
    mask of the batches that have them, under ``name`` and ``name_batches``; none where no
    kept batch has any."""
    present = [store.get(number) is not None for number in codes]
    if not any(present):
        return {}
    rows = [
        store[number] if here else np.zeros((len(batch), n_classes))
        for (number, batch), here in zip(codes.items(), present, strict=True)
    ]
    return {
        name: np.concatenate(rows).astype(np.float64, copy=False),
        f"{name}_batches": np.array(present, dtype=np.uint8),
    }


def _conflict(row: int, first: Any, second: Any, classes: Any) -> ValueError:
    """The error for a row given two different labels (codes, named by ``classes``)."""
    first, second = int(first), int(second)
    if classes is not None:  # the user's labels
        first, second = python_value(classes[first]), python_value(classes[second])
    return ValueError(
        f"adaptable: row {row} was given two different labels, {first!r} and {second!r}; a "
        "row has one label, and a label once given is kept."
    )

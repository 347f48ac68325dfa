"""The drift report's saved layout: one batch's record, and the log's state as arrays.

:class:`DriftLogState` is the part of :class:`~adaptable.core.report.drift_log.DriftLog` that
writes its records and kept rows as arrays (:meth:`DriftLogState.arrays`, for ``save`` /
``load`` and pickling) and reads them back (:meth:`DriftLogState.restore`), checking every
array; it reads the log's own fields and is not used on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from adaptable.core.report.label_corrected_estimate import ResidualSums


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
    expected: np.ndarray | None  # (2, C, C): argmax, adapter (None: pending, see DriftLog)
    realised: np.ndarray | None = None  # (2, C, C); None until a label arrives
    #: the adapter's class offsets on the model's posteriors
    #: (:func:`~adaptable.core.report.heldout_estimate.class_offsets`), (C,), NaN where its rule is no
    #: offset; and the sum of the outer products of the model's posteriors over the batch's
    #: rows, (C, C), whose rows sum to the posteriors' sum. None where not known (a record given
    #: its expected matrices)
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


class DriftLogState:
    """``arrays`` and ``restore``, mixed into :class:`~adaptable.core.report.drift_log.DriftLog`
    (they read its fields below and call its ``reset``, ``_settle`` and ``_append_start``)."""

    n_classes: int
    n_rows: int
    unscored: int
    _batches: list[BatchRecord]
    _predictions: dict[int, np.ndarray]
    _logits: dict[int, np.ndarray]
    _believed: dict[int, np.ndarray]
    _given: dict[int, np.ndarray]
    _residuals: ResidualSums
    _oldest: int
    _kept: int
    dropped: int
    max_batches: int

    def _trim(self) -> None:
        """Forget the oldest records down to ``max_batches``, with their residual sums and
        believed posteriors (the label-corrected columns of forgotten batches); batch numbers
        stay counted from the stream's start. Their rows' predicted codes, scores and labels
        stay as long as the last ``prediction_rows`` rows hold them: a label by row id for
        such a row is still checked for repeats and learnt, but no longer scored."""
        self._settle()  # the pending records are addressed by position
        excess = len(self._batches) - self.max_batches
        if excess <= 0:
            return
        del self._batches[:excess]
        self.dropped += excess
        for number in [k for k in self._believed if k < self.dropped]:
            del self._believed[number]
        self._residuals.forget_before(self.dropped)
        base = min(self._oldest, self.dropped)
        shift = base - self._start_base
        if shift > 0:
            held = self.dropped + len(self._batches) - self._start_base
            self._start_buffer[: held - shift] = self._start_buffer[shift:held].copy()
            self._start_base = base

    def _realised(self, record: BatchRecord) -> np.ndarray:
        c = self.n_classes
        return np.zeros((2, c, c)) if record.realised is None else record.realised

    def arrays(self) -> dict[str, np.ndarray]:
        """The records and the kept predictions as arrays (rule names as UTF-8 bytes)."""
        self._settle()
        b, c = self._batches, self.n_classes
        width = len(SCALARS)
        scalars = np.array([[float(getattr(x, k)) for k in SCALARS] for x in b]).reshape(-1, width)
        vectors = (
            np.stack([np.stack([x.target_prior, x.labelled_counts]) for x in b])
            if b
            else np.zeros((0, 2, c))
        )
        matrices = (
            np.stack([np.concatenate([x.expected, self._realised(x)]) for x in b])
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
        codes = list(self._predictions.values())
        # the kept logits and believed posteriors, with a mask of the kept batches that have
        # them (a record may come without; a file may have held none)
        per_row = {}
        for name, store in (("logits", self._logits), ("believed", self._believed)):
            per_row |= _kept_rows(name, store, self._predictions, c)
        if self._given:  # the labels given by row id, -1 where none
            per_row["given"] = np.concatenate(
                [
                    self._given.get(index, np.full(len(k), -1))
                    for index, k in self._predictions.items()
                ]
            ).astype(np.int64)
        # NaN marks a value not computed; the file holds 0 there and a mask (checked readers
        # refuse NaN in a saved tensor)
        return (
            {
                "scalars": np.nan_to_num(scalars),
                "scalars_missing": np.isnan(scalars).astype(np.uint8),
                "vectors": np.nan_to_num(vectors),
                "vectors_missing": np.isnan(vectors).astype(np.uint8),
                "inputs": np.nan_to_num(inputs),
                "inputs_missing": np.isnan(inputs).astype(np.uint8),
                "matrices": matrices,
                "rules": np.frombuffer(rules, dtype=np.uint8).copy(),
                "predictions": np.concatenate(codes).astype(np.int64) if codes else np.zeros(0),
                "counters": np.array(
                    [self.n_rows, self.unscored, self._oldest, self.dropped, self.max_batches],
                    dtype=np.int64,
                ),
                # rows per kept batch (some may be older than the first kept record)
                "kept_sizes": np.array([len(k) for k in codes], dtype=np.int64),
            }
            | per_row
            | self._residuals.arrays(self.dropped + len(b))
        )

    def restore(self, arrays: dict[str, np.ndarray]) -> None:
        """Inverse of :meth:`arrays` (empty arrays may be missing).

        Raises:
            ValueError: missing, malformed or inconsistent arrays.
        """
        c, width = self.n_classes, len(SCALARS)
        self.reset()
        if "counters" not in arrays:
            return  # a file written before the report existed: no records
        counters = np.asarray(arrays["counters"], dtype=np.int64).reshape(-1)
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
        # a file written before records were forgotten holds three counters: none was; the
        # fifth, the window the log was fitted with (a later set_params does not change it)
        dropped = int(counters[3]) if len(counters) >= 4 else 0
        window = int(counters[4]) if len(counters) == 5 else self.max_batches
        if (
            counters.shape not in ((3,), (4,), (5,))
            or dropped < 0
            or window < 1
            or scalars.shape != (n, width)
            or vectors.shape != (n, 2, c)
            or matrices.shape != (n, 4, c, c)
            or inputs.shape != (n, 1 + c, c)
            or len(rules) != n
        ):
            raise ValueError("drift report: arrays of inconsistent shapes.")
        for i in range(n):
            s = scalars[i]
            self._batches.append(
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
        codes = np.asarray(arrays.get("predictions", np.zeros(0)), dtype=np.int64)
        oldest = int(counters[2])
        if "kept_sizes" in arrays:
            kept_rows = np.asarray(arrays["kept_sizes"], dtype=np.int64).reshape(-1).tolist()
        else:  # written before: the kept rows were those of kept records
            kept_rows = [x.rows for x in self._batches[max(oldest - dropped, 0) :]]
        if (
            not 0 <= oldest <= dropped + n
            or len(kept_rows) != dropped + n - oldest
            or min(kept_rows, default=0) < 0
            or sum(kept_rows) != len(codes)
            or len(codes) > int(counters[0])
        ):
            raise ValueError("drift report: kept predictions do not match the batches' rows.")
        # the first rows of the batches from the older of the first kept batch and record
        self._start_base = min(oldest, dropped)
        before = np.cumsum([0, *kept_rows[: max(dropped - oldest, 0)]])[:-1]
        first_kept = int(counters[0]) - sum(kept_rows)
        starts = [*(first_kept + before).tolist(), *(int(x.first_row) for x in self._batches)]
        self._start_buffer = np.zeros(max(64, 2 * len(starts)), dtype=np.int64)
        self._start_buffer[: len(starts)] = starts
        kept: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for name in ("logits", "believed"):
            if name in arrays:
                values = np.asarray(arrays[name], dtype=np.float64)
                # files written before the mask hold every kept batch's rows or none
                mask = np.asarray(arrays.get(f"{name}_batches", np.ones(len(kept_rows))), bool)
                if (
                    values.shape != (len(codes), c)
                    or not np.isfinite(values).all()
                    or mask.shape != (len(kept_rows),)
                ):
                    raise ValueError(
                        f"drift report: kept {name} must be finite, one row per code, with a "
                        "mask of one entry per kept batch."
                    )
                kept[name] = (values, mask)
        stores = {"logits": self._logits, "believed": self._believed}
        # a file written before the given labels were kept holds none: repeats of its labels
        # count as new
        given = np.asarray(arrays.get("given", np.full(len(codes), -1)), dtype=np.int64)
        if given.shape != codes.shape or given.min(initial=0) < -1 or given.max(initial=0) >= c:
            raise ValueError("drift report: given labels must be one code (or -1) per kept row.")
        offset = 0
        for position, (index, rows) in enumerate(enumerate(kept_rows, start=oldest)):
            self._predictions[index] = codes[offset : offset + rows].astype(np.int16)
            for name, (values, mask) in kept.items():
                if mask[position]:
                    stores[name][index] = values[offset : offset + rows].copy()
            if (given[offset : offset + rows] >= 0).any():
                self._given[index] = given[offset : offset + rows].astype(np.int16)
            offset += rows
        self._residuals.restore(arrays, dropped + n)
        self._residuals.forget_before(dropped)
        self._oldest, self._kept, self.dropped = oldest, len(codes), dropped
        self.max_batches = window
        self.n_rows, self.unscored = int(counters[0]), int(counters[1])


def _kept_rows(
    name: str, store: dict[int, np.ndarray], predictions: dict[int, np.ndarray], n_classes: int
) -> dict[str, np.ndarray]:
    """The kept batches' rows of ``store`` as one array (zeros where a batch has none) and the
    mask of the batches that have them, under ``name`` and ``name_batches``; none where no
    kept batch has any."""
    present = [store.get(index) is not None for index in predictions]
    if not any(present):
        return {}
    rows = [
        store[index] if here else np.zeros((len(codes), n_classes))
        for (index, codes), here in zip(predictions.items(), present, strict=True)
    ]
    return {
        name: np.concatenate(rows).astype(np.float64, copy=False),
        f"{name}_batches": np.array(present, dtype=np.uint8),
    }


#: the report's columns that count rows
COUNTS = ("first_row", "rows", "n_labelled", "realised_rows")


def empty_report(names: list[Any]) -> pd.DataFrame:
    """The report of no batch: every column of :meth:`DriftLog.frame`, in its order, typed."""
    per_class = lambda *forms: [form.format(n) for n in names for form in forms]  # noqa: E731
    columns = [
        "batch", *SCALARS, "rule", "shift_rejects", "prior_rejects",
        *per_class("prior_{}", "prior_{}_low", "prior_{}_high"),
        *per_class("labelled_share_{}"),
        *[c for kind in ("estimated", "realised") for w in ("source", "adapter")
          for c in (f"{kind}_{w}", f"{kind}_{w}_so_far")],
        "realised_rows", *per_class("calibration_free_prior_{}"),
        *[c for kind in ("calibration_free", "label_corrected") for w in ("source", "adapter")
          for c in (f"{kind}_{w}_so_far", f"{kind}_{w}_sd")],
        "heldout_source", "heldout_source_sd",
    ]  # fmt: skip
    kinds = {"batch": "int64", "rule": str, "shift_rejects": bool, "prior_rejects": bool}
    kinds |= dict.fromkeys(COUNTS, "int64")
    return pd.DataFrame({c: pd.Series(dtype=kinds.get(c, "float64")) for c in columns})

"""The drift report: one record per adapted batch, and the realised performance as labels arrive.

The recommended decider writes one record per batch (:meth:`DriftLog.record`): the batch's
rows, the shift tests' statistics against their thresholds, the rule it used, the estimated
target label distribution with an interval, the labelled rows received so far, and the
*expected* confusion matrices of the unadapted model (argmax) and of the adapter under the
posteriors the adapter believes (the label-shift reading where the moment test accepts, the
model's own otherwise; :func:`adaptable.core.decision.rules.expected_confusion`), and the rule's
class offsets and the model's posteriors' outer products summed, for the calibration-free
estimate of the stream so far (:mod:`adaptable.core.report.heldout_estimate`). Labels that arrive
later (:meth:`DriftLog.learn`) are matched to the rows they belong to by *row id*: the rows'
positions in the stream since fit / reset (the first batch's rows are 0 .. n - 1, the next
batch's follow). A label is scored against the prediction the adapter made for that row, and
against the model's argmax, and counted in the *realised* confusion matrices of the batch the
row came from. Labels passed without row ids teach the adapter but are not scored: rows
re-presented by value cannot be told apart from other rows with the same features.

Memory: a fixed number of numbers per batch (the matrices are C x C) for the last
``max_batches`` batches (older records are forgotten, see :meth:`DriftLog.frame`), plus the
adapter's predicted class codes of the last ``prediction_rows`` rows of those batches (older
rows' labels still teach the adapter, but are not scored; :attr:`DriftLog.unscored` counts
them), plus the posteriors of
the batches whose expected matrices are not yet computed (fewer than ``PENDING_ROWS`` rows
and one batch: they are computed together, and whenever the report is read or saved). The
posteriors the adapter believed are kept with the predicted codes, so that a late label also
measures their error (the label-corrected columns; five C x C arrays per batch that received
labels).

:meth:`DriftLog.frame` returns the report as a pandas DataFrame (see there for the columns).

Example:
    >>> import numpy as np
    >>> log = DriftLog(n_classes=2, objective="accuracy")
    >>> eye = np.eye(2) * 2.0
    >>> log.record(rows=4, predictions=np.array([0, 1, 1, 0]), expected=np.stack([eye, eye]),
    ...            rule="source", target_prior=np.array([0.5, 0.5]))
    >>> log.learn(np.array([0, 1]), labels=np.array([0, 0]), source_predictions=np.array([0, 0]))
    >>> frame = log.frame()
    >>> frame[["rows", "realised_rows", "realised_source", "realised_adapter"]].values.tolist()
    [[4.0, 2.0, 1.0, 0.5]]
"""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from adaptable.core.decision.rules import confusion, score
from adaptable.core.labels.label_prior import dirichlet_interval
from adaptable.core.parts.earlier_pickles import with_added_attributes
from adaptable.core.report.heldout_estimate import (
    class_offsets,
    realised_variance,
    stream_estimates,
)
from adaptable.core.report.label_corrected_estimate import ResidualSums
from adaptable.core.report.log_storage import (
    COUNTS,
    SCALARS,
    BatchRecord,
    DriftLogState,
    empty_report,
)
from adaptable.core.report.row_labels import DriftLogRows

#: predicted class codes kept for matching late labels to their rows
PREDICTION_ROWS = 1 << 16
#: batches the report keeps (about 1.2 kB each with two classes): older ones are forgotten
REPORT_BATCHES = 1 << 14
#: rows whose expected confusion matrices are computed together: a record keeps its batch's
#: posteriors until then (one vectorised pass instead of a few small products per batch)
PENDING_ROWS = 1 << 12


class Window(NamedTuple):
    """The estimates over the batches from one on (:meth:`DriftLog.window`): each a pair
    (unadapted model, adapter), NaN where not to be had."""

    rows: int
    labelled_rows: int  # rows whose labels arrived by row id
    posteriors: np.ndarray  # the objective expected under the believed posteriors
    corrected: np.ndarray  # label-corrected, and the realised value's deviation around it
    corrected_sd: np.ndarray
    last: BatchRecord  # the last batch's record


class DriftLog(DriftLogState, DriftLogRows):
    """Per-batch records of a stream, and late labels scored against the rows' predictions.

    Args:
        n_classes: C.
        objective: the metric of the performance columns (one of
            :data:`adaptable.core.decision.rules.OBJECTIVES`).
        prediction_rows: predicted codes kept for matching labels to rows (None:
            :data:`PREDICTION_ROWS`).
        max_batches: records kept (None: :data:`REPORT_BATCHES`): once a quarter more (at
            least one) are held, the oldest are forgotten down to this many. Their rows' codes
            and scores stay while the last ``prediction_rows`` rows hold them (labels by row id
            for those rows are learnt and checked for repeats, and counted in ``unscored``).

    Attributes:
        n_rows: rows recorded since the last reset (the next batch's first row id).
        unscored: labelled rows given with ids whose predictions were no longer kept.
        dropped: the oldest batches' records forgotten (the first kept record's batch number).
    """

    def __init__(
        self,
        n_classes: int,
        objective: str,
        prediction_rows: int | None = None,
        max_batches: int | None = None,
    ) -> None:
        self.n_classes = int(n_classes)
        self.objective = objective
        self.prediction_rows = int(PREDICTION_ROWS if prediction_rows is None else prediction_rows)
        self.max_batches = int(REPORT_BATCHES if max_batches is None else max_batches)
        self._heldout: tuple[np.ndarray, np.ndarray] | None = None
        self._residuals = ResidualSums(self.n_classes)
        self.reset()

    def use_heldout(self, log_posteriors: np.ndarray, labels: np.ndarray) -> None:
        """The held-out source rows (the model's log-posteriors (m, C), label codes (m,); kept,
        not copied) from which the report's calibration-free columns are estimated."""
        self._heldout = (log_posteriors, np.asarray(labels, dtype=np.int64))

    def heldout_reference(self) -> tuple[float, float]:
        """The unadapted model's (argmax) objective on the held-out source rows and its
        standard deviation (the delta method over their confusion counts,
        :func:`~adaptable.core.report.heldout_estimate.realised_variance`); NaN without them, or
        where a class has none of them (its score there would say nothing of that class)."""
        if self._heldout is None or not len(self._heldout[1]):
            return np.nan, np.nan
        log_posteriors, labels = self._heldout
        if np.bincount(labels, minlength=self.n_classes).min() == 0:
            return np.nan, np.nan
        counts = confusion(labels, log_posteriors.argmax(axis=1), self.n_classes)
        value = float(score(counts, self.objective))
        return value, float(np.sqrt(realised_variance(counts[None], self.objective)[0]))

    def reset(self) -> None:
        """Forget every record."""
        self._batches: list[BatchRecord] = []
        #: each batch's first row id from batch number ``_start_base`` on (the older of the
        #: first kept record and the first batch with kept rows), a buffer grown by doubling
        self._start_buffer = np.zeros(64, dtype=np.int64)
        self._start_base = 0
        #: predicted codes by batch number (counted from the stream's start, like the stores
        #: below; a record's position in ``_batches`` is its number less ``dropped``), the
        #: batches from ``_oldest`` on: the last ``prediction_rows`` rows, whether or not their
        #: batches' records are still kept (labels by row id are checked for repeats and
        #: learnt from the kept scores as long as the rows are)
        self._predictions: dict[int, np.ndarray] = {}
        #: the model's logits of the same rows, where the record was given them (labels by
        #: row id alone are learnt from them)
        self._logits: dict[int, np.ndarray] = {}
        #: the posteriors the adapter believed for the same rows (the label-corrected columns)
        self._believed: dict[int, np.ndarray] = {}
        #: the label codes given by row id for the same rows, -1 where none (only batches that
        #: received one): a label sent again is recognised
        self._given: dict[int, np.ndarray] = {}
        self._residuals.reset()
        self._oldest = 0
        self._kept = 0
        self.dropped = 0
        self.n_rows = 0
        self.unscored = 0
        #: records whose expected matrices are still to compute: (batch index, posteriors,
        #: the model's posteriors, the adapter's predictions, its output probabilities or None)
        self._pending: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, Any]] = []
        self._pending_rows = 0

    def __len__(self) -> int:
        return len(self._batches)

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickling, earlier versions' pickles included (``parts.earlier_pickles``)."""
        self.__dict__.update(with_added_attributes("DriftLog", state))

    # ------------------------------------------------------------------ writing
    def record(
        self,
        *,
        rows: int,
        predictions: np.ndarray,
        rule: str,
        target_prior: np.ndarray,
        expected: np.ndarray | None = None,
        posteriors: np.ndarray | None = None,
        source_proba: np.ndarray | None = None,
        prior_total: float | None = None,
        shift_statistic: float | None = None,
        shift_threshold: float = np.nan,
        prior_statistic: float | None = None,
        prior_critical: float = np.nan,
        n_labelled: int = 0,
        labelled_counts: np.ndarray | None = None,
        logits: np.ndarray | None = None,
        output: np.ndarray | None = None,
    ) -> None:
        """One adapted batch.

        Args:
            rows: the batch's rows.
            predictions: the adapter's class codes of its rows, (rows,).
            rule: the rule the adapter used.
            target_prior: the estimated target label distribution, (C,) (copied).
            expected: the expected confusion matrices of the unadapted model and of the
                adapter, (2, C, C); or, instead, ``posteriors`` (rows, C), the class
                probabilities the adapter believes, and ``source_proba`` (rows, C), the model's
                own, from which they are computed later (:func:`expected_confusion` of the
                model's argmax and of ``predictions``; the arrays are kept, not copied, until
                then, and ``posteriors`` as long as the predicted codes, for the
                label-corrected columns: do not change them).
            prior_total: the total pseudo-count of the Dirichlet whose mean is
                ``target_prior`` (its interval; ``None``: no interval).
            shift_statistic, shift_threshold, prior_statistic, prior_critical: the tests'
                statistics and thresholds (``None``: stored as NaN).
            n_labelled: labelled rows received before the batch.
            labelled_counts: their counts per class, (C,) (copied).
            logits: the model's logits of the rows, (rows, C) (copied; kept with the
                predicted codes, for :meth:`kept_logits`).
            output: the adapter's output probabilities, (rows, C), with ``posteriors``: the
                class offsets of its rule are read from them (kept like ``posteriors``).

        Raises:
            ValueError: neither ``expected`` nor both ``posteriors`` and ``source_proba``.
        """
        c = self.n_classes
        if expected is None and (posteriors is None or source_proba is None):
            raise ValueError("record needs expected, or posteriors and source_proba.")
        rows = int(rows)
        index = len(self._batches)
        self._batches.append(
            BatchRecord(
                self.n_rows,
                rows,
                rule,
                _number(shift_statistic),
                float(shift_threshold),
                _number(prior_statistic),
                float(prior_critical),
                int(n_labelled),
                _number(prior_total),
                np.array(target_prior, dtype=np.float64),
                np.zeros(c) if labelled_counts is None else np.array(labelled_counts, float),
                None if expected is None else np.asarray(expected, dtype=np.float64),
            )
        )
        self._append_start(self.n_rows)
        number = self.dropped + index
        if logits is not None:
            self._logits[number] = np.array(logits, dtype=np.float64)
        if posteriors is not None:  # kept, not copied, like the pending records' arrays
            self._believed[number] = posteriors
        self._keep(np.asarray(predictions, dtype=np.int16))
        self.n_rows += rows
        if expected is None:
            self._pending.append((index, posteriors, source_proba, predictions, output))
            self._pending_rows += rows
            if self._pending_rows >= PENDING_ROWS:
                self._settle()
        slack = max(self.max_batches // 4, 1)
        if len(self._batches) > self.max_batches + slack:
            self._trim()

    def _settle(self) -> None:
        """The pending records' expected confusion matrices, in one pass over their rows."""
        pending = self._pending
        if not pending:
            return
        self._pending, self._pending_rows = [], 0
        c = self.n_classes
        indices = [p[0] for p in pending]
        sizes = [len(p[3]) for p in pending]
        posteriors = np.concatenate([p[1] for p in pending]).astype(np.float64, copy=False)
        model_proba = np.concatenate([p[2] for p in pending]).astype(np.float64, copy=False)
        source = model_proba.argmax(axis=1)
        adapter = np.concatenate([p[3] for p in pending])
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        nonempty = np.asarray(sizes) > 0
        sums = np.zeros((len(pending), 2, c, c))
        moments = np.zeros((len(pending), c, c))
        offsets = np.full((len(pending), c), np.nan)
        if nonempty.any():
            starts = starts[nonempty]
            outer = model_proba[:, :, None] * model_proba[:, None, :]
            moments[nonempty] = np.add.reduceat(outer, starts, axis=0)
            if all(p[4] is not None for p in pending):
                output = np.concatenate([p[4] for p in pending])
                offsets[nonempty] = class_offsets(output, model_proba, adapter, starts)
            # column k of rule r: each batch's sum of the posteriors of the rows r predicts k
            # (one segmented sum over the rows per column: fewer, larger numpy calls than a
            # product per batch)
            for rule, predicted in enumerate((source, adapter)):
                for k in range(c):
                    rows = posteriors * (predicted == k)[:, None]
                    sums[nonempty, rule, :, k] = np.add.reduceat(rows, starts, axis=0)
        for index, matrices, offset, moment in zip(indices, sums, offsets, moments, strict=True):
            record = self._batches[index]
            record.expected, record.offset, record.model_moment = matrices, offset, moment

    def _keep(self, codes: np.ndarray) -> None:
        """The latest batch's predicted codes; the oldest batches' dropped past the budget."""
        self._predictions[self.dropped + len(self._batches) - 1] = codes
        self._kept += len(codes)
        while self._kept - len(self._predictions[self._oldest]) >= self.prediction_rows:
            self._kept -= len(self._predictions.pop(self._oldest))
            self._logits.pop(self._oldest, None)
            self._believed.pop(self._oldest, None)
            self._given.pop(self._oldest, None)
            self._oldest += 1

    def _append_start(self, start: int) -> None:
        # the batch just appended, counted from the buffer's first batch
        index = self.dropped + len(self._batches) - 1 - self._start_base
        if index == len(self._start_buffer):
            self._start_buffer = np.concatenate([self._start_buffer, self._start_buffer])
        self._start_buffer[index] = start

    def learn(
        self, row_ids: np.ndarray, labels: np.ndarray, source_predictions: np.ndarray
    ) -> None:
        """Labels of earlier rows: each counted in the realised confusions of its batch.

        Args:
            row_ids: the rows' ids (positions in the stream since fit / reset), (n,).
            labels: their label codes, (n,).
            source_predictions: the model's argmax for those rows, (n,) (the realised
                columns score it; the label-corrected ones read the argmax of the logits kept
                with the record where they are, as its expected term does).

        Raises:
            ValueError: an id that names no row predicted so far.
        """
        row_ids = np.asarray(row_ids, dtype=np.int64)
        if len(row_ids) == 0:
            return
        self.check_ids(row_ids)
        labels = np.asarray(labels, dtype=np.int64)
        source_predictions = np.asarray(source_predictions, dtype=np.int64)
        for index, part, offsets in self._by_batch(row_ids):
            codes = self._predictions.get(index)
            if codes is None:  # predictions no longer kept: the labels still teach the adapter
                self.unscored += len(part)
                continue
            given = self._given.get(index)
            if given is None:
                given = self._given[index] = np.full(len(codes), -1, dtype=np.int16)
            given[offsets] = labels[part]
            if index < self.dropped:  # the batch's record is forgotten: nothing to score
                self.unscored += len(part)
                continue
            record = self._batches[index - self.dropped]
            if record.realised is None:
                record.realised = np.zeros((2, self.n_classes, self.n_classes))
            realised = record.realised
            realised[0] += confusion(labels[part], source_predictions[part], self.n_classes)
            realised[1] += confusion(labels[part], codes[offsets], self.n_classes)
            believed = self._believed.get(index)
            if believed is not None:
                # the model's argmax as the expected term reads it, where its scores are kept
                logits = self._logits.get(index)
                source = source_predictions[part] if logits is None else logits[offsets].argmax(1)
                self._residuals.add(index, labels[part], believed[offsets], source, codes[offsets])

    # ------------------------------------------------------------------ reading
    def frame(self, classes: Any = None) -> pd.DataFrame:
        """The report, one row per kept batch: the last ``max_batches`` (up to a quarter more,
        at least one; on a long stream the oldest records are forgotten). The ``..._so_far``
        columns run over the kept batches, as if the stream began at the first of them;
        ``batch`` counts from the stream's start.

        Columns: ``batch``, ``first_row``, ``rows``; ``rule``; ``shift_statistic`` (the moment
        test's z-score), ``shift_threshold``, ``shift_rejects``; ``prior_statistic`` (the
        likelihood-ratio statistic of the target prior against p_s; NaN where the moment test
        rejected), ``prior_critical``, ``prior_rejects``; ``n_labelled`` (labelled rows received
        before the batch was decided); per class ``k`` (named by ``classes``, default 0..C-1):
        ``prior_k`` and its 90 % interval ``prior_k_low`` / ``prior_k_high`` (NaN where the
        estimate has none: no labels while the moment test rejects pure label shift), and
        ``labelled_share_k`` (the class's share of the labelled rows, NaN without any); the
        objective of the batch and of the stream so far (through this batch), estimated from
        the posteriors (``estimated_source``, ``estimated_adapter``, ``..._so_far``) and
        realised on the labels that have arrived for the batch's rows (``realised_rows``,
        ``realised_source``, ``realised_adapter``, ``..._so_far``; NaN without labels); and,
        over the stream so far, a calibration-free estimate valid under pure label shift
        (:mod:`adaptable.core.report.heldout_estimate`; NaN where the moment test rejects it):
        ``calibration_free_prior_k`` (BBSE-soft) and the objective from the held-out confusion
        rates under it, ``calibration_free_source_so_far`` and
        ``calibration_free_adapter_so_far``, with the standard deviation of the realised value
        around each (``calibration_free_source_sd``, ``..._adapter_sd``: the stream's noise,
        the held-out rows' and the realised metric's own). Unlike the posteriors' estimate it
        does not depend on the model's calibration; it is noisy on short streams. Once labels
        arrive by row id: ``label_corrected_source_so_far`` and ``..._adapter_so_far``, the
        objective over every row so far from the believed posteriors corrected by their error
        on the labelled rows (:mod:`adaptable.core.report.label_corrected_estimate`), and the standard
        deviation of the realised value around each (``label_corrected_*_sd``; NaN below two
        labelled rows). Both deviations are capped at 0.5, beyond which two of them already
        cover any miss. ``heldout_source`` and ``heldout_source_sd``, the same on every row:
        the unadapted model's objective on the held-out source rows (:meth:`heldout_reference`),
        the level the stream's columns compare with.
        """
        names = _class_names(classes, self.n_classes)
        self._settle()
        if not self._batches:
            return empty_report(names)
        b = self._batches
        data: dict[str, Any] = {"batch": self.dropped + np.arange(len(b))}
        for key in SCALARS:
            data[key] = np.array([getattr(x, key) for x in b], dtype=np.float64)
        data["rule"] = [x.rule for x in b]
        data["shift_rejects"] = data["shift_statistic"] > data["shift_threshold"]
        data["prior_rejects"] = data["prior_statistic"] >= data["prior_critical"]
        prior = np.stack([x.target_prior for x in b])
        total = data["prior_total"]
        lower, upper = np.full_like(prior, np.nan), np.full_like(prior, np.nan)
        known = np.isfinite(total)
        if known.any():
            lower[known], upper[known] = dirichlet_interval(prior[known], total[known])
        for k, name in enumerate(names):
            data[f"prior_{name}"] = prior[:, k]
            data[f"prior_{name}_low"] = lower[:, k]
            data[f"prior_{name}_high"] = upper[:, k]
        counts = np.stack([x.labelled_counts for x in b])
        totals = counts.sum(axis=1, keepdims=True)
        shares = np.where(totals > 0, counts / np.maximum(totals, 1), np.nan)
        for k, name in enumerate(names):
            data[f"labelled_share_{name}"] = shares[:, k]
        expected = np.stack([x.expected for x in b])
        realised = np.stack([self._realised(x) for x in b])
        for kind, matrices in (("estimated", expected), ("realised", realised)):
            batch_scores = _scores(matrices, self.objective)
            so_far = _scores(np.cumsum(matrices, axis=0), self.objective)
            for r, who in enumerate(("source", "adapter")):
                data[f"{kind}_{who}"] = batch_scores[:, r]
                data[f"{kind}_{who}_so_far"] = so_far[:, r]
        data["realised_rows"] = realised[:, 0].sum(axis=(1, 2))
        free_prior, free_scores, free_sd = self._calibration_free()
        for values in (free_prior, free_scores, free_sd):
            values[data["shift_rejects"]] = np.nan
        for k, name in enumerate(names):
            data[f"calibration_free_prior_{name}"] = free_prior[:, k]
        for r, who in enumerate(("source", "adapter")):
            data[f"calibration_free_{who}_so_far"] = free_scores[:, r]
            data[f"calibration_free_{who}_sd"] = free_sd[:, r]
        corrected, corrected_sd = self._residuals.estimates(
            expected, data["rows"], self.objective, self.dropped
        )
        for r, who in enumerate(("source", "adapter")):
            data[f"label_corrected_{who}_so_far"] = corrected[:, r]
            data[f"label_corrected_{who}_sd"] = corrected_sd[:, r]
        reference, reference_sd = self.heldout_reference()
        data["heldout_source"] = np.full(len(b), reference)
        data["heldout_source_sd"] = np.full(len(b), reference_sd)
        for key in COUNTS:  # counts of rows read as counts (records hold them as floats)
            data[key] = data[key].astype(np.int64)
        return pd.DataFrame(data)

    def window(self, first: int = 0) -> Window:
        """The estimates over the rows of the kept batches from ``first`` on (0-based among the
        kept ones; at least one and ``first`` below their number), each as the frame's
        ``..._so_far`` columns would read for a stream that began at batch ``first``; the
        calibration-free one, the costly one (a bootstrap of the held-out rows), is
        :meth:`calibration_free_window`'s."""
        b = self._from(first)
        expected = np.stack([x.expected for x in b])
        rows = np.array([x.rows for x in b], dtype=np.float64)
        posteriors = _scores(expected.sum(axis=0)[None], self.objective)[0]
        corrected, corrected_sd = self._residuals.estimates(
            expected, rows, self.objective, self.dropped + first
        )
        labelled = int(sum(self._realised(x)[0].sum() for x in b))
        return Window(int(rows.sum()), labelled, posteriors, corrected[-1], corrected_sd[-1], b[-1])

    def calibration_free_window(self, first: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """The calibration-free estimate over the batches from ``first`` on and its deviation,
        each a pair (unadapted model, adapter); NaN where the moment test rejects pure label
        shift at the last batch, or without held-out rows."""
        b = self._from(first)
        last = b[-1]
        if last.shift_statistic > last.shift_threshold:
            return np.full(2, np.nan), np.full(2, np.nan)
        _, scores, sd = self._calibration_free(first)
        return scores[-1], sd[-1]

    def _from(self, first: int) -> list[BatchRecord]:
        """The settled records from batch ``first`` on (at least one).

        Raises:
            ValueError: ``first`` negative, or no batch from it on.
        """
        if first < 0:
            raise ValueError(f"drift report: the first batch must be >= 0; got {first}.")
        self._settle()
        b = self._batches[first:]
        if not b:
            raise ValueError(f"drift report: no batch from batch {first} on.")
        return b

    def _calibration_free(self, first: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:func:`~adaptable.core.report.heldout_estimate.stream_estimates` of the batches so far: the
        label distribution (B, C), the two objectives (B, 2) and their deviations (B, 2); NaN
        without held-out rows or the batches' model posteriors. With ``first``, of the
        batches from ``first`` on, as if the stream began there."""
        b, c = self._batches[first:], self.n_classes
        if self._heldout is None or not len(self._heldout[1]) or not b:
            return (
                np.full((len(b), c), np.nan),
                np.full((len(b), 2), np.nan),
                np.full((len(b), 2), np.nan),
            )
        nan, nan_moment = np.full(c, np.nan), np.full((c, c), np.nan)
        return stream_estimates(
            np.array([x.rows for x in b], dtype=np.float64),
            np.stack([nan if x.offset is None else x.offset for x in b]),
            np.stack([nan_moment if x.model_moment is None else x.model_moment for x in b]),
            *self._heldout,
            self.objective,
        )


#: the report's columns per class, and its own columns a class's could clash with
CLASS_COLUMNS = ("prior_{}", "prior_{}_low", "prior_{}_high", "labelled_share_{}",
                 "calibration_free_prior_{}")  # fmt: skip
OWN_COLUMNS = frozenset({"prior_statistic", "prior_critical", "prior_rejects", "prior_total"})


def report_classes(columns: Any) -> list[str]:
    """The class names a report's columns hold, in their order: each class has the columns
    ``prior_<class>``, ``prior_<class>_low`` and ``prior_<class>_high``; the interval's columns
    say which are classes, since a class may itself be called ``low`` or end in ``_high``.

    >>> report_classes(["prior_statistic", "prior_high", "prior_high_low", "prior_high_high",
    ...                 "prior_low", "prior_low_low", "prior_low_high"])
    ['high', 'low']
    """
    columns = list(columns)
    present = set(columns)
    return [
        column.removeprefix("prior_")
        for column in columns
        if column.startswith("prior_")
        and {f"{column}_low", f"{column}_high"} <= present
        and column not in OWN_COLUMNS
    ]


def _class_names(classes: Any, n_classes: int) -> list[str]:
    """The classes' names in the report's columns: ``classes`` as strings, or their positions
    (with a warning) where the columns would not name the classes back: two classes giving
    one column, a class giving one of the report's own (classes ``a`` and ``a_low``:
    ``prior_a_low``; a class ``total``), or the columns read as more classes than there are
    (a reader finds a class by ``prior_<k>`` with its ``_low`` and ``_high``: classes ``c``,
    ``c_low_low`` and ``c_low_high`` would read as a fourth, ``c_low``)."""
    positions = [str(k) for k in range(n_classes)]
    if classes is None:
        return positions
    names = [str(k) for k in classes]
    columns = [pattern.format(name) for name in names for pattern in CLASS_COLUMNS]
    clash = len(set(columns) | OWN_COLUMNS) < len(columns) + len(OWN_COLUMNS)
    if clash or sorted(report_classes([*OWN_COLUMNS, *columns])) != sorted(names):
        warnings.warn(
            f"adaptable: the report's columns cannot name the classes {names} unambiguously "
            f"(prior_<class>, prior_<class>_low, ...); it names them by position "
            f"(0 .. {n_classes - 1}) instead.",
            UserWarning,
            stacklevel=4,
        )
        return positions
    return names


def _number(value: float | None) -> float:
    return np.nan if value is None else float(value)


def _scores(matrices: np.ndarray, objective: str) -> np.ndarray:
    """The objective of each (batch, rule) matrix, NaN where a matrix holds no rows."""
    flat = matrices.reshape(-1, *matrices.shape[-2:])
    # one vectorised call (a leading axis of one keeps score off its two-rule shortcut, so
    # every matrix takes the same arithmetic as alone)
    values = np.asarray(score(flat[None], objective), dtype=np.float64)[0]
    values[flat.sum(axis=(1, 2)) <= 0] = np.nan
    return values.reshape(matrices.shape[:-2])

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

What is kept, and by which part: the records of the last ``max_batches`` batches, a fixed
number of numbers each (the matrices are C x C), with the posteriors of the records whose
expected matrices are not yet computed (fewer than ``PENDING_ROWS`` rows and one batch: they are
computed together, and whenever the report is read or saved), in a
:class:`~adaptable.core.report.record_window.RecordWindow`; the predicted class codes of the
last ``prediction_rows`` rows, the posteriors the adapter believed for them (a late label also
measures their error: the label-corrected columns) and the labels given by row id, in a
:class:`~adaptable.core.report.kept_rows.KeptRows` (older rows' labels teach the adapter but
are not scored: :attr:`DriftLog.unscored`); the labelled rows' residuals, five C x C arrays per
labelled batch, in a :class:`~adaptable.core.report.label_corrected_estimate.ResidualSums`.
:meth:`DriftLog.frame` reads the report as a DataFrame.

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

from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from adaptable.core.decision.rules import confusion, score
from adaptable.core.parts.earlier_pickles import with_added_attributes
from adaptable.core.report.covariate_reading import CovariateReading, covariate_reading
from adaptable.core.report.drift_log_fields import log_arrays, restore_log
from adaptable.core.report.feature_sample import FeatureSample
from adaptable.core.report.heldout_estimate import realised_variance, stream_estimates
from adaptable.core.report.kept_rows import KeptRows
from adaptable.core.report.label_corrected_estimate import ResidualSums
from adaptable.core.report.record_window import BatchRecord, RecordWindow
from adaptable.core.report.report_columns import (
    COUNTS,
    class_names,
    empty_report,
    objective_scores,
    record_columns,
    report_classes,
)

__all__ = [
    "PENDING_ROWS",
    "PREDICTION_ROWS",
    "REPORT_BATCHES",
    "CovariateReading",
    "DriftLog",
    "Window",
    "report_classes",
]

#: predicted class codes kept for matching late labels to their rows
PREDICTION_ROWS = 1 << 16
#: batches the report keeps: older ones are forgotten
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


class DriftLog:
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
        seed: seeds the stream's feature sample and the covariate estimate's folds.

    Attributes:
        n_classes: C.
        objective: the metric of the performance columns.
        unscored: labelled rows given with ids whose predictions were no longer kept.
    """

    def __init__(
        self,
        n_classes: int,
        objective: str,
        prediction_rows: int | None = None,
        max_batches: int | None = None,
        seed: int = 0,
    ) -> None:
        self.n_classes = int(n_classes)
        self.objective = objective
        window = REPORT_BATCHES if max_batches is None else max_batches
        kept = PREDICTION_ROWS if prediction_rows is None else prediction_rows
        #: the held-out source rows' log-posteriors and labels (:meth:`use_heldout`)
        self._heldout: tuple[np.ndarray, np.ndarray] | None = None
        #: the records of the batches in the window, and those still to settle
        self._records = RecordWindow(self.n_classes, window)
        #: the last rows' predictions, found by row id, and the labels given for them
        self._rows = KeptRows(self.n_classes, kept)
        #: the labelled rows' residuals, per batch (the label-corrected columns)
        self._residuals = ResidualSums(self.n_classes)
        #: the held-out rows' features and a sample of the stream's (the covariate estimate)
        self._sample = FeatureSample(seed=seed)
        self.unscored = 0

    @property
    def n_rows(self) -> int:
        """Rows recorded since the last reset (the next batch's first row id)."""
        return self._rows.n_rows

    @property
    def dropped(self) -> int:
        """The oldest batches' records forgotten (the first kept record's batch number)."""
        return self._records.dropped

    @property
    def max_batches(self) -> int:
        """Records kept once the oldest are forgotten (the window the log was built or
        restored with)."""
        return self._records.max_batches

    @property
    def prediction_rows(self) -> int:
        """Rows whose predicted codes are kept for matching labels to them."""
        return self._rows.prediction_rows

    def use_heldout(
        self, log_posteriors: np.ndarray, labels: np.ndarray, features: Any = None
    ) -> None:
        """The held-out source rows (the model's log-posteriors (m, C), label codes (m,); kept,
        not copied) from which the report's calibration-free columns are estimated; with
        ``features`` (their encoded rows, an object with ``numeric`` (m, D_num) and ``codes``
        (m, D_cat)), also the covariate-shift estimate (:meth:`covariate_estimate`)."""
        self._heldout = (log_posteriors, np.asarray(labels, dtype=np.int64))
        if features is not None:
            self._sample.use_heldout(features.numeric, features.codes, len(self._heldout[1]))

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
        """Forget every record, row and label (the held-out rows stay)."""
        self._records.reset()
        self._rows.reset()
        self._residuals.reset()
        self._sample.reset()
        self.unscored = 0

    def __len__(self) -> int:
        return len(self._records)

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
        features: Any = None,
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
            features: the batch's encoded rows (``numeric``, ``codes``), where the held-out
                rows' are kept: some enter the stream's feature sample (copied).

        Raises:
            ValueError: neither ``expected`` nor both ``posteriors`` and ``source_proba``.
        """
        c = self.n_classes
        if expected is None and (posteriors is None or source_proba is None):
            raise ValueError("record needs expected, or posteriors and source_proba.")
        rows = int(rows)
        record = BatchRecord(
            self._rows.n_rows,
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
        if features is not None and self._sample.has_heldout:
            self._sample.add(features.numeric, features.codes)
        self._records.append(record, posteriors, source_proba, predictions, output)
        # the believed posteriors are kept, not copied, like the pending records' arrays
        self._rows.add_batch(rows, predictions, logits, posteriors)
        if self._records.pending_rows >= PENDING_ROWS:
            self._records.settle()
        if self._records.over_window():
            self._forget_oldest()

    def _forget_oldest(self) -> None:
        """Forget the oldest records down to ``max_batches``, with their residual sums and
        believed posteriors (the label-corrected columns of forgotten batches). Their rows'
        predicted codes, scores and labels stay as long as the last ``prediction_rows`` rows
        hold them: a label by row id for such a row is still checked for repeats and learnt,
        but no longer scored."""
        self._records.trim()
        self._rows.forget_believed_before(self._records.dropped)
        self._residuals.forget_before(self._records.dropped)

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
        self._rows.check_ids(row_ids)
        labels = np.asarray(labels, dtype=np.int64)
        source_predictions = np.asarray(source_predictions, dtype=np.int64)
        c = self.n_classes
        for number, part, offsets in self._rows.by_batch(row_ids):
            codes = self._rows.codes.get(number)
            if codes is None:  # predictions no longer kept: the labels still teach the adapter
                self.unscored += len(part)
                continue
            self._rows.remember_labels(number, offsets, labels[part])
            record = self._records.at(number)
            if record is None:  # the batch's record is forgotten: nothing to score
                self.unscored += len(part)
                continue
            if record.realised is None:
                record.realised = np.zeros((2, c, c))
            realised = record.realised
            realised[0] += confusion(labels[part], source_predictions[part], c)
            realised[1] += confusion(labels[part], codes[offsets], c)
            believed = self._rows.believed.get(number)
            if believed is not None:
                # the model's argmax as the expected term reads it, where its scores are kept
                logits = self._rows.logits.get(number)
                source = source_predictions[part] if logits is None else logits[offsets].argmax(1)
                self._residuals.add(number, labels[part], believed[offsets], source, codes[offsets])

    # ------------------------------------------------------------------ rows by id
    def check_ids(self, row_ids: np.ndarray) -> None:
        """Raise ``ValueError`` unless every id names a row predicted so far."""
        self._rows.check_ids(row_ids)

    def new_labels(
        self, row_ids: np.ndarray, labels: np.ndarray, classes: Any = None
    ) -> np.ndarray:
        """Which of the labels given by row id are new
        (:meth:`~adaptable.core.report.kept_rows.KeptRows.new_labels`): a mask (n,) without
        the repeats of a label already given for its row; changes nothing.

        Raises:
            ValueError: an id naming no row predicted so far, or a row given two different
                labels.
        """
        return self._rows.new_labels(row_ids, labels, classes)

    def kept_predictions(self, row_ids: np.ndarray) -> np.ndarray:
        """The adapter's predicted classes of earlier rows, by row id, -1 where no longer kept
        (:meth:`~adaptable.core.report.kept_rows.KeptRows.kept_predictions`)."""
        return self._rows.kept_predictions(row_ids)

    def kept_logits(self, row_ids: np.ndarray) -> np.ndarray:
        """The model's logits of earlier rows, by row id, as recorded when they were
        predicted, (n, C) (:meth:`~adaptable.core.report.kept_rows.KeptRows.kept_logits`).

        Raises:
            ValueError: an id naming no row predicted so far, or a row whose logits are no
                longer kept.
        """
        return self._rows.kept_logits(row_ids)

    # ------------------------------------------------------------------ reading
    def frame(self, classes: Any = None) -> pd.DataFrame:
        """The report, one row per kept batch: the last ``max_batches`` (up to a quarter more,
        at least one; on a long stream the oldest records are forgotten). The ``..._so_far``
        columns run over the kept batches, as if the stream began at the first of them;
        ``batch`` counts from the stream's start. The columns, in their order, are listed in
        :mod:`adaptable.core.report.report_columns`; per class ``k`` they are named by
        ``classes`` (default 0..C-1).

        Warns:
            UserWarning: ``classes`` whose columns would not name them back (they are named
                by position instead; :func:`~adaptable.core.report.report_columns.class_names`).
        """
        names = class_names(classes, self.n_classes)
        self._records.settle()
        b = self._records.records
        if not b:
            return empty_report(names)
        expected = np.stack([x.expected for x in b])
        realised = np.stack([self._records.realised(x) for x in b])
        data = record_columns(b, expected, realised, self._records.dropped, names, self.objective)
        free_prior, free_scores, free_sd = self._calibration_free()
        for values in (free_prior, free_scores, free_sd):
            values[data["shift_rejects"]] = np.nan
        for k, name in enumerate(names):
            data[f"calibration_free_prior_{name}"] = free_prior[:, k]
        for r, who in enumerate(("source", "adapter")):
            data[f"calibration_free_{who}_so_far"] = free_scores[:, r]
            data[f"calibration_free_{who}_sd"] = free_sd[:, r]
        corrected, corrected_sd = self._residuals.estimates(
            expected, data["rows"], self.objective, self._records.dropped
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
        :meth:`calibration_free_window`'s.

        Raises:
            ValueError: ``first`` negative, or no kept batch from it on.
        """
        b = self._records.settled_from(first)
        expected = np.stack([x.expected for x in b])
        rows = np.array([x.rows for x in b], dtype=np.float64)
        posteriors = objective_scores(expected.sum(axis=0)[None], self.objective)[0]
        corrected, corrected_sd = self._residuals.estimates(
            expected, rows, self.objective, self._records.dropped + first
        )
        labelled = int(sum(self._records.realised(x)[0].sum() for x in b))
        return Window(int(rows.sum()), labelled, posteriors, corrected[-1], corrected_sd[-1], b[-1])

    def calibration_free_window(self, first: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """The calibration-free estimate over the batches from ``first`` on and its deviation,
        each a pair (unadapted model, adapter); NaN where the moment test rejects pure label
        shift at the last batch, or without held-out rows.

        Raises:
            ValueError: ``first`` negative, or no kept batch from it on.
        """
        b = self._records.settled_from(first)
        last = b[-1]
        if last.shift_statistic > last.shift_threshold:
            return np.full(2, np.nan), np.full(2, np.nan)
        _, scores, sd = self._calibration_free(first)
        return scores[-1], sd[-1]

    def _calibration_free(self, first: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:func:`~adaptable.core.report.heldout_estimate.stream_estimates` of the batches so
        far: the label distribution (B, C), the two objectives (B, 2) and their deviations
        (B, 2); NaN without held-out rows or the batches' model posteriors. With ``first``, of
        the batches from ``first`` on, as if the stream began there."""
        b, c = self._records.records[first:], self.n_classes
        if self._heldout is None or not len(self._heldout[1]) or not b:
            nan_pairs = np.full((len(b), 2), np.nan)  # the frame fills its columns in place
            return np.full((len(b), c), np.nan), nan_pairs, nan_pairs.copy()
        nan, nan_moment = np.full(c, np.nan), np.full((c, c), np.nan)
        return stream_estimates(
            np.array([x.rows for x in b], dtype=np.float64),
            np.stack([nan if x.offset is None else x.offset for x in b]),
            np.stack([nan_moment if x.model_moment is None else x.model_moment for x in b]),
            *self._heldout,
            self.objective,
        )

    def covariate_estimate(self) -> CovariateReading:
        """The covariate-shift estimate over the stream since fit / reset / load (the rows of
        every batch, forgotten ones included): the held-out rows weighted towards the stream's
        feature sample, the model's argmax and the adapter's rules (each kept batch's class
        offsets, in proportion to its rows)
        (:func:`~adaptable.core.report.covariate_estimate.covariate_reading`)."""
        return covariate_reading(
            self._sample, self._heldout, self._records.records, self.n_classes, self.objective
        )

    def arrays(self) -> dict[str, np.ndarray]:
        """The log as arrays, for ``save`` / ``load``
        (:func:`~adaptable.core.report.drift_log_fields.log_arrays`: a file format)."""
        return log_arrays(self)

    def restore(self, arrays: dict[str, np.ndarray]) -> None:
        """Inverse of :meth:`arrays`; ``ValueError`` for missing, malformed or inconsistent
        arrays (:func:`~adaptable.core.report.drift_log_fields.restore_log`)."""
        restore_log(self, arrays)

    def restore_sample(self, arrays: dict[str, np.ndarray]) -> None:
        """The feature sample from :meth:`arrays`' ``sample_*`` arrays, after
        :meth:`use_heldout` gave the held-out rows they index (none in a file written before
        the sample existed); ``ValueError`` for malformed or inconsistent arrays."""
        count = 0 if self._heldout is None else len(self._heldout[1])
        self._sample.restore(arrays, count)


def _number(value: float | None) -> float:
    return np.nan if value is None else float(value)

"""The recommended decider's labelled-rows path: labels that arrive late, and the drift report.

:class:`LabelledRows` is the part of
:class:`~adaptable.core.recommended.recommended_decider.RecommendedDecider` that serves
``AdapTable.partial_fit`` and ``AdapTable.report``: it keeps the labelled target rows
(:class:`~adaptable.core.labels.LabelledFeedback`) and one report record per batch
(:class:`~adaptable.core.report.drift_log.DriftLog`), and revises the decider's unlabelled
decision once enough labels have arrived. What it reads of the decider's stream state comes
with each batch as an :class:`UnlabelledReading`; without labels the decision is returned
unchanged.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from adaptable.core.decision.rules import label_shift_weights, plugin_weights, presence_factor
from adaptable.core.labels import (
    LabelledFeedback,
    PriorPosterior,
    ScoreRule,
    combine_prior,
    standard_rules,
    unlabelled_worth,
)
from adaptable.core.labels.label_prior import JEFFREYS
from adaptable.core.parts.decider import CalibratedBatch, Decision
from adaptable.core.recommended.labelled_fields import read_labelled_state
from adaptable.core.report.drift_log import DriftLog
from adaptable.framework.probability import floored_log, softmax

if TYPE_CHECKING:
    from adaptable.core.parts.saved_state import StateReader
    from adaptable.core.recommended.prior_estimate import OnlinePriorEstimate


@dataclasses.dataclass(frozen=True)
class UnlabelledReading:
    """What the decider made of one batch without labels, as the labelled rows revise and
    report it.

    Attributes:
        estimate: the stream's MAP-EM estimate of the target labels (read, never changed).
        reference_prior: what label-shift correction divides the posteriors by, (C,).
        label_shift: whether the decision corrected for label shift.
        weights: the class weights the decision applied to the posteriors, (C,); ``None``:
            none.
        class_presence: each class's chance of occurring in the stream, (C,), computed when
            called (only balanced accuracy on more than two classes calls it).
        shift_threshold: the moment test's z-score threshold.
        prior_critical: the likelihood-ratio test's critical value (0 where the test is off).
    """

    estimate: OnlinePriorEstimate
    reference_prior: np.ndarray
    label_shift: bool
    weights: np.ndarray | None
    class_presence: Callable[[], np.ndarray]
    shift_threshold: float
    prior_critical: float


class LabelledRows:
    """The labelled target rows and the drift report of one stream.

    Args:
        source_prior: p_s, (C,).
        objective: the metric the decisions are made for.
        report_batches: batches the report keeps (``None``: all).
        seed: seeds the labelled rows' reservoir, bootstrap and folds.

    Attributes:
        feedback: the labelled rows' evidence, a :class:`~adaptable.core.labels.LabelledFeedback`.
        drift_log: the report, one record per batch, a
            :class:`~adaptable.core.report.drift_log.DriftLog`.
    """

    #: the labelled-rows settings (see :class:`~adaptable.core.labels.LabelledFeedback`):
    #: what the held-out rows and the stream's posteriors are worth in labelled rows, the
    #: share of bootstrap draws a rule must win to replace the incumbent, labelled rows before
    #: labels change a decision (with and without the stream's posteriors behind them) and
    #: before a score correction is fitted, whether the correction is the incumbent where it
    #: fits the labels better than the unlabelled reading, and labelled rows kept. The labels
    #: act from the first few through the stream's posteriors (which the first labels can
    #: already refute), and by themselves only from a few dozen: fewer are too few to tell the
    #: rules apart by their objective (docs/research/feedback.md).
    FEEDBACK_SETTINGS: ClassVar[dict[str, float]] = {
        "heldout_worth": 100.0,
        "stream_worth": 1000.0,
        "evidence": 0.9,
        "min_labelled": 10,
        "min_labelled_alone": 50,
        "correction_rows": 20,
        "likelihood_incumbent": 1.0,
        "capacity": 2048,
    }
    #: stream posteriors the unlabelled estimate's worth (its interval) is computed from: a
    #: uniform subsample of the reservoir, so each batch pays a fixed, small cost
    WORTH_ROWS: ClassVar[int] = 512

    def __init__(
        self,
        source_prior: np.ndarray,
        objective: str,
        *,
        report_batches: int | None,
        seed: int,
    ) -> None:
        self.source_prior = source_prior
        self.objective = objective
        settings = self.FEEDBACK_SETTINGS
        self.feedback = LabelledFeedback(
            source_prior,
            objective,
            capacity=int(settings["capacity"]),
            heldout_worth=settings["heldout_worth"],
            stream_worth=settings["stream_worth"],
            evidence=settings["evidence"],
            min_labelled=int(settings["min_labelled"]),
            min_labelled_alone=int(settings["min_labelled_alone"]),
            correction_rows=int(settings["correction_rows"]),
            likelihood_incumbent=bool(settings["likelihood_incumbent"]),
            seed=seed,
        )
        window = sys.maxsize if report_batches is None else int(report_batches)
        self.drift_log = DriftLog(len(source_prior), objective, max_batches=window, seed=seed)
        self._forget_worth()

    def fit_heldout(
        self, log_posteriors: np.ndarray, labels: np.ndarray, features: Any = None
    ) -> None:
        """The held-out source rows' log-posteriors (n, C) and labels (n,): evidence for the
        labelled rows' rule choice, and the report's reference; with their encoded rows
        ``features`` (an ``EncodedBatch``), the report's covariate-shift estimate too."""
        self.feedback.fit_heldout(log_posteriors, labels)
        self.drift_log.use_heldout(*self.feedback.heldout, features=features)

    def reset(self) -> None:
        """Forget the stream's labelled rows and records (the held-out rows stay)."""
        self.feedback.reset()
        self.drift_log.reset()
        self._forget_worth()

    def _forget_worth(self) -> None:
        # the unlabelled estimate's worth when last computed: (rows seen, estimate, worth)
        self._worth_cache: tuple[int, np.ndarray, float] = (0, self.source_prior * 0, 0.0)

    # ------------------------------------------------------------------ labels
    def learn(
        self,
        logits: np.ndarray,
        labels: np.ndarray,
        rows: np.ndarray | None,
        classes: Any = None,
    ) -> None:
        """Labelled target rows: their logits (n, C), label codes (n,) and, where known, row
        ids (positions in the stream since fit / reset, for the report's realised columns).

        The rows enter the labelled-rows evidence only: the shift test and the unlabelled
        estimate saw them when they were predicted. O(n). A label sent again for a row that
        has it already is left out (:meth:`~adaptable.core.report.drift_log.DriftLog.new_labels`).
        Ids that name no predicted row, or a row given two different labels, are refused
        (``ValueError``, the labels named by ``classes``) before anything is learnt.
        """
        if rows is not None:
            fresh = self.drift_log.new_labels(rows, labels, classes)
            if not fresh.all():
                logits, labels, rows = logits[fresh], labels[fresh], rows[fresh]
            if not len(labels):
                return
        self.feedback.add(floored_log(softmax(logits)), labels)
        if rows is not None:
            self.drift_log.learn(rows, labels, logits.argmax(axis=1))

    def kept_logits(self, rows: np.ndarray) -> np.ndarray:
        """The model's logits of earlier rows, by row id, as they were when predicted (n, C);
        ``ValueError`` for rows no longer kept
        (:meth:`~adaptable.core.report.drift_log.DriftLog.kept_logits`)."""
        return self.drift_log.kept_logits(rows)

    # ------------------------------------------------------------------ one batch
    def revise(
        self, batch: CalibratedBatch, decision: Decision, reading: UnlabelledReading
    ) -> Decision:
        """The unlabelled ``decision``, revised by the labelled rows once there are enough of
        them; the batch's report record written either way."""
        moment_accepts = decision.prior_shift_statistic is not None
        model_proba = batch.model_proba()
        post = self._unlabelled_prior(reading.estimate, reading.reference_prior, moment_accepts)
        feedback = self.feedback
        if feedback.n_labelled >= feedback.min_labelled:
            decision = self._labelled_decision(decision, model_proba, post, reading, moment_accepts)
        if batch.amend is not None:
            decision = batch.amend(decision)
        self._record(batch, decision, model_proba, post, reading, moment_accepts)
        return decision

    def _unlabelled_prior(
        self, estimate: OnlinePriorEstimate, reference: np.ndarray, moment_accepts: bool
    ) -> PriorPosterior:
        """The target label distribution from the labels and the MAP-EM estimate, the latter
        worth its information while the moment test accepts pure label shift (else nothing)."""
        worth = 0.0
        if moment_accepts and estimate.n_seen:
            worth = self._unlabelled_worth(estimate, reference)
        # no intervals here: the report computes them for all batches at once
        counts = self.feedback.reservoir.counts
        if self.feedback.n_labelled == 0:
            if worth == 0.0:
                return _knowing_nothing(len(estimate.prior))
            # combine_prior without labels, without its checks (this runs on every batch)
            alpha = worth * estimate.prior + JEFFREYS
            nan = np.full(len(alpha), np.nan)
            return PriorPosterior(alpha / alpha.sum(), nan, nan, 0.0, worth, True)
        return combine_prior(counts, estimate.prior, worth, interval=False)

    def _unlabelled_worth(self, estimate: OnlinePriorEstimate, reference: np.ndarray) -> float:
        """What the MAP-EM estimate is worth in labelled rows (its observed information).

        The information grows in proportion to the stream's rows, so it is recomputed only
        once the stream has grown by a quarter or the estimate has moved by 0.01 since, and
        scaled by the rows in between: a fixed cost per batch that falls as the stream grows.
        """
        n_then, prior_then, worth_then = self._worth_cache
        if estimate.n_seen >= 1.25 * n_then or np.abs(estimate.prior - prior_then).max() > 0.01:
            sample = estimate.reservoir_by_class[:, : self.WORTH_ROWS].T
            weight = estimate.n_seen / len(sample)
            worth = unlabelled_worth(sample, reference, estimate.prior, weight)
            self._worth_cache = (estimate.n_seen, estimate.prior.copy(), worth)
            return worth
        return (worth_then + 1.0) * estimate.n_seen / n_then - 1.0

    def _labelled_decision(
        self,
        decision: Decision,
        model_proba: np.ndarray,
        post: PriorPosterior,
        reading: UnlabelledReading,
        moment_accepts: bool,
    ) -> Decision:
        """The rule the labelled rows choose among argmax, the balanced rule, label-shift
        correction at the combined prior, the plug-in rule, today's rule and a fitted score
        correction, judged on the labelled rows, the held-out rows and the stream's posteriors
        (:meth:`_stream_evidence`). Where they keep today's rule its output is returned as it
        was."""
        source, estimate = self.source_prior, reading.estimate
        reference, presence = reading.reference_prior, reading.class_presence
        unlabelled, target = estimate.prior, post.mean
        reservoir = estimate.reservoir
        # (the plug-in rules' weights, two passes over the reservoir, only where used)
        rules = standard_rules(
            source,
            target,
            lambda: label_shift_weights(
                lambda: estimate.target_posteriors(prior=target),
                self.objective,
                len(source),
                presence=presence,
            ),
            lambda: plugin_weights(reservoir, self.objective),
            reference=reference,
        )
        no_shift = np.zeros(len(source))
        today = decision.rule
        anchor = {"source": 0, "balanced": 1}.get(today)
        if anchor is None:
            offset = np.log(unlabelled / reference) if reading.label_shift else no_shift
            weights = reading.weights
            offset = offset + (0.0 if weights is None else np.log(np.maximum(weights, 1e-12)))
            rules.append(ScoreRule(f"{today} (unlabelled)", offset))
            anchor = len(rules) - 1
        chosen = self.feedback.decide(
            rules,
            anchor,
            target_prior=target,
            # the correction is drawn towards label-shift correction at the combined prior
            # (where the labels dropped a misled unlabelled estimate, at theirs alone)
            base_offset=np.log(target / reference) if reading.label_shift else no_shift,
            # (both read only when the labels' rule comparison or the correction's refit is due)
            decide_on=lambda: floored_log(reservoir),
            # (balanced accuracy on more than two classes: the chance that each class occurs,
            # as the unlabelled rules weigh it)
            class_factor=lambda: presence_factor(self.objective, len(source), presence),
            stream=lambda: self._stream_evidence(estimate, reservoir, target, moment_accepts),
            stream_rows=estimate.n_seen,
        )
        proba = decision.proba
        if chosen.index != anchor:
            proba = chosen.rule.proba(floored_log(model_proba))
        return dataclasses.replace(
            decision, proba=proba, target_prior=target, rule=f"feedback:{chosen.rule.name}"
        )

    def _stream_evidence(
        self,
        estimate: OnlinePriorEstimate,
        reservoir: np.ndarray,
        target: np.ndarray,
        moment_accepts: bool,
    ) -> tuple[np.ndarray, np.ndarray]:
        """A fixed-size, evenly spaced sample of the stream's kept posteriors as the rules read
        them, and the posteriors the adapter believes for those rows: re-weighted to the
        target prior while the moment test accepts pure label shift, the model's own
        otherwise (as the report's estimates)."""
        sample = reservoir[:: max(1, len(reservoir) // self.WORTH_ROWS)]
        believed = sample
        if moment_accepts:
            believed = estimate.target_posteriors(sample, target)
        return floored_log(sample), believed

    def _record(
        self,
        batch: CalibratedBatch,
        decision: Decision,
        model_proba: np.ndarray,
        post: PriorPosterior,
        reading: UnlabelledReading,
        moment_accepts: bool,
    ) -> None:
        """The batch's report record: the expected confusions of argmax and of the output under
        the posteriors the adapter believes (re-weighted to the target prior while the moment
        test accepts pure label shift, the model's own otherwise)."""
        posteriors = model_proba
        if moment_accepts:
            posteriors = reading.estimate.target_posteriors(batch.calibrated, post.mean)
        predictions = decision.proba.argmax(axis=1)
        known = moment_accepts or self.feedback.n_labelled > 0
        self.drift_log.record(
            rows=len(predictions),
            predictions=predictions,
            # the expected confusions of argmax and of the output, computed by the log for
            # many batches at once
            posteriors=posteriors,
            source_proba=model_proba,
            rule=decision.rule or "",
            # the estimate with its interval where one exists (labels, or the label-shift
            # reading the moment test accepts); none otherwise (the MAP-EM estimate is only
            # updated while the moment test accepts)
            target_prior=post.mean if known else np.full(len(post.mean), np.nan),
            prior_total=post.total if known else None,
            shift_statistic=decision.shift_statistic,
            shift_threshold=reading.shift_threshold,
            prior_statistic=decision.prior_shift_statistic,
            prior_critical=reading.prior_critical,
            n_labelled=self.feedback.n_labelled,
            labelled_counts=self.feedback.reservoir.counts,
            logits=batch.logits,
            output=decision.proba,
            features=batch.encoded,
        )

    # ------------------------------------------------------------------ saved state
    def arrays(self) -> dict[str, np.ndarray]:
        """The labelled rows (``feedback.*``), the worth cache and the report (``report.*``),
        under the save file's tensor names."""
        arrays = {f"feedback.{k}": v for k, v in self.feedback.arrays().items()}
        n_then, prior_then, worth_then = self._worth_cache
        arrays["worth_cache"] = np.array([n_then, worth_then, *prior_then], dtype=np.float64)
        return arrays | {f"report.{k}": v for k, v in self.drift_log.arrays().items()}

    @classmethod
    def from_state(
        cls,
        reader: StateReader,
        source_prior: np.ndarray,
        objective: str,
        *,
        report_batches: int | None,
        seed: int,
        stream_rows: int | None = None,
    ) -> LabelledRows:
        """Inverse of :meth:`arrays` (the other arguments as the constructor's; ``stream_rows``
        the stream's rows so far, which the report must count); a file written before the
        labelled rows and the report existed gives none (and no held-out rows for the
        labelled evidence). Every tensor is checked, against the others too
        (:func:`~adaptable.core.recommended.labelled_fields.read_labelled_state`); a malformed
        or disagreeing one raises the reader's error, naming it."""
        labelled = cls(source_prior, objective, report_batches=report_batches, seed=seed)
        n_classes = len(source_prior)
        if "worth_cache" in reader.arrays:
            cache = reader.tensor("worth_cache", (2 + n_classes,))
            if (
                cache[0] < 0
                or cache[0] != int(cache[0])
                or stream_rows is not None
                and cache[0] > stream_rows
            ):
                raise reader.error(
                    "worth_cache", "must start with a count of rows, at most the stream's"
                )
            labelled._worth_cache = (int(cache[0]), cache[2:].astype(np.float64), float(cache[1]))
        state = read_labelled_state(
            reader,
            n_classes,
            capacity=labelled.feedback.reservoir.capacity,
            stream_rows=stream_rows,
            report_batches=report_batches,
        )
        for name, part, arrays in (
            ("feedback", labelled.feedback, state.feedback),
            ("report", labelled.drift_log, state.report),
        ):
            if arrays is None:
                continue
            try:
                part.restore(arrays)
            except (ValueError, KeyError, UnicodeDecodeError) as err:
                raise reader.error(name, str(err)) from err
        labelled.drift_log.use_heldout(*labelled.feedback.heldout)
        try:
            labelled.drift_log.restore_sample(reader.prefixed("report."))
        except (ValueError, KeyError) as err:
            raise reader.error("report", str(err)) from err
        return labelled


@functools.lru_cache(maxsize=8)
def _knowing_nothing(n_classes: int) -> PriorPosterior:
    """The target label distribution without labels or a usable unlabelled estimate: Jeffreys'
    prior alone (uniform), no interval; one read-only object per class count, as every
    batch of a covariate-shifted stream asks for it."""
    mean = np.full(n_classes, JEFFREYS) / (JEFFREYS * n_classes)
    nan = np.full(n_classes, np.nan)
    for array in (mean, nan):
        array.flags.writeable = False
    return PriorPosterior(mean, nan, nan, 0.0, 0.0, True)

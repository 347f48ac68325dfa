"""The recommended decider's labelled-rows path: labels that arrive late, and the drift report.

:class:`LabelledRows` is the part of
:class:`~adaptable.core.recommended.recommended_decider.RecommendedDecider` that serves
``AdapTable.partial_fit`` and ``AdapTable.report``: it keeps the labelled target rows
(:class:`~adaptable.core.labels.LabelledFeedback`) and one report record per batch
(:class:`~adaptable.core.report.drift_log.DriftLog`), and revises the unlabelled decision once
enough labels have arrived. Without labels the unlabelled decision is returned unchanged. It
reads the decider's public state (``prior_estimate``, ``source_prior_``, ``objective``,
``shift_test``) and is not used on its own.
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
from adaptable.core.recommended.prior_estimate import chi2_critical
from adaptable.core.report.drift_log import DriftLog
from adaptable.framework.probability import floored_log, softmax

if TYPE_CHECKING:
    from adaptable.core.parts.saved_state import StateReader
    from adaptable.core.recommended.prior_estimate import OnlinePriorEstimate


class LabelledRows:
    """Labelled target rows and the drift report, mixed into the recommended decider."""

    prior_estimate: OnlinePriorEstimate
    source_prior_: np.ndarray
    reference_prior_: np.ndarray
    objective: str
    feedback: LabelledFeedback
    drift_log: DriftLog
    class_presence: Callable[[], np.ndarray]

    #: the labelled-rows settings (see :class:`~adaptable.core.labels.LabelledFeedback`):
    #: what the held-out rows and the stream's posteriors are worth in labelled rows, the
    #: share of bootstrap draws a rule must win to replace the incumbent, labelled rows before
    #: labels change a decision (with and without the stream's posteriors behind them) and
    #: before a score correction is fitted, whether the correction is the incumbent where it
    #: fits the labels better than the unlabelled reading, and labelled rows kept. Set on the
    #: development benchmark (docs/research/feedback.md): labels alone are too few to tell the
    #: rules apart by their objective for many batches (a few dozen let noise switch among
    #: the candidates), while the stream's posteriors, which the first labels can already
    #: refute, tell them apart at once; so the labels act from the first few, through them,
    #: and by themselves (the stream's posteriors refuted) only from a few dozen. The labels'
    #: likelihood under the correction, out of fold, speaks earlier than their objective.
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

    def _new_drift_log(self, n_classes: int) -> DriftLog:
        """An empty report keeping the last ``report_batches`` batches (``None``: all)."""
        limit = getattr(self, "report_batches", None)
        window = sys.maxsize if limit is None else int(limit)
        return DriftLog(n_classes, self.objective, max_batches=window)

    def _new_feedback(self, seed: int) -> LabelledFeedback:
        settings = self.FEEDBACK_SETTINGS
        return LabelledFeedback(
            self.source_prior_,
            self.objective,
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

    def _unlabelled_prior(self, moment_accepts: bool) -> PriorPosterior:
        """The target label distribution from the labels and the MAP-EM estimate, the latter
        worth its information while the moment test accepts pure label shift (else nothing)."""
        estimate = self.prior_estimate
        worth = 0.0
        if moment_accepts and estimate.n_seen:
            worth = self._unlabelled_worth()
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

    def _unlabelled_worth(self) -> float:
        """What the MAP-EM estimate is worth in labelled rows (its observed information).

        The information grows in proportion to the stream's rows, so it is recomputed only
        once the stream has grown by a quarter or the estimate has moved by 0.01 since, and
        scaled by the rows in between: a fixed cost per batch that falls as the stream grows.
        """
        estimate = self.prior_estimate
        n_then, prior_then, worth_then = self._worth_cache
        if estimate.n_seen >= 1.25 * n_then or np.abs(estimate.prior - prior_then).max() > 0.01:
            sample = estimate.reservoir_by_class[:, : self.WORTH_ROWS].T
            weight = estimate.n_seen / len(sample)
            reference = self.reference_prior_
            worth = unlabelled_worth(sample, reference, estimate.prior, weight)
            self._worth_cache = (estimate.n_seen, estimate.prior.copy(), worth)
            return worth
        return (worth_then + 1.0) * estimate.n_seen / n_then - 1.0

    def _with_feedback(
        self,
        batch: CalibratedBatch,
        decision: Decision,
        label_shift: bool,
        weights: np.ndarray | None,
    ) -> Decision:
        """The unlabelled ``decision``, revised by the labelled rows once there are enough of
        them; the batch's report record written either way."""
        moment_accepts = decision.prior_shift_statistic is not None
        model_proba = batch.model_proba()
        post = self._unlabelled_prior(moment_accepts)
        feedback = self.feedback
        if feedback.n_labelled >= feedback.min_labelled:
            decision = self._labelled_decision(
                decision, model_proba, label_shift, weights, post, moment_accepts
            )
        self._record(batch, decision, model_proba, post, moment_accepts)
        return decision

    def _labelled_decision(
        self,
        decision: Decision,
        model_proba: np.ndarray,
        label_shift: bool,
        weights: np.ndarray | None,
        post: PriorPosterior,
        moment_accepts: bool,
    ) -> Decision:
        """The rule the labelled rows choose among argmax, the balanced rule, label-shift
        correction at the combined prior, the plug-in rule, today's rule and a fitted score
        correction, judged on the labelled rows, the held-out rows and the stream's posteriors
        (:meth:`_stream_evidence`). Where they keep today's rule its output is returned as it
        was."""
        source, estimate = self.source_prior_, self.prior_estimate
        # what label-shift correction divides by (p_s unless prior_reference="model")
        reference = self.reference_prior_
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
                presence=self.class_presence,
            ),
            lambda: plugin_weights(reservoir, self.objective),
            reference=reference,
        )
        no_shift = np.zeros(len(source))
        today = decision.rule
        anchor = {"source": 0, "balanced": 1}.get(today)
        if anchor is None:
            offset = np.log(unlabelled / reference) if label_shift else no_shift
            offset = offset + (0.0 if weights is None else np.log(np.maximum(weights, 1e-12)))
            rules.append(ScoreRule(f"{today} (unlabelled)", offset))
            anchor = len(rules) - 1
        chosen = self.feedback.decide(
            rules,
            anchor,
            target_prior=target,
            # the correction is drawn towards label-shift correction at the combined prior
            # (where the labels dropped a misled unlabelled estimate, at theirs alone)
            base_offset=np.log(target / reference) if label_shift else no_shift,
            # (both read only when the labels' rule comparison or the correction's refit is due)
            decide_on=lambda: floored_log(reservoir),
            # (balanced accuracy on more than two classes: the chance that each class occurs,
            # as the unlabelled rules weigh it)
            class_factor=lambda: presence_factor(self.objective, len(source), self.class_presence),
            stream=lambda: self._stream_evidence(reservoir, target, moment_accepts),
            stream_rows=estimate.n_seen,
        )
        proba = decision.proba
        if chosen.index != anchor:
            proba = chosen.rule.proba(floored_log(model_proba))
        return dataclasses.replace(
            decision, proba=proba, target_prior=target, rule=f"feedback:{chosen.rule.name}"
        )

    def _stream_evidence(
        self, reservoir: np.ndarray, target: np.ndarray, moment_accepts: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """A fixed-size, evenly spaced sample of the stream's kept posteriors as the rules read
        them, and the posteriors the adapter believes for those rows: re-weighted to the
        target prior while the moment test accepts pure label shift, the model's own
        otherwise (as the report's estimates)."""
        sample = reservoir[:: max(1, len(reservoir) // self.WORTH_ROWS)]
        believed = sample
        if moment_accepts:
            believed = self.prior_estimate.target_posteriors(sample, target)
        return floored_log(sample), believed

    def _record(
        self,
        batch: CalibratedBatch,
        decision: Decision,
        model_proba: np.ndarray,
        post: PriorPosterior,
        moment_accepts: bool,
    ) -> None:
        """The batch's report record: the expected confusions of argmax and of the output under
        the posteriors the adapter believes (re-weighted to the target prior while the moment
        test accepts pure label shift, the model's own otherwise)."""
        posteriors = model_proba
        if moment_accepts:
            posteriors = self.prior_estimate.target_posteriors(batch.calibrated, post.mean)
        predictions = decision.proba.argmax(axis=1)
        log = self.drift_log
        level = self.label_shift_level
        known = moment_accepts or self.feedback.n_labelled > 0
        log.record(
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
            shift_threshold=self.shift_test_threshold,
            prior_statistic=decision.prior_shift_statistic,
            prior_critical=chi2_critical(level, len(self.source_prior_) - 1) if level < 1 else 0,
            n_labelled=self.feedback.n_labelled,
            labelled_counts=self.feedback.reservoir.counts,
            logits=batch.logits,
            output=decision.proba,
        )

    def _feedback_arrays(self) -> dict[str, np.ndarray]:
        arrays = {f"feedback.{k}": v for k, v in self.feedback.arrays().items()}
        n_then, prior_then, worth_then = self._worth_cache
        arrays["worth_cache"] = np.array([n_then, worth_then, *prior_then], dtype=np.float64)
        return arrays | {f"report.{k}": v for k, v in self.drift_log.arrays().items()}

    def _restore_feedback(self, reader: StateReader, seed: int) -> None:
        """The labelled rows and the report from the file; a file written before they existed
        gives none (and no held-out rows for the labelled evidence)."""
        self.feedback = self._new_feedback(seed)
        self.drift_log = self._new_drift_log(len(self.source_prior_))
        n_classes = len(self.source_prior_)
        if "worth_cache" in reader.arrays:
            cache = reader.tensor("worth_cache", (2 + n_classes,))
            if cache[0] < 0 or cache[0] != int(cache[0]):
                raise reader.error("worth_cache", "must start with a count of rows")
            self._worth_cache = (int(cache[0]), cache[2:].astype(np.float64), float(cache[1]))
        for name, part in (("feedback", self.feedback), ("report", self.drift_log)):
            arrays = reader.prefixed(f"{name}.")
            if name == "feedback" and "heldout_scores" not in arrays:
                continue
            try:
                part.restore(arrays)
            except (ValueError, KeyError, UnicodeDecodeError) as err:
                raise reader.error(name, str(err)) from err
        self.drift_log.use_heldout(*self.feedback.heldout)


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

"""The recommended decider (``AdapTable(preset="default")``): decide for an objective, and
correct for label shift only where the stream supports it.

At fit, on the held-out source rows: the decision rule that serves ``objective`` (the model's
argmax, or the balanced rule argmax p(y|x) / p_s(y), :func:`~adaptable.core.decision.rules.choose_rule`),
and on all source rows the moment-matching label-shift test
(:class:`~adaptable.core.recommended.moment_test.LabelShiftTest`). On each batch:

1. While the stream's feature means are consistent with a pure label shift of the source (the
   test's z-score at most ``shift_test_threshold``) and the MAP-EM estimate p_t of the target
   label distribution differs from p_s (likelihood-ratio test at ``label_shift_level``): the
   posteriors re-weighted by p_t / p_s, and the class weights that maximise the expected
   objective over the stream so far (rule ``"label_shift"``).
2. Otherwise the balanced rule, where the held-out rows let it be considered
   (:meth:`RecommendedDecider.balanced_is_candidate`) and the stream confirms it: its expected
   objective is at least argmax's under the model's calibrated posteriors and, with
   ``stream_check="both"``, also under those posteriors read as a label shift
   (:meth:`RecommendedDecider.label_shift_reading_favours_balanced`) (rule ``"balanced"``).
3. Otherwise the ``fallback``: the model's argmax (``"source"``), the plug-in weights
   (``"plugin"``), or, once a covariate shift is in evidence, the rule between the two (``"between"``).

Why each choice, and the benchmarks behind it: ``docs/maintainer/method.md``."""

from __future__ import annotations

import warnings
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from adaptable.core.decision.class_presence import presence
from adaptable.core.decision.rules import (
    OBJECTIVES,
    between_weights,
    choose_rule,
    expected_confusion,
    label_shift_weights,
    plugin_weights,
    score,
)
from adaptable.core.parts.contexts import FitContext, LoadContext, PartState
from adaptable.core.parts.decider import CalibratedBatch, Decider, Decision
from adaptable.core.parts.earlier_pickles import with_added_attributes
from adaptable.core.recommended.label_shift_estimate import LabelShiftReading
from adaptable.core.recommended.labelled_rows import LabelledRows, UnlabelledReading
from adaptable.core.recommended.moment_test import LabelShiftTest
from adaptable.core.recommended.prior_estimate import (
    OnlinePriorEstimate,
    chi2_critical,
    prior_center,
)
from adaptable.core.recommended.saved_fields import (
    check_rule_objective,
    read_expected_confusion,
    read_heldout_scores,
    read_prior_estimate,
    read_rule,
    read_shift_test,
    rule_metadata,
)
from adaptable.core.report.drift_log import REPORT_BATCHES
from adaptable.framework.parameters import Constraint, Interval, StrOptions
from adaptable.framework.probability import floored_log, normalize, softmax

if TYPE_CHECKING:
    from adaptable.core.labels import LabelledFeedback
    from adaptable.core.report.drift_log import DriftLog

#: the decision where neither label-shift correction nor the balanced rule applies
FALLBACKS = ("argmax", "plugin", "between")
#: how the stream confirms the balanced rule: the model's reading, or both readings
STREAM_CHECKS = ("model", "both")
#: what label-shift correction divides the posteriors by: the source's label shares, or the
#: model's own mean posterior on the held-out rows
PRIOR_REFERENCES = ("labels", "model")


class RecommendedDecider(Decider):
    """The recommended decision logic (see the module docstring for the order of the rules).

    Args (``AdapTable(...)`` arguments it owns):
        objective: the metric decisions are made for, ``"macro_f1"``, ``"balanced_accuracy"``
            or ``"accuracy"``.
        shift_test_threshold: label-shift correction applies while the moment test's z-score
            is at most this (3: three null standard deviations).
        prior_strength: rows' worth of the Dirichlet prior in the MAP estimate of the target
            label distribution (centred at the uniform distribution for macro-F1 and balanced
            accuracy, at p_s for accuracy).
        label_shift_level: label-shift correction also needs the likelihood-ratio test of the
            estimate against p_s (chi-squared, C - 1 degrees of freedom) to reject at this
            level; ``1.0`` turns that test off.
        rule_evidence: the balanced rule is considered when it beats argmax on the held-out rows
            and on at least this share of bootstrap resamples of them.
        covariate_rule_evidence: the same share once the moment test has rejected pure label
            shift (the held-out rows may no longer stand for the target); 0: a plain held-out
            win is enough there, and the stream check decides.
        fallback: the decision where the stream is not a label shift and the balanced rule is
            not used: ``"argmax"`` (the model's own decision), ``"plugin"`` (the class weights
            that maximise the expected objective under the model's posteriors over the stream
            so far), or ``"between"`` (once a covariate shift is in evidence, the rule
            argmax p(y|x) / p_s(y)^beta, beta in 0, 0.1, ..., 1, with the highest expected
            objective: never past the balanced rule).
        stream_check: ``"both"``: the balanced rule's expected objective must be at least
            argmax's under the model's posteriors and under the label-shift reading of the
            stream; ``"model"``: under the model's posteriors alone.
        prior_reference: what label-shift correction (the estimate, its tests and the
            re-weighting) divides the posteriors by: ``"labels"``, the source's label shares
            p_s; ``"model"``, the model's own mean posterior on the held-out rows. The latter
            keeps a model that misstates its class mix on its own held-out rows from reading
            that bias as a label shift of the stream (docs/research/multiclass.md).
        report_batches: the drift report keeps the last this many batches (up to a quarter
            more, at least one, between two trims): the older records are
            forgotten (labels by row id still reach the adapter while the last 65,536 rows'
            scores are kept) and the report reads as a stream that began at the first kept
            batch; ``None`` keeps every batch (memory grows with the stream). The decisions
            do not depend on it. Set at fit (a saved adapter keeps the window it was fitted
            with).

    Attributes (after fit):
        rule: the held-out :class:`~adaptable.core.decision.rules.RuleChoice` (may be replaced, e.g.
            to study the stream check).
        shift_test: the moment-matching :class:`~adaptable.core.recommended.moment_test.LabelShiftTest`.
        prior_estimate: the MAP-EM
            :class:`~adaptable.core.recommended.prior_estimate.OnlinePriorEstimate` of the target labels.
        expected_confusion: the stream's expected (true, predicted) counts of argmax [0] and
            of the balanced rule [1] under the calibrated posteriors, (2, C, C).
        labelled: the labelled-rows path, a
            :class:`~adaptable.core.recommended.labelled_rows.LabelledRows`: the labelled
            target rows (:attr:`feedback`) and the drift report (:attr:`drift_log`).

    Late labels (``AdapTable.partial_fit``) enter through :meth:`learn`: once enough have
    arrived, :attr:`labelled` chooses each batch's rule among argmax, the balanced rule,
    label-shift correction at the combined target prior, the plug-in rule, the unlabelled
    decision and a score correction (rule names ``"feedback:..."``). Every batch writes one
    record of the drift report.
    """

    preset: ClassVar[str] = "default"
    needs_features: ClassVar[bool] = True
    reads_heldout_rows: ClassVar[bool] = True
    default_calibrator: ClassVar[str] = "none"
    parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "objective": [StrOptions(OBJECTIVES)],
        "shift_test_threshold": [Interval(Real, None, None, closed="neither")],
        "prior_strength": [Interval(Real, 0, None, closed="left")],
        "label_shift_level": [Interval(Real, 0, 1, closed="right")],
        "rule_evidence": [Interval(Real, 0, 1, closed="both")],
        "covariate_rule_evidence": [Interval(Real, 0, 1, closed="both")],
        "fallback": [StrOptions(FALLBACKS)],
        "stream_check": [StrOptions(STREAM_CHECKS)],
        "prior_reference": [StrOptions(PRIOR_REFERENCES)],
        "report_batches": [Interval(Integral, 1, None), None],
    }

    @property
    def reference_prior_(self) -> np.ndarray:
        """What label-shift correction divides the posteriors by, (C,) (see
        ``prior_reference``)."""
        return self.__dict__.get("_reference", self.source_prior_)

    @reference_prior_.setter
    def reference_prior_(self, value: np.ndarray) -> None:
        self._reference = value

    def __setstate__(self, state: dict[str, object]) -> None:
        """Unpickling, earlier versions' pickles included (``parts.earlier_pickles``)."""
        self.__dict__.update(with_added_attributes("RecommendedDecider", state))

    def __init__(
        self,
        *,
        objective: str = "macro_f1",
        shift_test_threshold: float = 3.0,
        prior_strength: float = 64.0,
        label_shift_level: float = 0.05,
        rule_evidence: float = 0.8,
        covariate_rule_evidence: float = 0.0,
        fallback: str = "argmax",
        stream_check: str = "both",
        prior_reference: str = "labels",
        report_batches: int | None = REPORT_BATCHES,
    ) -> None:
        self.objective = objective
        self.shift_test_threshold = shift_test_threshold
        self.prior_strength = prior_strength
        self.label_shift_level = label_shift_level
        self.rule_evidence = rule_evidence
        self.covariate_rule_evidence = covariate_rule_evidence
        self.fallback = fallback
        self.stream_check = stream_check
        self.prior_reference = prior_reference
        self.report_batches = report_batches

    # ------------------------------------------------------------------ fit and stream
    def fit(self, context: FitContext) -> RecommendedDecider:
        """The rule on the held-out rows, the label-shift test on all source rows, and the
        target-prior estimate; ``context.encoder`` must be fitted."""
        if not context.has_validation:
            warnings.warn(
                "AdapTable: no validation rows given; the decision rule and the calibrator "
                "are chosen on the training rows, whose scores are optimistic. Pass "
                "X_valid, y_valid.",
                UserWarning,
                stacklevel=4,
            )
        logits, labels = context.held_out
        self.source_prior_ = context.source_prior
        self.rule = choose_rule(
            softmax(logits),
            labels,
            self.source_prior_,
            self.objective,
            evidence=self.rule_evidence,
            seed=context.seed,
        )
        encoded = context.encoder.encode(context.source_rows())
        self.shift_test = LabelShiftTest.fit(
            encoded.numeric,
            encoded.codes,
            context.encoder.cardinalities,
            context.source_labels(),
            context.n_classes,
            seed=context.seed,
        )
        self.labelled = LabelledRows(
            self.source_prior_,
            self.objective,
            report_batches=self.report_batches,
            seed=context.seed,
        )
        rows = context.source.X_valid if context.has_validation else context.source.X
        self.labelled.fit_heldout(
            floored_log(softmax(logits)), labels, context.encoder.encode(rows)
        )
        self.reference_prior_ = self._reference_prior(self.feedback.heldout[0])
        self.prior_estimate = self._new_prior_estimate(context.seed)
        self.reset()
        return self

    def _reference_prior(self, heldout_scores: np.ndarray | None) -> np.ndarray:
        """What label-shift correction divides the posteriors by, (C,): p_s, or with
        ``prior_reference="model"`` the model's mean posterior on the held-out rows, from their
        log-posteriors as the labelled-rows evidence keeps them (so a loaded adapter computes
        the same; p_s from a file written before they were kept)."""
        if self.prior_reference == "labels" or heldout_scores is None or not len(heldout_scores):
            return self.source_prior_
        mean = np.exp(np.asarray(heldout_scores, dtype=np.float64)).mean(axis=0)
        return mean / mean.sum()

    def _new_prior_estimate(self, seed: int) -> OnlinePriorEstimate:
        return OnlinePriorEstimate(
            self.reference_prior_,
            strength=self.prior_strength,
            seed=seed,
            center=prior_center(self.objective),
        )

    def reset(self) -> None:
        self.shift_test.reset()
        self.prior_estimate.reset()
        self.labelled.reset()
        self._start(np.zeros((2, len(self.source_prior_), len(self.source_prior_))))

    def _start(self, expected: np.ndarray) -> None:
        """The per-stream state besides the test, the estimate and the labelled rows."""
        self.expected_confusion = expected
        # argmax's and the balanced rule's class weights, (2, 1, C): both rules predict a batch
        # in one product (the balanced rule's are the weights its decision uses, 1 / p_s)
        n_classes = len(self.source_prior_)
        self._rule_weights = np.stack([np.ones(n_classes), 1.0 / self.source_prior_])[:, None, :]
        # the label-shift reading, recomputed only when its answer could change (a cache: not
        # saved; its estimate is warm-started from the last one)
        self._reading = LabelShiftReading(
            self.prior_estimate, self.prior_strength, self._rule_weights[1, 0], self.objective
        )

    @property
    def online_prior(self) -> np.ndarray:
        return self.prior_estimate.prior.copy()

    @property
    def shift_statistic(self) -> float:
        return self.shift_test.z_score()

    @property
    def reading_prior(self) -> np.ndarray:
        """The label-shift reading's estimate of the target label distribution, (C,)."""
        return self._reading.prior

    # ------------------------------------------------------------------ labelled rows
    @property
    def feedback(self) -> LabelledFeedback:
        """The labelled target rows' evidence (:attr:`labelled`'s)."""
        return self.labelled.feedback

    @property
    def drift_log(self) -> DriftLog:
        """The drift report, one record per batch (:attr:`labelled`'s)."""
        return self.labelled.drift_log

    def learn(
        self,
        logits: np.ndarray,
        labels: np.ndarray,
        rows: np.ndarray | None,
        classes: Any = None,
    ) -> None:
        """Labelled target rows: logits (n, C), label codes (n,), row ids or ``None``
        (:meth:`LabelledRows.learn <adaptable.core.recommended.labelled_rows.LabelledRows.learn>`)."""
        self.labelled.learn(logits, labels, rows, classes)

    def kept_logits(self, rows: np.ndarray) -> np.ndarray:
        """The model's logits of earlier rows, by row id, as they were when predicted (n, C);
        ``ValueError`` for rows no longer kept."""
        return self.labelled.kept_logits(rows)

    # ------------------------------------------------------------------ one batch
    def decide(self, batch: CalibratedBatch) -> Decision:
        """The decision for one batch (rules in the order of the module docstring)."""
        logits, calibrated, encoded = batch.logits, batch.calibrated, batch.encoded
        self.shift_test.update(encoded.numeric, encoded.codes)
        self.prior_estimate.add(calibrated)
        proba = batch.model_proba()
        if self.balanced_is_candidate(covariate=False) or self.balanced_is_candidate(
            covariate=True
        ):
            # The stream's expected confusion of both rules, under the calibrated posteriors;
            # only read when the balanced rule is a candidate.
            # (2, n) predictions of argmax (weights 1) and the balanced rule (weights 1 / p_s).
            rules = (proba * self._rule_weights).argmax(axis=-1)
            self.expected_confusion += expected_confusion(calibrated, rules)
        label_shift, prior_statistic = self._label_shift_applies()
        # the moment test rejected pure label shift: a covariate shift is in evidence
        covariate = prior_statistic is None
        # p_t as estimated (only updated while the moment test accepts), for the state
        target = self.prior_estimate.prior.copy()
        if label_shift:
            posteriors = self.prior_estimate.target_posteriors(calibrated)
            weights = label_shift_weights(
                self.prior_estimate.target_posteriors,
                self.objective,
                len(self.source_prior_),
                presence=self.class_presence,
            )
            rule = "label_shift"
        else:
            posteriors = proba
            weights, rule = self._without_label_shift(covariate)
        proba = normalize(posteriors if weights is None else posteriors * weights)
        decision = Decision(
            proba,
            target,
            target,
            np.full(len(logits), np.nan),
            rule=rule,
            shift_statistic=self.shift_test.z_score(),
            prior_shift_statistic=prior_statistic,
        )
        reading = UnlabelledReading(
            self.prior_estimate,
            self.reference_prior_,
            label_shift,
            weights,
            self.class_presence,
            self.shift_test_threshold,
            self._prior_critical(),
        )
        return self.labelled.revise(batch, decision, reading)

    def _without_label_shift(self, covariate: bool) -> tuple[np.ndarray | None, str]:
        """The class weights (``None``: argmax) and rule name outside label-shift correction."""
        if self.balanced_is_candidate(covariate=covariate):
            source_score, balanced_score = score(self.expected_confusion, self.objective)
            balanced = bool(balanced_score >= source_score)
            if balanced and self.stream_check == "both":
                balanced = self.label_shift_reading_favours_balanced()
            if balanced:
                return self._rule_weights[1, 0], "balanced"
        if self.fallback == "between" and covariate:
            # Only once a covariate shift is in evidence: the held-out rows may no longer stand
            # for the target. Before that (no shift, or a label shift not yet shown) the
            # held-out choice stands.
            reservoir = self.prior_estimate.reservoir
            return between_weights(reservoir, self.source_prior_, self.objective), "between"
        if self.fallback == "plugin":
            # The stream's (calibrated) posteriors taken as the target's: O(reservoir).
            return plugin_weights(self.prior_estimate.reservoir, self.objective), "plugin"
        # (argmax keeps the posteriors as they are: weights of one change no value)
        return None, "source"

    def balanced_is_candidate(self, covariate: bool) -> bool:
        """Whether the held-out rows let the balanced rule be considered: it beat argmax there,
        on at least ``rule_evidence`` of the bootstrap resamples, or ``covariate_rule_evidence``
        once the moment test has rejected pure label shift (``covariate``)."""
        rule = self.rule
        if rule.balanced_score <= rule.source_score:
            return False
        return rule.evidence >= (self.covariate_rule_evidence if covariate else self.rule_evidence)

    def label_shift_reading_favours_balanced(self) -> bool:
        """Whether the balanced rule also wins when the stream is read as a label shift.

        The reservoir's posteriors are re-weighted by p_t / p_s, p_t the MAP-EM estimate under
        a Dirichlet prior centred at p_s (``prior_strength`` rows; so a short stream reads as no
        label shift at all), and both rules are scored on the reservoir. A model trained where
        a class is common over-states it where it is rare, so its posteriors alone can favour
        the balanced rule on a stream that has moved away from the classes that rule boosts;
        this reading moves the other way. Updates :attr:`reading_prior`; the running estimate
        of the label-shift branch is left as it is.
        """
        return self._reading.favours_balanced()

    def class_presence(self) -> np.ndarray:
        """Each class's chance of occurring in the stream at all, (C,): 1 for a class among the
        labelled rows, else from the reservoir and the running estimate
        (:func:`~adaptable.core.decision.class_presence.presence`, O(C reservoir)). Read only
        by balanced accuracy's label-shift weights on more than two classes."""
        estimate = self.prior_estimate
        # the whole reservoir, not a sample: a rare class has too few rows in a sample to show
        # that it occurs (docs/research/multiclass.md)
        chances = presence(
            estimate.reservoir_by_class, self.reference_prior_, estimate.prior, estimate.n_seen
        )
        return np.where(self.feedback.reservoir.counts > 0, 1.0, chances)

    def _label_shift_applies(self) -> tuple[bool, float | None]:
        """Whether the stream is consistent with pure label shift (the moment test) and its
        label distribution moved (the likelihood-ratio test), and the latter's statistic
        (``None`` where the moment test already rejected); updates the estimate p_t."""
        if self.shift_test.z_score() > self.shift_test_threshold:
            return False, None
        self.prior_estimate.estimate()
        statistic = self.prior_estimate.likelihood_ratio()
        if self.label_shift_level >= 1.0:
            return True, statistic
        return statistic >= self._prior_critical(), statistic

    def _prior_critical(self) -> float:
        """The likelihood-ratio test's critical value (chi-squared, C - 1 degrees of freedom,
        at ``label_shift_level``); 0 where the test is off."""
        if self.label_shift_level >= 1.0:
            return 0.0
        return chi2_critical(self.label_shift_level, len(self.source_prior_) - 1)

    # ------------------------------------------------------------------ saved state
    def state(self) -> PartState:
        """The rule, the test's and the estimate's arrays, the expected confusions, the seed,
        and the labelled rows and the report (:meth:`LabelledRows.arrays`)."""
        arrays = {f"shift_test.{k}": v for k, v in self.shift_test.arrays().items()}
        arrays |= {f"prior_estimate.{k}": v for k, v in self.prior_estimate.arrays().items()}
        arrays["expected_confusion"] = self.expected_confusion
        arrays |= self.labelled.arrays()
        metadata = {
            "temperature": None,
            "rule": rule_metadata(self.rule),
            "seed": self.prior_estimate.seed,
        }
        return PartState(arrays, metadata)

    @classmethod
    def from_state(cls, context: LoadContext) -> RecommendedDecider:
        """Inverse of :meth:`state`, mid-stream; every field checked
        (:mod:`~adaptable.core.recommended.saved_fields`): each tensor's shape and dtype before
        its data is read, the moment test against the saved Encoder's columns, the reservoir's
        rows as probabilities, and the counts as non-negative integers that agree with each
        other."""
        reader, n_classes = context.reader, context.n_classes
        decider = cls.from_params(context.params)
        decider.source_prior_ = context.source_prior
        if reader.meta.get("temperature") is not None:
            raise reader.error("temperature", "must be null for the default preset")
        rule = read_rule(reader)
        test = read_shift_test(reader, n_classes, context.encoder)
        seed = reader.integer("seed", minimum=0)
        decider.reference_prior_ = decider.source_prior_
        if decider.prior_reference != "labels" and "feedback.heldout_scores" in reader.arrays:
            scores = read_heldout_scores(reader, n_classes)
            decider.reference_prior_ = decider._reference_prior(scores)
        estimate = decider._new_prior_estimate(seed)
        n_seen = read_prior_estimate(reader, estimate, n_classes)
        if test.n_rows != n_seen:  # both see every row of the stream
            message = f"counts {test.n_rows} rows; the stream had {n_seen} (prior_estimate)"
            raise reader.error("shift_test.n_rows", message)
        expected = read_expected_confusion(reader, n_classes, n_seen)
        decider.rule, decider.shift_test, decider.prior_estimate = rule, test, estimate
        decider._start(expected.copy())
        decider.labelled = LabelledRows.from_state(
            reader,
            decider.source_prior_,
            decider.objective,
            report_batches=decider.report_batches,
            seed=estimate.seed,
            stream_rows=n_seen,
        )
        check_rule_objective(
            reader, rule, decider.objective, *decider.feedback.heldout, decider.source_prior_
        )
        return decider

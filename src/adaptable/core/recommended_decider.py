"""The recommended decider (``AdapTable(preset="default")``): decide for an objective, and
correct for label shift only where the stream supports it.

At fit, on the held-out source rows: the decision rule that serves ``objective`` (the model's
argmax, or the balanced rule argmax p(y|x) / p_s(y), :func:`~adaptable.core.decision.choose_rule`),
and on all source rows the moment-matching label-shift test
(:class:`~adaptable.core.label_shift.LabelShiftTest`). On each batch:

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
   (``"plugin"``), or, once a covariate shift is in evidence, the rule held between the two
   source rules (``"between"``).

``docs/method.md`` gives the reasons and the benchmarks behind each choice.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from numbers import Real
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from adaptable.core.deciders import CalibratedBatch, Decider, Decision
from adaptable.core.decision import (
    OBJECTIVES,
    RuleChoice,
    between_weights,
    choose_rule,
    expected_confusion,
    plugin_weights,
    score,
)
from adaptable.core.drift_report import DriftLog
from adaptable.core.feedback import (
    LabelledFeedback,
    PriorPosterior,
    ScoreRule,
    combine_prior,
    standard_rules,
    unlabelled_worth,
)
from adaptable.core.feedback.prior import JEFFREYS
from adaptable.core.label_shift import LabelShiftTest
from adaptable.core.label_shift_reading import LabelShiftReading
from adaptable.core.parameters import Constraint, Interval, StrOptions
from adaptable.core.parts import FitContext, LoadContext, PartState
from adaptable.core.prior_estimate import OnlinePriorEstimate, prior_center
from adaptable.core.probability import normalize, softmax

if TYPE_CHECKING:
    from adaptable.core.state import StateReader

#: the decision where neither label-shift correction nor the balanced rule applies
FALLBACKS = ("argmax", "plugin", "between")
#: how the stream confirms the balanced rule: the model's reading, or both readings
STREAM_CHECKS = ("model", "both")


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

    Attributes (after fit):
        rule: the held-out :class:`~adaptable.core.decision.RuleChoice` (may be replaced, e.g.
            to study the stream check).
        shift_test: the moment-matching :class:`~adaptable.core.label_shift.LabelShiftTest`.
        prior_estimate: the MAP-EM
            :class:`~adaptable.core.prior_estimate.OnlinePriorEstimate` of the target labels.
        expected_confusion: the stream's expected (true, predicted) counts of argmax [0] and
            of the balanced rule [1] under the calibrated posteriors, (2, C, C).

    Late labels (``AdapTable.partial_fit``) enter through :meth:`learn` and the labelled-rows
    parts (:attr:`feedback`, a :class:`~adaptable.core.feedback.LabelledFeedback`): once enough
    have arrived, each batch's rule is chosen among argmax, the balanced rule, label-shift
    correction at the combined target prior, the plug-in rule, the unlabelled decision and a
    score correction (rule names ``"feedback:..."``). Every batch writes one record of the
    drift report (:attr:`drift_log`, :class:`~adaptable.core.drift_report.DriftLog`).
    """

    preset: ClassVar[str] = "default"
    needs_features: ClassVar[bool] = True
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
    }

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
    ) -> None:
        self.objective = objective
        self.shift_test_threshold = shift_test_threshold
        self.prior_strength = prior_strength
        self.label_shift_level = label_shift_level
        self.rule_evidence = rule_evidence
        self.covariate_rule_evidence = covariate_rule_evidence
        self.fallback = fallback
        self.stream_check = stream_check

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
        self.prior_estimate = self._new_prior_estimate(context.seed)
        self.feedback = self._new_feedback(context.seed)
        self.drift_log = DriftLog(context.n_classes, self.objective)
        self.feedback.fit_heldout(_log(softmax(logits)), labels)
        self.reset()
        return self

    def _new_prior_estimate(self, seed: int) -> OnlinePriorEstimate:
        return OnlinePriorEstimate(
            self.source_prior_,
            strength=self.prior_strength,
            seed=seed,
            center=prior_center(self.objective),
        )

    def reset(self) -> None:
        self.shift_test.reset()
        self.prior_estimate.reset()
        self.feedback.reset()
        self.drift_log.reset()
        self._start(np.zeros((2, len(self.source_prior_), len(self.source_prior_))))

    def _start(self, expected: np.ndarray) -> None:
        """The per-stream state besides the test and the estimate."""
        self.expected_confusion = expected
        # the unlabelled estimate's worth when last computed: (rows seen, estimate, worth)
        self._worth_cache: tuple[int, np.ndarray, float] = (0, self.source_prior_ * 0, 0.0)
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
            weights = plugin_weights(self.prior_estimate.target_posteriors(), self.objective)
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
        return self._with_feedback(batch, decision, label_shift, weights)

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
        critical = chi2_critical(self.label_shift_level, len(self.source_prior_) - 1)
        return statistic >= critical, statistic

    # ------------------------------------------------------------------ saved state
    def state(self) -> PartState:
        """The rule, the test's and the estimate's arrays, the expected confusions, the seed."""
        arrays = {f"shift_test.{k}": v for k, v in self.shift_test.arrays().items()}
        arrays |= {f"prior_estimate.{k}": v for k, v in self.prior_estimate.arrays().items()}
        arrays["expected_confusion"] = self.expected_confusion
        arrays |= self._feedback_arrays()
        rule = self.rule
        metadata = {
            "temperature": None,
            "rule": {
                "beta": rule.beta,
                "source_score": rule.source_score,
                "balanced_score": rule.balanced_score,
                "evidence": rule.evidence,
            },
            "seed": self.prior_estimate.seed,
        }
        return PartState(arrays, metadata)

    @classmethod
    def from_state(cls, context: LoadContext) -> RecommendedDecider:
        """Inverse of :meth:`state`, mid-stream; every field checked: each tensor's shape and
        dtype before its data is read, the moment test against the saved Encoder's columns,
        the reservoir's rows as probabilities, and the counts as non-negative integers that
        agree with each other."""
        reader, n_classes = context.reader, context.n_classes
        decider = cls.from_params(context.params)
        decider.source_prior_ = context.source_prior
        if reader.meta.get("temperature") is not None:
            raise reader.error("temperature", "must be null for the default preset")
        rule = reader.field("rule", dict)
        numbers = {"beta", "source_score", "balanced_score", "evidence"}
        if set(rule) != numbers or not all(
            isinstance(rule[k], int | float) and not isinstance(rule[k], bool) for k in numbers
        ):
            raise reader.error(
                "rule", f"cannot be read (it must hold the numbers {sorted(numbers)})"
            )
        choice = RuleChoice(
            float(rule["beta"]),
            float(rule["source_score"]),
            float(rule["balanced_score"]),
            float(rule["evidence"]),
        )
        scores_and_evidence = (choice.source_score, choice.balanced_score, choice.evidence)
        if choice.beta not in (0.0, 1.0) or not all(0.0 <= v <= 1.0 for v in scores_and_evidence):
            raise reader.error(
                "rule", f"must have beta 0 or 1, and scores and evidence in [0, 1]; got {rule}"
            )

        # The moment test: its columns are the saved Encoder's (numbers, then each categorical
        # feature's categories, rare ones pooled by the lookup).
        def shift_tensor(name: str, shape: tuple[int, ...], dtype: str = "float64"):
            return reader.tensor(f"shift_test.{name}", shape, dtype)

        def declared(name: str) -> tuple[int, ...]:
            return reader.shape(f"shift_test.{name}") or (0,)

        encoder = context.encoder
        n_numeric = reader.count("shift_test.n_numeric")
        sizes = None if encoder is None else np.asarray(encoder.cardinalities, dtype=np.int64)
        if encoder is not None and n_numeric != len(encoder.numerical_):
            raise reader.error(
                "shift_test.n_numeric",
                f"is {n_numeric} but the encoder has {len(encoder.numerical_)} numerical columns",
            )
        # as fit computes them: [0] for a table without categorical columns
        written = None if sizes is None else np.concatenate([[0], np.cumsum(sizes)[:-1]])
        offsets = shift_tensor(
            "offsets", declared("offsets") if written is None else written.shape, "int64"
        )
        if written is not None and not np.array_equal(offsets, written):
            raise reader.error("shift_test.offsets", "disagrees with the encoder's categories")
        categories = int(sizes.sum()) if sizes is not None else None
        arrays: dict[str, np.ndarray] = {}
        if "shift_test.lookup" in reader.arrays:
            shape = declared("lookup") if categories is None else (categories,)
            lookup = shift_tensor("lookup", shape, "int64")
            if len(lookup) and (lookup.min() < 0 or lookup.max() >= len(lookup)):
                raise reader.error("shift_test.lookup", "points outside the one-hot columns")
            arrays["lookup"] = lookup
            one_hot = int(lookup.max()) + 1 if len(lookup) else 0
        elif categories is not None:  # written before rare categories were pooled
            one_hot = categories
        else:
            one_hot = declared("class_means")[0] - n_numeric
        width = n_numeric + one_hot
        arrays |= {
            "class_means": shift_tensor("class_means", (width, n_classes)),
            "weights": shift_tensor("weights", (width,)),
            "sums": shift_tensor("sums", (width,)),
            "null": shift_tensor("null", (2,)),
            "offsets": offsets,
            "n_numeric": np.array([n_numeric]),
            "n_rows": np.array([reader.count("shift_test.n_rows")]),
        }
        try:
            test = LabelShiftTest.from_arrays(arrays, n_classes)
        except (ValueError, KeyError) as err:
            raise reader.error("shift_test", str(err)) from err

        # The target-prior estimate: a reservoir of min(n_seen, capacity) probability rows.
        seed = reader.integer("seed", minimum=0)
        estimate = decider._new_prior_estimate(seed)
        n_seen = int(reader.tensor("prior_estimate.n_seen", (1,), "int64")[0])
        kept = min(n_seen, estimate.capacity)
        # Before the first batch the reservoir is empty, and safetensors does not write it.
        rows = (reader.shape("prior_estimate.reservoir") or (0,))[0]
        if n_seen < 0 or rows != kept:
            raise reader.error(
                "prior_estimate",
                f"must hold min(n_seen, {estimate.capacity}) reservoir rows; it holds {rows} "
                f"with n_seen {n_seen}",
            )
        state = {
            "reservoir": reader.tensor("prior_estimate.reservoir", (kept, n_classes)),
            "n_seen": np.array([n_seen]),
            "prior": reader.tensor("prior_estimate.prior", (n_classes,)),
        }
        try:
            estimate.restore(state)
        except (ValueError, KeyError) as err:
            raise reader.error("prior_estimate", str(err)) from err

        # Expected (true, predicted) counts of both rules over the same rows: non-negative, the
        # same rows' posteriors per true class in both, and no more rows than the stream had.
        expected = reader.tensor("expected_confusion", (2, n_classes, n_classes))
        if np.any(expected < 0):
            raise reader.error("expected_confusion", "holds negative counts")
        by_class = expected.sum(axis=2)
        total = float(by_class[0].sum())
        tolerance = 1e-6 * max(total, 1.0)
        if np.abs(by_class[0] - by_class[1]).max() > tolerance or total > n_seen + tolerance:
            raise reader.error(
                "expected_confusion",
                "must count the same rows for both rules, at most the stream's "
                f"{n_seen} (prior_estimate.n_seen)",
            )
        decider.rule, decider.shift_test, decider.prior_estimate = choice, test, estimate
        decider._start(expected.copy())
        decider._restore_feedback(reader, estimate.seed)
        return decider

    # ================================================================== late labels and report
    # Everything below serves ``AdapTable.partial_fit`` and ``AdapTable.report``. Without labels
    # the decision above is returned unchanged; the batch's record for the report is written.

    #: the labelled-rows settings (see :class:`~adaptable.core.feedback.LabelledFeedback`):
    #: what the held-out rows are worth in labelled rows, the share of bootstrap draws a rule
    #: must win to replace the incumbent, labelled rows before labels change a decision and
    #: before a score correction is fitted, and labelled rows kept. Evidence and the two
    #: minimums are set on the development benchmark (docs/results/feedback.md): a few dozen
    #: labels let noise switch the rule among the five candidates.
    FEEDBACK_SETTINGS: ClassVar[dict[str, float]] = {
        "heldout_worth": 100.0,
        "evidence": 0.9,
        "min_labelled": 50,
        "correction_rows": 100,
        "capacity": 2048,
    }
    #: stream posteriors the unlabelled estimate's worth (its interval) is computed from: a
    #: uniform subsample of the reservoir, so each batch pays a fixed, small cost
    WORTH_ROWS: ClassVar[int] = 512

    def _new_feedback(self, seed: int) -> LabelledFeedback:
        settings = self.FEEDBACK_SETTINGS
        return LabelledFeedback(
            self.source_prior_,
            self.objective,
            capacity=int(settings["capacity"]),
            heldout_worth=settings["heldout_worth"],
            evidence=settings["evidence"],
            min_labelled=int(settings["min_labelled"]),
            correction_rows=int(settings["correction_rows"]),
            seed=seed,
        )

    def learn(self, logits: np.ndarray, labels: np.ndarray, rows: np.ndarray | None) -> None:
        """Labelled target rows: their logits (n, C), label codes (n,) and, where known, row
        ids (positions in the stream since fit / reset, for the report's realised columns).

        The rows enter the labelled-rows evidence only: the shift test and the unlabelled
        estimate saw them when they were predicted. O(n).
        """
        self.feedback.add(_log(softmax(logits)), labels)
        if rows is not None:
            self.drift_log.learn(rows, labels, logits.argmax(axis=1))

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
            worth = unlabelled_worth(sample, self.source_prior_, estimate.prior, weight)
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
            decision = self._labelled_decision(decision, model_proba, label_shift, weights, post)
        self._record(batch, decision, model_proba, post, moment_accepts)
        return decision

    def _labelled_decision(
        self,
        decision: Decision,
        model_proba: np.ndarray,
        label_shift: bool,
        weights: np.ndarray | None,
        post: PriorPosterior,
    ) -> Decision:
        """The rule the labelled rows choose among argmax, the balanced rule, label-shift
        correction at the combined prior, the plug-in rule, today's rule and a fitted score
        correction. Where they keep today's rule its output is returned as it was."""
        source, estimate = self.source_prior_, self.prior_estimate
        unlabelled, target = estimate.prior, post.mean
        reservoir = estimate.reservoir
        rules = standard_rules(
            source,
            target,
            plugin_weights(estimate.target_posteriors(prior=target), self.objective),
            plugin_weights(reservoir, self.objective),
        )
        no_shift = np.zeros(len(source))
        today = decision.rule
        anchor = {"source": 0, "balanced": 1}.get(today)
        if anchor is None:
            offset = np.log(unlabelled / source) if label_shift else no_shift
            offset = offset + (0.0 if weights is None else np.log(np.maximum(weights, 1e-12)))
            rules.append(ScoreRule(f"{today} (unlabelled)", offset))
            anchor = len(rules) - 1
        chosen = self.feedback.decide(
            rules,
            anchor,
            target_prior=target,
            # the correction is drawn towards label-shift correction at the combined prior
            # (where the labels dropped a misled unlabelled estimate, at theirs alone)
            base_offset=np.log(target / source) if label_shift else no_shift,
            decide_on=_log(reservoir),
        )
        proba = decision.proba
        if chosen.index != anchor:
            proba = chosen.rule.proba(_log(model_proba))
        return dataclasses.replace(
            decision, proba=proba, target_prior=target, rule=f"feedback:{chosen.rule.name}"
        )

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
        n_classes = len(self.source_prior_)
        # both rules' one-hot decisions side by side: one (C, n) x (n, 2C) product gives both
        # expected confusion matrices
        classes = np.arange(n_classes)
        decided = np.concatenate(
            [model_proba.argmax(axis=1)[:, None] == classes, predictions[:, None] == classes],
            axis=1,
        )
        expected = (posteriors.T @ decided).reshape(n_classes, 2, n_classes).transpose(1, 0, 2)
        log = self.drift_log
        level = self.label_shift_level
        known = moment_accepts or self.feedback.n_labelled > 0
        log.record(
            rows=len(predictions),
            predictions=predictions,
            expected=expected,
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
        self.drift_log = DriftLog(len(self.source_prior_), self.objective)
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


def _log(proba: np.ndarray) -> np.ndarray:
    """log p with zeros floored (a rule's scores stay finite)."""
    return np.log(np.maximum(proba, 1e-300))


@functools.lru_cache(maxsize=16)
def chi2_critical(level: float, degrees: int) -> float:
    """The chi-squared quantile a statistic must reach to reject at ``level``."""
    from scipy.stats import chi2

    return float(chi2.isf(level, degrees))

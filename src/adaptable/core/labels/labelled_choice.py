"""The labelled-rows machinery in one object, for a decider that receives late labels.

:class:`LabelledFeedback` holds the labelled target rows (:class:`.reservoir.LabelledReservoir`),
the held-out source rows, and the last score correction; a decider calls

- :meth:`LabelledFeedback.fit_heldout` once at fit, with the held-out rows' log-posteriors;
- :meth:`LabelledFeedback.add` whenever labels arrive (``partial_fit``): O(rows added);
- :meth:`LabelledFeedback.prior` for the target label distribution (labels and the unlabelled
  MAP-EM estimate combined, with intervals);
- :meth:`LabelledFeedback.decide` per batch, with the candidate rules and the index of the
  rule the unlabelled decision picked (the anchor): the rule to use, chosen on the labelled
  rows and the held-out rows (:mod:`.rule_choice`), a fitted correction (:mod:`.score_correction`)
  among the candidates once enough labels have arrived.

Without labels :meth:`~LabelledFeedback.decide` returns the anchor: the decider is then exactly
the unlabelled one. Labels only ever change the decisions of batches decided after they
arrived. The state is a dict of arrays (:meth:`~LabelledFeedback.arrays`); the object pickles.

Example:
    >>> import numpy as np
    >>> feedback = LabelledFeedback(np.array([0.5, 0.5]), "accuracy", seed=0)
    >>> rules = [ScoreRule("argmax", np.zeros(2)), ScoreRule("always_1", np.array([0.0, 9.0]))]
    >>> feedback.decide(rules, anchor=1).rule.name        # no labels: the anchor
    'always_1'
    >>> log_p = np.log(np.array([[0.9, 0.1], [0.2, 0.8]] * 20))
    >>> feedback.add(log_p, np.array([0, 1] * 20))
    >>> feedback.decide(rules, anchor=1).rule.name        # the labels favour argmax
    'argmax'
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from adaptable.core.decision.rules import OBJECTIVES
from adaptable.core.labels.label_prior import PriorPosterior, combine_prior
from adaptable.core.labels.reservoir import LabelledReservoir
from adaptable.core.labels.rule_choice import (
    DeferredRule,
    RuleComparison,
    ScoreRule,
    choose_labelled_rule,
    compare_rules,
    resolved,
)
from adaptable.core.labels.score_correction import Correction, fit_correction
from adaptable.core.parts.earlier_pickles import with_added_attributes


@dataclass(frozen=True)
class FeedbackDecision:
    """What :meth:`LabelledFeedback.decide` chose.

    Attributes:
        rule: the rule to use on the batch.
        index: its index among the rules considered (the given ones, then the correction).
        rules: the rules considered (a :class:`~.rules.DeferredRule` that no comparison
            needed stays unbuilt).
        comparison: the evidence (``None`` without labels).
    """

    rule: ScoreRule
    index: int
    rules: tuple[ScoreRule | DeferredRule, ...]
    comparison: RuleComparison | None


class LabelledFeedback:
    """Labelled target rows turned into a target prior, a rule choice and a score correction.

    Args:
        source_prior: p_s, (C,).
        objective: one of :data:`adaptable.core.decision.rules.OBJECTIVES`.
        capacity: labelled rows kept (a uniform reservoir beyond that).
        heldout_worth: rows the held-out evidence counts as (a fixed pseudo-count: its share
            of the evidence falls as m / (m + n) with n labelled rows).
        stream_worth: rows the unlabelled stream's evidence counts as, where :meth:`decide`
            is given stream rows (their expected confusion under the posteriors the decider
            believes; a fixed pseudo-count as the held-out rows', kept only while the labelled
            rows do not refute it); 0 leaves it out.
        evidence: share of bootstrap draws a rule must win to replace the incumbent.
        min_labelled: labelled rows before the labels change any decision.
        min_labelled_alone: labelled rows before the labels change a decision where no stream
            evidence backs them (none given, or the labels refuted it); ``None``: as
            ``min_labelled``. A few labels tell the rules apart only through the stream's
            posteriors; by themselves their bootstrap is too narrow to trust.
        correction_rows: labelled rows before a score correction is fitted and considered.
        likelihood_incumbent: the score correction becomes the incumbent of the rule choice
            wherever its cross-validated log-loss on the labelled rows is below the
            unlabelled reading's (other rules must then beat it on ``evidence`` of the draws).
            Out of fold, the labels' likelihood shows that p(y|x) moved long before the
            objective's bootstrap over a few dozen rows can tell the rules apart.
        refit_growth: the correction is refitted once the labelled rows have grown by this
            factor since the last fit (so refits cost O(log n) fits over a stream).
        recheck_growth: the rules are compared again (:meth:`decide`) once the labelled rows
            or the stream's rows have grown by this factor since the last comparison, or the
            candidate rules changed; in between the last choice stands (the comparison, a
            bootstrap over every kept row, is too costly for every batch:
            docs/research/design_notes.md#labels-labelled-choice).
        seed: seeds the reservoir, the bootstrap and the folds.
    """

    def __setstate__(self, state: dict) -> None:
        """Unpickling, earlier versions' pickles included (``parts.earlier_pickles``)."""
        self.__dict__.update(with_added_attributes("LabelledFeedback", state))

    def __init__(
        self,
        source_prior: np.ndarray,
        objective: str = "macro_f1",
        *,
        capacity: int = 2048,
        heldout_worth: float = 100.0,
        stream_worth: float = 0.0,
        evidence: float = 0.8,
        min_labelled: int = 10,
        min_labelled_alone: int | None = None,
        correction_rows: int = 30,
        likelihood_incumbent: bool = False,
        refit_growth: float = 1.1,
        recheck_growth: float = 1.1,
        seed: int = 0,
    ) -> None:
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}; got {objective!r}.")
        if not 0.5 <= evidence <= 1.0:
            raise ValueError(f"evidence must lie in [0.5, 1]; got {evidence!r}")
        if heldout_worth < 0 or stream_worth < 0 or refit_growth < 1.0 or recheck_growth < 1.0:
            raise ValueError(
                "heldout_worth, stream_worth must be >= 0 and refit_growth, recheck_growth >= 1."
            )
        self.source_prior = np.asarray(source_prior, dtype=np.float64)
        self.n_classes = len(self.source_prior)
        self.objective = objective
        self.heldout_worth = float(heldout_worth)
        self.stream_worth = float(stream_worth)
        self.evidence = float(evidence)
        self.min_labelled = int(min_labelled)
        alone = self.min_labelled if min_labelled_alone is None else int(min_labelled_alone)
        self.min_labelled_alone = max(self.min_labelled, alone)
        self.correction_rows = max(int(correction_rows), 5)
        self.likelihood_incumbent = bool(likelihood_incumbent)
        self.refit_growth = float(refit_growth)
        self.recheck_growth = float(recheck_growth)
        self.seed = int(seed)
        self.reservoir = LabelledReservoir(self.n_classes, capacity, seed)
        self._heldout_scores = np.zeros((0, self.n_classes))
        self._heldout_labels = np.zeros(0, dtype=np.int64)
        self.reset()

    # ------------------------------------------------------------------ fit-time evidence
    def fit_heldout(self, log_posteriors: np.ndarray, labels: np.ndarray) -> LabelledFeedback:
        """Keep the held-out source rows' log-posteriors (n, C) and labels (n,)."""
        scores = np.asarray(log_posteriors, dtype=np.float64)
        labels = np.asarray(labels, dtype=np.int64)
        if scores.ndim != 2 or scores.shape[1] != self.n_classes or labels.shape != (len(scores),):
            raise ValueError(f"held-out rows must be (n, {self.n_classes}) with (n,) labels.")
        self._heldout_scores, self._heldout_labels = scores.copy(), labels.copy()
        return self

    @property
    def heldout(self) -> tuple[np.ndarray, np.ndarray]:
        """The held-out rows' log-posteriors (n, C) and labels (n,) (read-only views)."""
        scores, labels = self._heldout_scores.view(), self._heldout_labels.view()
        scores.flags.writeable = labels.flags.writeable = False
        return scores, labels

    # ------------------------------------------------------------------ the stream
    def reset(self) -> None:
        """Forget the labelled rows and the correction (the held-out rows stay)."""
        self.reservoir.reset()
        self._correction: Correction | None = None
        self._fitted_n = 0
        #: the labelled positions of the rows the correction was fitted on, in its row order
        self._fitted_positions = np.zeros(0, dtype=np.int64)
        #: the name of the rule the labels chose last (the incumbent of the next choice)
        self._last_rule: str | None = None
        #: the last comparison's labelled rows, stream rows and candidate rules' names
        self._compared: tuple[int, int, tuple[str, ...]] = (0, 0, ())

    def add(self, log_posteriors: np.ndarray, labels: np.ndarray) -> None:
        """Labelled target rows: their log-posteriors as scored when predicted (n, C), codes."""
        self.reservoir.add(log_posteriors, labels)

    @property
    def n_labelled(self) -> int:
        """Labelled rows received since the last reset."""
        return self.reservoir.n_seen

    def prior(self, unlabelled: np.ndarray | None = None, worth: float = 0.0) -> PriorPosterior:
        """The target label distribution: labelled counts and ``unlabelled`` worth ``worth``
        rows (see :func:`.label_prior.combine_prior`)."""
        return combine_prior(self.reservoir.counts, unlabelled, worth)

    def correction(
        self,
        base_offset: np.ndarray | None = None,
        decide_on: np.ndarray | Callable[[], np.ndarray] | None = None,
        class_factor: Callable[[], np.ndarray | None] | None = None,
    ) -> Correction | None:
        """The current score correction (refitted when the labels have grown enough), or
        ``None`` before ``correction_rows`` labelled rows.

        Args:
            base_offset: b0, the unlabelled reading's offsets (default 0); read at refits.
            decide_on: rows for the plug-in decision (see :func:`.correction.fit_correction`),
                or a function that gives them (called only when a refit is due).
            class_factor: a function giving what the correction's plug-in weights are
                multiplied by, (C,) or ``None`` (see :func:`.correction.fit_correction`);
                called only when a refit is due.
        """
        n = self.reservoir.n_seen
        if n < self.correction_rows:
            return None
        if self._correction is None or n >= self._fitted_n * self.refit_growth:
            base = np.zeros(self.n_classes) if base_offset is None else base_offset
            self._correction = fit_correction(
                self.reservoir.scores,
                self.reservoir.labels,
                base,
                self.objective,
                decide_on=decide_on() if callable(decide_on) else decide_on,
                class_factor=None if class_factor is None else class_factor(),
                seed=self.seed + n,
            )
            self._fitted_n = n
            self._fitted_positions = self.reservoir.positions.copy()
        return self._correction

    def _correction_decisions(self, correction: Correction) -> np.ndarray:
        """The correction's decisions on the kept labelled rows, each from a fit that did not
        see it: out-of-fold for the rows it was fitted on, the fit itself for later ones."""
        store = self.reservoir
        decisions = correction.rule.predict(store.scores)
        order = np.argsort(self._fitted_positions)
        fitted = self._fitted_positions[order]
        index = np.minimum(np.searchsorted(fitted, store.positions), len(fitted) - 1)
        seen = fitted[index] == store.positions
        decisions[seen] = correction.out_of_fold[order[index[seen]]]
        return decisions

    def decide(
        self,
        rules: Sequence[ScoreRule],
        anchor: int,
        *,
        target_prior: np.ndarray | None = None,
        base_offset: np.ndarray | None = None,
        decide_on: np.ndarray | Callable[[], np.ndarray] | None = None,
        class_factor: Callable[[], np.ndarray | None] | None = None,
        stream: tuple[np.ndarray, np.ndarray] | Callable[[], tuple] | None = None,
        stream_rows: int = 0,
        safe: int = 0,
    ) -> FeedbackDecision:
        """The rule for the next batch: the labels' last choice where it is due no new
        comparison (``recheck_growth``), else the one a comparison of the rules chooses.

        Args:
            rules: the candidate rules (rule ``safe`` the model's argmax).
            anchor: index of the rule the unlabelled decision picked: the incumbent until the
                labels have chosen once; from then on their last choice is (where it is
                among ``rules``, by name).
            target_prior: the target label distribution the held-out rows are moved to (e.g.
                :meth:`prior`'s mean); ``None``: their own class mix.
            base_offset, decide_on, class_factor: for the score correction (see
                :meth:`correction`).
            stream: unlabelled stream rows as evidence worth ``stream_worth`` rows: their
                log-posteriors as the rules read them (m, C), and the posteriors the decider
                believes for them (m, C), replaced by the score correction's once one is
                fitted; ``None`` leaves them out. Either may be a function that gives them,
                called only where a comparison (or a refit) is due.
            stream_rows: the stream's rows so far (a new comparison is due as it grows); 0,
                the default, compares at every call.
            safe: index of the model's argmax among ``rules``.

        Returns:
            :class:`FeedbackDecision` (its ``comparison`` ``None`` where none was made); the
            anchor while fewer than ``min_labelled`` labels.
        """
        rules = tuple(rules)
        if self.reservoir.n_seen < self.min_labelled:
            return FeedbackDecision(resolved(rules[anchor]), anchor, rules, None)
        correction = self.correction(base_offset, decide_on, class_factor)
        store = self.reservoir
        candidates = rules if correction is None else (*rules, correction.rule)
        names = tuple(rule.name for rule in candidates)
        if not self._comparison_due(names, stream_rows):
            index = names.index(self._last_rule)
            return FeedbackDecision(resolved(candidates[index]), index, candidates, None)
        rules = tuple(resolved(rule) for rule in rules)
        candidates = rules if correction is None else (*rules, correction.rule)
        labelled = [rule.predict(store.scores) for rule in rules]
        heldout = [rule.predict(self._heldout_scores) for rule in rules]
        if correction is not None:
            labelled.append(self._correction_decisions(correction))
            heldout.append(correction.rule.predict(self._heldout_scores))
        rules = candidates
        stream_predictions = stream_posteriors = None
        if stream is not None and self.stream_worth > 0:
            stream_scores, stream_posteriors = stream() if callable(stream) else stream
            if correction is not None:
                # the labels' own reading of the stream rows once they support a correction
                # (where p(y|x) moved the unlabelled reading speaks for the wrong rule)
                corrected = ScoreRule("corrected", correction.calibration_offset, correction.scale)
                stream_posteriors = corrected.proba(stream_scores)
            stream_predictions = np.stack([rule.predict(stream_scores) for rule in rules])
        comparison = compare_rules(
            np.stack(labelled),
            store.labels,
            self.n_classes,
            self.objective,
            row_weight=store.row_weight,
            heldout_predictions=np.stack(heldout),
            heldout_labels=self._heldout_labels,
            heldout_worth=self.heldout_worth,
            target_prior=target_prior,
            stream_predictions=stream_predictions,
            stream_posteriors=stream_posteriors,
            stream_worth=self.stream_worth,
            seed=self.seed + store.n_seen,
        )
        # Once the labels have chosen, their last choice is the incumbent: a rule changes only
        # where the evidence says so, not whenever the draws wobble around a threshold.
        incumbent = names.index(self._last_rule) if self._last_rule in names else anchor
        alone = comparison.stream_worth == 0.0
        min_labelled = self.min_labelled_alone if alone else self.min_labelled
        if (
            self.likelihood_incumbent
            and correction is not None
            and store.n_seen >= min_labelled
            and correction.cv_log_loss < correction.base_log_loss
        ):
            incumbent = len(candidates) - 1
        index = choose_labelled_rule(
            comparison, incumbent, safe=safe, evidence=self.evidence, min_labelled=min_labelled
        )
        self._last_rule = names[index]
        self._compared = (store.n_seen, int(stream_rows), names)
        return FeedbackDecision(rules[index], index, rules, comparison)

    def _comparison_due(self, names: tuple[str, ...], stream_rows: int) -> bool:
        """Whether :meth:`decide` compares the rules again: no choice yet or not among
        ``names``, other candidates than last time, the labelled or stream rows grown by
        ``recheck_growth`` (or no stream rows given), or the labelled rows past
        ``min_labelled_alone`` since."""
        n = self.reservoir.n_seen
        labelled, rows, compared_names = self._compared
        return (
            self._last_rule not in names
            or names != compared_names
            or n >= labelled * self.recheck_growth
            or stream_rows <= 0
            or stream_rows >= rows * self.recheck_growth
            or labelled < self.min_labelled_alone <= n
        )

    # ------------------------------------------------------------------ state
    def arrays(self) -> dict[str, np.ndarray]:
        """The state as arrays (held-out rows, labelled reservoir, last correction)."""
        state = {f"reservoir.{key}": value for key, value in self.reservoir.arrays().items()}
        state["heldout_scores"] = self._heldout_scores.copy()
        state["heldout_labels"] = self._heldout_labels.copy()
        state["fitted_n"] = np.array([self._fitted_n], dtype=np.int64)
        state["fitted_positions"] = self._fitted_positions.copy()
        last = b"" if self._last_rule is None else self._last_rule.encode()
        labelled, rows, names = self._compared
        state["compared"] = np.array([labelled, rows], dtype=np.int64)
        state["compared_names"] = np.frombuffer("\n".join(names).encode(), dtype=np.uint8).copy()
        state["last_rule"] = np.frombuffer(last, dtype=np.uint8).copy()
        if self._correction is not None:
            c = self._correction
            state["correction.scale"] = np.array([c.scale])
            state["correction.calibration_offset"] = c.calibration_offset.copy()
            state["correction.rule_offset"] = c.rule.offset.copy()
            state["correction.strength"] = np.array([c.strength])
            state["correction.out_of_fold"] = c.out_of_fold.copy()
            state["correction.losses"] = np.array([c.cv_log_loss, c.base_log_loss])
        return state

    def restore(self, arrays: dict[str, np.ndarray]) -> None:
        """Inverse of :meth:`arrays` (on an object built with the same arguments).

        Raises:
            ValueError: missing or malformed arrays.
        """
        prefix = "reservoir."
        self.reservoir.restore(
            {key[len(prefix) :]: value for key, value in arrays.items() if key.startswith(prefix)}
        )
        try:
            self.fit_heldout(arrays["heldout_scores"], arrays["heldout_labels"])
            self._fitted_n = int(np.asarray(arrays["fitted_n"]).reshape(-1)[0])
            # (empty arrays may be missing: safetensors writes no empty tensor)
            fitted = arrays.get("fitted_positions", np.zeros(0, dtype=np.int64))
            self._fitted_positions = np.asarray(fitted, dtype=np.int64)
            last_rule = arrays.get("last_rule", np.zeros(0, dtype=np.uint8))
            last = np.asarray(last_rule, dtype=np.uint8).tobytes().decode()
            self._last_rule = last or None
            # a file written before the comparisons were spaced out: compare at the next batch
            compared = np.asarray(arrays.get("compared", np.zeros(2)), dtype=np.int64).reshape(-1)
            names = np.asarray(arrays.get("compared_names", np.zeros(0)), dtype=np.uint8)
            if compared.shape != (2,) or compared.min() < 0:
                raise ValueError("labelled feedback: malformed comparison counts.")
            text = names.tobytes().decode()
            self._compared = (
                int(compared[0]),
                int(compared[1]),
                tuple(text.split("\n")) if text else (),
            )
        except KeyError as err:
            raise ValueError(f"labelled feedback: missing array {err}.") from err
        self._correction = None
        if "correction.scale" in arrays:
            scale = float(np.asarray(arrays["correction.scale"]).reshape(-1)[0])
            offset = np.asarray(arrays["correction.calibration_offset"], dtype=np.float64)
            rule_offset = np.asarray(arrays["correction.rule_offset"], dtype=np.float64)
            losses = np.asarray(arrays["correction.losses"], dtype=np.float64)
            if not (scale > 0 and math.isfinite(scale)) or offset.shape != (self.n_classes,):
                raise ValueError("labelled feedback: malformed correction.")
            self._correction = Correction(
                scale,
                offset,
                ScoreRule("corrected", rule_offset, scale),
                float(np.asarray(arrays["correction.strength"]).reshape(-1)[0]),
                np.asarray(arrays["correction.out_of_fold"], dtype=np.int64),
                float(losses[0]),
                float(losses[1]),
            )


def standard_rules(
    source_prior: np.ndarray,
    target_prior: np.ndarray | None = None,
    target_weights: np.ndarray | Callable[[], np.ndarray] | None = None,
    model_weights: np.ndarray | Callable[[], np.ndarray] | None = None,
    reference: np.ndarray | None = None,
) -> list[ScoreRule | DeferredRule]:
    """The unlabelled adapter's candidate rules as :class:`ScoreRule` objects.

    Args:
        source_prior: p_s, (C,).
        target_prior: p_t for the label-shift rule, (C,); ``None`` leaves it out.
        target_weights: the plug-in class weights under the re-weighted posteriors
            (:func:`adaptable.core.decision.rules.plugin_weights`), (C,); default ones.
        model_weights: the plug-in weights under the model's own posteriors (the covariate
            reading); ``None`` leaves that rule out.
        reference: what the label-shift rule divides the posteriors by, (C,); default p_s.

    Either weights may be a function that gives them: its rule is then a
    :class:`~.rules.DeferredRule`, built (the weights computed) only where it is used.

    Returns:
        [argmax, balanced, label_shift?, plugin?], argmax first.

    Example:
        >>> [rule.name for rule in standard_rules(np.array([0.8, 0.2]), np.array([0.5, 0.5]))]
        ['argmax', 'balanced', 'label_shift']
    """
    source_prior = np.asarray(source_prior, dtype=np.float64)
    rules: list[ScoreRule | DeferredRule] = [
        ScoreRule("argmax", np.zeros(len(source_prior))),
        ScoreRule("balanced", -np.log(source_prior)),
    ]

    base = source_prior if reference is None else np.asarray(reference, dtype=np.float64)

    def label_shift(weights: np.ndarray | None) -> ScoreRule:
        weights = np.ones(len(source_prior)) if weights is None else weights
        offset = np.log(np.asarray(target_prior) / base) + np.log(np.maximum(weights, 1e-12))
        return ScoreRule("label_shift", offset)

    def plugin(weights: np.ndarray) -> ScoreRule:
        return ScoreRule("plugin", np.log(np.maximum(weights, 1e-12)))

    if target_prior is not None:
        if callable(target_weights):
            rules.append(DeferredRule("label_shift", lambda: label_shift(target_weights())))
        else:
            rules.append(label_shift(target_weights))
    if callable(model_weights):
        rules.append(DeferredRule("plugin", lambda: plugin(model_weights())))
    elif model_weights is not None:
        rules.append(plugin(model_weights))
    return rules

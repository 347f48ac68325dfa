"""Labelled target rows that arrive late: a reservoir, the target prior, rule choice, correction.

- ``reservoir.py``: :class:`LabelledReservoir`, a bounded uniform sample of labelled rows;
- ``label_prior.py``: :func:`combine_prior`, the target label distribution from labelled counts and
  the unlabelled MAP-EM estimate (:func:`unlabelled_worth`), with intervals;
- ``rule_choice.py``: :class:`ScoreRule` and :func:`compare_rules` /
  :func:`choose_labelled_rule`, the decision rules judged on labelled target rows and
  re-weighted held-out rows;
- ``score_correction.py``: :func:`fit_correction`, a score correction fitted on labelled rows;
- ``labelled_choice.py``: :class:`LabelledFeedback`, the four together: the rule (and the
  correction) chosen on the labelled rows, for a decider.

>>> from adaptable.core.labels import LabelledFeedback, combine_prior
"""

from __future__ import annotations

from adaptable.core.labels.label_prior import PriorPosterior, combine_prior, unlabelled_worth
from adaptable.core.labels.labelled_choice import (
    FeedbackDecision,
    LabelledFeedback,
    standard_rules,
)
from adaptable.core.labels.reservoir import LabelledReservoir
from adaptable.core.labels.rule_choice import (
    DeferredRule,
    RuleComparison,
    ScoreRule,
    choose_labelled_rule,
    compare_rules,
)
from adaptable.core.labels.score_correction import Correction, fit_affine, fit_correction

__all__ = [
    "Correction",
    "DeferredRule",
    "FeedbackDecision",
    "LabelledFeedback",
    "LabelledReservoir",
    "PriorPosterior",
    "RuleComparison",
    "ScoreRule",
    "choose_labelled_rule",
    "combine_prior",
    "compare_rules",
    "fit_affine",
    "fit_correction",
    "standard_rules",
    "unlabelled_worth",
]

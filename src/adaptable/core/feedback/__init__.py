"""Labelled target rows that arrive late: a reservoir, the target prior, rule choice, correction.

- ``reservoir.py``: :class:`LabelledReservoir`, a bounded uniform sample of labelled rows;
- ``prior.py``: :func:`combine_prior`, the target label distribution from labelled counts and
  the unlabelled MAP-EM estimate (:func:`unlabelled_worth`), with intervals;
- ``rules.py``: :class:`ScoreRule` and :func:`compare_rules` / :func:`choose_rule`, the
  decision rules judged on labelled target rows and re-weighted held-out rows;
- ``correction.py``: :func:`fit_correction`, a score correction fitted on labelled rows;
- ``learner.py``: :class:`LabelledFeedback`, the four together for a decider.

>>> from adaptable.core.feedback import LabelledFeedback, combine_prior
"""

from __future__ import annotations

from adaptable.core.feedback.correction import Correction, fit_affine, fit_correction
from adaptable.core.feedback.learner import (
    FeedbackDecision,
    LabelledFeedback,
    standard_rules,
)
from adaptable.core.feedback.prior import PriorPosterior, combine_prior, unlabelled_worth
from adaptable.core.feedback.reservoir import LabelledReservoir
from adaptable.core.feedback.rules import (
    DeferredRule,
    RuleComparison,
    ScoreRule,
    choose_rule,
    compare_rules,
)

__all__ = [
    "Correction",
    "DeferredRule",
    "FeedbackDecision",
    "LabelledFeedback",
    "LabelledReservoir",
    "PriorPosterior",
    "RuleComparison",
    "ScoreRule",
    "choose_rule",
    "combine_prior",
    "compare_rules",
    "fit_affine",
    "fit_correction",
    "standard_rules",
    "unlabelled_worth",
]

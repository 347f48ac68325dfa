"""The decider interface: what turns one calibrated test batch into AdapTable's output.

:class:`~adaptable.core.estimator.AdapTable` holds a calibrator and a decider. The calibrator
gives the calibrated probabilities q_i (Algorithm 1, line 9); the decider does everything else,
batch after batch, and keeps the stream's online state. Two deciders exist, one per preset:

- :class:`~adaptable.core.paper.paper_decider.PaperDecider` (``preset="paper"``): the paper's label
  distribution handler, Algorithm 1 lines 3, 8 and 10-26;
- :class:`~adaptable.core.recommended.recommended_decider.RecommendedDecider` (``preset="default"``): the
  recommended decision logic (the rule for the objective, the label-shift tests, the online
  prior, the fallbacks and the stream check).

A decider owns its constructor parameters (:attr:`Decider.parameter_constraints`, checked by
the estimator), is fitted once on the source (:meth:`Decider.fit`), adapts batch after batch
(:meth:`Decider.decide`, which returns a :class:`Decision` carrying the batch's diagnostics),
forgets the stream on :meth:`Decider.reset`, and saves / restores its own state
(:meth:`Decider.state`, :meth:`Decider.from_state`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from adaptable.core.parts.contexts import FitContext, LoadContext, PartState, own_parameters
from adaptable.encoding import EncodedBatch
from adaptable.framework.parameters import Constraint
from adaptable.framework.probability import softmax


@dataclass(frozen=True)
class CalibratedBatch:
    """One test batch as a decider reads it.

    Attributes:
        logits: z_i = f(x_i), float64 (n, C), finite, n >= 1.
        calibrated: q_i, the calibrator's probabilities, (n, C).
        encoded: the batch encoded by the adapter's Encoder, where the decider reads features
            (``needs_features``), else ``None``.
        calibrated_is_softmax: q_i is ``softmax(z_i)`` itself (no calibrator).
        amend: what the estimator makes of the decider's decision before the decider records
            it (the model updates' output, where one is in use); ``None``: the decision stands.
    """

    logits: np.ndarray
    calibrated: np.ndarray
    encoded: EncodedBatch | None = None
    calibrated_is_softmax: bool = False
    amend: Callable[[Decision], Decision] | None = None

    def __len__(self) -> int:
        return len(self.logits)

    def model_proba(self) -> np.ndarray:
        """The model's own posteriors softmax(z_i), (n, C) (computed once per batch; do not
        change the array)."""
        if self.calibrated_is_softmax:
            return self.calibrated
        cached = self.__dict__.get("_model_proba")
        if cached is None:
            cached = softmax(self.logits)
            object.__setattr__(self, "_model_proba", cached)
        return cached


@dataclass(frozen=True)
class Decision:
    """What a decider made of one batch: the output and the batch's diagnostics.

    Attributes:
        proba: the output, rows summing to 1, (n, C).
        target_prior: the target label distribution used on this batch, (C,).
        online_prior: the online estimate after this batch (carried to the next one), (C,).
        uncertainty: delta_i of the paper's handler, (n,) (NaN where the decider has none).
        recalibration_temperatures: T~_i of the paper's handler, (n,), or ``None``.
        rule: the decision rule used (recommended decider), or ``None``.
        shift_statistic: the label-shift test's z-score after this batch, or ``None``.
        prior_shift_statistic: the likelihood-ratio statistic of the target-prior estimate
            against p_s on this batch, or ``None`` where it was not computed.
    """

    proba: np.ndarray
    target_prior: np.ndarray | None
    online_prior: np.ndarray
    uncertainty: np.ndarray
    recalibration_temperatures: np.ndarray | None = None
    rule: str | None = None
    shift_statistic: float | None = None
    prior_shift_statistic: float | None = None


class Decider(ABC):
    """Base class of the deciders (see the module docstring).

    Subclasses declare :attr:`preset`, :attr:`parameter_constraints` (their constructor
    parameters, which are also AdapTable's) and :attr:`needs_features`, and take exactly those
    parameters as keyword arguments.
    """

    #: the value of ``AdapTable(preset=...)`` that selects this decider
    preset: ClassVar[str]
    #: the constructor parameters this decider owns, with their constraints
    parameter_constraints: ClassVar[dict[str, list[Constraint]]]
    #: whether :meth:`decide` reads the batch's encoded features
    needs_features: ClassVar[bool] = False
    #: whether it decides on the held-out rows or reports against them (fit then warns where
    #: ``y_valid`` lacks a class)
    reads_heldout_rows: ClassVar[bool] = False
    #: the calibrator ``calibrator="auto"`` stands for with this decider
    default_calibrator: ClassVar[str]
    #: whether the oracle calibrator (test labels; the paper's oracle table) may feed it
    accepts_oracle_calibrator: ClassVar[bool] = False

    #: the fitted T of the paper's quantile rule (``None`` where the decider has none)
    temperature_: float | None = None

    @classmethod
    def check_parameters(cls, params: Mapping[str, Any]) -> None:
        """Check combinations of this decider's parameters (each alone is checked already);
        a decider whose parameters combine freely keeps this one, which accepts all.

        Raises:
            InvalidParameterError: a combination is invalid.
        """
        return None

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Decider:
        """An unfitted decider from the estimator's parameters (it takes its own)."""
        return cls(**own_parameters(cls.parameter_constraints, params))

    @abstractmethod
    def fit(self, context: FitContext) -> Decider:
        """Fit on the source data and start a stream; returns self."""

    @abstractmethod
    def reset(self) -> None:
        """Forget the stream: back to the state right after :meth:`fit` (or load)."""

    @abstractmethod
    def decide(self, batch: CalibratedBatch) -> Decision:
        """Adapt to one batch and advance the online state (stateful, like ``predict_proba``)."""

    @property
    @abstractmethod
    def online_prior(self) -> np.ndarray:
        """The current estimate of the target label distribution, (C,) (a copy)."""

    @property
    def shift_statistic(self) -> float | None:
        """The label-shift test's current z-score (``None`` where the decider has no test)."""
        return None

    @abstractmethod
    def state(self) -> PartState:
        """The fitted and online state, as arrays and JSON-compatible metadata."""

    @classmethod
    @abstractmethod
    def from_state(cls, context: LoadContext) -> Decider:
        """Rebuild a fitted decider, mid-stream, from :meth:`state` (checked; errors name the
        field)."""

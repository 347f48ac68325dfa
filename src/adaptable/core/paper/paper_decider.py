"""The paper's decider: the label distribution handler of Algorithm 1, batch after batch.

``AdapTable(preset="paper")`` uses it. At fit: p_s and T (line 3). On each batch: lines 8 and
10-26 (:func:`~adaptable.core.paper.label_handler.adjust_batch`) on the calibrated probabilities the
calibrator made (line 9), advancing the online target-label estimate p^oe (line 26).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from numbers import Real
from typing import Any, ClassVar

import numpy as np

from adaptable.core.paper.label_handler import OnlinePrior, adjust_batch, imbalance_temperature
from adaptable.core.parts.contexts import FitContext, LoadContext, PartState
from adaptable.core.parts.decider import CalibratedBatch, Decider, Decision
from adaptable.framework.parameters import Constraint, Interval, InvalidParameterError


class PaperDecider(Decider):
    """Algorithm 1's label distribution handler, with its online state p^oe.

    Args (``AdapTable(...)`` arguments it owns):
        alpha: smoothing factor of the online target-label estimator (weight of the past).
        q_low, q_high: uncertainty quantiles of the sharpen / soften rule (q_low <= q_high).
        temperature: an explicit T replacing 1.5 rho / (rho - 1 + 1e-6).
        max_temperature: a cap on the formula's T (useful when the source is nearly balanced).

    Attributes (after fit):
        source_prior_: p_s, (C,).
        temperature_: T of the quantile rule.
        online: the online estimator p^oe (:class:`~adaptable.core.paper.label_handler.OnlinePrior`).

    Example:
        >>> from adaptable.core.parts.decider import CalibratedBatch
        >>> from adaptable.core.parts.contexts import FitContext
        >>> prior = np.array([0.75, 0.25])
        >>> decider = PaperDecider().fit(FitContext(None, None, None, prior))
        >>> round(decider.temperature_, 4)
        2.25
        >>> z = np.array([[2.0, 0.0], [0.0, 1.0]])
        >>> decision = decider.decide(CalibratedBatch(z, np.array([[0.8, 0.2], [0.3, 0.7]])))
        >>> decision.proba.shape, decision.online_prior.round(4).tolist()
        ((2, 2), [0.6056, 0.3944])
    """

    preset: ClassVar[str] = "paper"
    needs_features: ClassVar[bool] = False
    default_calibrator: ClassVar[str] = "gnn"
    accepts_oracle_calibrator: ClassVar[bool] = True
    parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "alpha": [Interval(Real, 0, 1, closed="both")],
        "q_low": [Interval(Real, 0, 1, closed="both")],
        "q_high": [Interval(Real, 0, 1, closed="both")],
        "temperature": [Interval(Real, 0, None, closed="neither"), None],
        "max_temperature": [Interval(Real, 0, None, closed="neither"), None],
    }

    def __init__(
        self,
        *,
        alpha: float = 0.1,
        q_low: float = 0.25,
        q_high: float = 0.75,
        temperature: float | None = None,
        max_temperature: float | None = None,
    ) -> None:
        self.alpha = alpha
        self.q_low = q_low
        self.q_high = q_high
        self.temperature = temperature
        self.max_temperature = max_temperature

    @classmethod
    def check_parameters(cls, params: Mapping[str, Any]) -> None:
        if params["q_low"] > params["q_high"]:
            raise InvalidParameterError(
                f"AdapTable needs q_low <= q_high; got q_low={params['q_low']!r}, "
                f"q_high={params['q_high']!r}."
            )

    def fit(self, context: FitContext) -> PaperDecider:
        """p_s as given and T (line 3); p^oe starts uniform."""
        self.source_prior_ = context.source_prior
        self.temperature_ = imbalance_temperature(
            self.source_prior_, self.temperature, self.max_temperature
        )
        self.reset()
        return self

    def reset(self) -> None:
        self.online = OnlinePrior(len(self.source_prior_), self.alpha)

    def decide(self, batch: CalibratedBatch) -> Decision:
        """Lines 8 and 10-26 on one batch; advances p^oe."""
        result = adjust_batch(
            batch.logits,
            batch.calibrated,
            self.source_prior_,
            self.online,
            self.temperature_,
            self.q_low,
            self.q_high,
        )
        return Decision(
            result.proba,
            result.target_prior,
            result.online_prior,
            result.uncertainty,
            result.recalibration_temperatures,
        )

    @property
    def online_prior(self) -> np.ndarray:
        return self.online.value.copy()

    def state(self) -> PartState:
        """p^oe (``online_prior``) and T (``temperature``)."""
        return PartState({"online_prior": self.online.value}, {"temperature": self.temperature_})

    @classmethod
    def from_state(cls, context: LoadContext) -> PaperDecider:
        """T must be what p_s and the parameters give; p^oe a probability vector."""
        reader = context.reader
        decider = cls.from_params(context.params)
        value = reader.field("temperature", (int, float))
        if not np.isfinite(value) or value <= 0:
            raise reader.error("temperature", f"must be a positive number; got {value!r}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            expected = imbalance_temperature(
                context.source_prior, decider.temperature, decider.max_temperature
            )
        if not np.isclose(value, expected, rtol=1e-9, atol=0.0):
            raise reader.error(
                "temperature",
                f"is {value!r} but the source prior and params give {expected!r}",
            )
        online = reader.distribution("online_prior", context.n_classes, positive=False)
        decider.source_prior_ = context.source_prior
        decider.temperature_ = float(value)
        decider.reset()
        decider.online.value = online.copy()
        return decider

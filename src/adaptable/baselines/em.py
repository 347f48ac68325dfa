"""EM prior adjustment (Saerens, Latinne and Decaestecker 2002) on BCTS-calibrated outputs.

Given posteriors p(y|x_i) calibrated under the source prior p_s, EM alternates
    E: p_t(y|x_i) = norm(p(y|x_i) * pi(y) / p_s(y)),   M: pi(y) = mean_i p_t(y|x_i)
from pi = p_s until pi stops moving; pi is the maximum-likelihood target prior. Alexandari et
al. (2020) showed that EM needs calibrated posteriors and that bias-corrected temperature
scaling (BCTS, fitted on the validation split) makes it competitive with or better than BBSE.
Online use: see :mod:`adaptable.baselines.prior_shift`.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import ClassVar

import numpy as np

from adaptable.baselines.bcts import BiasCorrectedTemperature, fit_bcts
from adaptable.baselines.common import FLAG
from adaptable.baselines.prior_shift import PriorShiftMethod
from adaptable.framework.parameters import Constraint, Interval
from adaptable.framework.probability import normalize, softmax


def em_prior(
    proba: np.ndarray, source_prior: np.ndarray, max_iter: int = 100, tol: float = 1e-6
) -> np.ndarray:
    """Saerens et al.'s EM estimate of the target prior.

    Args:
        proba: calibrated posteriors under the source prior, (n, C).
        source_prior: p_s, (C,), all positive.
        max_iter: EM iterations at most.
        tol: stop when no class probability moves by more than this.

    Returns:
        the estimated target prior, (C,), summing to one.

    Example:
        >>> p = np.array([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]])
        >>> em_prior(p, np.array([0.5, 0.5]))  # posteriors that average to p_s: no shift
        array([0.5, 0.5])
        >>> em_prior(p, np.array([0.7, 0.3])).round(3)  # a model expecting mostly class 0
        array([0.097, 0.903])
    """
    proba = np.asarray(proba, dtype=np.float64)
    source_prior = np.asarray(source_prior, dtype=np.float64)
    prior = source_prior.copy()
    for _ in range(max_iter):
        new_prior = normalize(proba * (prior / source_prior)).mean(axis=0)  # E then M step
        done = np.max(np.abs(new_prior - prior)) < tol
        prior = new_prior
        if done:
            break
    return prior / prior.sum()


class EMPriorAdjustment(PriorShiftMethod):
    """Online EM prior adjustment on BCTS-calibrated outputs; works for any model.

    Args:
        alpha: online smoothing factor (AdapTable's 0.1).
        calibrate: fit BCTS on the validation split (True, Alexandari et al.) or use the raw
            softmax (False).
        max_iter, tol: EM stopping rule.
    """

    name = "em"

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        **PriorShiftMethod._parameter_constraints,
        "calibrate": FLAG,
        "max_iter": [Interval(Integral, 1, None)],
        "tol": [Interval(Real, 0, None)],
    }

    def __init__(
        self, *, alpha: float = 0.1, calibrate: bool = True, max_iter: int = 100, tol: float = 1e-6
    ) -> None:
        super().__init__(alpha=alpha)
        self.calibrate = calibrate
        self.max_iter = max_iter
        self.tol = tol
        self._check_parameters()

    def _fit_estimator(self, valid_logits: np.ndarray, y_valid: np.ndarray) -> None:
        #: the fitted BCTS map, or None without calibration
        self.calibration_: BiasCorrectedTemperature | None = (
            fit_bcts(valid_logits, y_valid) if self.calibrate else None
        )

    def _output_proba(self, logits: np.ndarray) -> np.ndarray:
        if self.calibration_ is None:
            return softmax(logits)
        return self.calibration_.proba(logits)

    def _estimate_prior(self, proba: np.ndarray) -> np.ndarray:
        return em_prior(proba, self.source_prior_, self.max_iter, self.tol)

"""Shared skeleton of the label-shift classics (EM, BBSE): estimate p_t(y), re-weight outputs.

Per test batch: the method estimates the batch's label distribution, the estimate is smoothed
online exactly as AdapTable's online target-label estimator smooths its own
(:class:`adaptable.core.OnlinePrior`: ``(1 - alpha) * current + alpha *
previous``, starting uniform, alpha = 0.1), and the outputs are re-weighted by Bayes' rule for
label shift: ``norm(p(y|x) * p_t(y) / p_s(y))``. The source prior is AdapTable's too
(train + validation label frequencies). These methods need only the model's outputs, so they
apply to any model, GBDTs included.
"""

from __future__ import annotations

from numbers import Real
from typing import Any, ClassVar

import numpy as np

from adaptable.baselines.common import CheckedParameters
from adaptable.core import OnlinePrior
from adaptable.core.paper.label_handler import source_prior
from adaptable.framework.method import SourceData, TestTimeMethod
from adaptable.framework.model_adapter import as_logit_function
from adaptable.framework.parameters import Constraint, Interval
from adaptable.framework.probability import normalize


class PriorShiftMethod(CheckedParameters, TestTimeMethod):
    """Base class: subclasses define the output probabilities and the per-batch prior estimate.

    Args:
        alpha: smoothing factor of the online estimate (AdapTable's alpha, 0.1); 0 uses each
            batch's own estimate.

    Attributes (after fit / predict_proba):
        source_prior_: p_s, (C,).
        batch_prior_: the last batch's raw estimate, (C,).
        target_prior_: the smoothed estimate used on the last batch, (C,).
    """

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "alpha": [Interval(Real, 0, 1, closed="both")],
    }

    def __init__(self, *, alpha: float = 0.1) -> None:
        self.alpha = alpha
        self._check_parameters()

    def _fit(self, model: Any, source: SourceData) -> None:
        """Fit the method's output map and estimator on the validation split.

        Raises:
            ValueError: no validation split (both EM's calibration and BBSE's confusion matrix
                are fitted on held-out labelled rows).
        """
        if source.X_valid is None or source.y_valid is None:
            raise ValueError(
                f"{self.name}: needs the validation split (X_valid, y_valid) to fit its "
                "estimator on held-out labelled rows; got none"
            )
        self._logits = as_logit_function(model)
        valid_logits = self._logits(source.X_valid)
        self.n_classes_ = valid_logits.shape[1]
        self.source_prior_ = source_prior(source.y, source.y_valid, n_classes=self.n_classes_)
        self._fit_estimator(valid_logits, source.y_valid)
        self._start_stream()

    def predict_proba(self, X_batch: Any) -> np.ndarray:
        """Re-weighted probabilities of the batch, (n, C), rows summing to one."""
        self._check_fitted()
        self._check_batch(X_batch)
        proba = self._output_proba(self._logits(X_batch))
        self.batch_prior_ = self._estimate_prior(proba)
        self.target_prior_ = self._online.update(self.batch_prior_).copy()
        return normalize(proba * (self.target_prior_ / self.source_prior_))

    def reset(self) -> None:
        """Online estimate back to uniform (as AdapTable's p^oe starts)."""
        self._check_fitted()
        self._start_stream()

    def _start_stream(self) -> None:
        self._online = OnlinePrior(self.n_classes_, self.alpha)
        self.batch_prior_ = self.target_prior_ = None

    # ----------------------------------------------------------------- for subclasses
    def _fit_estimator(self, valid_logits: np.ndarray, y_valid: np.ndarray) -> None:
        raise NotImplementedError

    def _output_proba(self, logits: np.ndarray) -> np.ndarray:
        """The source-prior posteriors that get re-weighted, (n, C)."""
        raise NotImplementedError

    def _estimate_prior(self, proba: np.ndarray) -> np.ndarray:
        """The batch's label distribution estimate, (C,), summing to one."""
        raise NotImplementedError

"""Shared skeleton of the label-shift classics (EM, BBSE): estimate p_t(y), re-weight outputs.

Per test batch: the method estimates the batch's label distribution, the estimate is smoothed
online exactly as AdapTable's online target-label estimator smooths its own
(:class:`adaptable.core.label_handler.OnlinePrior`: ``(1 - alpha) * current + alpha *
previous``, starting uniform, alpha = 0.1), and the outputs are re-weighted by Bayes' rule for
label shift: ``norm(p(y|x) * p_t(y) / p_s(y))``. The source prior is AdapTable's too
(train + validation label frequencies). These methods need only the model's outputs, so they
apply to any model, GBDTs included.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adaptable.baselines._common import (
    check_batch,
    check_fitted,
    check_labels,
    logit_function,
    normalize,
)
from adaptable.core.interface import TestTimeMethod
from adaptable.core.label_handler import OnlinePrior, source_prior


class PriorShiftMethod(TestTimeMethod):
    """Base class: subclasses define the output probabilities and the per-batch prior estimate.

    Args:
        alpha: smoothing factor of the online estimate (AdapTable's alpha, 0.1); 0 uses each
            batch's own estimate.

    Attributes (after fit / predict_proba):
        source_prior_: p_s, (C,).
        batch_prior_: the last batch's raw estimate, (C,).
        target_prior_: the smoothed estimate used on the last batch, (C,).
    """

    def __init__(self, *, alpha: float = 0.1) -> None:
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must lie in [0, 1]; got {alpha!r}")
        self.alpha = float(alpha)
        self._fitted = False

    def fit(
        self,
        model: Any,
        X_source: Any,
        y_source: np.ndarray,
        X_valid: Any = None,
        y_valid: np.ndarray | None = None,
    ) -> PriorShiftMethod:
        """Fit the method's output map and estimator on the validation split.

        Raises:
            ValueError: no validation split (both EM's calibration and BBSE's confusion matrix
                are fitted on held-out labelled rows).
        """
        if X_valid is None or y_valid is None:
            raise ValueError(
                f"{self.name}: needs the validation split (X_valid, y_valid) to fit its "
                "estimator on held-out labelled rows; got none"
            )
        self._logits = logit_function(model)
        valid_logits = self._logits(X_valid)
        y_valid = check_labels(y_valid, valid_logits.shape[0], "y_valid", self.name)
        n_classes = valid_logits.shape[1]
        y_source_arr = None
        if y_source is not None:
            y_source_arr = check_labels(y_source, len(y_source), "y_source", self.name)
        self.source_prior_ = source_prior(y_source_arr, y_valid, n_classes=n_classes)
        self.n_classes_ = n_classes
        self._fit_estimator(valid_logits, y_valid)
        self._fitted = True
        self.reset()
        return self

    def predict_proba(self, X_batch: Any) -> np.ndarray:
        """Re-weighted probabilities of the batch, (n, C), rows summing to one."""
        check_fitted(self._fitted, self.name)
        check_batch(X_batch, self.name)
        proba = self._output_proba(self._logits(X_batch))
        self.batch_prior_ = self._estimate_prior(proba)
        self.target_prior_ = self._online.update(self.batch_prior_).copy()
        return normalize(proba * (self.target_prior_ / self.source_prior_))

    def reset(self) -> None:
        """Online estimate back to uniform (as AdapTable's p^oe starts)."""
        check_fitted(self._fitted, self.name)
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

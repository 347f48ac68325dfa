"""``source``: the source model's own predictions, no adaptation (the reference row)."""

from __future__ import annotations

from typing import Any

import numpy as np

from adaptable.baselines.common import CheckedParameters
from adaptable.framework.method import SourceData, TestTimeMethod
from adaptable.framework.model_adapter import as_logit_function
from adaptable.framework.probability import softmax


class SourceOnly(CheckedParameters, TestTimeMethod):
    """No adaptation: ``softmax(f(x))`` for any model the model adapter accepts.

    Example:
        >>> import numpy as np
        >>> from sklearn.linear_model import LogisticRegression
        >>> X = np.array([[0.0], [1.0], [2.0], [3.0]]); y = np.array([0, 0, 1, 1])
        >>> model = LogisticRegression().fit(X, y)
        >>> SourceOnly().fit(model, X, y).predict_proba(X).shape
        (4, 2)
    """

    name = "source"

    def _fit(self, model: Any, source: SourceData) -> None:
        """Keep the model's logit function; source data are optional (labels name classes_)."""
        self._logits = as_logit_function(model)

    def predict_proba(self, X_batch: Any) -> np.ndarray:
        """``softmax(f(X_batch))``, float64 (n, C)."""
        return self._source_proba(X_batch)

    def _source_proba(self, X_batch: Any) -> np.ndarray:
        """The checked source prediction; output-only methods (LAME) start from it."""
        self._check_fitted()
        self._check_batch(X_batch)
        return softmax(self._logits(X_batch))

    def reset(self) -> None:
        """Nothing to reset."""

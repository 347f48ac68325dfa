"""``source``: the source model's own predictions, no adaptation (the reference row)."""

from __future__ import annotations

from typing import Any

import numpy as np

from adaptable.core import TestTimeMethod, as_logit_function, softmax


class SourceOnly(TestTimeMethod):
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

    def fit(
        self,
        model: Any,
        X_source: Any = None,
        y_source: Any = None,
        X_valid: Any = None,
        y_valid: Any = None,
    ) -> SourceOnly:
        """Keep the model's logit function; source data are optional (their labels name
        ``classes_``)."""
        return super().fit(model, X_source, y_source, X_valid, y_valid)

    def _fit(
        self,
        model: Any,
        X_source: Any,
        y_source: np.ndarray | None,
        X_valid: Any,
        y_valid: np.ndarray | None,
    ) -> None:
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

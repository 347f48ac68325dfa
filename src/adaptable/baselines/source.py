"""``source``: the source model's own predictions, no adaptation (the reference row)."""

from __future__ import annotations

from typing import Any

import numpy as np

from adaptable.baselines._common import check_batch, check_fitted, logit_function, softmax
from adaptable.core.interface import TestTimeMethod


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

    def __init__(self) -> None:
        self._fitted = False

    def fit(
        self,
        model: Any,
        X_source: Any = None,
        y_source: np.ndarray | None = None,
        X_valid: Any = None,
        y_valid: np.ndarray | None = None,
    ) -> SourceOnly:
        """Keep the model's logit function; source data are not used."""
        self._logits = logit_function(model)
        self._fitted = True
        return self

    def predict_proba(self, X_batch: Any) -> np.ndarray:
        """``softmax(f(X_batch))``, float64 (n, C)."""
        return self._source_proba(X_batch)

    def _source_proba(self, X_batch: Any) -> np.ndarray:
        """The checked source prediction; output-only methods (LAME) start from it."""
        check_fitted(self._fitted, self.name)
        check_batch(X_batch, self.name)
        return softmax(self._logits(X_batch))

    def reset(self) -> None:
        """Nothing to reset."""

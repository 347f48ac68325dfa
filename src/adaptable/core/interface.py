"""The interface every test-time method shares (AdapTable, the TTA baselines, no adaptation).

The experiment runner treats every method alike through it:

    method.fit(model, X_source, y_source, X_valid, y_valid)
    for X_batch in stream:
        proba = method.predict_proba(X_batch)   # adapts on this batch, advances online state
    method.reset()                              # back to the state right after fit
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np


class TestTimeMethod(ABC):
    """Base class: fit once on source data, then adapt a stream batch by batch."""

    #: registry name, e.g. "adaptable", "tent"
    name: str = "method"
    #: True when the method updates model parameters (torch backbones only)
    updates_parameters: bool = False

    @abstractmethod
    def fit(
        self,
        model: Any,
        X_source: Any,
        y_source: np.ndarray,
        X_valid: Any = None,
        y_valid: np.ndarray | None = None,
    ) -> TestTimeMethod:
        """Prepare the method on labelled source data; the source model stays as given."""

    @abstractmethod
    def predict_proba(self, X_batch: Any) -> np.ndarray:
        """Adapt to one test batch and return its class probabilities, shape (n, C)."""

    def predict(self, X_batch: Any) -> np.ndarray:
        """Class indices of :meth:`predict_proba` (adapts on the batch like it)."""
        return np.asarray(self.predict_proba(X_batch)).argmax(axis=1)

    @abstractmethod
    def reset(self) -> None:
        """Restore the state right after :meth:`fit` (online estimates, model weights)."""

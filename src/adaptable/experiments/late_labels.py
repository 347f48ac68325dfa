"""Late labels: the feedback protocol of an experiment run with ``spec.feedback``."""

from __future__ import annotations

import inspect
from collections import deque
from typing import Any

import numpy as np

from adaptable.experiments.spec import ExperimentSpec


class LateLabels:
    """The feedback protocol of :func:`~adaptable.experiments.experiment.predict_stream`: after
    each batch is predicted, a random ``spec.feedback_share`` of its rows is chosen (seeded by
    the experiment's seed, the same rows for every method), and their labels go to
    ``method.partial_fit`` just before the batch ``spec.feedback_delay + 1`` batches later is
    predicted. Every row is therefore scored as
    predicted before its label arrived. A method whose ``partial_fit`` takes ``rows`` also gets
    the rows' positions in the stream (AdapTable's drift report matches them to its
    predictions).

    Raises:
        ValueError: the method has no ``partial_fit``.
    """

    def __init__(self, spec: ExperimentSpec, method: Any) -> None:
        learn = getattr(method, "partial_fit", None)
        if not callable(learn):
            raise ValueError(
                f"method {spec.method!r} takes no labels (no partial_fit); run it without feedback"
            )
        self.learn = learn
        self.with_rows = "rows" in inspect.signature(learn).parameters
        self.share, self.delay = spec.feedback_share, spec.feedback_delay
        self.rng = np.random.default_rng([spec.seed, 31])
        self.pending: deque[tuple[int, Any, np.ndarray, np.ndarray]] = deque()
        self.batch, self.first_row = 0, 0

    def deliver(self) -> None:
        """Pass on the labels of the batches at least ``delay + 1`` batches back."""
        while self.pending and self.pending[0][0] + self.delay < self.batch:
            _, X, y, rows = self.pending.popleft()
            if len(y) == 0:
                continue
            if self.with_rows:
                self.learn(X, y, rows=rows)
            else:
                self.learn(X, y)

    def reveal(self, X_batch: Any, y_batch: np.ndarray) -> None:
        """Choose the rows of the batch just predicted whose labels will arrive."""
        chosen = np.flatnonzero(self.rng.random(len(y_batch)) < self.share)
        self.pending.append(
            (self.batch, take_rows(X_batch, chosen), y_batch[chosen], self.first_row + chosen)
        )
        self.batch += 1
        self.first_row += len(y_batch)


def take_rows(X: Any, rows: np.ndarray) -> Any:
    """Rows ``rows`` of a frame or an array."""
    return X.iloc[rows] if hasattr(X, "iloc") else np.asarray(X)[rows]

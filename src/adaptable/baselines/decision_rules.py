"""Stateless decision rules on the source model's outputs: ``balanced`` and ``oracle_prior``.

- ``balanced``: ``argmax_y p(y|x) / p_s(y)`` (post-hoc logit adjustment, Menon et al. 2021).
  Under pure label shift it is the balanced-accuracy-optimal decision whatever the target prior
  is, and it needs no state, no calibrator and no test statistics.
- ``oracle_prior``: Bayes' rule for label shift with the TRUE target prior q of the whole test
  stream, ``argmax_y p(y|x) q(y) / p_s(y)`` (the accuracy-optimal correction when the shift is a
  pure label shift and the model is calibrated). It reads the test labels, so it is an oracle
  row for tables, never a method to use.

p_s is the package's source prior everywhere: the train + validation label frequencies. Both
work for any model the model adapter accepts (torch modules, our source models, GBDTs,
``predict_proba`` objects).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adaptable.baselines.source import SourceOnly
from adaptable.core.paper.label_handler import source_prior
from adaptable.framework.method import SourceData
from adaptable.framework.probability import normalize


class BalancedDecision(SourceOnly):
    """``norm(p(y|x) / p_s(y))``: the source posteriors re-weighted to a uniform class prior.

    The probabilities are those of Bayes' rule for a uniform target prior, so their argmax is
    the balanced decision rule; nothing is adapted and ``reset`` has nothing to do.

    Example:
        >>> import numpy as np
        >>> from sklearn.linear_model import LogisticRegression
        >>> X = np.array([[0.0], [1.0], [2.0], [3.0], [4.0]]); y = np.array([0, 0, 0, 0, 1])
        >>> rule = BalancedDecision().fit(LogisticRegression().fit(X, y), X, y)
        >>> rule.source_prior_.tolist()
        [0.8, 0.2]
    """

    name = "balanced"

    def _fit(self, model: Any, source: SourceData) -> None:
        """Keep the model's logit function and p_s (train + valid label frequencies).

        Raises:
            ValueError: neither ``y_source`` nor ``y_valid`` given (p_s needs labels).
        """
        if source.y is None and source.y_valid is None:
            raise ValueError(
                f"{self.name}: needs the source labels (y_source and/or y_valid) for the "
                "source prior p_s; got none"
            )
        #: p_s, (C,)
        self.source_prior_ = source_prior(source.y, source.y_valid)
        super()._fit(model, source)

    def predict_proba(self, X_batch: Any) -> np.ndarray:
        """``norm(softmax(f(x)) * w)`` with ``w = 1 / p_s`` (float64, (n, C))."""
        proba = self._source_proba(X_batch)
        return normalize(proba * self._class_weights(proba.shape[1]))

    def _class_weights(self, n_classes: int) -> np.ndarray:
        return 1.0 / self._checked_prior(n_classes)

    def _checked_prior(self, n_classes: int) -> np.ndarray:
        if n_classes != len(self.source_prior_):
            raise ValueError(
                f"{self.name}: the model gives {n_classes} classes but the source labels hold "
                f"{len(self.source_prior_)}; every class needs a source example"
            )
        return self.source_prior_


class OraclePrior(BalancedDecision):
    """ORACLE: ``norm(p(y|x) * q(y) / p_s(y))`` with q the true label distribution of the whole
    test stream. Uses test labels; exists only as a reference row.

    The runner sees :attr:`needs_test_labels` and calls :meth:`receive_test_labels` with the
    stream's labels once, before the first batch (no other method is ever given test labels).
    """

    name = "oracle_prior"
    #: the experiment runner passes the stream's labels to :meth:`receive_test_labels`
    needs_test_labels = True

    def _fit(self, model: Any, source: SourceData) -> None:
        """As :class:`BalancedDecision`; the target prior is unknown until the labels come."""
        super()._fit(model, source)
        #: q, (C,): the stream's label frequencies (``None`` until receive_test_labels)
        self.target_prior_: np.ndarray | None = None

    def receive_test_labels(self, y_stream: np.ndarray) -> None:
        """Set q to the label frequencies of the WHOLE test stream (the oracle's knowledge)."""
        self._check_fitted()
        y = self._label_codes(y_stream, "y_stream")
        if y.size == 0:
            raise ValueError(f"{self.name}: the test stream has no labels")
        n_classes = len(self.source_prior_)
        if y.min() < 0 or y.max() >= n_classes:
            raise ValueError(
                f"{self.name}: test labels must lie in 0..{n_classes - 1}; got "
                f"{int(y.min())}..{int(y.max())}"
            )
        self.target_prior_ = np.bincount(y, minlength=n_classes) / y.size

    def _class_weights(self, n_classes: int) -> np.ndarray:
        if self.target_prior_ is None:
            raise RuntimeError(
                f"{self.name} is an oracle: call receive_test_labels(y_stream) with the test "
                "stream's labels before predicting (the experiment runner does so)"
            )
        return self.target_prior_ / self._checked_prior(n_classes)

    @property
    def state(self) -> dict[str, np.ndarray | None]:
        """The prior it corrects to, for the runner's traces."""
        return {"target_prior": self.target_prior_}

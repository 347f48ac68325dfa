"""Anchors that use late labels alone: what the labelled target rows give without an adapter.

Each takes the labels through ``partial_fit(X, y)`` (rows predicted earlier, their labels now;
any share, any delay, several calls between two batches) and adapts its outputs to them:

- :class:`LabelledRecalibration` (``labelled_recalibration``): softmax(a log p + b), one scale
  and one offset per class fitted on the labelled target rows alone (a light ridge towards the
  model, so that a handful of rows gives a fit), refitted whenever labels arrive;
- :class:`LabelledPrior` (``labelled_prior``): the prior counted from the labelled rows with
  Laplace's pseudo-counts, norm(p * p_hat_t / p_s);
- :class:`LabelledOnline` (``labelled_online``): an online multinomial logistic regression over
  the model's log-posteriors, started at the model itself (identity weights) and updated by one
  stochastic gradient step per labelled row in arrival order.

Each decides for ``objective`` as the recommended adapter does: the plug-in class weights
(:func:`adaptable.core.decision.rules.plugin_weights`) over a uniform reservoir of the stream's rows,
re-scored by the method's corrected posteriors (``"accuracy"``: their argmax). They need only
the model's outputs, so they apply to any model. Before any label each is the model's argmax
(``labelled_prior``: the balanced rule's posteriors, Laplace's counts being uniform).

Example:
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 1)); y = (X[:, 0] + rng.normal(size=400) > 0).astype(int)
    >>> method = LabelledPrior(objective="accuracy").fit(LogisticRegression().fit(X, y), X, y)
    >>> method.partial_fit(X[:50], np.zeros(50, dtype=int)).target_prior_.round(3).tolist()
    [0.981, 0.019]
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np

from adaptable.baselines.common import CheckedParameters
from adaptable.core.decision.rules import OBJECTIVES, plugin_weights
from adaptable.core.labels import LabelledReservoir, fit_affine
from adaptable.core.paper.label_handler import source_prior
from adaptable.framework.method import SourceData, TestTimeMethod
from adaptable.framework.model_adapter import as_logit_function
from adaptable.framework.parameters import Constraint, Interval, StrOptions
from adaptable.framework.probability import normalize, softmax


class LabelledAnchor(CheckedParameters, TestTimeMethod):
    """Base: the model's log-posteriors, labelled rows through :meth:`partial_fit`, and the
    objective's decision over a reservoir of the stream; subclasses correct the posteriors.

    Args:
        objective: the metric to decide for, one of
            :data:`adaptable.core.decision.rules.OBJECTIVES`.
        capacity: labelled rows kept, and stream rows kept for the plug-in decision.
        seed: seeds both reservoirs.

    Attributes (after fit):
        n_classes_, source_prior_: C and p_s (train + validation label frequencies).
        n_labelled_: labelled rows received since the last reset.
    """

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "objective": [StrOptions(OBJECTIVES)],
        "capacity": [Interval(Integral, 1, None)],
        "seed": [Interval(Integral, 0, None)],
    }

    def __init__(self, *, objective: str = "macro_f1", capacity: int = 2048, seed: int = 0):
        self.objective = objective
        self.capacity = capacity
        self.seed = seed
        self._check_parameters()

    def _fit(self, model: Any, source: SourceData) -> None:
        """Keep the model's logit function and p_s (the source labels are needed for p_s)."""
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}; got {self.objective!r}")
        if not (isinstance(self.capacity, int) and self.capacity >= 1):
            raise ValueError(f"capacity must be a positive integer; got {self.capacity!r}")
        if source.y is None:
            raise ValueError(f"{self.name}: fit needs the source labels (for p_s).")
        self._logits = as_logit_function(model)
        self.n_classes_ = len(np.unique(np.concatenate([source.y, *_given(source.y_valid)])))
        self.source_prior_ = source_prior(source.y, source.y_valid, n_classes=self.n_classes_)
        self._start_stream()

    def _start_stream(self) -> None:
        self._labelled = LabelledReservoir(self.n_classes_, self.capacity, self.seed)
        # a uniform sample of the stream's rows for the plug-in decision (their labels unknown:
        # stored as 0 and never read)
        self._stream = LabelledReservoir(self.n_classes_, self.capacity, self.seed + 1)
        self._learn_reset()

    @property
    def n_labelled_(self) -> int:
        self._check_fitted()
        return self._labelled.n_seen

    def reset(self) -> None:
        """Forget the stream and its labels."""
        self._check_fitted()
        self._start_stream()

    def _checked_labels(self, X: Any, y: Any) -> np.ndarray | None:
        """``y`` as label codes checked against ``X``'s rows; ``None`` where no labels arrived
        (nothing to learn)."""
        self._check_fitted()
        codes = self._label_codes(y, "y")
        if len(codes) == 0 and X is not None and len(X) == 0:
            return None
        n_rows = self._check_batch(X)
        if len(codes) != n_rows:
            raise ValueError(f"{self.name}: X has {n_rows} rows but y has {len(codes)} labels.")
        return codes

    def partial_fit(self, X: Any, y: Any) -> LabelledAnchor:
        """Labelled target rows (any rows the stream held, in any number of calls).

        Args:
            X: the rows, as the model takes them.
            y: their labels, from ``classes_`` (no rows at all: nothing happens).

        Returns:
            self.
        """
        codes = self._checked_labels(X, y)
        if codes is None:
            return self
        log_p = np.log(np.maximum(softmax(self._logits(X)), 1e-300))
        self._labelled.add(log_p, codes)
        self._learn(log_p, codes)
        return self

    def predict_proba(self, X_batch: Any) -> np.ndarray:
        """The corrected posteriors re-weighted for the objective, (n, C) (argmax decides)."""
        self._check_fitted()
        self._check_batch(X_batch)
        log_p = np.log(np.maximum(softmax(self._logits(X_batch)), 1e-300))
        self._stream.add(log_p, np.zeros(len(log_p), dtype=np.int64))
        corrected = self._corrected(log_p)
        if self.objective == "accuracy":
            return corrected
        weights = plugin_weights(self._corrected(self._stream.scores), self.objective)
        return normalize(corrected * weights)

    # ----------------------------------------------------------------- for subclasses
    def _learn_reset(self) -> None:
        """The correction as it is before any label."""

    def _learn(self, log_p: np.ndarray, codes: np.ndarray) -> None:
        """Take newly labelled rows (already in ``self._labelled``)."""

    def _corrected(self, log_p: np.ndarray) -> np.ndarray:
        """The target posteriors of rows with these log-posteriors, (n, C)."""
        raise NotImplementedError


class LabelledRecalibration(LabelledAnchor):
    """softmax(a log p + b) fitted on the labelled target rows alone.

    Args:
        strength: the ridge towards the model (a = 1, b = 0), in rows' worth (see
            :func:`adaptable.core.labels.fit_affine`); small, so the labels decide.
        min_labelled: labelled rows before the first fit (the model's posteriors until then).
        objective, capacity, seed: see :class:`LabelledAnchor`.

    Attributes:
        scale_, offset_: the current fit (1 and zeros before it).
    """

    name = "labelled_recalibration"
    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        **LabelledAnchor._parameter_constraints,
        "strength": [Interval(Real, 0, None, closed="left")],
        "min_labelled": [Interval(Integral, 1, None)],
    }

    def __init__(
        self,
        *,
        strength: float = 1.0,
        min_labelled: int = 5,
        objective: str = "macro_f1",
        capacity: int = 2048,
        seed: int = 0,
    ):
        self.strength = strength
        self.min_labelled = min_labelled
        super().__init__(objective=objective, capacity=capacity, seed=seed)

    def _learn_reset(self) -> None:
        if not self.strength > 0:
            raise ValueError(f"strength must be > 0; got {self.strength!r}")
        self.scale_, self.offset_ = 1.0, np.zeros(self.n_classes_)

    def _learn(self, log_p: np.ndarray, codes: np.ndarray) -> None:
        if self._labelled.n_seen >= self.min_labelled:
            self.scale_, self.offset_ = fit_affine(
                self._labelled.scores,
                self._labelled.labels,
                np.zeros(self.n_classes_),
                self.strength,
            )

    def _corrected(self, log_p: np.ndarray) -> np.ndarray:
        return softmax(self.scale_ * log_p + self.offset_)


class LabelledPrior(LabelledAnchor):
    """Prior correction by the labelled rows' label counts: norm(p * p_hat_t / p_s),
    p_hat_t = (counts + 1) / (n + C).

    Attributes:
        target_prior_: p_hat_t (uniform before any label).
    """

    name = "labelled_prior"

    def _learn_reset(self) -> None:
        self.target_prior_ = np.full(self.n_classes_, 1.0 / self.n_classes_)

    def _learn(self, log_p: np.ndarray, codes: np.ndarray) -> None:
        counts = self._labelled.counts
        self.target_prior_ = (counts + 1.0) / (counts.sum() + self.n_classes_)

    def _corrected(self, log_p: np.ndarray) -> np.ndarray:
        return normalize(np.exp(log_p) * (self.target_prior_ / self.source_prior_))


class LabelledOnline(LabelledAnchor):
    """Online multinomial logistic regression softmax(W log p + b) on the labelled rows,
    started at the model (W = I, b = 0), one gradient step per labelled row.

    Args:
        learning_rate: eta0; row t (counted from 1) takes the step eta0 / sqrt(t).
        objective, capacity, seed: see :class:`LabelledAnchor`.

    Attributes:
        weights_: W, (C, C); bias_: b, (C,).
    """

    name = "labelled_online"
    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        **LabelledAnchor._parameter_constraints,
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(
        self,
        *,
        learning_rate: float = 0.1,
        objective: str = "macro_f1",
        capacity: int = 2048,
        seed: int = 0,
    ):
        self.learning_rate = learning_rate
        super().__init__(objective=objective, capacity=capacity, seed=seed)

    def _learn_reset(self) -> None:
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate must be > 0; got {self.learning_rate!r}")
        self.weights_ = np.eye(self.n_classes_)
        self.bias_ = np.zeros(self.n_classes_)
        self._steps = 0

    def _learn(self, log_p: np.ndarray, codes: np.ndarray) -> None:
        # Row by row in arrival order: the result does not depend on how the labels were
        # split into calls. Log-posteriors below log(1e-12) are clipped, so one confident
        # mistake cannot blow a step up.
        features = np.maximum(log_p, np.log(1e-12))
        for row, label in zip(features, codes.tolist(), strict=True):
            self._steps += 1
            rate = self.learning_rate / np.sqrt(self._steps)
            p = softmax((self.weights_ @ row + self.bias_)[None, :])[0]
            p[label] -= 1.0
            self.weights_ -= rate * np.outer(p, row)
            self.bias_ -= rate * p

    def _corrected(self, log_p: np.ndarray) -> np.ndarray:
        features = np.maximum(log_p, np.log(1e-12))
        return softmax(features @ self.weights_.T + self.bias_)


def _given(values: np.ndarray | None) -> list[np.ndarray]:
    return [] if values is None else [values]

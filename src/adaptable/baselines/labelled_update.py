"""Anchors that use late labels to update the model, not only to re-weight its outputs.

The label-only anchors of :mod:`adaptable.baselines.labelled` correct the frozen model's
posteriors; where p(y|x) itself moved along the features, no correction of the posteriors alone
can follow it. These two read the features too:

- :class:`LabelledPatch` (``labelled_patch``), for any model: a multinomial logistic
  regression fitted on the labelled target rows alone, over the model's log-posteriors and the
  encoded features, that starts from the model: logits = log p + b + log p A + x B, with a
  ridge penalty on (A, B) (so a strong penalty is the model itself, up to the offset b), its
  strength chosen by 3-fold cross-validation on the labelled rows (a fixed strength below
  :data:`~adaptable.core.updates.patch.CV_MIN_ROWS` rows). Features: the numeric columns standardised, the categorical ones
  one-hot (:class:`adaptable.encoding.Encoder`, fitted on the source rows).
- :class:`LabelledRefit` (``labelled_refit``), for a refittable model (a scikit-learn estimator
  that ``sklearn.base.clone`` copies, Pipelines included, or one of the package's supervised
  models, :mod:`adaptable.models.supervised`): a copy of the model with its hyper-parameters,
  refitted on the source training rows given to ``fit`` (at most ``max_source_rows``, a seeded
  uniform sample) plus the labelled target rows, each target row weighted ``w``:

  - ``"plain"`` (default): w = 1 (a plain refit on the union);
  - ``"ramp"``: w = n_source / max(n_target, ramp_labels): the target's total weight grows with
    its labels and equals the source's from ``ramp_labels`` labels on;
  - ``"balanced"``: w = n_source / n_target (the target weighs as much as the source at once).

  Why plain (measured on the development role's long domain splits, 5 % of labels, delay 10,
  three seeds; ``docs/research/model_update_development.md``): ``"ramp"`` gains more on
  logistic-regression sources (+2.8 against +2.5 macro-F1 points on average) but each target
  row weighs up to n_source / 1,000 source rows, and boosted trees fit those few heavy rows:
  on XGBoost sources ``"ramp"`` gains +2.8 with a worst case of -2.4, ``"plain"`` +3.6 with a
  worst case of -0.4. ``"balanced"`` was worst on both counts (logistic regression: +1.7,
  worst -2.7).

  The weight goes to ``fit(..., sample_weight=w)`` where the estimator takes one (a Pipeline's
  last step: ``<step>__sample_weight``); otherwise (the package's supervised models, kNN) rows
  are repeated a whole number of times (w rounded). A model that cannot be refitted (a torch
  module, a callable, no training rows) falls back to the patch, with one warning.

Both update on a schedule: first at ``min_labelled`` labels (20), then each time the labelled
count has grown by the factor ``growth`` since the last update (2: at 20, 40, 80, ... labels
when they come one by one; labels that come in larger calls update once per call at most, at
the end of the call, so 50 and then 50 more update at 50 and 100). Before the first update each is the model. Both decide for ``objective`` as
the other anchors do: the plug-in class weights over a uniform reservoir of the stream's rows
(here the rows themselves, re-scored after every update), re-scored by the updated posteriors.

Example:
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 1)); y = (X[:, 0] + rng.normal(size=400) > 0).astype(int)
    >>> method = LabelledRefit(objective="accuracy").fit(LogisticRegression().fit(X, y), X, y)
    >>> Xt = rng.normal(size=(40, 1)); yt = (Xt[:, 0] < 0).astype(int)   # the concept flipped
    >>> method.partial_fit(Xt, yt).update_labels_
    [40]
"""

from __future__ import annotations

import time
import warnings
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np

from adaptable.baselines.common import FLAG
from adaptable.baselines.labelled import LabelledAnchor
from adaptable.core.decision.rules import plugin_weights
from adaptable.core.updates.candidates import PatchPredictor
from adaptable.core.updates.patch import choose_strength, clipped_log, fit_patch
from adaptable.core.updates.refit import refit_logits, refit_refusal, source_sample
from adaptable.core.updates.row_tables import (
    TableReservoir,
    as_table,
    concat_tables,
    take_rows,
)
from adaptable.encoding import Encoder
from adaptable.framework.method import SourceData
from adaptable.framework.parameters import Constraint, Interval, StrOptions
from adaptable.framework.probability import normalize, softmax

WEIGHTINGS = ("plain", "ramp", "balanced")


class LabelledPatch(LabelledAnchor):
    """A logistic-regression patch over [log p, x] fitted on the labelled target rows, started
    at the model (see the module docstring).

    Args:
        strength: the ridge on the patch's coefficients, in rows' worth of log-loss; ``None``
            (default): chosen among :data:`~adaptable.core.updates.patch.STRENGTHS` by 3-fold cross-validation on the
            labelled rows (:data:`~adaptable.core.updates.patch.DEFAULT_STRENGTH` below :data:`~adaptable.core.updates.patch.CV_MIN_ROWS` rows).
        use_features: read the encoded features (``False``: the log-posteriors alone, a
            full-matrix recalibration).
        min_labelled: labelled rows before the first update (the model until then).
        growth: the next update comes once the labelled count has grown by this factor since
            the last one.
        objective, capacity, seed: see :class:`~adaptable.baselines.labelled.LabelledAnchor`
            (``capacity``: labelled rows kept, and stream rows kept for the decision).

    Attributes (after fit):
        update_labels_: the labelled count at each update since the last reset.
        update_seconds_: how long each update took.
        strength_: the strength of the current patch (``None`` before the first).
    """

    name = "labelled_patch"
    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        **LabelledAnchor._parameter_constraints,
        "strength": [Interval(Real, 0, None, closed="neither"), None],
        "use_features": FLAG,
        "min_labelled": [Interval(Integral, 1, None)],
        "growth": [Interval(Real, 1, None, closed="neither")],
    }

    def __init__(
        self,
        *,
        strength: float | None = None,
        use_features: bool = True,
        min_labelled: int = 20,
        growth: float = 2.0,
        objective: str = "macro_f1",
        capacity: int = 2048,
        seed: int = 0,
    ):
        self.strength = strength
        self.use_features = use_features
        self.min_labelled = min_labelled
        self.growth = growth
        super().__init__(objective=objective, capacity=capacity, seed=seed)

    # ----------------------------------------------------------------- fit and stream
    def _fit(self, model: Any, source: SourceData) -> None:
        self._encoder = None
        if self.use_features and source.X is not None:
            self._encoder = _fitted_encoder(source.X, self.name)
        super()._fit(model, source)

    def _start_stream(self) -> None:
        self._labelled = TableReservoir(self.capacity, self.seed)
        # a uniform sample of the stream's rows, with their current posteriors, for the
        # plug-in decision (their labels unknown: stored as 0 and never read)
        self._stream = TableReservoir(self.capacity, self.seed + 1, width=self.n_classes_)
        self.update_labels_: list[int] = []
        self.update_seconds_: list[float] = []
        self._next_update = self.min_labelled
        self._learn_reset()

    def _learn_reset(self) -> None:
        self._patch: PatchPredictor | None = None
        self._patch_encoder: Encoder | None = None
        self.strength_: float | None = None

    def partial_fit(self, X: Any, y: Any) -> LabelledPatch:
        """Labelled target rows (any rows the stream held, in any number of calls); updates
        when the labelled count reaches the schedule's next step.

        Args:
            X: the rows, as the model takes them.
            y: their labels, from ``classes_`` (no rows at all: nothing happens).

        Returns:
            self.
        """
        codes = self._checked_labels(X, y)
        if codes is None:
            return self
        self._labelled.add(as_table(X), codes)
        n = self._labelled.n_seen
        if n >= self._next_update:
            self._next_update = max(n + 1, int(np.ceil(n * self.growth)))
            tick = time.perf_counter()
            self._update()
            self.update_labels_.append(n)
            self.update_seconds_.append(time.perf_counter() - tick)
            rows = self._stream.rows()
            if rows is not None:  # the kept stream rows, re-scored by the updated model
                self._stream.values[:] = self._posteriors(rows)
        return self

    def predict_proba(self, X_batch: Any) -> np.ndarray:
        """The updated posteriors re-weighted for the objective, (n, C) (argmax decides)."""
        self._check_fitted()
        self._check_batch(X_batch)
        X_batch = as_table(X_batch)
        posteriors = self._posteriors(X_batch)
        self._stream.add(X_batch, np.zeros(len(posteriors), dtype=np.int64), posteriors)
        if self.objective == "accuracy":
            return posteriors
        return normalize(posteriors * plugin_weights(self._stream.values, self.objective))

    # ----------------------------------------------------------------- the patch
    def _update(self) -> None:
        self._fit_patch()

    def _posteriors(self, X: Any) -> np.ndarray:
        return self._patched(X)

    def _patched(self, X: Any) -> np.ndarray:
        logits = self._logits(X)
        if self._patch is None:
            return softmax(clipped_log(softmax(logits)))
        return self._patch(X, logits)

    def _fit_patch(self) -> None:
        X = self._labelled.rows()
        labels = self._labelled.labels
        if self.use_features and self._encoder is None:
            # no source rows were given: the labelled rows set the scales
            self._patch_encoder = _fitted_encoder(X, self.name)
        encoder = self._encoder or self._patch_encoder
        logits = self._logits(X)
        log_p = clipped_log(softmax(logits))
        design = PatchPredictor(encoder, np.zeros(0), np.zeros(0)).design(X, log_p)
        strength = self.strength
        if strength is None:
            strength = choose_strength(log_p, design, labels, self.n_classes_, self.seed)
        weights, bias = fit_patch(log_p, design, labels, self.n_classes_, strength)
        self._patch = PatchPredictor(encoder, weights, bias)
        self.strength_ = strength


class LabelledRefit(LabelledPatch):
    """The model refitted on its training rows plus the labelled target rows (see the module
    docstring); the patch where the model cannot be refitted.

    Args:
        target_weight: ``"plain"``, ``"ramp"`` or ``"balanced"`` (the module docstring).
        ramp_labels: the labelled count from which the target weighs as much as the source
            (``"ramp"``).
        max_source_rows: source training rows kept (a uniform sample, seeded by ``seed``).
        strength, use_features, min_labelled, growth, objective, capacity, seed: see
            :class:`LabelledPatch` (``strength`` and ``use_features`` matter only for the
            fallback).

    Attributes (after fit):
        refittable_: whether the model is refitted (``False``: the patch stands in).
        n_source_rows_: the source rows kept for the refits.
        refitted_: the latest refitted model (``None`` before the first refit).
    """

    name = "labelled_refit"
    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        **LabelledPatch._parameter_constraints,
        "target_weight": [StrOptions(WEIGHTINGS)],
        "ramp_labels": [Interval(Integral, 1, None)],
        "max_source_rows": [Interval(Integral, 1, None)],
    }

    def __init__(
        self,
        *,
        target_weight: str = "plain",
        ramp_labels: int = 1000,
        max_source_rows: int = 20_000,
        strength: float | None = None,
        use_features: bool = True,
        min_labelled: int = 20,
        growth: float = 2.0,
        objective: str = "macro_f1",
        capacity: int = 2048,
        seed: int = 0,
    ):
        self.target_weight = target_weight
        self.ramp_labels = ramp_labels
        self.max_source_rows = max_source_rows
        super().__init__(
            strength=strength,
            use_features=use_features,
            min_labelled=min_labelled,
            growth=growth,
            objective=objective,
            capacity=capacity,
            seed=seed,
        )

    def _fit(self, model: Any, source: SourceData) -> None:
        super()._fit(model, source)
        self._model = model
        reason = refit_refusal(model, has_rows=source.X is not None and source.y is not None)
        self.refittable_ = reason is None
        self._source_X: Any = None
        self._source_y: np.ndarray | None = None
        self.n_source_rows_ = 0
        if reason is not None:
            warnings.warn(
                f"{self.name}: the model cannot be refitted ({reason}); the labelled patch "
                "(labelled_patch) stands in for the refit.",
                UserWarning,
                stacklevel=4,  # _fit <- TestTimeMethod.fit <- CheckedParameters.fit <- caller
            )
            return
        keep = source_sample(source.y, self.max_source_rows, self.seed)
        self._source_X = take_rows(as_table(source.X), keep)
        self._source_y = source.y[keep]
        self.n_source_rows_ = len(keep)

    def _learn_reset(self) -> None:
        super()._learn_reset()
        self.refitted_: Any = None
        self._refit_logits: Any = None

    def _update(self) -> None:
        if not self.refittable_:
            self._fit_patch()
            return
        try:
            self._refit()
        except Exception as err:  # noqa: BLE001 - any failure of the user's fit
            warnings.warn(
                f"{self.name}: refitting {type(self._model).__name__} failed ({err!r}); the "
                "labelled patch (labelled_patch) stands in from now on.",
                UserWarning,
                stacklevel=3,
            )
            self.refittable_ = False
            self.refitted_ = self._refit_logits = None
            self._fit_patch()

    def _posteriors(self, X: Any) -> np.ndarray:
        if self._refit_logits is None:
            return self._patched(X)
        return softmax(self._refit_logits(X))

    def _refit(self) -> None:
        X_target = self._labelled.rows()
        y_target = self._labelled.labels.copy()
        n_source, n_target = len(self._source_y), len(y_target)
        if self.target_weight == "ramp":
            weight = n_source / max(n_target, self.ramp_labels)
        elif self.target_weight == "balanced":
            weight = n_source / n_target
        else:
            weight = 1.0
        X = concat_tables([self._source_X, X_target])
        codes = np.concatenate([self._source_y, y_target])
        weights = np.concatenate([np.ones(n_source), np.full(n_target, weight)])
        refitted, logits = refit_logits(self._model, X, codes, weights, n_classes=self.n_classes_)
        self.refitted_, self._refit_logits = refitted, logits


def _fitted_encoder(X: Any, owner: str) -> Encoder | None:
    """An Encoder fitted on ``X`` (``None``, with a warning, where the rows cannot be encoded:
    the patch then reads the log-posteriors alone)."""
    try:
        return Encoder().fit(X)
    except (TypeError, ValueError) as err:
        warnings.warn(
            f"{owner}: the rows cannot be encoded ({err}); the patch reads the model's "
            "log-posteriors alone.",
            UserWarning,
            stacklevel=5,
        )
        return None

"""Anchors that use late labels to update the model, not only to re-weight its outputs.

The label-only anchors of :mod:`adaptable.baselines.labelled` correct the frozen model's
posteriors; where p(y|x) itself moved along the features, no correction of the posteriors alone
can follow it. These two read the features too:

- :class:`LabelledPatch` (``labelled_patch``), for any model: a multinomial logistic
  regression fitted on the labelled target rows alone, over the model's log-posteriors and the
  encoded features, that starts from the model: logits = log p + b + log p A + x B, with a
  ridge penalty on (A, B) (so a strong penalty is the model itself, up to the offset b), its
  strength chosen by 3-fold cross-validation on the labelled rows (a fixed strength below
  :data:`CV_MIN_ROWS` rows). Features: the numeric columns standardised, the categorical ones
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

import inspect
import time
import warnings
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from sklearn.base import clone

from adaptable.baselines.common import FLAG
from adaptable.baselines.labelled import LabelledAnchor
from adaptable.core.decision.rules import plugin_weights
from adaptable.encoding import Encoder
from adaptable.framework.method import SourceData
from adaptable.framework.model_adapter import as_logit_function
from adaptable.framework.parameters import Constraint, Interval, StrOptions
from adaptable.framework.probability import normalize, softmax
from adaptable.models.supervised import SupervisedModel

#: ridge strengths (in rows' worth of log-loss) the patch chooses among by cross-validation
STRENGTHS = (1.0, 4.0, 16.0, 64.0, 256.0)
#: the patch's strength where too few rows are labelled for cross-validation
DEFAULT_STRENGTH = 64.0
#: labelled rows below which the patch does not cross-validate
CV_MIN_ROWS = 30
#: the ridge on the patch's per-class offset b (one row's worth: the labels decide it)
BIAS_STRENGTH = 1.0
#: log-posteriors are clipped here (one confident mistake must not dominate a fit)
LOG_FLOOR = float(np.log(1e-12))
WEIGHTINGS = ("plain", "ramp", "balanced")


class LabelledPatch(LabelledAnchor):
    """A logistic-regression patch over [log p, x] fitted on the labelled target rows, started
    at the model (see the module docstring).

    Args:
        strength: the ridge on the patch's coefficients, in rows' worth of log-loss; ``None``
            (default): chosen among :data:`STRENGTHS` by 3-fold cross-validation on the
            labelled rows (:data:`DEFAULT_STRENGTH` below :data:`CV_MIN_ROWS` rows).
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
        self._labelled = _RowReservoir(self.capacity, self.seed)
        # a uniform sample of the stream's rows, with their current posteriors, for the
        # plug-in decision (their labels unknown: stored as 0 and never read)
        self._stream = _RowReservoir(self.capacity, self.seed + 1, width=self.n_classes_)
        self.update_labels_: list[int] = []
        self.update_seconds_: list[float] = []
        self._next_update = self.min_labelled
        self._learn_reset()

    def _learn_reset(self) -> None:
        self._patch: tuple[np.ndarray, np.ndarray] | None = None
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
        self._labelled.add(_table(X), codes)
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
        X_batch = _table(X_batch)
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
        log_p = np.maximum(np.log(np.maximum(softmax(self._logits(X)), 1e-300)), LOG_FLOOR)
        if self._patch is None:
            return softmax(log_p)
        weights, bias = self._patch
        return softmax(log_p + self._design(X, log_p) @ weights + bias)

    def _design(self, X: Any, log_p: np.ndarray) -> np.ndarray:
        encoder = self._encoder or self._patch_encoder
        if encoder is None:
            return log_p
        return np.hstack([log_p, encoder.transform(X).astype(np.float64)])

    def _fit_patch(self) -> None:
        X = self._labelled.rows()
        labels = self._labelled.labels
        if self.use_features and self._encoder is None:
            # no source rows were given: the labelled rows set the scales
            self._patch_encoder = _fitted_encoder(X, self.name)
        log_p = np.maximum(np.log(np.maximum(softmax(self._logits(X)), 1e-300)), LOG_FLOOR)
        design = self._design(X, log_p)
        strength = self.strength
        if strength is None:
            strength = choose_strength(log_p, design, labels, self.n_classes_, self.seed)
        self._patch = fit_patch(log_p, design, labels, self.n_classes_, strength)
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
        reason = _not_refittable(model, source)
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
        keep = _source_sample(source.y, self.max_source_rows, self.seed)
        self._source_X = _take(_table(source.X), keep)
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
        X = _concat([self._source_X, X_target])
        codes = np.concatenate([self._source_y, y_target])
        weights = np.concatenate([np.ones(n_source), np.full(n_target, weight)])
        model = self._model
        if isinstance(model, SupervisedModel):
            refitted = _supervised_copy(model)
            rows = _repeated_rows(weights)
            refitted.fit(_take(X, rows), codes[rows])
        else:
            refitted = _prepared_clone(model)
            labels = codes
            model_classes = getattr(model, "classes_", None)
            if model_classes is not None and np.array_equal(
                np.asarray(model_classes), np.asarray(self.classes_)
            ):
                labels = np.asarray(self.classes_)[codes]
            keyword = _sample_weight_keyword(refitted)
            if keyword is None:
                rows = _repeated_rows(weights)
                refitted.fit(_take(X, rows), labels[rows])
            else:
                refitted.fit(X, labels, **{keyword: weights})
        logits = as_logit_function(refitted)
        check = logits(_take(X_target, np.arange(min(2, n_target))))
        if check.shape[1] != self.n_classes_:
            raise ValueError(
                f"the refitted model gives {check.shape[1]} class columns, not {self.n_classes_}"
            )
        self.refitted_, self._refit_logits = refitted, logits


# --------------------------------------------------------------------------- the patch's fit
def fit_patch(
    offset: np.ndarray,
    design: np.ndarray,
    labels: np.ndarray,
    n_classes: int,
    strength: float,
    start: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """softmax(offset + design W + b) fitted by L-BFGS on the labelled rows: summed log-loss
    + strength / 2 |W|^2 + :data:`BIAS_STRENGTH` / 2 |b|^2.

    Args:
        offset: the model's (clipped) log-posteriors, (n, C): where the fit starts (W = 0,
            b = 0 is the model).
        design: the patch's inputs, (n, k).
        labels: codes 0..C-1, (n,).
        n_classes: C.
        strength: the ridge on W.
        start: a starting point, the flat (W, b) of another fit.

    Returns:
        W (k, C) and b (C,).
    """
    n, k = design.shape
    target = np.zeros((n, n_classes))
    target[np.arange(n), labels] = 1.0

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        weights = theta[: k * n_classes].reshape(k, n_classes)
        bias = theta[k * n_classes :]
        z = offset + design @ weights + bias
        z -= z.max(axis=1, keepdims=True)
        log_q = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        value = -(target * log_q).sum() + 0.5 * strength * (weights**2).sum()
        value += 0.5 * BIAS_STRENGTH * (bias**2).sum()
        residual = np.exp(log_q) - target
        grad_w = design.T @ residual + strength * weights
        grad_b = residual.sum(axis=0) + BIAS_STRENGTH * bias
        return float(value), np.concatenate([grad_w.ravel(), grad_b])

    theta = np.zeros(k * n_classes + n_classes) if start is None else start
    result = minimize(loss, theta, jac=True, method="L-BFGS-B", options={"maxiter": 500})
    theta = result.x
    return theta[: k * n_classes].reshape(k, n_classes), theta[k * n_classes :]


def choose_strength(
    offset: np.ndarray, design: np.ndarray, labels: np.ndarray, n_classes: int, seed: int
) -> float:
    """The strength of :data:`STRENGTHS` with the lowest 3-fold cross-validated log-loss
    (:data:`DEFAULT_STRENGTH` below :data:`CV_MIN_ROWS` rows; ties: the stronger)."""
    n = len(labels)
    if n < CV_MIN_ROWS:
        return DEFAULT_STRENGTH
    fold = np.random.default_rng([seed, n]).permutation(n) % 3
    losses = np.zeros(len(STRENGTHS))
    for f in range(3):
        train, held = fold != f, fold == f
        start = None
        # strongest first: each fit starts from the previous (stronger) one
        for i in range(len(STRENGTHS) - 1, -1, -1):
            weights, bias = fit_patch(
                offset[train], design[train], labels[train], n_classes, STRENGTHS[i], start
            )
            start = np.concatenate([weights.ravel(), bias])
            z = offset[held] + design[held] @ weights + bias
            z -= z.max(axis=1, keepdims=True)
            log_q = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
            losses[i] -= log_q[np.arange(int(held.sum())), labels[held]].sum()
    best = np.flatnonzero(losses <= losses.min() + 1e-9)
    return float(STRENGTHS[int(best.max())])


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


# --------------------------------------------------------------------------- the refit
def _not_refittable(model: Any, source: SourceData) -> str | None:
    """Why ``model`` cannot be refitted here (``None``: it can)."""
    if source.X is None or source.y is None:
        return "fit was given no training rows"
    if isinstance(model, SupervisedModel):
        return None if model.estimator is not None else "the supervised model is not fitted"
    if not (callable(getattr(model, "fit", None)) and callable(getattr(model, "get_params", None))):
        return f"{type(model).__name__} is neither a scikit-learn estimator nor a supervised model"
    try:
        clone(model)
    except Exception as err:  # noqa: BLE001 - whatever clone refuses
        return f"sklearn.base.clone fails on {type(model).__name__}: {err}"
    return None


def _source_sample(codes: np.ndarray, limit: int, seed: int) -> np.ndarray:
    """Rows of the source kept for the refits: all of them up to ``limit``, else a seeded
    uniform sample of ``limit`` (plus one row of any class it missed), in table order."""
    n = len(codes)
    if n <= limit:
        return np.arange(n)
    rng = np.random.default_rng([seed, 17])
    keep = rng.choice(n, size=limit, replace=False)
    missing = np.setdiff1d(np.unique(codes), np.unique(codes[keep]))
    extra = [rng.choice(np.flatnonzero(codes == c)) for c in missing]
    return np.sort(np.concatenate([keep, np.asarray(extra, dtype=np.int64)]))


def _supervised_copy(model: SupervisedModel) -> SupervisedModel:
    """An unfitted copy of a package supervised model: its hyper-parameters, encoder, seed and
    kept boosting rounds, one thread, no early stopping (there is no held-out target)."""
    params = dict(model.params)
    rounds = model.rounds
    if rounds is None and model.name == "xgboost":
        try:
            rounds = int(model.estimator.best_iteration) + 1
        except (AttributeError, TypeError, ValueError):
            rounds = None
    if rounds is None and model.name == "catboost":
        rounds = getattr(model.estimator, "tree_count_", None)
    if rounds is not None:
        params["iterations" if model.name == "catboost" else "n_estimators"] = int(rounds)
    return type(model)(
        params,
        n_classes=model.n_classes,
        seed=model.seed,
        encoder=model.encoder,
        threads=1,
        early_stopping=False,
    )


def _prepared_clone(model: Any) -> Any:
    """``clone(model)``, without early stopping (no held-out rows to stop on) and at the
    boosting rounds the model kept where it stopped early (XGBoost's ``best_iteration``)."""
    copy = clone(model)
    params = copy.get_params(deep=False)
    if params.get("early_stopping_rounds") is not None:
        changes: dict[str, Any] = {"early_stopping_rounds": None}
        best = getattr(model, "best_iteration", None)
        if best is not None and "n_estimators" in params:
            changes["n_estimators"] = int(best) + 1
        copy.set_params(**changes)
    return copy


def _sample_weight_keyword(estimator: Any) -> str | None:
    """How ``estimator.fit`` takes row weights: ``"sample_weight"``, ``"<laststep>__sample_
    weight"`` for a Pipeline, or ``None`` (rows are then repeated)."""
    steps = getattr(estimator, "steps", None)
    if isinstance(steps, list) and steps:
        name, last = steps[-1]
        inner = _sample_weight_keyword(last)
        return None if inner is None else f"{name}__{inner}"
    try:
        parameters = inspect.signature(estimator.fit).parameters
    except (TypeError, ValueError):
        return None
    return "sample_weight" if "sample_weight" in parameters else None


def _repeated_rows(weights: np.ndarray) -> np.ndarray:
    """Row indices repeating each row by its weight, in whole numbers: the rows of weight 1
    once, the others round(w) times; where w < 1, the weight-1 rows round(1 / w) times and
    the others once."""
    other = weights[weights != 1.0]
    if other.size == 0:
        return np.arange(len(weights))
    w = float(other[0])
    if w >= 1.0:
        counts = np.where(weights == 1.0, 1, max(1, round(w)))
    else:
        counts = np.where(weights == 1.0, max(1, round(1.0 / w)), 1)
    return np.repeat(np.arange(len(weights)), counts)


# --------------------------------------------------------------------------- rows of a table
class _RowReservoir:
    """A uniform sample (Algorithm R) of table rows, each with a label code and a vector of
    ``width`` numbers; the draws are keyed by a row's position, as in
    :class:`adaptable.core.labels.LabelledReservoir`, so the sample does not depend on how
    the rows were split into calls. The rows stay in the tables they came in until
    :meth:`rows` (or too many tables) gathers them into one."""

    def __init__(self, capacity: int, seed: int, width: int = 0) -> None:
        self.capacity, self.seed = int(capacity), int(seed)
        self.n_seen = 0
        self.size = 0
        self._chunks: list[Any] = []
        self._held = 0  # rows in self._chunks
        self._where = np.zeros((self.capacity, 2), dtype=np.int64)  # (table, row) per slot
        self._labels = np.zeros(self.capacity, dtype=np.int64)
        self._values = np.zeros((self.capacity, width))

    @property
    def labels(self) -> np.ndarray:
        return self._labels[: self.size]

    @property
    def values(self) -> np.ndarray:
        return self._values[: self.size]

    def add(self, X: Any, labels: np.ndarray, values: np.ndarray | None = None) -> None:
        n = len(labels)
        if n == 0:
            return
        table = len(self._chunks)
        self._chunks.append(X)
        self._held += n
        room = min(self.capacity - self.size, n)
        slots = np.arange(self.size, self.size + room)
        rows = np.arange(room)
        if room < n:
            first, rest = self.n_seen + room, n - room
            drawn = (self._uniforms(first, rest) * np.arange(first + 1, first + 1 + rest)).astype(
                np.int64
            )
            keep = np.flatnonzero(drawn < self.capacity)
            slots = np.concatenate([slots, drawn[keep]])
            rows = np.concatenate([rows, room + keep])
        # in order: a later row drawn to the same slot overwrites an earlier one
        self._where[slots, 0] = table
        self._where[slots, 1] = rows
        self._labels[slots] = labels[rows]
        if values is not None:
            self._values[slots] = values[rows]
        self.size += room
        self.n_seen += n
        if self._held > 2 * self.capacity:
            self._gather()

    def rows(self) -> Any:
        """The kept rows as one table, slot order (``None`` before any)."""
        if self.size == 0:
            return None
        self._gather()
        return self._chunks[0]

    def _gather(self) -> None:
        where = self._where[: self.size]
        pieces, order = [], []
        for table in np.unique(where[:, 0]):
            slots = np.flatnonzero(where[:, 0] == table)
            pieces.append(_take(self._chunks[table], where[slots, 1]))
            order.append(slots)
        gathered = _concat(pieces)
        order_all = np.concatenate(order)
        if not np.array_equal(order_all, np.arange(self.size)):
            position = np.empty(self.size, dtype=np.int64)
            position[order_all] = np.arange(self.size)
            gathered = _take(gathered, position)
        self._chunks = [gathered]
        self._held = self.size
        self._where[: self.size, 0] = 0
        self._where[: self.size, 1] = np.arange(self.size)

    def _uniforms(self, first: int, count: int) -> np.ndarray:
        parts = []
        while count > 0:
            block, offset = divmod(first, self.capacity)
            draws = np.random.default_rng([self.seed, block]).random(self.capacity)
            take = min(count, self.capacity - offset)
            parts.append(draws[offset : offset + take])
            first, count = first + take, count - take
        return np.concatenate(parts)


def _table(X: Any) -> Any:
    """A frame stays a frame; anything else becomes an array."""
    return X if isinstance(X, pd.DataFrame) else np.asarray(X)


def _take(X: Any, rows: np.ndarray) -> Any:
    return X.iloc[rows].reset_index(drop=True) if isinstance(X, pd.DataFrame) else X[rows]


def _concat(tables: list[Any]) -> Any:
    frames = [t for t in tables if isinstance(t, pd.DataFrame)]
    if not frames:
        return np.concatenate(tables)
    columns = frames[0].columns
    return pd.concat(
        [t if isinstance(t, pd.DataFrame) else pd.DataFrame(t, columns=columns) for t in tables],
        ignore_index=True,
    )

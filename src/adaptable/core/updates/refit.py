"""The refit: a copy of the user's model fitted again on its training rows plus labelled target
rows.

What can be refitted: a scikit-learn estimator that ``sklearn.base.clone`` copies (Pipelines
included), or any model offering ``refit_copy()`` (an unfitted copy with its hyper-parameters,
as the package's supervised models do). A copy is fitted without early stopping (there is no
held-out target to stop on) and, where the model stopped early, at the rounds it kept.

Row weights go to ``fit(..., sample_weight=w)`` where the estimator takes them (a Pipeline's
last step: ``<step>__sample_weight``); otherwise rows are repeated a whole number of times.

Example:
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]]); y = np.array([0, 0, 1, 1])
    >>> model = LogisticRegression().fit(X, y)
    >>> refit_refusal(model, has_rows=True) is None
    True
    >>> refitted_copy(model, X, y, np.ones(4)).predict([[3.0]]).tolist()
    [1]
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from adaptable.core.updates.row_tables import take_rows
from adaptable.framework.model_adapter import LogitFunction, as_logit_function


def refit_refusal(model: Any, *, has_rows: bool) -> str | None:
    """Why ``model`` cannot be refitted (``None``: it can).

    Args:
        model: the user's model.
        has_rows: whether ``fit`` was given the model's training rows and labels.
    """
    if not has_rows:
        return "no training rows were given (X_source, y_source to fit; training_rows= to load)"
    if callable(getattr(model, "refit_copy", None)):
        return None
    if not (callable(getattr(model, "fit", None)) and callable(getattr(model, "get_params", None))):
        return f"{type(model).__name__} is not a scikit-learn estimator"
    from sklearn.base import clone

    try:
        clone(model)
    except Exception as err:  # noqa: BLE001 - whatever clone refuses
        return f"sklearn.base.clone fails on {type(model).__name__}: {err}"
    return None


def source_sample(codes: np.ndarray, limit: int, seed: int) -> np.ndarray:
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


def refitted_copy(model: Any, X: Any, labels: np.ndarray, weights: np.ndarray) -> Any:
    """A copy of ``model`` fitted on ``X`` and ``labels`` with row ``weights``.

    Args:
        model: a model :func:`refit_refusal` accepts.
        X: the rows, as the model reads them.
        labels: the labels as the model knows them (its classes), (n,).
        weights: one weight per row, (n,).

    Returns:
        the fitted copy (the user's model is untouched).

    Raises:
        whatever the model's ``fit`` raises.
    """
    own_copy = getattr(model, "refit_copy", None)
    if callable(own_copy):
        copy = own_copy()
        rows = repeated_rows(weights)
        return copy.fit(take_rows(X, rows), labels[rows])
    copy = _prepared_clone(model)
    keyword = _sample_weight_keyword(copy)
    if keyword is None:
        rows = repeated_rows(weights)
        return copy.fit(take_rows(X, rows), labels[rows])
    return copy.fit(X, labels, **{keyword: weights})


def model_labels(model: Any, codes: np.ndarray, n_classes: int) -> np.ndarray:
    """Label codes 0..C-1 as ``model`` knows its classes: its ``classes_[codes]`` where it
    names C classes (the adapter's, which ``fit`` checked), else the codes themselves."""
    known = getattr(model, "classes_", None)
    if known is not None and len(known) == n_classes:
        return np.asarray(known)[codes]
    return codes


def refit_logits(
    model: Any,
    X: Any,
    codes: np.ndarray,
    weights: np.ndarray,
    *,
    n_classes: int,
    output: str = "auto",
) -> tuple[Any, LogitFunction]:
    """:func:`refitted_copy` on label ``codes`` (0..C-1), read as logits, checked to give C
    class columns (on the first row of ``X``).

    Returns:
        the refitted copy and its logit function.

    Raises:
        whatever the model's ``fit`` raises, or ``ValueError`` where the copy gives another
        number of classes (a class missing from the rows it was fitted on).
    """
    refitted = refitted_copy(model, X, model_labels(model, codes, n_classes), weights)
    logits = as_logit_function(refitted, output)
    width = np.asarray(logits(take_rows(X, np.arange(1)))).shape[1]
    if width != n_classes:
        raise ValueError(f"the refitted model gives {width} class columns, not {n_classes}")
    return refitted, logits


def _prepared_clone(model: Any) -> Any:
    """``clone(model)``, without early stopping and at the boosting rounds the model kept where
    it stopped early (XGBoost's ``best_iteration``)."""
    from sklearn.base import clone

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


def repeated_rows(weights: np.ndarray) -> np.ndarray:
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

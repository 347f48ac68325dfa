"""A scikit-learn classifier that trains a model and adapts it at test time: ``AdaptedClassifier``.

A test-time method (:class:`~adaptable.AdapTable`, or any of :mod:`adaptable.methods`) wraps a
model that is already trained, and wants held-out labelled rows besides. Scikit-learn's tools
(``Pipeline``, ``cross_val_score``, ``GridSearchCV``) instead hand one estimator ``fit(X, y)`` and
then ``predict(X)``. :class:`AdaptedClassifier` bridges the two: ``fit`` holds out its own
validation rows, trains a clone of the unfitted estimator on the rest and fits the adapter on
both; ``predict`` adapts to the rows it is given, batch by batch.

Example:
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 3)); y = np.where(X[:, 0] > 0, "yes", "no")
    >>> clf = AdaptedClassifier(LogisticRegression(), random_state=0).fit(X, y)
    >>> clf.classes_.tolist()
    ['no', 'yes']
    >>> clf.predict(X[:5]).tolist(), y[:5].tolist()
    (['yes', 'yes', 'yes', 'no', 'no'], ['yes', 'yes', 'yes', 'no', 'no'])
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.model_selection import train_test_split
from sklearn.utils.validation import check_is_fitted

from adaptable.framework.method import TestTimeMethod
from adaptable.framework.parameters import Constraint, Interval, validate_parameters


class AdaptedClassifier(ClassifierMixin, MetaEstimatorMixin, BaseEstimator):
    """Train ``estimator`` on part of the rows, then adapt its predictions at test time.

    Args:
        estimator: an unfitted classifier with ``fit(X, y)`` and ``predict_proba(X)`` (any
            scikit-learn classifier, LightGBM, XGBoost, CatBoost...); it is cloned, never
            changed.
        adapter: the unfitted test-time method, e.g. ``AdapTable(preset="paper")`` or
            ``adaptable.methods.create("em")``; cloned too. ``None``: ``AdapTable()``, with
            ``random_state`` when that is an integer.
        valid_size: share of the rows held out as validation rows (stratified by label): the
            adapter fits on them, the estimator never sees them.
        batch_size: ``predict`` adapts to ``X`` in consecutive batches of this many rows, in
            order (the test stream); ``None`` takes all of ``X`` as one batch.
        random_state: seed of the validation split (an integer, a ``RandomState`` or ``None``).

    Attributes (after fit):
        estimator_: the fitted clone of ``estimator``.
        adapter_: the fitted test-time method.
        classes_: the labels, sorted; probability column j is class ``classes_[j]``.
        n_features_in_: number of columns of ``X`` at fit.

    ``predict`` and ``predict_proba`` are stateful, as the adapter's are: each batch adapts the
    adapter's online state and later batches start from it, so two calls on the same rows can
    differ, and ``score`` (accuracy) moves the state on as well. :meth:`reset` returns to the
    state right after ``fit``. ``fit`` and the scikit-learn tools that refit (``clone``,
    ``cross_val_score``) start every fold from a fresh state.

    Raises (fit):
        InvalidParameterError: a parameter of the wrong type or value.
        TypeError: ``estimator`` lacks ``fit`` or ``predict_proba``, or ``adapter`` is not a
            test-time method.
        ValueError: a class with fewer than two rows (the split needs one on each side).
    """

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "valid_size": [Interval(Real, 0, 1, closed="neither")],
        "batch_size": [Interval(Integral, 1, None), None],
        "random_state": [Interval(Integral, 0, None), np.random.RandomState, None],
    }

    def __init__(
        self,
        estimator: Any,
        adapter: TestTimeMethod | None = None,
        *,
        valid_size: float = 0.2,
        batch_size: int | None = 64,
        random_state: int | np.random.RandomState | None = None,
    ) -> None:
        self.estimator = estimator
        self.adapter = adapter
        self.valid_size = valid_size
        self.batch_size = batch_size
        self.random_state = random_state
        self._check_parameters(self.get_params(deep=False))

    def set_params(self, **params: Any) -> AdaptedClassifier:
        """scikit-learn's ``set_params``, with every value checked before any is changed.

        Nested names (``estimator__C``, ``adapter__alpha``) go to the wrapped objects.
        """
        own = {k: v for k, v in params.items() if "__" not in k}
        self._check_parameters({**self.get_params(deep=False), **own})
        return super().set_params(**params)

    def _check_parameters(self, params: dict[str, Any]) -> None:
        validate_parameters(self._parameter_constraints, params, type(self).__name__)

    def fit(self, X: Any, y: Any) -> AdaptedClassifier:
        """Hold out validation rows, train the estimator on the rest, fit the adapter.

        Args:
            X: the training rows, as the estimator takes them (array or DataFrame), (n, d).
            y: their labels, any label set, (n,).

        Returns:
            self.
        """
        self._check_parameters(self.get_params(deep=False))
        for name in ("fit", "predict_proba"):
            if not callable(getattr(self.estimator, name, None)):
                raise TypeError(
                    f"AdaptedClassifier: estimator must be an unfitted classifier with fit and "
                    f"predict_proba; {type(self.estimator).__name__} has no {name}."
                )
        if self.adapter is not None and not isinstance(self.adapter, TestTimeMethod):
            raise TypeError(
                "AdaptedClassifier: adapter must be a test-time method (AdapTable, or one of "
                f"adaptable.methods.create(...)), or None; got {type(self.adapter).__name__}."
            )
        X = _as_table(X)
        y = np.asarray(y)
        labels, counts = np.unique(y, return_counts=True) if y.ndim == 1 else (None, None)
        if counts is not None and counts.min() < 2:
            rare = labels[counts < 2].tolist()[:5]
            raise ValueError(
                f"AdaptedClassifier: classes {rare} have a single row; every class needs at "
                "least two, one for training the estimator and one for validation."
            )
        try:
            X_train, X_valid, y_train, y_valid = train_test_split(
                X, y, test_size=self.valid_size, stratify=y, random_state=self.random_state
            )
        except ValueError as err:
            raise ValueError(f"AdaptedClassifier: cannot hold out validation rows: {err}") from err
        self.estimator_ = clone(self.estimator).fit(X_train, y_train)
        self.adapter_ = self._new_adapter().fit(self.estimator_, X_train, y_train, X_valid, y_valid)
        self.classes_ = self.adapter_.classes_
        self.n_features_in_ = int(X.shape[1])
        if hasattr(X, "columns"):
            self.feature_names_in_ = np.asarray(X.columns, dtype=object)
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities of ``X``, (n, C), adapting to it batch by batch (stateful)."""
        check_is_fitted(self, "adapter_")
        X = _as_table(X)
        n_rows = X.shape[0]
        if n_rows == 0:
            raise ValueError("AdaptedClassifier: X has no rows.")
        size = self.batch_size or n_rows
        batches = (_rows(X, start, start + size) for start in range(0, n_rows, size))
        return np.vstack([self.adapter_.predict_proba(batch) for batch in batches])

    def predict(self, X: Any) -> np.ndarray:
        """Labels of the most probable class of each row (adapts like :meth:`predict_proba`)."""
        proba = self.predict_proba(X)  # first: it raises NotFittedError before fit
        return self.classes_[proba.argmax(axis=1)]

    def feature_drift(self, *, level: float = 0.05) -> Any:
        """The adapter's per-column drift (:meth:`adaptable.AdapTable.feature_drift`): each
        column of ``X`` on the rows predicted since ``fit`` / :meth:`reset`, against the
        validation rows ``fit`` held out.

        Raises:
            TypeError: the adapter keeps no per-column drift (a method other than AdapTable).
            ValueError: as :meth:`adaptable.AdapTable.feature_drift`.
        """
        check_is_fitted(self, "adapter_")
        report = getattr(self.adapter_, "feature_drift", None)
        if report is None:
            raise TypeError(
                f"AdaptedClassifier: the adapter {type(self.adapter_).__name__} keeps no "
                "per-column drift; use AdapTable."
            )
        return report(level=level)

    def reset(self) -> AdaptedClassifier:
        """Back to the adapter's state right after ``fit`` (the next batch starts a stream)."""
        check_is_fitted(self, "adapter_")
        self.adapter_.reset()
        return self

    def _new_adapter(self) -> TestTimeMethod:
        if self.adapter is not None:
            return clone(self.adapter)
        from adaptable.core import AdapTable

        seed = self.random_state if isinstance(self.random_state, Integral) else None
        return AdapTable(random_state=seed)


def _as_table(X: Any) -> Any:
    """DataFrames and arrays as they are; anything else (lists) as a 2-D array."""
    table = X if hasattr(X, "iloc") or isinstance(X, np.ndarray) else np.asarray(X)
    if len(table.shape) != 2:
        raise ValueError(
            f"AdaptedClassifier: X must be a 2-D table (rows x columns); got shape "
            f"{tuple(table.shape)}."
        )
    return table


def _rows(X: Any, start: int, stop: int) -> Any:
    return X.iloc[start:stop] if hasattr(X, "iloc") else X[start:stop]

"""A scikit-learn classifier that trains a model and adapts it at test time: ``AdaptedClassifier``.

A test-time method (:class:`~adaptable.AdapTable`, or any of :mod:`adaptable.methods`) wraps a
model that is already trained, and wants held-out labelled rows besides. Scikit-learn's tools
(``Pipeline``, ``cross_val_score``, ``GridSearchCV``) instead hand one estimator ``fit(X, y)`` and
then ``predict(X)``. :class:`AdaptedClassifier` bridges the two: ``fit`` holds out its own
validation rows, trains a clone of the unfitted estimator on the rest and fits the adapter on
both; ``predict`` adapts to the rows it is given, batch by batch.

Prediction advances the stream: each call continues from the batches before it, as the
adapter's own ``predict_proba`` does, so predicting the same rows twice is a stream twice as
long (its drift report has a row per batch of both passes). :meth:`AdaptedClassifier.reset`
starts a new stream. Labels that come back, the drift report and saving are the adapter's
(:meth:`~AdaptedClassifier.partial_fit`, :meth:`~AdaptedClassifier.report`,
:meth:`~AdaptedClassifier.drift_summary`, :meth:`~AdaptedClassifier.save`), with the same
contracts as :class:`~adaptable.AdapTable`'s.

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
    >>> clf = clf.partial_fit(None, y[:5], rows=[0, 1, 2, 3, 4])  # their labels, later
    >>> clf.predict_proba(X[5:133]).shape, len(clf.report())  # two more batches of 64
    ((128, 2), 3)
    >>> clf.reset().report().empty  # a new stream
    True
"""

from __future__ import annotations

import os
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.model_selection import train_test_split
from sklearn.utils.validation import check_is_fitted

from adaptable.framework.method import TestTimeMethod, checked_labels
from adaptable.framework.parameters import Constraint, Interval, validate_parameters
from adaptable.framework.rows import as_table

if TYPE_CHECKING:
    import pandas as pd

    from adaptable.core.report.drift_summary import DriftSummary


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
    differ, and ``score`` (accuracy) moves the state on as well: every call continues one
    stream (a second pass over the same rows is more of it, not a repeat). :meth:`reset`
    returns to the state right after ``fit``. ``fit`` and the scikit-learn tools that refit
    (``clone``, ``cross_val_score``) start every fold from a fresh state. A row's id, for
    :meth:`partial_fit`, is its position among the rows predicted since ``fit`` or
    :meth:`reset` (the first row predicted is 0).

    Raises (fit):
        InvalidParameterError: a parameter of the wrong type or value.
        TypeError: ``estimator`` lacks ``fit`` or ``predict_proba``, or ``adapter`` is not a
            test-time method.
        ValueError: labels mixing strings and other values, missing labels (NaN, None or NA,
            named by row), or a class with fewer than two rows (the split needs one on each
            side); all before any training.
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
        y = checked_labels(y, "AdaptedClassifier", "y")
        labels, counts = np.unique(y, return_counts=True)
        if counts.min() < 2:
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
        """Class probabilities of ``X``, (n, C), adapting to it batch by batch (stateful: the
        batches continue the stream of the calls before). One row may come alone, as a dict
        (column -> value) or a pandas Series (index = columns)."""
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
        """Back to the adapter's state right after ``fit`` (the next batch starts a stream: the
        report, the labelled rows and the row ids start again). Returns self."""
        check_is_fitted(self, "adapter_")
        self.adapter_.reset()
        return self

    def partial_fit(self, X: Any, y: Any, *, rows: Any = None) -> AdaptedClassifier:
        """Labels of rows predicted earlier, for the batches that come after this call:
        :meth:`adaptable.AdapTable.partial_fit` (any share, any delay; never changes a
        prediction already made). Returns self.

        Args:
            X: the rows (a table, or one row as a dict or a pandas Series); or ``None`` with
                ``rows``: the labels then go with the scores kept when those rows were
                predicted.
            y: their labels, from ``classes_``, (n,).
            rows: the rows' ids, their positions among the rows predicted since ``fit`` or
                :meth:`reset` (optional where ``X`` is given; they also score the labels
                against the predictions made, the report's ``realised_*`` columns).

        Raises:
            NotFittedError: before ``fit``.
            TypeError: an adapter that takes no labels (of the registry's methods, AdapTable's
                default preset and the ``labelled_*`` anchors do), or ``rows`` given to one
                that takes no row ids.
            ValueError: what the adapter's ``partial_fit`` refuses (a label outside
                ``classes_``, a length mismatch, an unknown row id...).

        Example:
            >>> clf.predict(X_new[:64])  # doctest: +SKIP
            >>> clf.partial_fit(None, y_new[:8], rows=range(8))  # doctest: +SKIP
        """
        learn = self._adapters_own("partial_fit", "takes no labels")
        X = None if X is None else _as_table(X)
        if rows is None:
            learn(X, y)
        else:
            learn(X, y, rows=rows)
        return self

    def report(self) -> pd.DataFrame:
        """The adapter's drift report: one row per batch adapted since ``fit`` or
        :meth:`reset` (:meth:`adaptable.AdapTable.report`). Every ``predict`` adds rows: two
        passes over the same rows report both.

        Raises:
            NotFittedError: before ``fit``.
            TypeError: an adapter that keeps no report (only AdapTable's default preset does).
            ValueError: AdapTable's paper preset.

        Example:
            >>> clf.report()[["rows", "rule", "estimated_adapter"]].tail()  # doctest: +SKIP
        """
        return self._adapters_own("report", "keeps no drift report")()

    def drift_summary(
        self, *, last_batches: int | None = None, tolerance: float = 0.05,
        deviations: float = 2.0, reference: float | None = None,
    ) -> DriftSummary:  # fmt: skip
        """Whether the adapter still does as well on the stream as the model did on its
        held-out rows, with a verdict: :meth:`adaptable.AdapTable.drift_summary`, with the
        same arguments (``print`` it).

        Raises:
            NotFittedError: before ``fit``.
            TypeError: an adapter that keeps no report (only AdapTable's default preset does).
            ValueError: what the adapter's ``drift_summary`` refuses (no batch yet, the paper
                preset, an argument out of range).

        Example:
            >>> print(clf.drift_summary(last_batches=50))  # doctest: +SKIP
        """
        summary = self._adapters_own("drift_summary", "keeps no drift report")
        return summary(
            last_batches=last_batches, tolerance=tolerance, deviations=deviations,
            reference=reference,
        )  # fmt: skip

    def save(self, path: str | os.PathLike[str], *, drop_updates: bool = False) -> None:
        """Write the adapter's fitted and online state, mid-stream, to one ``.safetensors``
        file (:meth:`adaptable.AdapTable.save`: no pickle; once its model updates have learnt
        from labels, only with ``drop_updates=True``, the file then loading without them).
        Neither the fitted estimator nor this wrapper's own parameters are in it: keep the
        estimator (``estimator_``) as you keep models, and pass it, and ``batch_size``, to
        :meth:`load`.

        Raises:
            NotFittedError: before ``fit``.
            TypeError: an adapter other than AdapTable (pickle the whole wrapper instead, with
                ``joblib.dump``).
            FileNotFoundError, IsADirectoryError: as :meth:`adaptable.AdapTable.save`.

        Example:
            >>> clf.save("adapter.safetensors")  # doctest: +SKIP
            >>> joblib.dump(clf.estimator_, "estimator.joblib")  # doctest: +SKIP
        """
        self._adapters_own("save", "cannot be saved to a file")(path, drop_updates=drop_updates)

    @classmethod
    def load(
        cls, path: str | os.PathLike[str], estimator: Any, *, batch_size: int | None = 64
    ) -> AdaptedClassifier:
        """An AdaptedClassifier from a file :meth:`save` wrote, and the fitted estimator it
        adapts: it continues the stream where ``save`` left it.

        Args:
            path: the file.
            estimator: the fitted estimator of the saved wrapper (``estimator_``).
            batch_size: as the constructor's (not in the file).

        Returns:
            a fitted AdaptedClassifier; ``estimator`` and ``adapter`` are unfitted copies of
            those loaded (for ``clone`` and a refit), ``valid_size`` and ``random_state``
            their defaults.

        Raises:
            ValueError: what :meth:`adaptable.AdapTable.load` refuses (not an AdapTable file,
                a field wrong, the estimator's ``classes_`` not the file's).

        Example:
            >>> clf = AdaptedClassifier.load("adapter.safetensors", estimator)  # doctest: +SKIP
        """
        from adaptable.core import AdapTable

        adapter = AdapTable.load(path, model=estimator)
        loaded = cls(clone(estimator), clone(adapter), batch_size=batch_size)
        loaded.estimator_, loaded.adapter_, loaded.classes_ = estimator, adapter, adapter.classes_
        columns = adapter.columns_
        if columns is not None:
            loaded.feature_names_in_ = np.asarray(columns.names, dtype=object)
        width = getattr(estimator, "n_features_in_", None)
        if width is None and columns is not None:
            width = len(columns.names)
        if width is not None:
            loaded.n_features_in_ = int(width)
        return loaded

    def _adapters_own(self, name: str, lacking: str) -> Any:
        """The fitted adapter's method ``name``; ``TypeError`` (saying it ``lacking``) where
        the adapter has none."""
        check_is_fitted(self, "adapter_")
        method = getattr(self.adapter_, name, None)
        if not callable(method):
            raise TypeError(
                f"AdaptedClassifier.{name}: the adapter {self.adapter_.name!r} "
                f"({type(self.adapter_).__name__}) {lacking}; AdapTable(), the default "
                f"adapter, has {name}."
            )
        return method

    def _new_adapter(self) -> TestTimeMethod:
        if self.adapter is not None:
            return clone(self.adapter)
        from adaptable.core import AdapTable

        seed = self.random_state if isinstance(self.random_state, Integral) else None
        return AdapTable(random_state=seed)


def _as_table(X: Any) -> Any:
    """DataFrames and arrays as they are; one row (a dict or a Series) as a one-row DataFrame;
    anything else (lists) as a 2-D array."""
    X = as_table(X)
    table = X if hasattr(X, "iloc") or isinstance(X, np.ndarray) else np.asarray(X)
    if len(table.shape) != 2:
        raise ValueError(
            f"AdaptedClassifier: X must be a 2-D table (rows x columns); got shape "
            f"{tuple(table.shape)}."
        )
    return table


def _rows(X: Any, start: int, stop: int) -> Any:
    return X.iloc[start:stop] if hasattr(X, "iloc") else X[start:stop]

"""The interface every test-time method shares (AdapTable, the TTA baselines, no adaptation).

The experiment runner treats every method alike through it:

    method.fit(model, X_source, y_source, X_valid, y_valid)
    for X_batch in stream:
        proba = method.predict_proba(X_batch)   # adapts on this batch, advances online state
    method.reset()                              # back to the state right after fit

``predict_proba`` is stateful on purpose, as in Tent: a test stream is a sequence, and each
batch's prediction uses (and updates) what the method learnt from the batches before it. Calling
it twice on the same batch gives two different answers; call :meth:`TestTimeMethod.reset` to
start a stream again.

Labels are handled here once for every method, as scikit-learn does: any label set (integers,
strings such as ``'yes'`` / ``'no'``, booleans) becomes ``classes_`` (sorted), each method works on
the codes 0..C-1, probability column j is class ``classes_[j]``, and :meth:`predict` returns the
original labels.

Example:
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from adaptable.baselines import SourceOnly
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]]); y = np.array(["no", "no", "yes", "yes"])
    >>> method = SourceOnly().fit(LogisticRegression().fit(X, y), X, y)
    >>> method.classes_.tolist(), method.predict(X).tolist()
    (['no', 'yes'], ['no', 'no', 'yes', 'yes'])
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from adaptable.framework.sklearn_interface import ScikitLearnInterface
from adaptable.values import python_value

# scikit-learn is imported where it is used (fit, a refused call), not here: importing it costs
# more than the rest of the package (docs/research/costs.md#importing-adaptable).


@dataclass(frozen=True)
class SourceData:
    """What :meth:`TestTimeMethod.fit` was given, with the labels as codes 0..C-1.

    Attributes:
        X: source training rows, exactly as the caller passed them (``None`` if not given).
        y: their labels as int64 codes (index into ``classes_``), or ``None``.
        X_valid, y_valid: the same for the validation rows.
    """

    X: Any
    y: np.ndarray | None
    X_valid: Any = None
    y_valid: np.ndarray | None = None


class TestTimeMethod(ScikitLearnInterface, ABC):
    """Base class: fit once on source data, then adapt a stream batch by batch.

    Subclasses implement :meth:`_fit` (on integer labels 0..C-1), :meth:`predict_proba` and
    :meth:`reset`, and keep their constructor arguments as attributes of the same names: every
    method is a scikit-learn classifier (``get_params``, ``set_params``, ``repr``, ``clone``,
    ``check_is_fitted``, ``sklearn.base.is_classifier``, :meth:`score`), through
    :class:`~adaptable.framework.sklearn_interface.ScikitLearnInterface` rather than
    scikit-learn's ``BaseEstimator``, so that importing a method does not import scikit-learn.

    Attributes (after fit):
        classes_: the labels of the source data, sorted, (C,); probability column j is class
            ``classes_[j]``. ``None`` when fit got no labels at all (output-only methods accept
            that); :meth:`predict` then returns column indices.
    """

    #: registry name, e.g. "adaptable", "tent"
    name: str = "method"
    #: True when the method updates model parameters (torch backbones only)
    updates_parameters: bool = False
    #: True when the method estimates something per class on the held-out rows (fit warns
    #: where ``y_valid`` lacks a class)
    reads_heldout_rows: bool = False

    def fit(
        self,
        model: Any,
        X_source: Any = None,
        y_source: Any = None,
        X_valid: Any = None,
        y_valid: Any = None,
    ) -> TestTimeMethod:
        """Prepare the method on labelled source data; the source model stays as given.

        Args:
            model: the frozen source classifier (see each method for what it accepts).
            X_source: source training rows, exactly as the model takes them.
            y_source: their labels, any label set (e.g. 0/1, ``'yes'`` / ``'no'``), (n,).
            X_valid, y_valid: source validation rows and labels, where the method uses them.
            Output-only methods (``source``, ``lame``) need none of them; the others say so.

        Returns:
            self.
        """
        # A refit that fails half-way must not look fitted.
        self.__dict__.pop("classes_", None)
        classes, codes = _encode_labels(
            {"y_source": (y_source, X_source), "y_valid": (y_valid, X_valid)}, self.name
        )
        if classes is not None:
            check_model_classes(model, classes, self.name)
        self._fit(model, SourceData(X_source, codes["y_source"], X_valid, codes["y_valid"]))
        n_classes = getattr(self, "n_classes_", None)
        if classes is not None and n_classes is not None and n_classes != len(classes):
            raise ValueError(
                f"{self.name}: the model gives {n_classes} class columns but the labels hold "
                f"{len(classes)} classes {classes.tolist()[:10]}; every class must occur in "
                "y_source / y_valid, in the order of the model's columns (sorted labels)."
            )
        if classes is None and n_classes is not None:
            classes = np.arange(n_classes)
        self.classes_ = classes
        if self.reads_heldout_rows and codes["y_valid"] is not None and classes is not None:
            _warn_absent_classes(codes["y_valid"], classes, self.name)
        return self

    @abstractmethod
    def _fit(self, model: Any, source: SourceData) -> None:
        """Fit on the source data, whose labels are codes 0..C-1."""

    @abstractmethod
    def predict_proba(self, X_batch: Any) -> np.ndarray:
        """Adapt to one test batch and return its class probabilities, shape (n, C).

        Stateful: advances the method's online state (see the module docstring).
        """

    def predict(self, X_batch: Any) -> np.ndarray:
        """Labels of :meth:`predict_proba`'s most probable class (adapts on the batch like it)."""
        index = np.asarray(self.predict_proba(X_batch)).argmax(axis=1)
        return index if self.classes_ is None else self.classes_[index]

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Accuracy of :meth:`predict` on ``X`` against the labels ``y``, X adapted as one batch.

        **Stateful** like :meth:`predict`: scoring adapts on ``X`` and advances the online
        state, so scoring the same rows twice may give two values; call :meth:`reset` first to
        score a stream from its start.
        """
        from sklearn.metrics import accuracy_score

        return float(accuracy_score(y, self.predict(X), sample_weight=sample_weight))

    @abstractmethod
    def reset(self) -> None:
        """Restore the state right after :meth:`fit` (online estimates, model weights)."""

    # ----------------------------------------------------------------- for subclasses
    def _check_fitted(self) -> None:
        """Raise ``NotFittedError`` before the first fit.

        The same test as scikit-learn's ``check_is_fitted(self, "classes_")``, without its
        generic machinery, whose cost shows on every batch.
        """
        if "classes_" not in self.__dict__:
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(
                f"This {self.name!r} method is not fitted yet; call fit(model, X, y) first."
            )

    def _check_batch(self, X_batch: Any) -> int:
        """Reject a missing, empty or non-2-D batch with a message naming the method; return n."""
        if X_batch is None:
            raise ValueError(f"{self.name}: X_batch is None; expected a table of rows.")
        shape = getattr(X_batch, "shape", None)
        if shape is not None and len(shape) != 2:
            raise ValueError(
                f"{self.name}: X_batch must be a 2-D table (rows x columns); got "
                f"{type(X_batch).__name__} with shape {tuple(shape)}."
            )
        n_rows = int(shape[0]) if shape is not None else len(X_batch)
        if n_rows == 0:
            raise ValueError(f"{self.name}: Empty batch: X_batch has no rows.")
        return n_rows

    def _label_codes(self, y: Any, what: str) -> np.ndarray:
        """Original labels -> codes 0..C-1 in the order of ``classes_``."""
        _refuse_mixed_labels(y, self.name, what)
        # a plain 1-D array is what scikit-learn's check would return it as: its per-call
        # cost is skipped there (docs/research/design_notes.md#framework-method)
        if not (type(y) is np.ndarray and y.ndim == 1 and y.dtype.kind in "biufUSO"):
            from sklearn.utils import column_or_1d

            y = column_or_1d(y, warn=True)
        if self.classes_ is None:
            return y.astype(np.int64)
        # before the search, which fails or calls a gap an unseen label
        _refuse_missing_labels(
            y, self.name, what, "leave out the rows whose labels are not known yet"
        )
        try:
            codes = np.searchsorted(self.classes_, y)
        except TypeError:  # labels that do not even compare with the classes (str and int)
            raise ValueError(
                f"{self.name}: {what} holds labels unseen at fit {np.asarray(y)[:5].tolist()} "
                f"(of another type); the classes are {self.classes_.tolist()[:10]}."
            ) from None
        known = (codes < len(self.classes_)) & (
            self.classes_[np.minimum(codes, len(self.classes_) - 1)] == y
        )
        if not np.all(known):
            unseen = np.unique(y[~known]).tolist()[:5]
            raise ValueError(
                f"{self.name}: {what} holds labels unseen at fit {unseen}; the classes are "
                f"{self.classes_.tolist()[:10]}."
            )
        return codes.astype(np.int64)


def _warn_absent_classes(codes: np.ndarray, classes: np.ndarray, name: str) -> None:
    """A UserWarning naming the classes ``codes`` (the held-out labels) never hold."""
    absent = np.flatnonzero(np.bincount(codes, minlength=len(classes)) == 0)
    if absent.size:
        shown = [python_value(c) for c in classes[absent][:10]]
        warnings.warn(
            f"{name}: y_valid holds no row of class(es) {shown}: what is estimated on the "
            "held-out rows (the decision rule, the drift report's reference score) cannot "
            "speak for them. Pass held-out rows of every class.",
            UserWarning,
            stacklevel=3,
        )


def _encode_labels(
    labels: dict[str, tuple[Any, Any]], owner: str
) -> tuple[np.ndarray | None, dict[str, np.ndarray | None]]:
    """Sorted classes of all given label arrays, and each array as codes 0..C-1."""
    from sklearn.utils import check_consistent_length
    from sklearn.utils.multiclass import check_classification_targets, unique_labels

    checked: dict[str, np.ndarray | None] = {}
    for what, (y, X) in labels.items():
        if y is None:
            checked[what] = None
            continue
        # Before scikit-learn's checks, which call a gap "Unknown label type: unknown" (numbers)
        # or fail sorting it among strings.
        y = checked_labels(y, owner, what)
        try:
            check_classification_targets(y)
            check_consistent_length(X, y)
        except ValueError as err:
            raise ValueError(f"{owner}: {what}: {err}") from err
        checked[what] = y
    given = [y for y in checked.values() if y is not None]
    if not given:
        return None, checked
    try:
        classes = unique_labels(*given)
    except ValueError as err:
        raise ValueError(f"{owner}: {err}") from err
    if len(classes) < 2:
        raise ValueError(
            f"{owner}: the labels hold a single class ({classes.tolist()}); test-time adaptation "
            "needs a classifier of at least two classes, all present in the source labels."
        )
    codes = {
        what: None if y is None else np.searchsorted(classes, y).astype(np.int64)
        for what, y in checked.items()
    }
    return classes, codes


def checked_labels(y: Any, owner: str, what: str) -> np.ndarray:
    """Labels read as a 1-D array, refused first where they mix strings with other values or
    hold missing ones: the checks :meth:`TestTimeMethod.fit` makes of each label array before
    any work, for a caller that reads labels itself (:class:`~adaptable.AdaptedClassifier`).

    Args:
        y: the labels, (n,) or (n, 1): an array, a list or a pandas Series.
        owner: who checks, the message's first word (``"adaptable"``, ``"AdaptedClassifier"``).
        what: the argument's name in the message (``"y_source"``, ``"y"``).

    Returns:
        ``y`` as a 1-D numpy array (scikit-learn's ``column_or_1d``).

    Raises:
        ValueError: labels of more than one dimension, labels mixing strings and other values
            (naming their types), or missing labels (NaN, None, NA: naming their rows).

    Example:
        >>> checked_labels(["no", "yes"], "adaptable", "y").tolist()
        ['no', 'yes']
        >>> try:
        ...     checked_labels([0, None, 1, None], "adaptable", "y")
        ... except ValueError as err:
        ...     print(str(err).split(";")[0])
        adaptable: y holds 2 missing label(s) (NaN, None or NA), first at row 1 (all at rows 1, 3)
    """
    _refuse_mixed_labels(y, owner, what)
    try:
        from sklearn.utils import column_or_1d  # (slow to import: at the first check)

        y = column_or_1d(y, warn=True)
    except ValueError as err:
        raise ValueError(f"{owner}: {what}: {err}") from err
    _refuse_missing_labels(y, owner, what, "drop those rows or give them a label", "row")
    return y


def check_model_classes(model: Any, classes: np.ndarray, owner: str) -> None:
    """A model that names its classes (scikit-learn's ``classes_``) must name these ones.

    Its probability columns are then in the order of ``classes``. A model trained on the codes
    0..C-1 of the same labels is accepted too.
    """
    model_classes = getattr(model, "classes_", None)
    if model_classes is None:
        return
    model_classes = np.asarray(model_classes)
    same = len(model_classes) == len(classes) and (
        np.array_equal(model_classes, classes)
        or np.array_equal(model_classes, np.arange(len(classes)))
    )
    if not same:
        raise ValueError(
            f"{owner}: the model's classes_ {model_classes.tolist()[:10]} are not the labels' "
            f"classes {classes.tolist()[:10]}; probability column j must be class j of the "
            "sorted labels."
        )


def _refuse_missing_labels(
    y: np.ndarray, owner: str, what: str, advice: str, where: str = "position"
) -> None:
    """Refuse labels (1-D, as read) holding NaN, None or NA, naming the first one's ``where``
    (its position in ``y``: a row of fit's table, or a position in ``partial_fit``'s labels)."""
    if y.dtype.kind not in "fcOUSM":  # integers and booleans hold no gap
        return
    missing = np.flatnonzero(pd.isna(y))
    if missing.size:
        listed = ""
        if missing.size > 1:
            more = f" and {missing.size - 10} more" if missing.size > 10 else ""
            shown = ", ".join(map(str, missing[:10].tolist()))
            listed = f" (all at {where}s {shown}{more})"
        raise ValueError(
            f"{owner}: {what} holds {missing.size} missing label(s) (NaN, None or NA), "
            f"first at {where} {missing[0]}{listed}; {advice}."
        )


def _refuse_mixed_labels(y: Any, owner: str, what: str) -> None:
    """Refuse labels that mix strings with other values, before numpy reads them: a list
    becomes all strings ('0' beside the model's 0) and an object array cannot be sorted
    (scikit-learn calls it "Unknown label type"). Missing values are not counted as other
    values (the missing-label check names them)."""
    if isinstance(y, list | tuple):
        if np.asarray(y).dtype.kind not in "UO":  # no string among them
            return
        values = np.asarray(y, dtype=object)
    else:
        array = getattr(y, "values", y)  # a pandas Series' own values, not a copy
        dtype = getattr(array, "dtype", None)
        if dtype is None or getattr(dtype, "kind", None) != "O":
            return
        values = np.asarray(array, dtype=object).ravel()
    words = np.fromiter((isinstance(v, str) for v in values), dtype=bool, count=len(values))
    others = ~words & ~pd.isna(values)
    if words.any() and others.any():
        word, other = values[words.argmax()], python_value(values[others.argmax()])
        raise ValueError(
            f"{owner}: {what} mixes strings and other labels (e.g. {other!r} and {word!r}, "
            f"of types {type(other).__name__} and str); give every label the same type."
        )

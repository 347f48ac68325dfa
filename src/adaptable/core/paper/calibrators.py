"""The ablation calibrators: they fill g_phi's slot in the paper's calibrator ablation tables.

A calibrator turns logits into the calibrated probabilities q_i whose top-2 margin ranks the
rows' uncertainty in the label distribution handler (Algorithm 1, lines 9-11).

- :class:`NoCalibrator` -- q = softmax(z): the "AdapTable without calibrator" ablation.
- :class:`PlattCalibrator`, :class:`IsotonicCalibrator` -- the classical post-hoc calibrators of
  the paper's calibrator ablation table. Deliberate difference (the paper does not say what
  they are fitted on): source validation rows, or training rows when no validation split is
  given. Their uncertainty is the top-2 margin of their own calibrated probabilities.
- :class:`TemperatureCalibrator` -- one temperature for every row, by maximum likelihood on the
  held-out source rows (temperature scaling, Guo et al. 2017); it keeps every row's most likely
  class.
- :class:`OracleCalibratorUsingTestLabels` -- *uses the test labels*; only for the paper's
  oracle table ("a perfectly calibrated model"), never for a real result.

The shift-aware calibrator g_phi itself, :class:`adaptable.core.paper.graph_calibrator.GraphCalibrator`,
follows the same :class:`Calibrator` protocol. Parameters are plain arrays (``arrays()`` /
``from_arrays``) so that saving never pickles; ``from_arrays`` checks every array it is given.

The registry (:data:`CALIBRATORS`, :func:`fit_calibrator`, :func:`calibrator_state`,
:func:`load_calibrator`) is how :class:`~adaptable.core.estimator.AdapTable` fits, saves and
loads whichever calibrator ``calibrator=`` names. The ablation calibrators own no constructor
parameter; g_phi owns the network's and post-training's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Protocol

import numpy as np

from adaptable.core.paper.graph_calibrator import GraphCalibrator
from adaptable.core.paper.shift_trend import ShiftTrendInput
from adaptable.core.parts.contexts import FitContext, LoadContext, PartState
from adaptable.framework.probability import softmax

#: the oracle's temperatures: sharp for correctly classified rows, flat for wrong ones
ORACLE_SHARP, ORACLE_FLAT = 1e-2, 1e2


class Calibrator(Protocol):
    """What AdapTable asks of a calibrator (g_phi or an ablation)."""

    #: the value of ``AdapTable(calibrator=...)`` that selects it
    name: ClassVar[str]
    #: whether :meth:`calibrate` needs the batch's shift trend (g_phi)
    needs_shift_trend: ClassVar[bool]
    #: whether :meth:`calibrate` needs the batch's true labels (the oracle)
    needs_labels: ClassVar[bool]
    #: whether q is ``softmax(logits)`` itself (no calibration)
    is_softmax: ClassVar[bool]

    def calibrate(
        self, logits: np.ndarray, trend: ShiftTrendInput | None = None, labels: Any = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(q, temperatures)``: q of shape (n, C); the per-row T_i, (n,), NaN where none."""
        ...

    def arrays(self) -> dict[str, np.ndarray]:
        """The fitted parameters, for saving."""
        ...


class _WithoutParameters:
    """A calibrator with nothing to fit and nothing to save."""

    name: ClassVar[str]
    needs_shift_trend: ClassVar[bool] = False
    needs_labels: ClassVar[bool] = False
    is_softmax: ClassVar[bool] = False

    def fit(self, logits: np.ndarray, labels: np.ndarray) -> Any:
        """Nothing to fit."""
        return self

    def arrays(self) -> dict[str, np.ndarray]:
        return {}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], n_classes: int) -> Any:
        _check_names(arrays, set(), cls.name)
        return cls()


class NoCalibrator(_WithoutParameters):
    """No calibration: q = softmax(z), temperatures 1 ("AdapTable without calibrator")."""

    name: ClassVar[str] = "none"
    is_softmax: ClassVar[bool] = True

    def calibrate(
        self, logits: np.ndarray, trend: ShiftTrendInput | None = None, labels: Any = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(softmax(z), ones)."""
        return softmax(logits), np.ones(len(logits))


class PlattCalibrator:
    """Platt scaling on the logits.

    Binary: q_1 = sigmoid(a (z_1 - z_0) + b), fitted by logistic regression; T_i = 1 / a.
    Multi-class: multinomial logistic regression on the logits (matrix scaling); no temperature.
    """

    name: ClassVar[str] = "platt"
    needs_shift_trend: ClassVar[bool] = False
    needs_labels: ClassVar[bool] = False
    is_softmax: ClassVar[bool] = False
    #: a logistic regression can give no probability to a class it was fitted without
    needs_every_class: ClassVar[bool] = True

    def __init__(self, coef: np.ndarray | None = None, intercept: np.ndarray | None = None):
        self.coef = coef
        self.intercept = intercept

    def fit(self, logits: np.ndarray, labels: np.ndarray) -> PlattCalibrator:
        """Fit on held-out source logits (n, C) and labels (n,)."""
        from sklearn.linear_model import LogisticRegression

        logits = np.asarray(logits, dtype=np.float64)
        # Nearly unregularised: Platt's method is a maximum-likelihood fit.
        model = LogisticRegression(C=1e6, max_iter=1000)
        model.fit(_platt_features(logits), labels)
        self.coef, self.intercept = model.coef_.copy(), model.intercept_.copy()
        return self

    def calibrate(
        self, logits: np.ndarray, trend: ShiftTrendInput | None = None, labels: Any = None
    ) -> tuple[np.ndarray, np.ndarray]:
        logits = np.asarray(logits, dtype=np.float64)
        scores = _platt_features(logits) @ self.coef.T + self.intercept
        if logits.shape[1] == 2:
            z = np.concatenate([np.zeros_like(scores), scores], axis=1)
            slope = float(self.coef[0, 0])
            temperature = 1.0 / slope if slope != 0 else np.inf
            return softmax(z), np.full(len(logits), temperature)
        return softmax(scores), np.full(len(logits), np.nan)

    def arrays(self) -> dict[str, np.ndarray]:
        return {"coef": self.coef, "intercept": self.intercept}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], n_classes: int) -> PlattCalibrator:
        _check_names(arrays, {"coef", "intercept"}, cls.name)
        width = 1 if n_classes == 2 else n_classes
        coef = _checked(arrays, "coef", (width, width), cls.name)
        intercept = _checked(arrays, "intercept", (width,), cls.name)
        return cls(coef, intercept)


class TemperatureCalibrator:
    """Temperature scaling: q = softmax(z / T), one T > 0 for every row.

    T minimises the negative log-likelihood of held-out source labels (a one-dimensional convex
    problem in 1/T, solved by bounded scalar minimisation on log T). Dividing every logit by the
    same positive number changes no row's most likely class.

    Example:
        >>> z = np.array([[0.0, 4.0], [0.0, -4.0], [0.0, 4.0], [0.0, -4.0]])
        >>> cal = TemperatureCalibrator().fit(z, np.array([1, 0, 0, 1]))
        >>> bool(cal.temperature > 4.0)  # half the confident rows are wrong: soften a lot
        True
    """

    name: ClassVar[str] = "temperature"
    needs_shift_trend: ClassVar[bool] = False
    needs_labels: ClassVar[bool] = False
    is_softmax: ClassVar[bool] = False
    #: search range of log T (T from about 0.05 to 20)
    LOG_RANGE: ClassVar[tuple[float, float]] = (-3.0, 3.0)

    def __init__(self, temperature: float = 1.0):
        self.temperature = float(temperature)

    def fit(self, logits: np.ndarray, labels: np.ndarray) -> TemperatureCalibrator:
        """Fit T on held-out source logits (n, C) and labels (n,)."""
        from scipy.optimize import minimize_scalar

        logits = np.asarray(logits, dtype=np.float64)
        rows = np.arange(len(logits))
        labels = np.asarray(labels)

        def nll(log_t: float) -> float:
            scaled = logits / np.exp(log_t)
            scaled = scaled - scaled.max(axis=1, keepdims=True)
            log_norm = np.log(np.exp(scaled).sum(axis=1))
            return float(np.mean(log_norm - scaled[rows, labels]))

        result = minimize_scalar(nll, bounds=self.LOG_RANGE, method="bounded")
        self.temperature = float(np.exp(result.x))
        return self

    def calibrate(
        self, logits: np.ndarray, trend: ShiftTrendInput | None = None, labels: Any = None
    ) -> tuple[np.ndarray, np.ndarray]:
        return softmax(logits, self.temperature), np.full(len(logits), self.temperature)

    def arrays(self) -> dict[str, np.ndarray]:
        return {"temperature": np.array([self.temperature])}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], n_classes: int) -> TemperatureCalibrator:
        _check_names(arrays, {"temperature"}, cls.name)
        value = float(_checked(arrays, "temperature", (1,), cls.name)[0])
        if value <= 0:
            raise ValueError(f"Calibrator {cls.name!r}: temperature must be > 0; got {value}.")
        return cls(value)


def _platt_features(logits: np.ndarray) -> np.ndarray:
    if logits.shape[1] == 2:
        return (logits[:, 1] - logits[:, 0])[:, None]
    return logits


class IsotonicCalibrator:
    """Isotonic regression of each class's probability (one-vs-rest), renormalised; no T_i."""

    name: ClassVar[str] = "isotonic"
    needs_shift_trend: ClassVar[bool] = False
    needs_labels: ClassVar[bool] = False
    is_softmax: ClassVar[bool] = False

    def __init__(
        self, knots_x: list[np.ndarray] | None = None, knots_y: list[np.ndarray] | None = None
    ):
        self.knots_x = knots_x or []
        self.knots_y = knots_y or []

    def fit(self, logits: np.ndarray, labels: np.ndarray) -> IsotonicCalibrator:
        """Fit on held-out source logits (n, C) and labels (n,)."""
        from sklearn.isotonic import IsotonicRegression

        proba = softmax(logits)
        self.knots_x, self.knots_y = [], []
        for j in _isotonic_classes(proba.shape[1]):
            iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip")
            iso.fit(proba[:, j], (np.asarray(labels) == j).astype(np.float64))
            self.knots_x.append(np.asarray(iso.X_thresholds_, dtype=np.float64))
            self.knots_y.append(np.asarray(iso.y_thresholds_, dtype=np.float64))
        return self

    def calibrate(
        self, logits: np.ndarray, trend: ShiftTrendInput | None = None, labels: Any = None
    ) -> tuple[np.ndarray, np.ndarray]:
        proba = softmax(logits)
        # np.interp with end values clipped is what IsotonicRegression.predict computes.
        columns = [
            np.interp(proba[:, j], kx, ky)
            for j, kx, ky in zip(
                _isotonic_classes(proba.shape[1]), self.knots_x, self.knots_y, strict=True
            )
        ]
        if proba.shape[1] == 2:
            q = np.stack([1.0 - columns[0], columns[0]], axis=1)
        else:
            q = np.stack(columns, axis=1)
            total = q.sum(axis=1, keepdims=True)
            # A row every class model scores 0 carries no information: uniform.
            q = np.where(total > 0, q / np.where(total > 0, total, 1.0), 1.0 / q.shape[1])
        return q, np.full(len(logits), np.nan)

    def arrays(self) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for j, (kx, ky) in enumerate(zip(self.knots_x, self.knots_y, strict=True)):
            out[f"knots_x.{j}"], out[f"knots_y.{j}"] = kx, ky
        return out

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], n_classes: int) -> IsotonicCalibrator:
        count = len(_isotonic_classes(n_classes))
        names = {f"knots_{axis}.{j}" for axis in "xy" for j in range(count)}
        _check_names(arrays, names, cls.name)
        knots_x, knots_y = [], []
        for j in range(count):
            kx = _checked(arrays, f"knots_x.{j}", None, cls.name)
            ky = _checked(arrays, f"knots_y.{j}", kx.shape, cls.name)
            # x: probabilities in increasing order; y: the fitted non-decreasing function
            if (
                kx.ndim != 1
                or np.any(np.diff(kx) < 0)
                or np.any(np.diff(ky) < 0)
                or np.any((kx < 0) | (kx > 1) | (ky < 0) | (ky > 1))
            ):
                raise ValueError(
                    f"Calibrator {cls.name!r}: knots {j} must be increasing x values in [0, 1] "
                    "with non-decreasing y in [0, 1]."
                )
            knots_x.append(kx)
            knots_y.append(ky)
        return cls(knots_x, knots_y)


def _isotonic_classes(n_classes: int) -> list[int]:
    """One model for class 1 in a binary task, one per class otherwise."""
    return [1] if n_classes == 2 else list(range(n_classes))


class OracleCalibratorUsingTestLabels(_WithoutParameters):
    """USES THE TEST LABELS. For the paper's oracle table only ("a perfectly calibrated model").

    Correctly classified rows get a sharp temperature (T_i = 0.01, margin near 1, low
    uncertainty), misclassified rows a flat one (T_i = 100, margin near 0, high uncertainty).
    Deliberate difference: the paper describes its oracle only as "a perfectly calibrated model"
    (high confidence when correct, low when wrong); these two temperatures are our reading.
    """

    name: ClassVar[str] = "oracle_test_labels"
    needs_labels: ClassVar[bool] = True

    def calibrate(
        self, logits: np.ndarray, trend: ShiftTrendInput | None = None, labels: Any = None
    ) -> tuple[np.ndarray, np.ndarray]:
        if labels is None:
            raise ValueError(
                "The oracle calibrator needs the batch's true labels: pass oracle_labels=y_batch."
            )
        labels = np.asarray(labels).reshape(-1)
        if labels.shape != (len(logits),):
            raise ValueError(f"oracle_labels must have shape ({len(logits)},); got {labels.shape}.")
        correct = np.asarray(logits).argmax(axis=1) == labels
        temperatures = np.where(correct, ORACLE_SHARP, ORACLE_FLAT)
        return softmax(logits, temperatures), temperatures


#: the ablation calibrators by name
ABLATION_CALIBRATORS: dict[str, Any] = {
    cls.name: cls
    for cls in (
        NoCalibrator,
        TemperatureCalibrator,
        PlattCalibrator,
        IsotonicCalibrator,
        OracleCalibratorUsingTestLabels,
    )
}


def _check_names(arrays: dict[str, np.ndarray], expected: set[str], name: str) -> None:
    """Refuse missing or unexpected parameter arrays, naming them."""
    missing, extra = sorted(expected - set(arrays)), sorted(set(arrays) - expected)
    if missing or extra:
        raise ValueError(
            f"Calibrator {name!r}: missing parameter arrays {missing}, unexpected {extra}."
        )


def _checked(
    arrays: dict[str, np.ndarray], key: str, shape: tuple[int, ...] | None, name: str
) -> np.ndarray:
    """``arrays[key]``: float64 as written, of ``shape`` (any when None) and finite."""
    value = np.asarray(arrays[key])
    if value.dtype != np.float64:
        raise ValueError(
            f"Calibrator {name!r}: array {key!r} must be stored as float64; got {value.dtype}."
        )
    if (shape is not None and value.shape != shape) or value.size == 0:
        raise ValueError(
            f"Calibrator {name!r}: array {key!r} must have shape {shape}; got {value.shape}."
        )
    if not np.all(np.isfinite(value)):
        raise ValueError(f"Calibrator {name!r}: array {key!r} holds NaN or inf values.")
    return value


#: every calibrator AdapTable accepts, by name
CALIBRATORS: dict[str, Any] = {GraphCalibrator.name: GraphCalibrator, **ABLATION_CALIBRATORS}
#: the constructor parameters the calibrators own, all of them g_phi's
CALIBRATOR_PARAMETERS = GraphCalibrator.parameter_constraints


def fit_calibrator(name: str, context: FitContext, params: Mapping[str, Any]) -> Calibrator:
    """The calibrator ``name`` fitted on the source: g_phi post-trained on the source rows, an
    ablation calibrator on the held-out rows (validation where given)."""
    if name == GraphCalibrator.name:
        return GraphCalibrator.fit_source(context, params)
    calibrator = ABLATION_CALIBRATORS[name]
    logits, labels = context.held_out
    if getattr(calibrator, "needs_every_class", False):
        _check_every_class(labels, context.n_classes, name, context.has_validation)
    return calibrator().fit(logits, labels)


def _check_every_class(labels: np.ndarray, n_classes: int, name: str, validation: bool) -> None:
    """Refuse held-out labels that lack a class, naming the argument they came from."""
    absent = sorted(set(range(n_classes)) - set(np.unique(labels).tolist()))
    if absent:
        what = "y_valid (the validation labels)" if validation else "y_source (no y_valid given)"
        raise ValueError(
            f"AdapTable: calibrator={name!r} is fitted on {what}, which holds "
            f"{n_classes - len(absent)} of the {n_classes} classes (class column(s) {absent} "
            f"absent); it needs rows of every class there. Give {what.split()[0]} rows of "
            "every class, or choose calibrator='temperature' or 'isotonic'."
        )


def calibrator_state(calibrator: Any) -> PartState:
    """A fitted calibrator's saved state: g_phi's own, or an ablation's ``calibrator.*`` arrays."""
    if isinstance(calibrator, GraphCalibrator):
        return calibrator.state()
    return PartState({f"calibrator.{key}": value for key, value in calibrator.arrays().items()})


def load_calibrator(name: str, context: LoadContext) -> Calibrator:
    """Inverse of :func:`calibrator_state` for the calibrator ``name``.

    Raises:
        ValueError: naming the field that is missing or malformed.
    """
    if name == GraphCalibrator.name:
        return GraphCalibrator.from_state(context)
    try:
        return ABLATION_CALIBRATORS[name].from_arrays(
            context.reader.prefixed("calibrator."), context.n_classes
        )
    except ValueError as err:
        raise context.reader.error("calibrator", str(err)) from err

"""Calibrators that fill the same slot as g_phi: they turn logits into the calibrated
probabilities q_i whose top-2 margin ranks the rows' uncertainty in the label handler.

- :class:`NoCalibrator` -- q = softmax(z): the "AdapTable without calibrator" ablation.
- :class:`PlattCalibrator`, :class:`IsotonicCalibrator` -- the classical post-hoc calibrators of
  the paper's calibrator ablation table. Deliberate difference (the paper does not say what
  they are fitted on): source validation rows, or training rows when no validation split is
  given. Their uncertainty is the top-2 margin of their own calibrated probabilities.
- :class:`OracleCalibratorUsingTestLabels` -- *uses the test labels*; only for the paper's
  oracle table ("a perfectly calibrated model"), never for a real result.
- :class:`GraphCalibrator` -- the shift-aware calibrator g_phi behind the same interface.

Every calibrator returns ``(q, temperatures)``: q of shape (n, C) and the per-row temperature
T_i of shape (n,) where the calibrator has one (NaN otherwise). Parameters are plain arrays
(``arrays()`` / ``from_arrays``) so that saving never pickles.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from adaptable.core.calibrator import CompleteGraphKernel, ShiftAwareCalibrator, pack
from adaptable.core.label_handler import softmax
from adaptable.core.shift_trend import ShiftTrendInput

#: the oracle's temperatures: sharp for correctly classified rows, flat for wrong ones
ORACLE_SHARP, ORACLE_FLAT = 1e-2, 1e2


class NoCalibrator:
    """No calibration: q = softmax(z), temperatures 1 (the ablation "AdapTable without calibrator")."""

    name = "none"
    needs_shift_trend = False
    needs_labels = False

    def calibrate(
        self, logits: np.ndarray, trend: ShiftTrendInput | None = None, labels: Any = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(softmax(z), ones)."""
        return softmax(logits), np.ones(len(logits))

    def arrays(self) -> dict[str, np.ndarray]:
        return {}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> NoCalibrator:
        return cls()


class PlattCalibrator:
    """Platt scaling on the logits.

    Binary: q_1 = sigmoid(a (z_1 - z_0) + b), fitted by logistic regression; T_i = 1 / a.
    Multi-class: multinomial logistic regression on the logits (matrix scaling); no temperature.
    """

    name = "platt"
    needs_shift_trend = False
    needs_labels = False

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
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> PlattCalibrator:
        return cls(arrays["coef"], arrays["intercept"])


def _platt_features(logits: np.ndarray) -> np.ndarray:
    if logits.shape[1] == 2:
        return (logits[:, 1] - logits[:, 0])[:, None]
    return logits


class IsotonicCalibrator:
    """Isotonic regression of each class's probability (one-vs-rest), renormalised; no temperature."""

    name = "isotonic"
    needs_shift_trend = False
    needs_labels = False

    def __init__(
        self, knots_x: list[np.ndarray] | None = None, knots_y: list[np.ndarray] | None = None
    ):
        self.knots_x = knots_x or []
        self.knots_y = knots_y or []

    def fit(self, logits: np.ndarray, labels: np.ndarray) -> IsotonicCalibrator:
        """Fit on held-out source logits (n, C) and labels (n,)."""
        from sklearn.isotonic import IsotonicRegression

        proba = softmax(logits)
        classes = [1] if proba.shape[1] == 2 else range(proba.shape[1])
        self.knots_x, self.knots_y = [], []
        for j in classes:
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
        classes = [1] if proba.shape[1] == 2 else range(proba.shape[1])
        columns = [
            np.interp(proba[:, j], kx, ky)
            for j, kx, ky in zip(classes, self.knots_x, self.knots_y, strict=True)
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
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> IsotonicCalibrator:
        count = sum(1 for k in arrays if k.startswith("knots_x."))
        return cls(
            [arrays[f"knots_x.{j}"] for j in range(count)],
            [arrays[f"knots_y.{j}"] for j in range(count)],
        )


class OracleCalibratorUsingTestLabels:
    """USES THE TEST LABELS. For the paper's oracle table only ("a perfectly calibrated model").

    Correctly classified rows get a sharp temperature (T_i = 0.01, margin near 1, low
    uncertainty), misclassified rows a flat one (T_i = 100, margin near 0, high uncertainty).
    Deliberate difference: the paper describes its oracle only as "a perfectly calibrated model"
    (high confidence when correct, low when wrong); these two temperatures are our reading.
    """

    name = "oracle_test_labels"
    needs_shift_trend = False
    needs_labels = True

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

    def arrays(self) -> dict[str, np.ndarray]:
        return {}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> OracleCalibratorUsingTestLabels:
        return cls()


class GraphCalibrator:
    """The shift-aware calibrator g_phi: q_i = softmax(z_i / T_i), T_i = g_phi(z_i, s^t).

    Deliberate difference (the paper fixes N = 64 and says nothing of other sizes): a batch wider
    than the network's node width is cut into consecutive graphs of ``width`` rows (the last one
    zero-padded), each with its own shift trend graph; a narrower batch is zero-padded, as the
    authors do.
    """

    name = "gnn"
    needs_shift_trend = True
    needs_labels = False

    def __init__(self, net: ShiftAwareCalibrator):
        self.net = net.eval()
        # The complete graph runs as a numpy kernel at test time (no torch overhead per batch).
        self._kernel = (
            CompleteGraphKernel.from_network(self.net) if net.adjacency == "complete" else None
        )

    def temperatures(self, logits: np.ndarray, trend: ShiftTrendInput) -> np.ndarray:
        """T_i for every row, (n,)."""
        if self._kernel is not None:
            return self._kernel(trend.numeric, trend.category_index, logits)
        graphs = pack(
            trend, logits, self.net.width, pad_index=self.net.category_projection.shape[0]
        )
        with torch.inference_mode():
            t = self.net(graphs.numeric, graphs.category_index, graphs.logits, graphs.mask)
        return t.reshape(-1)[: len(logits)].to(torch.float64).numpy()

    def calibrate(
        self, logits: np.ndarray, trend: ShiftTrendInput | None = None, labels: Any = None
    ) -> tuple[np.ndarray, np.ndarray]:
        if trend is None:
            raise ValueError("The shift-aware calibrator needs the batch's features X_batch.")
        temperatures = self.temperatures(logits, trend)
        return softmax(logits, temperatures), temperatures

    def arrays(self) -> dict[str, np.ndarray]:
        return {k: v.detach().cpu().numpy() for k, v in self.net.state_dict().items()}

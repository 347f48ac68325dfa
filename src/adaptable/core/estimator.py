"""``adaptable.AdapTable``: the public, scikit-learn style estimator.

Example:
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from adaptable import AdapTable, datasets
    >>> ds = datasets.make_shift_dataset(seed=0)
    >>> X = ds.train.X[ds.numerical].to_numpy()
    >>> model = LogisticRegression().fit(X, ds.train.y)
    >>> method = AdapTable(epochs=2, random_state=0).fit(model, X, ds.train.y)
    >>> method.predict_proba(ds.test.X[ds.numerical].to_numpy()[:64]).shape
    (64, 2)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

from adaptable.core.alternative_calibrators import (
    GraphCalibrator,
    IsotonicCalibrator,
    NoCalibrator,
    OracleCalibratorUsingTestLabels,
    PlattCalibrator,
)
from adaptable.core.calibrator import (
    PostTrainingReport,
    Progress,
    ShiftAwareCalibrator,
    class_weights,
    post_train,
)
from adaptable.core.interface import TestTimeMethod
from adaptable.core.label_handler import (
    OnlinePrior,
    adjust_batch,
    imbalance_temperature,
    source_prior,
)
from adaptable.core.model_adapter import as_logit_function
from adaptable.core.shift_trend import (
    ADJACENCIES,
    ColumnLayout,
    ShiftTrendInput,
    SourceStatistics,
)

#: calibrator names accepted by AdapTable(calibrator=...)
CALIBRATORS = ("gnn", "none", "platt", "isotonic", "oracle_test_labels")


@dataclass(frozen=True)
class AdapTableState:
    """Diagnostics after the last batch (``None`` before the first batch).

    Attributes:
        source_prior: p_s, (C,).
        temperature: T of the quantile rule.
        online_prior: p^oe, the current estimate of the target label distribution (the one the
            next batch starts from), (C,).
        target_prior: p_t used on the last batch, (C,).
        temperatures: the calibrator's per-row T_i of the last batch, (n,) (NaN where the
            calibrator has none).
        recalibration_temperatures: the per-row T~_i of the last batch (T, 1 or 1/T), (n,).
        uncertainty: delta_i of the last batch, (n,).
        n_batches: batches adapted since fit / reset.
    """

    source_prior: np.ndarray
    temperature: float
    online_prior: np.ndarray
    target_prior: np.ndarray | None
    temperatures: np.ndarray | None
    recalibration_temperatures: np.ndarray | None
    uncertainty: np.ndarray | None
    n_batches: int


class AdapTable(TestTimeMethod):
    """AdapTable (Kim et al., NeurIPS 2024): shift-aware calibrator + label distribution handler.

    Adjusts any classifier's outputs batch by batch; the model itself is never changed.

    Args:
        alpha: smoothing factor of the online target-label estimator (weight of the past).
        q_low, q_high: uncertainty quantiles of the sharpen / soften rule.
        adjacency: ``"complete"`` (paper, default) or ``"correlation"`` (authors' final commit).
        calibrator: ``"gnn"`` (shift-aware, default), ``"none"`` (ablation: plain softmax),
            ``"platt"``, ``"isotonic"``, or ``"oracle_test_labels"`` (uses the test labels, pass
            ``oracle_labels=`` to :meth:`predict_proba`; for the paper's oracle table only).
        temperature: an explicit T replacing 1.5 rho / (rho - 1 + 1e-6).
        max_temperature: a cap on the formula's T (useful when the source is nearly balanced).
        batch_size: N, the calibrator's node width and post-training batch (64 in the paper).
        hidden: GCN width (128).
        epochs, patience, lr, weight_decay: post-training (Adam, cosine schedule, early stopping).
        gamma: focal-loss gamma (2).
        cal_weight: lambda_CAL (0.1).
        graphs_per_step: graphs of ``batch_size`` rows per optimiser step; 1 as the authors;
            ``None`` keeps 1 on sources of up to 64 graphs and 32 steps per epoch above (see
            :func:`~adaptable.core.calibrator.automatic_graphs_per_step`).
        numerical, categorical: column kinds for the calibrator's Encoder; inferred from dtypes
            when ``None``.
        output: what the model gives (see :func:`~adaptable.core.as_logit_function`).
        random_state: seeds the calibrator's initialisation and row shuffling.
        verbose: print one line per post-training epoch.
        progress: called as ``progress(epoch, train_loss, valid_loss, is_best)`` per epoch.

    Example:
        >>> method = AdapTable(calibrator="none")
        >>> method.alpha, method.q_low, method.q_high
        (0.1, 0.25, 0.75)
    """

    name = "adaptable"
    updates_parameters = False

    def __init__(
        self,
        alpha: float = 0.1,
        q_low: float = 0.25,
        q_high: float = 0.75,
        adjacency: str = "complete",
        calibrator: str = "gnn",
        temperature: float | None = None,
        max_temperature: float | None = None,
        batch_size: int = 64,
        hidden: int = 128,
        epochs: int = 50,
        patience: int = 20,
        lr: float = 1e-3,
        weight_decay: float = 5e-3,
        gamma: float = 2.0,
        cal_weight: float = 0.1,
        graphs_per_step: int | None = None,
        numerical: Sequence[str] | None = None,
        categorical: Sequence[str] | None = None,
        output: str = "auto",
        random_state: int | None = None,
        verbose: bool = False,
        progress: Progress | None = None,
    ) -> None:
        self.alpha = alpha
        self.q_low = q_low
        self.q_high = q_high
        self.adjacency = adjacency
        self.calibrator = calibrator
        self.temperature = temperature
        self.max_temperature = max_temperature
        self.batch_size = batch_size
        self.hidden = hidden
        self.epochs = epochs
        self.patience = patience
        self.lr = lr
        self.weight_decay = weight_decay
        self.gamma = gamma
        self.cal_weight = cal_weight
        self.graphs_per_step = graphs_per_step
        self.numerical = numerical
        self.categorical = categorical
        self.output = output
        self.random_state = random_state
        self.verbose = verbose
        self.progress = progress
        self._validate_params()

    # ------------------------------------------------------------------ parameters
    #: constructor arguments saved with the estimator (``progress`` is a callable: not saved)
    _SAVED_PARAMS = (
        "alpha", "q_low", "q_high", "adjacency", "calibrator", "temperature", "max_temperature",
        "batch_size", "hidden", "epochs", "patience", "lr", "weight_decay", "gamma", "cal_weight",
        "graphs_per_step", "numerical", "categorical", "output", "random_state", "verbose",
    )  # fmt: skip

    def get_params(self) -> dict[str, Any]:
        """Constructor arguments (JSON-compatible except ``progress``)."""
        params = {k: getattr(self, k) for k in self._SAVED_PARAMS}
        for key in ("numerical", "categorical"):
            if params[key] is not None:
                params[key] = list(params[key])
        return params

    def _validate_params(self) -> None:
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must lie in [0, 1]; got {self.alpha!r}.")
        if not 0.0 <= self.q_low <= self.q_high <= 1.0:
            raise ValueError(
                f"Expected 0 <= q_low <= q_high <= 1; got q_low={self.q_low!r}, "
                f"q_high={self.q_high!r}."
            )
        if self.adjacency not in ADJACENCIES:
            raise ValueError(f"adjacency must be one of {ADJACENCIES}; got {self.adjacency!r}.")
        if self.calibrator not in CALIBRATORS:
            raise ValueError(f"calibrator must be one of {CALIBRATORS}; got {self.calibrator!r}.")
        for key in ("batch_size", "hidden", "epochs", "graphs_per_step"):
            value = getattr(self, key)
            if value is not None and int(value) < 1:
                raise ValueError(f"{key} must be a positive integer; got {getattr(self, key)!r}.")
        if self.patience < 0:
            raise ValueError(f"patience must be >= 0; got {self.patience!r}.")

    # ------------------------------------------------------------------ fitting
    def fit(
        self,
        model: Any,
        X_source: Any,
        y_source: np.ndarray,
        X_valid: Any = None,
        y_valid: np.ndarray | None = None,
    ) -> AdapTable:
        """Compute p_s, fit the shift-trend Encoder and post-train the calibrator.

        Args:
            model: the frozen source classifier (torch module, object with ``predict_logits`` /
                ``predict_proba``, or a callable with ``output=`` set).
            X_source: source training rows, exactly as the model takes them (array or frame).
            y_source: labels 0..C-1, (n,).
            X_valid, y_valid: source validation rows (early stopping, classical calibrators,
                and p_s together with the training labels, as the authors).
        """
        self._validate_params()
        if (X_valid is None) != (y_valid is None):
            raise ValueError("Pass X_valid and y_valid together, or neither.")
        self._logit_function = as_logit_function(model, self.output)
        y_source = _labels(y_source, _n_rows(X_source), "y_source")
        if y_valid is not None:
            y_valid = _labels(y_valid, _n_rows(X_valid), "y_valid")
        logits_source = self._logit_function(X_source)
        self.n_classes_ = logits_source.shape[1]
        self.source_prior_ = source_prior(y_source, y_valid, n_classes=self.n_classes_)
        self.temperature_ = imbalance_temperature(
            self.source_prior_, self.temperature, self.max_temperature
        )
        logits_valid = None if X_valid is None else self._logit_function(X_valid)
        self.post_training_ = None
        self._fit_calibrator(X_source, y_source, logits_source, X_valid, y_valid, logits_valid)
        self._online = OnlinePrior(self.n_classes_, self.alpha)
        self._last = None
        self._n_batches = 0
        return self

    def _fit_calibrator(
        self,
        X_source: Any,
        y_source: np.ndarray,
        logits_source: np.ndarray,
        X_valid: Any,
        y_valid: np.ndarray | None,
        logits_valid: np.ndarray | None,
    ) -> None:
        held_out = (logits_source, y_source) if logits_valid is None else (logits_valid, y_valid)
        self.encoder_ = self.layout_ = self.source_statistics_ = None
        if self.calibrator == "none":
            self._calibrator = NoCalibrator()
        elif self.calibrator == "platt":
            self._calibrator = PlattCalibrator().fit(*held_out)
        elif self.calibrator == "isotonic":
            self._calibrator = IsotonicCalibrator().fit(*held_out)
        elif self.calibrator == "oracle_test_labels":
            self._calibrator = OracleCalibratorUsingTestLabels()
        else:
            self._fit_graph_calibrator(
                X_source, y_source, logits_source, X_valid, y_valid, logits_valid
            )

    def _fit_graph_calibrator(
        self,
        X_source: Any,
        y_source: np.ndarray,
        logits_source: np.ndarray,
        X_valid: Any,
        y_valid: np.ndarray | None,
        logits_valid: np.ndarray | None,
    ) -> None:
        from adaptable.encoding import Encoder

        source_frame = _as_frame(X_source)
        fit_frame = source_frame
        if X_valid is not None:
            fit_frame = pd.concat([source_frame, _as_frame(X_valid)], ignore_index=True)
        # The calibrator's own Encoder (train + valid, as the authors); the model never sees it.
        self.encoder_ = Encoder(self.numerical, self.categorical).fit(
            _encoder_input(X_source, fit_frame)
        )
        self.layout_ = ColumnLayout.from_encoder(self.encoder_)
        encoded_source = self.encoder_.transform(X_source)
        # Source means over the training rows (paper Eq. 1).
        self.source_statistics_ = self.layout_.source_statistics(encoded_source)
        train = (
            self.layout_.shift_input(encoded_source, self.source_statistics_),
            logits_source,
            y_source,
        )
        valid = None
        if X_valid is not None:
            valid_trend = self._shift_input(X_valid)
            valid = (valid_trend, logits_valid, y_valid)
        seed = _seed(self.random_state)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            net = self._new_network()
        self.post_training_ = post_train(
            net,
            train,
            valid,
            class_weights=class_weights(self.source_prior_),
            epochs=self.epochs,
            patience=self.patience,
            lr=self.lr,
            weight_decay=self.weight_decay,
            gamma=self.gamma,
            cal_weight=self.cal_weight,
            graphs_per_step=self.graphs_per_step,
            seed=seed,
            progress=self._progress_callback(),
        )
        self._calibrator = GraphCalibrator(net)

    def _new_network(self) -> ShiftAwareCalibrator:
        return ShiftAwareCalibrator(
            n_numeric=self.layout_.n_numeric,
            block_sizes=self.layout_.block_sizes.tolist(),
            n_classes=self.n_classes_,
            width=self.batch_size,
            hidden=self.hidden,
            adjacency=self.adjacency,
            category_mean=self.source_statistics_.category_mean,
        )

    def _progress_callback(self) -> Progress | None:
        if not self.verbose:
            return self.progress

        def report(epoch: int, train: float, valid: float, best: bool) -> None:
            print(f"epoch {epoch:3d}  train {train:.5f}  valid {valid:.5f}{'  *' if best else ''}")
            if self.progress is not None:
                self.progress(epoch, train, valid, best)

        return report

    # ------------------------------------------------------------------ adapting
    def predict_proba(self, X_batch: Any, *, oracle_labels: np.ndarray | None = None) -> np.ndarray:
        """Adapt to one test batch and return p_bar, (n, C); advances the online state.

        Args:
            X_batch: the batch, as the model takes it (n >= 1 rows).
            oracle_labels: the batch's true labels; only with ``calibrator="oracle_test_labels"``.
        """
        self._check_fitted()
        if self._logit_function is None:
            raise RuntimeError(
                "This AdapTable was loaded without a model; pass model= to AdapTable.load, or "
                "call adapt_logits(logits, X_batch)."
            )
        _check_batch(X_batch)
        # The batch's columns are checked (by the Encoder) before the model sees it, so a wrong
        # table fails with our message rather than deep inside the model.
        trend = self._shift_input(X_batch) if self._calibrator.needs_shift_trend else None
        logits = self._check_logits(self._logit_function(X_batch))
        return self._adapt(logits, trend, oracle_labels)

    def predict(self, X_batch: Any, *, oracle_labels: np.ndarray | None = None) -> np.ndarray:
        """Class indices of :meth:`predict_proba` (adapts on the batch like it)."""
        return self.predict_proba(X_batch, oracle_labels=oracle_labels).argmax(axis=1)

    def adapt_logits(
        self,
        logits: np.ndarray | torch.Tensor,
        X_batch: Any = None,
        *,
        oracle_labels: np.ndarray | None = None,
    ) -> np.ndarray:
        """Algorithm 1 on logits the caller already has; advances the online state.

        Args:
            logits: the source model's logits for the batch, (n, C).
            X_batch: the batch's features (needed by the shift-aware calibrator only).
            oracle_labels: see :meth:`predict_proba`.

        Returns:
            p_bar, (n, C) float64, rows summing to 1.
        """
        self._check_fitted()
        logits = self._check_logits(logits)
        trend = None
        if self._calibrator.needs_shift_trend:
            if X_batch is None:
                raise ValueError("The shift-aware calibrator needs X_batch next to the logits.")
            _check_batch(X_batch)
            if _n_rows(X_batch) != len(logits):
                raise ValueError(
                    f"X_batch has {_n_rows(X_batch)} rows but the logits have {len(logits)}."
                )
            trend = self._shift_input(X_batch)
        return self._adapt(logits, trend, oracle_labels)

    def _check_logits(self, logits: np.ndarray | torch.Tensor) -> np.ndarray:
        if isinstance(logits, torch.Tensor):
            logits = logits.detach().cpu().numpy()
        logits = np.asarray(logits, dtype=np.float64)
        if logits.ndim != 2 or logits.shape[1] != self.n_classes_:
            raise ValueError(
                f"Expected logits of shape (n, {self.n_classes_}); got {logits.shape}."
            )
        if len(logits) == 0:
            raise ValueError("Empty batch: AdapTable needs at least one row.")
        if not np.all(np.isfinite(logits)):
            raise ValueError("The logits hold NaN or inf values.")
        return logits

    def _adapt(
        self, logits: np.ndarray, trend: ShiftTrendInput | None, oracle_labels: np.ndarray | None
    ) -> np.ndarray:
        """Steps 2-6 of Algorithm 1 on checked logits (step 1 is the model)."""
        if oracle_labels is not None and not self._calibrator.needs_labels:
            raise ValueError(
                "oracle_labels are only accepted with calibrator='oracle_test_labels'; this "
                f"AdapTable uses calibrator={self.calibrator!r}."
            )
        calibrated, temperatures = self._calibrator.calibrate(logits, trend, oracle_labels)
        result = adjust_batch(
            logits,
            calibrated,
            self.source_prior_,
            self._online,
            self.temperature_,
            self.q_low,
            self.q_high,
        )
        self._last = (result, temperatures)
        self._n_batches += 1
        return result.proba

    def reset(self) -> None:
        """Back to the state right after fit: uniform p^oe, no last batch."""
        self._check_fitted()
        self._online.reset()
        self._last = None
        self._n_batches = 0

    @property
    def state(self) -> AdapTableState:
        """Current target-label estimate and the last batch's temperatures (see AdapTableState)."""
        self._check_fitted()
        result, temperatures = self._last if self._last is not None else (None, None)
        return AdapTableState(
            source_prior=self.source_prior_.copy(),
            temperature=self.temperature_,
            online_prior=self._online.value.copy(),
            target_prior=None if result is None else result.target_prior,
            temperatures=temperatures,
            recalibration_temperatures=None
            if result is None
            else result.recalibration_temperatures,
            uncertainty=None if result is None else result.uncertainty,
            n_batches=self._n_batches,
        )

    def _shift_input(self, X: Any) -> ShiftTrendInput:
        return self.layout_.shift_input(self.encoder_.transform(X), self.source_statistics_)

    def _check_fitted(self) -> None:
        if not hasattr(self, "_calibrator"):
            raise RuntimeError("This AdapTable is not fitted yet; call fit(model, X, y) first.")

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the fitted state to one ``.safetensors`` file (tensors + JSON metadata, no pickle).

        The source model is not saved; pass it again to :meth:`load`. The online state (p^oe) is
        saved as it is now.
        """
        from adaptable.core.serialization import save

        self._check_fitted()
        save(self, path)

    @classmethod
    def load(
        cls, path: str | os.PathLike[str], model: Any = None, output: str | None = None
    ) -> AdapTable:
        """Read a file written by :meth:`save`.

        Args:
            path: the file.
            model: the source model, for :meth:`predict_proba`; without it only
                :meth:`adapt_logits` works.
            output: overrides the saved ``output`` argument for ``model``.
        """
        from adaptable.core.serialization import load

        return load(cls, path, model, output)

    def __repr__(self) -> str:
        changed = {k: v for k, v in self.get_params().items() if v != _DEFAULTS.get(k, object())}
        inner = ", ".join(f"{k}={v!r}" for k, v in changed.items())
        return f"AdapTable({inner})"

    # Filled by serialization.load
    def _restore(
        self,
        *,
        logit_function: Any,
        n_classes: int,
        prior: np.ndarray,
        temperature: float,
        online: np.ndarray,
        calibrator: Any,
        encoder: Any,
        layout: ColumnLayout | None,
        statistics: SourceStatistics | None,
    ) -> None:
        self._logit_function = logit_function
        self.n_classes_ = n_classes
        self.source_prior_ = prior
        self.temperature_ = temperature
        self._online = OnlinePrior(n_classes, self.alpha)
        self._online.value = online.copy()
        self._calibrator = calibrator
        self.encoder_, self.layout_, self.source_statistics_ = encoder, layout, statistics
        self.post_training_: PostTrainingReport | None = None
        self._last = None
        self._n_batches = 0


_DEFAULTS = AdapTable().get_params()


def _seed(random_state: int | None) -> int:
    if random_state is None:
        return int(np.random.SeedSequence().entropy % (2**63))
    return int(random_state)


def _n_rows(X: Any) -> int:
    if hasattr(X, "shape"):
        return int(X.shape[0])
    return len(X)


def _check_batch(X: Any) -> None:
    if X is None:
        raise ValueError("X_batch is None; expected a table of at least one row.")
    if _n_rows(X) == 0:
        raise ValueError("Empty batch: AdapTable needs at least one row.")


def _labels(y: Any, n_rows: int, what: str) -> np.ndarray:
    y = np.asarray(y).reshape(-1)
    if y.shape != (n_rows,):
        raise ValueError(f"{what} must have one label per row ({n_rows}); got shape {y.shape}.")
    return y


def _as_frame(X: Any) -> pd.DataFrame:
    if isinstance(X, pd.DataFrame):
        return X
    if isinstance(X, torch.Tensor):
        X = X.detach().cpu().numpy()
    return pd.DataFrame(np.asarray(X))


def _encoder_input(X_source: Any, fit_frame: pd.DataFrame) -> Any:
    """Arrays stay arrays (positional columns), frames stay frames."""
    if isinstance(X_source, pd.DataFrame):
        return fit_frame
    return fit_frame.to_numpy()

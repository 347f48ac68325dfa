"""The estimator :class:`AdapTable`: a calibrator and a decider around any classifier.

The estimator reads the model (:mod:`~adaptable.core.model_adapter`), encodes each batch once
where a part reads features, and passes the logits through its two parts: the calibrator
(:mod:`~adaptable.core.calibrators`) and the decider (:mod:`~adaptable.core.deciders`), which
the preset chooses (:mod:`~adaptable.core.presets`). Saving and loading assemble the parts' own
states (:mod:`~adaptable.core.serialization`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from adaptable.core.calibrators import CALIBRATORS, fit_calibrator
from adaptable.core.deciders import CalibratedBatch, Decision
from adaptable.core.drift_report import REPORT_BATCHES
from adaptable.core.fitted_columns import FittedColumns
from adaptable.core.interface import SourceData, TestTimeMethod, check_model_classes
from adaptable.core.label_handler import source_prior
from adaptable.core.late_labels import LateLabels
from adaptable.core.model_adapter import as_logit_function, checked_logits, rows_checked
from adaptable.core.parameters import InvalidParameterError, validate_parameters
from adaptable.core.parts import FitContext, source_rows
from adaptable.core.presets import DECIDERS, PARAMETER_CONSTRAINTS, calibrator_name
from adaptable.core.serialization import SavedAdapTable, read, write
from adaptable.encoding import EncodedBatch, Encoder

if TYPE_CHECKING:
    # Annotations only: torch (and post-training, which needs it) load with the paper preset's
    # graph calibrator or a torch model, never with the default preset on another model.
    import torch

    from adaptable.core.post_training import Progress


@dataclass(frozen=True)
class AdapTableState:
    """Diagnostics after the last batch (``None`` before the first batch).

    Attributes:
        source_prior: p_s, (C,).
        temperature: T of the quantile rule (paper preset; ``None`` in the default preset).
        online_prior: the current estimate of the target label distribution (p^oe in the paper
            preset, the MAP-EM estimate in the default preset), (C,).
        target_prior: p_t used on the last batch, (C,).
        temperatures: the calibrator's per-row T_i of the last batch, (n,) (NaN where none).
        recalibration_temperatures: the per-row T~_i of the last batch (T, 1 or 1/T), (n,).
        uncertainty: delta_i of the last batch, (n,).
        n_batches: batches adapted since fit / reset (a loaded adapter goes on from the
            count it was saved with; after a load ``target_prior``, ``decision_rule`` and
            ``prior_shift_statistic`` are the saved last batch's, its per-row arrays
            ``None``).
        decision_rule: default preset: the rule used on the last batch, ``"source"``,
            ``"balanced"``, ``"plugin"``, ``"between"`` or ``"label_shift"``; once labels
            have come back (:meth:`partial_fit`), ``"feedback:"`` and the rule they chose:
            ``argmax``, ``balanced``, ``label_shift``, ``plugin``, ``corrected`` (a score
            correction fitted on them) or the unlabelled rule of the moment, as
            ``"feedback:<rule> (unlabelled)"``.
        shift_statistic: default preset: the label-shift test's z-score now (small: the
            stream is consistent with pure label shift).
        prior_shift_statistic: default preset: the likelihood-ratio statistic of the target-prior
            estimate against p_s on the last batch; ``None`` where the z-score ruled it out.
    """

    source_prior: np.ndarray
    temperature: float | None
    online_prior: np.ndarray
    target_prior: np.ndarray | None
    temperatures: np.ndarray | None
    recalibration_temperatures: np.ndarray | None
    uncertainty: np.ndarray | None
    n_batches: int
    decision_rule: str | None = None
    shift_statistic: float | None = None
    prior_shift_statistic: float | None = None


class AdapTable(LateLabels, TestTimeMethod):
    """AdapTable: adapt any classifier's outputs to a shifted test stream, batch by batch.

    The model itself is never changed. Two presets, each a decider:

    - ``preset="default"`` (recommended): decides for ``objective`` and corrects for label
      shift only where the stream supports it
      (:class:`~adaptable.core.recommended_decider.RecommendedDecider`; no calibrator).
    - ``preset="paper"``: Algorithm 1 of Kim et al. (NeurIPS 2024) exactly: the shift-aware
      calibrator g_phi (:class:`~adaptable.core.graph_calibrator.GraphCalibrator`) and the label
      distribution handler (:class:`~adaptable.core.paper_decider.PaperDecider`).

    **predict_proba is stateful.** Each call adapts to its batch *and* advances the online
    state, which the next batch starts from: calling it twice on the same batch may give two
    answers, as a test stream is a sequence. :meth:`reset` starts a new stream; :attr:`state`
    shows the estimate. Labels may be any label set (``classes_``); ``predict`` returns them.
    A scikit-learn estimator: ``get_params`` / ``set_params`` / ``clone`` work, and every
    parameter is checked when set (constructor, ``set_params``, ``fit``).

    Args:
        preset: ``"default"`` or ``"paper"``.
        calibrator: ``"auto"`` (the preset's: ``"none"`` / ``"gnn"``), ``"gnn"``,
            ``"temperature"``, ``"none"``, ``"platt"``, ``"isotonic"``, or
            ``"oracle_test_labels"`` (paper preset, the paper's oracle table only: pass
            ``oracle_labels=`` to :meth:`predict_proba`). See :mod:`adaptable.core.calibrators`.
        numerical, categorical: column kinds for the Encoder; inferred from dtypes when ``None``.
        output: what the model gives (see :func:`~adaptable.core.as_logit_function`).
        random_state: seeds every random draw of the parts.
        verbose: print one line per post-training epoch.
        progress: called as ``progress(epoch, train_loss, valid_loss, is_best)`` per epoch.

    Every other argument belongs to one part, which documents it:
    ``objective``, ``shift_test_threshold``, ``prior_strength``, ``label_shift_level``,
    ``rule_evidence``, ``covariate_rule_evidence``, ``fallback``, ``stream_check``,
    ``prior_reference``, ``report_batches``:
    :class:`~adaptable.core.recommended_decider.RecommendedDecider`;
    ``alpha``, ``q_low``, ``q_high``, ``temperature``, ``max_temperature``:
    :class:`~adaptable.core.paper_decider.PaperDecider`; ``adjacency``, ``batch_size``,
    ``hidden``, ``epochs``, ``patience``, ``lr``, ``weight_decay``, ``gamma``, ``cal_weight``,
    ``graphs_per_step``: :class:`~adaptable.core.graph_calibrator.GraphCalibrator`
    (:data:`~adaptable.core.presets.PART_PARAMETERS` lists them).

    Attributes (after fit):
        classes_, n_classes_, source_prior_: the labels (sorted), C, and p_s.
        encoder_: the Encoder the parts read the batches through (``None`` where none does).
        columns_: fitted on a DataFrame: its columns
            (:class:`~adaptable.core.fitted_columns.FittedColumns`); every later DataFrame
            reaches the model with these columns in this order, found by name (extra columns
            left out; a missing one is refused); ``None`` after a fit on arrays.
        calibrator_, decider_: the fitted parts.
        temperature_: T of the paper's quantile rule (``None`` in the default preset).
        post_training_: g_phi's post-training report (``None`` without one).

    Example:
        >>> method = AdapTable(preset="paper", calibrator="none")
        >>> method.alpha, method.q_low, method.q_high
        (0.1, 0.25, 0.75)
        >>> method
        AdapTable(calibrator='none', preset='paper')
    """

    name = "adaptable"
    updates_parameters = False
    _parameter_constraints = PARAMETER_CONSTRAINTS
    # (objects pickled before fit kept the columns read batches as given; before the report's
    # window, every batch's record; before prior_reference, label shift was read against p_s)
    columns_: FittedColumns | None = None
    report_batches: int | None = REPORT_BATCHES
    prior_reference: str = "labels"

    def __init__(
        self,
        *,
        preset: str = "default",
        objective: str = "macro_f1",
        calibrator: str = "auto",
        shift_test_threshold: float = 3.0,
        prior_strength: float = 64.0,
        label_shift_level: float = 0.05,
        rule_evidence: float = 0.8,
        covariate_rule_evidence: float = 0.0,
        fallback: str = "argmax",
        stream_check: str = "both",
        prior_reference: str = "labels",
        report_batches: int | None = REPORT_BATCHES,
        alpha: float = 0.1,
        q_low: float = 0.25,
        q_high: float = 0.75,
        adjacency: str = "complete",
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
        # Every argument kept as given, under its own name (scikit-learn's get_params / clone).
        for name, value in dict(locals()).items():
            if name not in ("self", "__class__"):
                setattr(self, name, value)
        self._check_parameters(self.get_params(deep=False))

    def set_params(self, **params: Any) -> AdapTable:
        """Set parameters (scikit-learn's ``set_params``), checked before any is changed."""
        self._check_parameters({**self.get_params(deep=False), **params})
        return super().set_params(**params)

    def _check_parameters(self, params: dict[str, Any]) -> None:
        """Every parameter against its part's constraints, then the combinations."""
        validate_parameters(self._parameter_constraints, params, type(self).__name__)
        for decider in DECIDERS.values():
            decider.check_parameters(params)
        oracle = params["calibrator"] == "oracle_test_labels"
        if oracle and not DECIDERS[params["preset"]].accepts_oracle_calibrator:
            raise InvalidParameterError(
                "AdapTable: calibrator='oracle_test_labels' exists only for the paper's oracle "
                "table; use it with preset='paper'."
            )

    @property
    def calibrator_name_(self) -> str:
        """The calibrator in use: ``calibrator`` (as fitted), with ``"auto"`` resolved for the
        preset."""
        return calibrator_name(self.params_as_fitted())

    def params_as_fitted(self) -> dict[str, Any]:
        """The constructor arguments the adapter was fitted (or loaded) with, which a later
        ``set_params`` does not change until the next :meth:`fit`; before a fit (or for an
        adapter pickled before they were kept), those of the moment."""
        return getattr(self, "_fitted_params", None) or self.get_params(deep=False)

    @property
    def reads_heldout_rows(self) -> bool:  # type: ignore[override]
        """Whether the preset's decider decides on the held-out rows or reports against them."""
        return DECIDERS[self.preset].reads_heldout_rows

    def _fit(self, model: Any, source: SourceData) -> None:
        """p_s (train + valid labels, as the authors), the Encoder where a part reads features,
        then the calibrator and the decider on the same :class:`FitContext`."""
        params = self.get_params(deep=False)
        self._check_parameters(params)
        # what save writes: a set_params after fit takes effect at the next fit, so a saved
        # adapter must be rebuilt from these, not from the parameters of the moment
        self._fitted_params = {k: list(v) if isinstance(v, list) else v for k, v in params.items()}
        if source.X is None or source.y is None:
            raise ValueError("adaptable: fit needs the source rows X_source and labels y_source.")
        if (source.X_valid is None) != (source.y_valid is None):
            raise ValueError("adaptable: pass X_valid and y_valid together, or neither.")
        for what, rows in (("X_source", source.X), ("X_valid", source.X_valid)):
            if _is_sparse(rows):
                raise ValueError(
                    f"adaptable: {what} is a scipy sparse matrix; pass its dense rows "
                    "(.toarray()) or a DataFrame."
                )
        self.columns_ = FittedColumns.of(source.X)
        decider = DECIDERS[self.preset].from_params(params)
        reads_features = (
            decider.needs_features or CALIBRATORS[self.calibrator_name_].needs_shift_trend
        )
        if self.columns_ is not None and source.X_valid is not None:
            # (the Encoder reads the held-out rows by name; a model alone may take either)
            if reads_features and not isinstance(source.X_valid, pd.DataFrame):
                raise ValueError(
                    "adaptable: X_source is a DataFrame but X_valid is not; pass the held-out "
                    "rows as a DataFrame with the same columns."
                )
            valid = self.columns_.conform(source.X_valid, "X_valid")
            source = dataclasses.replace(source, X_valid=valid)
        self._logit_function = as_logit_function(model, self.output)
        shared = shared_encoder(model, params)
        logits = rows_checked(
            self._logit_function(source.X), len(source.y), f"the {len(source.y)} rows of X_source"
        )
        self.n_classes_ = logits.shape[1]
        self.source_prior_ = source_prior(source.y, source.y_valid, n_classes=self.n_classes_)
        logits_valid = None
        if source.X_valid is not None:
            n_valid = len(source.y_valid)
            logits_valid = rows_checked(
                self._logit_function(source.X_valid), n_valid, f"the {n_valid} rows of X_valid"
            )
        name = self.calibrator_name_
        self.encoder_ = None
        if reads_features:
            self.encoder_ = shared or Encoder(self.numerical, self.categorical).fit(
                source_rows(source)
            )
        context = FitContext(
            source, logits, logits_valid, self.source_prior_, self.encoder_,
            _seed(self.random_state), progress_callback(self.verbose, self.progress),
        )  # fmt: skip
        self.calibrator_ = fit_calibrator(name, context, params)
        self.decider_ = decider.fit(context)
        self._start(model if shared is not None else None)

    def _start(self, model_sharing_encoder: Any) -> None:
        """Fitted or loaded: the fields every batch reads, and no batch seen."""
        sharing = model_sharing_encoder
        self._encoded_logits = None if sharing is None else sharing.logits_from_encoded
        self.temperature_ = self.decider_.temperature_
        self.post_training_ = getattr(self.calibrator_, "report", None)
        self._needs_features = self.decider_.needs_features or self.calibrator_.needs_shift_trend
        self._last: tuple[Decision, np.ndarray] | None = None
        #: the last batch's fields a file held, until a batch is adapted after the load
        self._saved_last: dict[str, Any] | None = None
        self._n_batches = 0

    def _check_batch(self, X_batch: Any) -> int:
        n_rows = super()._check_batch(X_batch)
        if _is_sparse(X_batch):  # the Encoder reads no sparse matrix
            raise ValueError(
                f"{self.name}: X_batch is a scipy sparse matrix; pass its dense rows "
                "(X_batch.toarray()) or a DataFrame, as at fit."
            )
        return n_rows

    def predict_proba(self, X_batch: Any, *, oracle_labels: Any = None) -> np.ndarray:
        """Adapt to one test batch and return its probabilities, (n, C) in ``classes_`` order.

        Paper preset: p_bar of Algorithm 1. Default preset: the estimated target posteriors
        re-weighted for the objective (their argmax is the decision). **Stateful** (see the
        class docstring). ``oracle_labels``: the batch's true labels, only with
        ``calibrator="oracle_test_labels"``.
        """
        self._check_fitted()
        if self._logit_function is None:
            raise RuntimeError(
                "This AdapTable was loaded without a model; pass model= to AdapTable.load, or "
                "call adapt_logits(logits, X_batch)."
            )
        n_rows = self._check_batch(X_batch)
        # Encoded once, before the model sees the batch: a wrong table fails with the Encoder's
        # message rather than deep inside the model; a model sharing the Encoder reuses it.
        if self.columns_ is not None:
            X_batch = self.columns_.conform(X_batch, "X_batch")
        encoded = self.encoder_.encode(X_batch) if self._needs_features else None
        if encoded is not None and self._encoded_logits is not None:
            logits = checked_logits(self._encoded_logits(encoded), self.n_classes_, n_rows)
        else:
            logits = checked_logits(self._logit_function(X_batch), self.n_classes_, n_rows)
        return self._adapt(logits, encoded, oracle_labels)

    def predict(self, X_batch: Any, *, oracle_labels: Any = None) -> np.ndarray:
        """Labels (from ``classes_``) of :meth:`predict_proba` (stateful like it)."""
        proba = self.predict_proba(X_batch, oracle_labels=oracle_labels)
        return self.classes_[proba.argmax(axis=1)]

    def adapt_logits(
        self, logits: np.ndarray | torch.Tensor, X_batch: Any = None, *, oracle_labels: Any = None
    ) -> np.ndarray:
        """Adapt on logits (n, C) the caller already has; stateful like :meth:`predict_proba`.

        ``X_batch`` (the batch's features) is needed where a part reads them: the shift-aware
        calibrator and the default preset's decider. Returns (n, C) float64 rows summing to 1.
        """
        self._check_fitted()
        logits = checked_logits(logits, self.n_classes_)
        encoded = None
        if self._needs_features:
            if X_batch is None:
                raise ValueError(
                    "adaptable: X_batch is needed next to the logits (by the shift-aware "
                    "calibrator, or the default preset's label-shift test). Only "
                    "AdapTable(preset='paper', calibrator='none' / 'platt' / 'isotonic') works "
                    "on logits alone."
                )
            n_rows = self._check_batch(X_batch)
            if n_rows != len(logits):
                raise ValueError(f"X_batch has {n_rows} rows but the logits have {len(logits)}.")
            encoded = self.encoder_.encode(X_batch)
        return self._adapt(logits, encoded, oracle_labels)

    def _adapt(self, logits: np.ndarray, encoded: EncodedBatch | None, oracle: Any) -> np.ndarray:
        """One batch on checked logits: calibrate (line 9), then decide."""
        calibrator = self.calibrator_
        trend = calibrator.shift_trend(encoded) if calibrator.needs_shift_trend else None
        labels = None
        if oracle is not None:
            if not calibrator.needs_labels:
                raise ValueError(
                    "oracle_labels are only accepted with calibrator='oracle_test_labels'; this "
                    f"AdapTable uses calibrator={self.calibrator!r}."
                )
            labels = self._label_codes(oracle, "oracle_labels")
        calibrated, temperatures = calibrator.calibrate(logits, trend, labels)
        batch = CalibratedBatch(logits, calibrated, encoded, calibrator.is_softmax)
        decision = self.decider_.decide(batch)
        self._last = (decision, temperatures)
        self._n_batches += 1
        return decision.proba

    def reset(self) -> None:
        """Back to the state right after fit (the online estimates and tests forget the stream)."""
        self._check_fitted()
        self.decider_.reset()
        self._last, self._saved_last, self._n_batches = None, None, 0

    @property
    def state(self) -> AdapTableState:
        """Current target-label estimate and the last batch's diagnostics (AdapTableState)."""
        self._check_fitted()
        last, temperatures = self._last if self._last is not None else (None, None)
        saved = getattr(self, "_saved_last", None)
        if last is None and saved is not None:
            last = Decision(
                np.zeros((0, self.n_classes_)), saved["target_prior"], self.decider_.online_prior,
                None, None, saved["rule"], None, saved["prior_shift_statistic"],
            )  # fmt: skip
        return AdapTableState(
            source_prior=self.source_prior_.copy(),
            temperature=self.temperature_,
            online_prior=self.decider_.online_prior,
            target_prior=None if last is None else last.target_prior,
            temperatures=temperatures,
            recalibration_temperatures=None if last is None else last.recalibration_temperatures,
            uncertainty=None if last is None else last.uncertainty,
            n_batches=self._n_batches,
            decision_rule=None if last is None else last.rule,
            shift_statistic=self.decider_.shift_statistic,
            prior_shift_statistic=None if last is None else last.prior_shift_statistic,
        )

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the fitted state, mid-stream, to one ``.safetensors`` file (tensors + JSON
        metadata, no pickle). The source model is not saved; pass it again to :meth:`load`.
        The file holds the parameters the adapter was fitted with: one changed by
        ``set_params`` since takes effect at the next :meth:`fit`, in the file as here.

        Raises:
            FileNotFoundError: the folder of ``path`` does not exist.
            IsADirectoryError: ``path`` is a folder.
        """
        self._check_fitted()
        write(self, path)

    @classmethod
    def load(
        cls, path: str | os.PathLike[str], model: Any = None, output: str | None = None
    ) -> AdapTable:
        """Read a file written by :meth:`save`, checking every field and tensor it holds.

        Args:
            path: the file.
            model: the source model, for :meth:`predict_proba`; without it only
                :meth:`adapt_logits` works.
            output: overrides the saved ``output`` argument for ``model``.

        Raises:
            ValueError: the file is not an AdapTable file, was written by a later minor version,
                or a field is missing, malformed or disagrees with another (the message names
                the file and the field); or ``model`` names classes (``classes_``) other than
                the file's.
            IsADirectoryError: ``path`` is a folder.
        """
        saved: SavedAdapTable = read(cls, path)
        if model is not None:  # the check of fit: column j must be class j of the file
            check_model_classes(model, saved.classes, "AdapTable.load")
        method = cls(**{**saved.params, **({} if output is None else {"output": output})})
        method._fitted_params = method.get_params(deep=False)
        method._logit_function = None if model is None else as_logit_function(model, method.output)
        method.n_classes_, method.classes_ = len(saved.classes), saved.classes
        method.source_prior_, method.encoder_ = saved.source_prior, saved.encoder
        method.calibrator_, method.decider_ = saved.calibrator, saved.decider
        method.columns_ = None if saved.columns is None else FittedColumns(saved.columns)
        method._start(None)
        if saved.stream is not None:  # the state goes on where it was saved
            method._n_batches = saved.stream["n_batches"]
            method._saved_last = saved.stream if saved.stream["n_batches"] else None
        return method


def shared_encoder(model: Any, params: dict[str, Any]) -> Encoder | None:
    """The model's Encoder where each batch can be encoded once for both.

    A model that exposes its fitted ``encoder`` (an :class:`~adaptable.encoding.Encoder`) and
    ``logits_from_encoded(EncodedBatch)``, such as the package's torch source models, gets the
    adapter's encoding of the batch instead of encoding it again; the adapter then uses that
    Encoder as its own, unless ``numerical`` / ``categorical`` say otherwise or the model's
    output is read as probabilities.
    """
    encoder = getattr(model, "encoder", None)
    usable = (
        isinstance(encoder, Encoder)
        and callable(getattr(model, "logits_from_encoded", None))
        and params["numerical"] is None
        and params["categorical"] is None
        and params["output"] != "proba"
    )
    return encoder if usable else None


def progress_callback(verbose: bool, progress: Progress | None) -> Progress | None:
    """``progress``, preceded by a printed line per epoch when ``verbose``."""
    if not verbose:
        return progress
    return _PrintedProgress(progress)


class _PrintedProgress:
    """Prints one line per post-training epoch, then calls the user's callback (picklable)."""

    def __init__(self, progress: Progress | None) -> None:
        self.progress = progress

    def __call__(self, epoch: int, train: float, valid: float, best: bool) -> None:
        print(f"epoch {epoch:3d}  train {train:.5f}  valid {valid:.5f}{'  *' if best else ''}")
        if self.progress is not None:
            self.progress(epoch, train, valid, best)


def _is_sparse(rows: Any) -> bool:
    """A scipy sparse matrix or array (scipy is not imported to find out)."""
    return type(rows).__module__.startswith("scipy.sparse")


def _seed(random_state: int | None) -> int:
    if random_state is None:
        return int(np.random.SeedSequence().entropy % (2**63))
    return int(random_state)

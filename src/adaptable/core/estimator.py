"""The estimator :class:`AdapTable`: a calibrator and a decider around any classifier.

The estimator reads the model (:mod:`~adaptable.framework.model_adapter`), encodes each batch once
where a part reads features, and passes the logits through its two parts: the calibrator
(:mod:`~adaptable.core.paper.calibrators`) and the decider (:mod:`~adaptable.core.parts.decider`), which
the preset chooses (:mod:`~adaptable.core.presets`). Saving and loading assemble the parts' own
states (:mod:`~adaptable.core.persistence.save_file`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from adaptable.core.adapter_state import AdapTableState
from adaptable.core.fitted_parts import FittedParts, fit_parts, is_sparse
from adaptable.core.label_intake import LateLabels
from adaptable.core.paper.post_training import Progress
from adaptable.core.parts.decider import CalibratedBatch, Decision
from adaptable.core.parts.earlier_pickles import with_added_attributes
from adaptable.core.persistence.save_file import read, write
from adaptable.core.presets import DECIDERS, PARAMETER_CONSTRAINTS, calibrator_name
from adaptable.core.report.drift_log import REPORT_BATCHES
from adaptable.encoding import EncodedBatch
from adaptable.framework.fitted_columns import FittedColumns
from adaptable.framework.method import SourceData, TestTimeMethod
from adaptable.framework.model_adapter import checked_logits
from adaptable.framework.parameters import InvalidParameterError, validate_parameters

# AdapTableState was defined here: imports of this module (and pickles) still find it
__all__ = ["AdapTable", "AdapTableState"]


class AdapTable(LateLabels, TestTimeMethod):
    """AdapTable: adapt any classifier's outputs to a shifted test stream, batch by batch.

    The model itself is never changed. Two presets, each a decider:

    - ``preset="default"`` (recommended): decides for ``objective`` and corrects for label
      shift only where the stream supports it
      (:class:`~adaptable.core.recommended.recommended_decider.RecommendedDecider`; no calibrator).
    - ``preset="paper"``: Algorithm 1 of Kim et al. (NeurIPS 2024) exactly: the shift-aware
      calibrator g_phi (:class:`~adaptable.core.paper.graph_calibrator.GraphCalibrator`) and the label
      distribution handler (:class:`~adaptable.core.paper.paper_decider.PaperDecider`).

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
            ``oracle_labels=`` to :meth:`predict_proba`). See :mod:`adaptable.core.paper.calibrators`.
        numerical, categorical: column kinds for the Encoder; inferred from dtypes when ``None``.
        output: what the model gives (see :func:`~adaptable.core.as_logit_function`).
        random_state: seeds every random draw of the parts.
        verbose: print one line per post-training epoch.
        progress: called as ``progress(epoch, train_loss, valid_loss, is_best)`` per epoch.

    Every other argument belongs to one part, which documents it:
    ``objective``, ``shift_test_threshold``, ``prior_strength``, ``label_shift_level``,
    ``rule_evidence``, ``covariate_rule_evidence``, ``fallback``, ``stream_check``,
    ``prior_reference``, ``report_batches``:
    :class:`~adaptable.core.recommended.recommended_decider.RecommendedDecider`;
    ``alpha``, ``q_low``, ``q_high``, ``temperature``, ``max_temperature``:
    :class:`~adaptable.core.paper.paper_decider.PaperDecider`; ``adjacency``, ``batch_size``,
    ``hidden``, ``epochs``, ``patience``, ``lr``, ``weight_decay``, ``gamma``, ``cal_weight``,
    ``graphs_per_step``: :class:`~adaptable.core.paper.graph_calibrator.GraphCalibrator`
    (:data:`~adaptable.core.presets.PART_PARAMETERS` lists them).

    Attributes (after fit):
        classes_, n_classes_, source_prior_: the labels (sorted), C, and p_s.
        encoder_: the Encoder the parts read the batches through (``None`` where none does).
        columns_: fitted on a DataFrame: its columns
            (:class:`~adaptable.framework.fitted_columns.FittedColumns`); every later DataFrame
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
    #: the columns a DataFrame fit saw (None: rows read by position)
    columns_: FittedColumns | None = None

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickling, earlier versions' pickles included (``parts.earlier_pickles``)."""
        super().__setstate__(with_added_attributes("AdapTable", state))

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
        """The parts fitted on the source (:func:`~adaptable.core.fitted_parts.fit_parts`)."""
        params = self.get_params(deep=False)
        self._check_parameters(params)
        # what save writes: a set_params after fit takes effect at the next fit, so a saved
        # adapter must be rebuilt from these, not from the parameters of the moment
        self._fitted_params = {k: list(v) if isinstance(v, list) else v for k, v in params.items()}
        self._start(fit_parts(model, source, params))

    def _start(self, parts: FittedParts, stream: dict[str, Any] | None = None) -> None:
        """Fitted or loaded: the parts, and the stream so far (a loaded file's, else none)."""
        self.n_classes_, self.source_prior_ = parts.n_classes, parts.source_prior
        self.encoder_, self.columns_ = parts.encoder, parts.columns
        self.calibrator_, self.decider_ = parts.calibrator, parts.decider
        self._logit_function, self._encoded_logits = parts.logit_function, parts.encoded_logits
        self.temperature_ = self.decider_.temperature_
        self.post_training_ = getattr(self.calibrator_, "report", None)
        self._needs_features = self.decider_.needs_features or self.calibrator_.needs_shift_trend
        self._last: tuple[Decision, np.ndarray] | None = None
        # the last batch's fields a file held, until a batch is adapted after the load
        self._saved_last = stream if stream is not None and stream["n_batches"] else None
        self._n_batches = 0 if stream is None else stream["n_batches"]

    def _check_batch(self, X_batch: Any) -> int:
        n_rows = super()._check_batch(X_batch)
        if is_sparse(X_batch):  # the Encoder reads no sparse matrix
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
        return AdapTableState.of(
            self.source_prior_, self.temperature_, self.decider_, self._last,
            getattr(self, "_saved_last", None), self._n_batches,
        )  # fmt: skip

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
        saved = read(cls, path, model)
        method = cls(**saved.params_with(output))
        method._fitted_params, method.classes_ = method.get_params(deep=False), saved.classes
        method._start(saved.parts_with(model, method.output), saved.stream)
        return method

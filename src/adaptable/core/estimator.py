"""The estimator :class:`AdapTable`: a calibrator and a decider around any classifier.

The estimator reads the model (:mod:`~adaptable.framework.model_adapter`), encodes each batch once
where a part reads features, and passes the logits through its two parts: the calibrator
(:mod:`~adaptable.core.paper.calibrators`) and the decider (:mod:`~adaptable.core.parts.decider`), which
the preset chooses (:mod:`~adaptable.core.presets`). It is assembled from objects it owns:

- its fitted parts (:class:`~adaptable.core.fitted_parts.FittedParts`, fitted by
  :func:`~adaptable.core.fitted_parts.fit_parts` or read back by
  :mod:`~adaptable.core.persistence.save_file`, which assembles the parts' own states);
- the reading of a batch (:class:`~adaptable.core.batch_input.BatchInput`) and the intake of
  labels that come back (:class:`~adaptable.core.label_intake.LabelIntake`), both built on
  those parts;
- its diagnostics, :class:`~adaptable.core.adapter_state.AdapTableState`.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Self

import numpy as np
import pandas as pd

from adaptable.core.adapter_state import AdapTableState
from adaptable.core.batch_input import BatchInput
from adaptable.core.fitted_parts import FittedParts, fit_parts
from adaptable.core.label_intake import LabelIntake
from adaptable.core.parts.decider import CalibratedBatch, Decision
from adaptable.core.parts.earlier_pickles import with_added_attributes
from adaptable.core.persistence.save_file import read, write
from adaptable.core.presets import DECIDERS, PARAMETER_CONSTRAINTS, calibrator_name
from adaptable.core.report.drift_log import REPORT_BATCHES
from adaptable.core.report.drift_summary import DriftSummary
from adaptable.core.report.feature_drift import drift_frame
from adaptable.encoding import EncodedBatch
from adaptable.framework.fitted_columns import FittedColumns
from adaptable.framework.method import SourceData, TestTimeMethod
from adaptable.framework.model_adapter import checked_logits
from adaptable.framework.parameters import InvalidParameterError, validate_parameters
from adaptable.framework.rows import as_table

# AdapTableState was defined here: imports of this module (and pickles) still find it
__all__ = ["AdapTable", "AdapTableState"]

#: what the estimator builds on its own fields (:meth:`AdapTable._wire`), left out of its pickle
_WIRED = ("_input", "_intake")

if TYPE_CHECKING:
    # Annotations only: torch (and post-training, which needs it) load with the paper preset's
    # graph calibrator or a torch model, never with the default preset on another model.
    import torch

    from adaptable.core.paper.post_training import Progress


class AdapTable(TestTimeMethod):
    """Adapt any classifier's outputs to a shifted test stream, batch by batch.

    The model is never changed. ``preset="default"`` (recommended) decides for ``objective``
    and corrects for label shift only where the stream supports it; ``preset="paper"`` is
    Algorithm 1 of Kim et al. (NeurIPS 2024). **predict_proba is stateful**: each call adapts
    to its batch *and* advances the online state the next starts from (:meth:`reset` starts a
    new stream). Any label set. A scikit-learn estimator; every parameter is checked when set.

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

    Every other argument belongs to one part, which documents it
    (:data:`~adaptable.core.presets.PART_PARAMETERS`): ``objective``, ``shift_test_threshold``,
    ``prior_strength``, ``label_shift_level``, ``rule_evidence``, ``covariate_rule_evidence``,
    ``fallback``, ``stream_check``, ``prior_reference``, ``report_batches``:
    :class:`~adaptable.core.recommended.recommended_decider.RecommendedDecider`; ``alpha``,
    ``q_low``, ``q_high``, ``temperature``, ``max_temperature``:
    :class:`~adaptable.core.paper.paper_decider.PaperDecider`; ``adjacency``, ``batch_size``,
    ``hidden``, ``epochs``, ``patience``, ``lr``, ``weight_decay``, ``gamma``, ``cal_weight``,
    ``graphs_per_step``: g_phi, :class:`~adaptable.core.paper.graph_calibrator.GraphCalibrator`;
    ``update`` (``"auto"``, ``"refit"``, ``"patch"``, ``"none"``), ``update_in_background``:
    the model updates when labels come back, :mod:`~adaptable.core.updates.model_updates`.

    Attributes (after fit):
        classes_, n_classes_, source_prior_: the labels (sorted), C, and p_s.
        encoder_: the Encoder the parts read the batches through (``None`` where none does).
        columns_: the columns of a DataFrame fit, which every later DataFrame is put in before
            the model reads it (:class:`~adaptable.framework.fitted_columns.FittedColumns`).
        calibrator_, decider_: the fitted parts.
        feature_monitor_: per-column drift against the held-out rows (:meth:`feature_drift`;
            ``None`` where none is kept).
        updates_: the model updates (``None``: ``update="none"``, or the paper preset), a
            :class:`~adaptable.core.updates.model_updates.ModelUpdates` (``summary()``).
        temperature_, post_training_: T of the paper's quantile rule, g_phi's post-training
            report (``None`` where there is none).

    Example:
        >>> AdapTable(preset="paper", calibrator="none")
        AdapTable(calibrator='none', preset='paper')
    """

    name = "adaptable"
    _parameter_constraints = PARAMETER_CONSTRAINTS
    #: the columns a DataFrame fit saw (None: rows read by position)
    columns_: FittedColumns | None = None

    def __getstate__(self) -> dict[str, Any]:
        # the pickle holds the fields alone, as earlier versions' did; _wire rebuilds the rest
        return {k: v for k, v in super().__getstate__().items() if k not in _WIRED}

    def __setstate__(self, state: dict[str, Any]) -> None:  # earlier versions' pickles too
        super().__setstate__(with_added_attributes("AdapTable", state))
        if "classes_" in self.__dict__:
            self._wire()

    def __init__(
        self, *, preset: str = "default", objective: str = "macro_f1", calibrator: str = "auto",
        shift_test_threshold: float = 3.0, prior_strength: float = 64.0,
        label_shift_level: float = 0.05, rule_evidence: float = 0.8,
        covariate_rule_evidence: float = 0.0, fallback: str = "argmax",
        stream_check: str = "both", prior_reference: str = "labels",
        report_batches: int | None = REPORT_BATCHES, alpha: float = 0.1, q_low: float = 0.25,
        q_high: float = 0.75, adjacency: str = "complete", temperature: float | None = None,
        max_temperature: float | None = None, batch_size: int = 64, hidden: int = 128,
        epochs: int = 50, patience: int = 20, lr: float = 1e-3, weight_decay: float = 5e-3,
        gamma: float = 2.0, cal_weight: float = 0.1, graphs_per_step: int | None = None,
        numerical: Sequence[str] | None = None, categorical: Sequence[str] | None = None,
        output: str = "auto", random_state: int | None = None, verbose: bool = False,
        progress: Progress | None = None, update: str = "auto",
        update_in_background: bool = False,
    ) -> None:  # fmt: skip
        # Every argument kept as given, under its own name (scikit-learn's get_params / clone).
        for name, value in dict(locals()).items():
            if name not in ("self", "__class__"):
                setattr(self, name, value)
        check_parameters(self, self.get_params(deep=False))

    def set_params(self, **params: Any) -> AdapTable:
        """Set parameters (scikit-learn's ``set_params``), checked before any is changed."""
        check_parameters(self, {**self.get_params(deep=False), **params})
        return super().set_params(**params)

    @property
    def calibrator_name_(self) -> str:
        """The calibrator in use: ``calibrator`` (as fitted), ``"auto"`` resolved."""
        return calibrator_name(self.params_as_fitted())

    def params_as_fitted(self) -> dict[str, Any]:
        """The constructor arguments of the last :meth:`fit` (or load), which a later
        ``set_params`` does not change until the next fit; before a fit, those of the moment."""
        return getattr(self, "_fitted_params", None) or self.get_params(deep=False)

    @property
    def reads_heldout_rows(self) -> bool:  # type: ignore[override]
        """Whether the preset's decider decides on the held-out rows or reports against them."""
        return DECIDERS[self.preset].reads_heldout_rows

    def _fit(self, model: Any, source: SourceData) -> None:
        params = self.get_params(deep=False)
        check_parameters(self, params)
        # what save writes: a set_params after fit takes effect at the next fit
        self._fitted_params = {k: list(v) if isinstance(v, list) else v for k, v in params.items()}
        self._start(fit_parts(model, source, params))

    def _start(self, parts: FittedParts, stream: dict[str, Any] | None = None) -> None:
        """Fitted or loaded: the parts, and the stream so far (a loaded file's, else none)."""
        self.n_classes_, self.source_prior_ = parts.n_classes, parts.source_prior
        self.encoder_, self.columns_ = parts.encoder, parts.columns
        self.calibrator_, self.decider_ = parts.calibrator, parts.decider
        self.feature_monitor_, self.updates_ = parts.feature_monitor, parts.updates
        self._logit_function, self._encoded_logits = parts.logit_function, parts.encoded_logits
        self.temperature_ = self.decider_.temperature_
        self.post_training_ = getattr(self.calibrator_, "report", None)
        self._needs_features = self.decider_.needs_features or self.calibrator_.needs_shift_trend
        self._last: tuple[Decision, np.ndarray] | None = None
        # the last batch's fields a file held, until a batch is adapted after the load
        self._saved_last = stream if stream is not None and stream["n_batches"] else None
        self._n_batches = 0 if stream is None else stream["n_batches"]
        self._wire()

    def _wire(self) -> None:
        """The objects that read batches and take labels, on the fields above."""
        self._input = BatchInput(
            logit_function=self._logit_function, encoded_logits=self._encoded_logits,
            encoder=self.encoder_, columns=self.columns_, n_classes=self.n_classes_,
            needs_features=self._needs_features,
        )  # fmt: skip
        self._intake = LabelIntake(self.decider_, self._input, self.source_prior_, self.updates_)

    def predict_proba(self, X_batch: Any, *, oracle_labels: Any = None) -> np.ndarray:
        """Adapt to one test batch (one row may be a dict or a pandas Series) and return its
        probabilities, (n, C) in ``classes_`` order: p_bar of Algorithm 1 (paper preset), or the
        target posteriors re-weighted for the objective (default). Stateful."""
        self._check_fitted()
        logits, encoded, rows = self._input.read(as_table(X_batch), self._check_batch)
        return self._adapt(logits, encoded, oracle_labels, rows)

    def predict(self, X_batch: Any, *, oracle_labels: Any = None) -> np.ndarray:
        """Labels (from ``classes_``) of :meth:`predict_proba` (stateful like it)."""
        proba = self.predict_proba(X_batch, oracle_labels=oracle_labels)
        return self.classes_[proba.argmax(axis=1)]

    def adapt_logits(
        self, logits: np.ndarray | torch.Tensor, X_batch: Any = None, *, oracle_labels: Any = None
    ) -> np.ndarray:
        """Adapt on logits (n, C) the caller already has, beside the batch's features where a
        part reads them (the shift-aware calibrator, the default preset's decider); stateful
        like :meth:`predict_proba`. Returns (n, C) float64 rows summing to 1."""
        self._check_fitted()
        logits = checked_logits(logits, self.n_classes_)
        encoded = self._input.beside(logits, X_batch, self._check_batch)
        rows = self._input.rows_beside(X_batch)
        return self._adapt(logits, encoded, oracle_labels, rows)

    def _adapt(
        self, logits: np.ndarray, encoded: EncodedBatch | None, oracle: Any, rows: Any = None
    ) -> np.ndarray:
        """One batch on checked logits: calibrate (line 9), then decide."""
        calibrator = self.calibrator_
        trend = calibrator.shift_trend(encoded) if calibrator.needs_shift_trend else None
        calibrated, temperatures = calibrator.calibrate(logits, trend, oracle_codes(self, oracle))
        updates = self.updates_
        amend = updates and functools.partial(updates.amend, rows, logits, encoded)
        batch = CalibratedBatch(logits, calibrated, encoded, calibrator.is_softmax, amend)
        decision = self.decider_.decide(batch)
        self._last, self._n_batches = (decision, temperatures), self._n_batches + 1
        if rows is not None and self.feature_monitor_ is not None:  # per-column drift
            self.feature_monitor_.observe(rows, encoded)
        return decision.proba

    def partial_fit(self, X: Any, y: Any, *, rows: Any = None) -> Self:
        """Labels of target rows predicted earlier (default preset), at any delay, for any
        share of the rows: they change the outputs of the batches *after* this call (the
        decision, and with ``update`` the model updates), never those already made.

        Args:
            X: the rows as the model takes them (one row: a dict or a Series), or ``None`` with
                ``rows``: the labels then go with the scores kept for those rows (the last 65,536).
            y: their labels (from ``classes_``), (n,).
            rows: optional ids of the rows: their positions in the stream since fit / reset
                (the first batch holds rows 0 .. n_1 - 1, the next n_1 .. n_1 + n_2 - 1). With
                ids the labels are scored against the rows' predictions (the report's
                ``realised_*`` columns, the updates' choice); a label sent again counts once.

        Raises:
            ValueError: the paper preset, a label outside ``classes_``, a length mismatch, an
                unknown id or one given two labels, or ``X=None`` without ``rows`` or for rows
                whose scores are no longer kept. Nothing is learnt from a call that raises.
            RuntimeError: ``X`` given to an adapter loaded without a model.
        """
        self._check_fitted()
        X = as_table(X)
        self._intake.check_accepts(X, rows, self.preset)
        codes = self._label_codes(y, "y")
        self._intake.learn(X, codes, rows, self.classes_, count=self._check_batch)
        return self

    def partial_fit_logits(
        self, logits: np.ndarray | torch.Tensor, y: Any, *, rows: Any = None
    ) -> Self:
        """:meth:`partial_fit` on the rows' logits (n, C), which the caller already has."""
        self._check_fitted()
        self._intake.check_learns(self.preset)
        self._intake.learn_logits(logits, self._label_codes(y, "y"), rows, self.classes_)
        return self

    def report(self) -> pd.DataFrame:
        """The drift report (default preset; ``ValueError`` for the paper's): one row per batch
        adapted since fit / reset / load, the last ``report_batches`` of them (up to a quarter
        more); columns: :meth:`adaptable.core.report.drift_log.DriftLog.frame`."""
        self._check_fitted()
        return self._intake.report(self.classes_, self.preset)

    def drift_summary(
        self, *, last_batches: int | None = None, tolerance: float = 0.05,
        deviations: float = 2.0, reference: float | None = None,
    ) -> DriftSummary:  # fmt: skip
        """A :class:`~adaptable.core.report.drift_summary.DriftSummary` (``print`` it): whether
        the adapter still does as well on the stream as the model did on its held-out source
        rows (default preset): the drift tests, the label distribution, the objective, the model
        update in use and a verdict. ``last_batches``: the latest batches only (None: all);
        ``tolerance``: the fall accepted (0.05: 5 points); ``deviations``: the standard
        deviations a verdict needs; ``reference``: a level taken as exact (None: the model's on
        the held-out rows). ``ValueError``: the paper preset, no batch yet, or an option out of
        range (:func:`~adaptable.core.report.drift_summary.summarise`)."""
        self._check_fitted()
        return self._intake.drift_summary(
            self.classes_, self.preset, last_batches=last_batches, tolerance=tolerance,
            deviations=deviations, reference=reference,
        )  # fmt: skip

    def feature_drift(self, *, level: float = 0.05) -> pd.DataFrame:
        """Per-column drift of the stream since fit / reset (or load) against the held-out rows,
        any preset: one row per column of fit's table, the columns flagged at the family-wise
        ``level`` (Holm) first, then by distance. The tests, the columns and the errors
        (``ValueError``: no batch yet, ``level`` outside (0, 1), or no per-column record):
        :func:`~adaptable.core.report.feature_drift.drift_frame`."""
        self._check_fitted()
        return drift_frame(self.feature_monitor_, level)

    def reset(self) -> None:
        """Back to the state right after fit (the online estimates and tests forget the stream)."""
        self._check_fitted()
        for part in (self.decider_, self.feature_monitor_, self.updates_):
            part is None or part.reset()
        self._last, self._saved_last, self._n_batches = None, None, 0

    @property
    def state(self) -> AdapTableState:
        """Current target-label estimate and the last batch's diagnostics."""
        self._check_fitted()
        return AdapTableState.of(
            self.source_prior_, self.temperature_, self.decider_, self._last,
            getattr(self, "_saved_last", None), self._n_batches,
        )  # fmt: skip

    def save(self, path: str | os.PathLike[str], *, drop_updates: bool = False) -> None:
        """Write the fitted state, mid-stream, to one ``.safetensors`` file (no pickle), with
        the parameters of the last fit and a SHA-256 digest of the whole; the model is not
        saved (pass it to :meth:`load`). Raises ``ValueError`` once model updates have learnt
        from labels (pickle; or ``drop_updates=True``: the file then says ``update="none"``),
        ``FileNotFoundError`` / ``IsADirectoryError`` for a missing folder / a folder."""
        self._check_fitted()
        write(self, path, drop_updates=drop_updates)

    @classmethod
    def load(
        cls, path: str | os.PathLike[str], model: Any = None, output: str | None = None, *,
        training_rows: tuple[Any, Any] | None = None,
    ) -> AdapTable:  # fmt: skip
        """Read a file written by :meth:`save`, checking every field and tensor it holds.

        Args:
            path: the file.
            model: the source model (without it only :meth:`adapt_logits` works).
            output: overrides the saved ``output`` argument for ``model``.
            training_rows: ``(X_source, y_source)`` as given to fit, for the model updates'
                refit (without them labels fit the patch alone; ``updates_.refusal`` says so).

        Raises ``ValueError`` for a file not an AdapTable's or of a later version, a field
        missing, malformed or in disagreement with another (named), a digest that does not
        match (corrupted, or edited), or ``model.classes_`` not the file's;
        ``IsADirectoryError`` where ``path`` is a folder.
        """
        saved = read(cls, path, model)
        method = cls(**saved.params_with(output))
        method._fitted_params, method.classes_ = method.get_params(deep=False), saved.classes
        rows = training_rows and (training_rows[0], method._label_codes(training_rows[1], "y"))
        method._start(saved.parts_with(model, method.output, rows), saved.stream)
        return method


def oracle_codes(method: AdapTable, oracle: Any) -> np.ndarray | None:
    """The codes of a batch's ``oracle_labels`` (``None``: none given); ``ValueError`` where
    the calibrator takes none."""
    if oracle is None:
        return None
    if not method.calibrator_.needs_labels:
        raise ValueError(
            "oracle_labels are only accepted with calibrator='oracle_test_labels'; this "
            f"AdapTable uses calibrator={method.calibrator!r}."
        )
    return method._label_codes(oracle, "oracle_labels")


def check_parameters(method: AdapTable, params: dict[str, Any]) -> None:
    """Every parameter of ``method`` against its part's constraints, then the combinations."""
    validate_parameters(method._parameter_constraints, params, type(method).__name__)
    for decider in DECIDERS.values():
        decider.check_parameters(params)
    oracle = params["calibrator"] == "oracle_test_labels"
    if oracle and not DECIDERS[params["preset"]].accepts_oracle_calibrator:
        raise InvalidParameterError(
            "AdapTable: calibrator='oracle_test_labels' exists only for the paper's oracle "
            "table; use it with preset='paper'."
        )

"""What :class:`~adaptable.core.estimator.AdapTable` holds once fitted or loaded
(:class:`FittedParts`), and how fit builds it from the model and the source rows
(:func:`fit_parts`).

Fit reads the model (:mod:`~adaptable.framework.model_adapter`), computes p_s, fits the
Encoder where a part reads features (or takes the model's own, :func:`shared_encoder`), then
the calibrator and the decider the preset chooses on one
:class:`~adaptable.core.parts.contexts.FitContext`. Load reads the same parts back from a file
(:mod:`~adaptable.core.persistence.save_file`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from adaptable.core.batch_input import is_sparse
from adaptable.core.paper.calibrators import CALIBRATORS, Calibrator, fit_calibrator
from adaptable.core.paper.label_handler import source_prior
from adaptable.core.parts.contexts import FitContext, source_rows
from adaptable.core.parts.decider import Decider
from adaptable.core.presets import DECIDERS, calibrator_name
from adaptable.core.report.feature_drift import FeatureMonitor, monitor_of
from adaptable.core.updates.model_updates import ModelUpdates
from adaptable.encoding import Encoder
from adaptable.framework.fitted_columns import FittedColumns
from adaptable.framework.method import SourceData
from adaptable.framework.model_adapter import LogitFunction, as_logit_function, rows_checked

if TYPE_CHECKING:
    # post-training needs torch, which the default preset never loads
    from adaptable.core.paper.post_training import Progress


@dataclass(frozen=True)
class FittedParts:
    """What an AdapTable holds once fitted or loaded, apart from the stream.

    Attributes:
        n_classes: C.
        source_prior: p_s, (C,).
        encoder: the Encoder the parts read the batches through (``None`` where none does).
        calibrator: the fitted calibrator.
        decider: the fitted decider.
        columns: the columns of a DataFrame fit, ``None`` after a fit on arrays.
        logit_function: the model's logits of rows (``None``: loaded without a model).
        encoded_logits: a model sharing its Encoder (:func:`shared_encoder`): its logits of
            the rows that Encoder encoded; else ``None``.
        feature_monitor: per-column drift against the held-out rows
            (:class:`~adaptable.core.report.feature_drift.FeatureMonitor`); ``None`` where
            none is kept (a file written without one).
        updates: the model updates (``None``: ``update="none"``, or the paper preset).
    """

    n_classes: int
    source_prior: np.ndarray
    encoder: Encoder | None
    calibrator: Calibrator
    decider: Decider
    columns: FittedColumns | None = None
    logit_function: LogitFunction | None = None
    encoded_logits: LogitFunction | None = None
    feature_monitor: FeatureMonitor | None = None
    updates: ModelUpdates | None = None


def fit_parts(model: Any, source: SourceData, params: dict[str, Any]) -> FittedParts:
    """p_s (train + valid labels, as the authors), the Encoder where a part reads features,
    then the calibrator and the decider on the same :class:`FitContext`.

    Args:
        model: the source model (anything :func:`~adaptable.core.as_logit_function` reads).
        source: the source rows and their label codes, as ``fit`` got them.
        params: every AdapTable parameter, checked.

    Returns:
        the parts, with the model's logit functions and the per-column drift monitor of the
        held-out rows (the training rows where there are none).

    Raises:
        ValueError: source rows or labels missing, held-out rows without labels (or the other
            way round), sparse rows, held-out rows not a DataFrame where the source rows are
            one and a part reads features, or model outputs of the wrong shape.
    """
    if source.X is None or source.y is None:
        raise ValueError("adaptable: fit needs the source rows X_source and labels y_source.")
    if (source.X_valid is None) != (source.y_valid is None):
        raise ValueError("adaptable: pass X_valid and y_valid together, or neither.")
    for what, rows in (("X_source", source.X), ("X_valid", source.X_valid)):
        if is_sparse(rows):
            raise ValueError(
                f"adaptable: {what} is a scipy sparse matrix; pass its dense rows "
                "(.toarray()) or a DataFrame."
            )
    columns = FittedColumns.of(source.X)
    decider = DECIDERS[params["preset"]].from_params(params)
    name = calibrator_name(params)
    reads_features = decider.needs_features or CALIBRATORS[name].needs_shift_trend
    if columns is not None and source.X_valid is not None:
        # (the Encoder reads the held-out rows by name; a model alone may take either)
        if reads_features and not isinstance(source.X_valid, pd.DataFrame):
            raise ValueError(
                "adaptable: X_source is a DataFrame but X_valid is not; pass the held-out "
                "rows as a DataFrame with the same columns."
            )
        source = dataclasses.replace(source, X_valid=columns.conform(source.X_valid, "X_valid"))
    logit_function = as_logit_function(model, params["output"])
    shared = shared_encoder(model, params)
    encoder = None
    if reads_features:  # first: the Encoder refuses columns it cannot read before any work
        encoder = shared or Encoder(params["numerical"], params["categorical"]).fit(
            source_rows(source)
        )
    logits = rows_checked(
        logit_function(source.X), len(source.y), f"the {len(source.y)} rows of X_source"
    )
    n_classes = logits.shape[1]
    prior = source_prior(source.y, source.y_valid, n_classes=n_classes)
    logits_valid = None
    if source.X_valid is not None:
        n_valid = len(source.y_valid)
        logits_valid = rows_checked(
            logit_function(source.X_valid), n_valid, f"the {n_valid} rows of X_valid"
        )
    context = FitContext(
        source, logits, logits_valid, prior, encoder, _seed(params["random_state"]),
        progress_callback(params["verbose"], params["progress"]),
    )  # fmt: skip
    calibrator = fit_calibrator(name, context, params)
    updates = model_updates(params, n_classes)
    if updates is not None:
        updates.fit(model, source.X, source.y, encoder, params["output"])
    return FittedParts(
        n_classes, prior, encoder, calibrator, decider.fit(context), columns, logit_function,
        None if shared is None else model.logits_from_encoded,
        monitor_of(
            source_rows(source) if encoder is None else None,
            source.X if source.X_valid is None else source.X_valid, encoder=encoder,
            numerical=params["numerical"], categorical=params["categorical"], seed=context.seed,
        ),
        updates,
    )  # fmt: skip


def model_updates(params: dict[str, Any], n_classes: int) -> ModelUpdates | None:
    """The model updates ``params`` ask for, unfitted: the default preset's, unless
    ``update="none"`` (earlier versions' parameters, without ``update``, ask for none)."""
    mode = params.get("update", "none")
    if params["preset"] != "default" or mode == "none":
        return None
    return ModelUpdates(
        mode, objective=params["objective"], n_classes=n_classes,
        seed=_seed(params["random_state"]), background=params.get("update_in_background", False),
    )  # fmt: skip


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


def _seed(random_state: int | None) -> int:
    if random_state is None:
        return int(np.random.SeedSequence().entropy % (2**63))
    return int(random_state)

"""Checks and small numerical helpers shared by every baseline (one place, not one per class)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

# One softmax / normalisation for the package: the label handler's (re-exported for baselines).
from adaptable.core.label_handler import normalize, softmax

__all__ = [
    "check_batch",
    "check_fitted",
    "check_labels",
    "logit_function",
    "normalize",
    "require_torch_source_model",
    "softmax",
    "softmax_entropy",
    "to_numpy_proba",
]

LogitFunction = Callable[[Any], np.ndarray]


def logit_function(model: Any) -> LogitFunction:
    """``X -> logits (n, C)`` for any source model, through the package's one model adapter.

    Args:
        model: a ``TorchSourceModel``, a ``torch.nn.Module``, or any object with
            ``predict_logits`` / ``predict_proba`` (GBDTs included).
    """
    from adaptable.core.model_adapter import as_logit_function

    return as_logit_function(model)


def require_torch_source_model(model: Any, method: str) -> None:
    """Raise a ``TypeError`` unless ``model`` follows the ``TorchSourceModel`` contract.

    Parameter-updating methods need the torch module (``.module``) and the encoder step that
    turns raw rows into its float32 input (``.prepare``); a GBDT or a plain callable has neither.
    """
    module = getattr(model, "module", None)
    prepare = getattr(model, "prepare", None)
    if not isinstance(module, nn.Module) or not callable(prepare):
        raise TypeError(
            f"{method!r} updates model parameters and needs a TorchSourceModel from "
            "adaptable.models (an object with a torch.nn.Module `.module` and a `.prepare(X)` "
            f"method, e.g. adaptable.models.train('mlp', ...)); got {type(model).__name__}, "
            "which has no trainable torch module. Use an output-level method "
            "('source', 'adaptable', 'em', 'bbse') for this model."
        )
    for name in ("features", "head"):
        if not hasattr(module, name):
            raise TypeError(
                f"{method!r} needs a module with `features(x)` (penultimate) and `head`; "
                f"{type(module).__name__} has no {name!r}"
            )


def check_batch(X_batch: Any, method: str) -> None:
    """Reject empty batches and non-2-D inputs with a message naming the method."""
    shape = getattr(X_batch, "shape", None)
    if shape is None or len(shape) != 2:
        raise ValueError(
            f"{method}: X_batch must be a 2-D table (DataFrame or array, rows x columns); "
            f"got {type(X_batch).__name__} with shape {shape}"
        )
    if shape[0] == 0:
        raise ValueError(f"{method}: X_batch has no rows")


def check_fitted(fitted: bool, method: str) -> None:
    """Raise when ``predict_proba`` is called before ``fit``."""
    if not fitted:
        raise RuntimeError(f"{method}: call fit(model, X_source, y_source, ...) first")


def check_labels(y: Any, n_rows: int, what: str, method: str) -> np.ndarray:
    """Labels as an int64 vector of length ``n_rows``."""
    labels = np.asarray(y)
    if labels.ndim != 1 or labels.shape[0] != n_rows:
        raise ValueError(
            f"{method}: {what} must be a 1-D label vector with {n_rows} entries; got shape "
            f"{labels.shape}"
        )
    if not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"{method}: {what} must hold integer class indices; got {labels.dtype}")
    return labels.astype(np.int64)


def softmax_entropy(logits: torch.Tensor) -> torch.Tensor:
    """Shannon entropy of ``softmax(logits)`` per row, shape (n,)."""
    return -(logits.softmax(dim=1) * logits.log_softmax(dim=1)).sum(dim=1)


def to_numpy_proba(logits: torch.Tensor) -> np.ndarray:
    """Probabilities as float64 numpy rows that sum to one."""
    return softmax(logits.detach().cpu().double().numpy())

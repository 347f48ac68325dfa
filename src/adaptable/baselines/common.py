"""Helpers shared by the baselines (one place, not one per class).

Input checks (fitted, batch shape, labels) live in :class:`adaptable.core.TestTimeMethod`, and the
package's one softmax in :mod:`adaptable.core`; what is here is specific to the baselines.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from adaptable.core import softmax


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


def softmax_entropy(logits: torch.Tensor) -> torch.Tensor:
    """Shannon entropy of ``softmax(logits)`` per row, shape (n,)."""
    return -(logits.softmax(dim=1) * logits.log_softmax(dim=1)).sum(dim=1)


def to_numpy_proba(logits: torch.Tensor) -> np.ndarray:
    """Probabilities as float64 numpy rows that sum to one."""
    return softmax(logits.detach().cpu().double().numpy())

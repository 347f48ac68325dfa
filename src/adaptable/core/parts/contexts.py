"""What the estimator hands its parts (the calibrator and the decider) at fit and at load.

:class:`~adaptable.core.estimator.AdapTable` is assembled from parts, each owning its own
constructor parameters (``parameter_constraints``), fitted state and saved state:

- a calibrator (:mod:`adaptable.core.paper.calibrators`: g_phi or an ablation) turns logits into the
  calibrated probabilities q_i;
- a decider (:mod:`adaptable.core.parts.decider`: the paper's label distribution handler or the
  recommended decision logic) turns one calibrated batch into the output.

A part is fitted from a :class:`FitContext`, reports its state as a :class:`PartState` (arrays
and JSON-compatible metadata, under the keys it owns in the saved file), and is rebuilt from a
:class:`LoadContext`. No part reads another's fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from adaptable.framework.method import SourceData
from adaptable.optional import loaded

if TYPE_CHECKING:
    from collections.abc import Callable

    from adaptable.core.parts.saved_state import StateReader
    from adaptable.encoding import Encoder


@dataclass(frozen=True)
class FitContext:
    """The source data as every part reads it at fit time.

    Attributes:
        source: the rows and label codes given to ``fit``.
        logits: the source model's logits of ``source.X``, (n, C).
        logits_valid: the same for ``source.X_valid``, or ``None``.
        source_prior: p_s, (C,).
        encoder: the adapter's fitted Encoder, where a part reads the features (else ``None``).
        seed: seeds every random draw of the parts (initialisation, shuffling, bootstrap).
        progress: post-training's per-epoch callback, or ``None``.
    """

    source: SourceData
    logits: np.ndarray
    logits_valid: np.ndarray | None
    source_prior: np.ndarray
    encoder: Encoder | None = None
    seed: int = 0
    progress: Callable[[int, float, float, bool], None] | None = None

    @property
    def n_classes(self) -> int:
        return len(self.source_prior)

    @property
    def has_validation(self) -> bool:
        return self.logits_valid is not None

    @property
    def held_out(self) -> tuple[np.ndarray, np.ndarray]:
        """(logits, labels) of the held-out rows: validation where given, else training."""
        if self.logits_valid is None:
            return self.logits, self.source.y
        return self.logits_valid, self.source.y_valid

    def source_rows(self) -> Any:
        """Training and validation rows together; arrays stay arrays, frames stay frames."""
        return source_rows(self.source)

    def source_labels(self) -> np.ndarray:
        """Training and validation label codes together, (n,)."""
        valid = [] if self.source.y_valid is None else [self.source.y_valid]
        return np.concatenate([self.source.y, *valid])


@dataclass(frozen=True)
class LoadContext:
    """What a part reads its saved state from.

    Attributes:
        reader: checked access to the file's tensors and metadata.
        params: the estimator's constructor parameters, as saved (upgraded for older files).
        n_classes: C.
        source_prior: p_s, (C,).
        encoder: the saved Encoder, where the file holds one.
    """

    reader: StateReader
    params: Mapping[str, Any]
    n_classes: int
    source_prior: np.ndarray
    encoder: Encoder | None = None


@dataclass(frozen=True)
class PartState:
    """A part's saved state: arrays and JSON-compatible metadata, under file-level keys."""

    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)


def own_parameters(constraints: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of ``params`` that a part owns (the keys of its ``constraints``)."""
    return {name: params[name] for name in constraints}


def source_rows(source: SourceData) -> Any:
    """Training and validation rows together; arrays stay arrays (positional columns), frames
    stay frames."""
    if source.X_valid is None:
        return source.X
    frame = pd.concat([_as_frame(source.X), _as_frame(source.X_valid)], ignore_index=True)
    return frame if isinstance(source.X, pd.DataFrame) else frame.to_numpy()


def _as_frame(X: Any) -> pd.DataFrame:
    if isinstance(X, pd.DataFrame):
        return X
    # Rows can only be a torch tensor where torch is imported: no import for anyone else.
    torch = loaded("torch")
    if torch is not None and isinstance(X, torch.Tensor):
        X = X.detach().cpu().numpy()
    return pd.DataFrame(np.asarray(X))

"""The shared machinery of the parameter-updating baselines (PL, TENT, SAR, EATA, TTT++).

Each baseline only says how one adaptation step on a batch works (``_adapt_step``) and, where it
needs one, what to prepare from source data at fit time (``_setup``). This base class owns the
rest: a private copy of the user's module, the AdamW optimiser over all its parameters, the
episodic restore of model and optimiser before every batch, and prediction with the adapted
model.

Protocol per test batch (the AdapTable authors' code, ``main.py``):
    restore source weights and a fresh optimiser (episodic) ->
    ``steps`` adaptation steps on the batch -> predict the same batch with the adapted model.

Deliberate difference: the reference TENT / EATA / SAR code returns the outputs of the forward
pass *before* the last update; the AdapTable authors (and we) predict after adapting. With one
step and episodic resets the reference protocol would make TENT identical to the source model.

Deliberate difference: TENT's reference code switches the model to train mode (batch-norm
statistics from the test batch) and adapts only normalisation affine parameters. As in the
AdapTable authors' code, the module stays in eval mode (dropout off, batch-norm running
statistics) and AdamW updates every parameter; most tabular backbones (the MLP) have no
normalisation layers at all, so "normalisation parameters only" would adapt nothing.
"""

from __future__ import annotations

import copy
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from adaptable.baselines.common import (
    FLAG,
    CheckedParameters,
    require_torch_source_model,
    to_numpy_proba,
)
from adaptable.framework.method import SourceData, TestTimeMethod
from adaptable.framework.parameters import Constraint, Interval


class EpisodicTorchMethod(CheckedParameters, TestTimeMethod):
    """Base class of the baselines that update the torch module at test time.

    Args:
        lr: AdamW learning rate (default: the paper's PL and TENT setting, 1e-4).
        steps: adaptation steps per test batch (default: PL's and TENT's, 1).
        episodic: restore model and optimiser before every batch (the paper's setting).
        weight_decay: AdamW weight decay (torch's default 0.01, as the authors' code uses).
        seed: seed of the method's own random draws (masks, subsets); makes runs repeatable.

    Subclasses implement ``_adapt_step(x)`` and may override ``_setup`` and
    ``_reset_online_state``.
    """

    updates_parameters = True

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "lr": [Interval(Real, 0, None, closed="neither")],
        "steps": [Interval(Integral, 0, None)],
        "episodic": FLAG,
        "weight_decay": [Interval(Real, 0, None)],
        "seed": [Interval(Integral, 0, None)],
    }

    def __init__(
        self,
        *,
        lr: float = 1e-4,
        steps: int = 1,
        episodic: bool = True,
        weight_decay: float = 0.01,
        seed: int = 0,
    ) -> None:
        self.lr = lr
        self.steps = steps
        self.episodic = episodic
        self.weight_decay = weight_decay
        self.seed = seed
        self._check_parameters()

    # ----------------------------------------------------------------- public interface
    def _fit(self, model: Any, source: SourceData) -> None:
        """Copy the source module, run the method's source-side preparation, snapshot state.

        Args:
            model: a ``TorchSourceModel`` (``.module``, ``.prepare``); anything else raises
                ``TypeError``.
            source: the source rows (raw, as the model's ``prepare`` takes; required) and
                labels; optional validation rows (EATA's Fisher information).
        """
        require_torch_source_model(model, self.name)
        self.source_model_ = model
        # A private copy: adaptation never touches the user's module, so nothing survives reset.
        module = copy.deepcopy(model.module)
        # Eval mode on purpose (see the module docstring).
        module.eval()
        for parameter in module.parameters():
            parameter.requires_grad_(True)
        self.module_ = module
        self._generator = torch.Generator().manual_seed(self.seed)
        if source.X is None:
            raise ValueError(f"{self.name}: fit needs the source rows X_source.")
        x_source = self._prepare(source.X)
        x_valid = None if source.X_valid is None else self._prepare(source.X_valid)
        with torch.no_grad():
            self.n_classes_ = int(self.module_(x_source[:1]).shape[1])
        self._setup(x_source, source.y, x_valid, source.y_valid)
        self.optimizer_ = torch.optim.AdamW(
            self._trainable_parameters(), lr=self.lr, weight_decay=self.weight_decay
        )
        self._source_state = copy.deepcopy(self.module_.state_dict())
        self._optimizer_state = copy.deepcopy(self.optimizer_.state_dict())
        self._reset_online_state()

    def predict_proba(self, X_batch: Any) -> np.ndarray:
        """Adapt on the batch (``steps`` updates), then predict it with the adapted module.

        Returns:
            float64 array (n, C), rows summing to one.
        """
        self._check_fitted()
        self._check_batch(X_batch)
        x = self._prepare(X_batch)
        if self.episodic:
            self._restore_source()
        for _ in range(self.steps):
            self._adapt_step(x)
        with torch.no_grad():
            logits = self.module_(x)
        return to_numpy_proba(logits)

    def reset(self) -> None:
        """Source weights, a fresh optimiser and the method's online state, as right after fit."""
        self._check_fitted()
        self._restore_source()
        self._reset_online_state()

    # ----------------------------------------------------------------- for subclasses
    def _setup(
        self,
        x_source: torch.Tensor,
        y_source: np.ndarray | None,
        x_valid: torch.Tensor | None,
        y_valid: np.ndarray | None,
    ) -> None:
        """Source-side preparation at fit time (statistics, auxiliary heads); none by default."""

    def _adapt_step(self, x: torch.Tensor) -> None:  # pragma: no cover - abstract
        """One adaptation step on the encoded batch ``x`` (float32, (n, width))."""
        raise NotImplementedError

    def _reset_online_state(self) -> None:
        """Clear state that lives across batches (EMAs); the seeded generator restarts too."""
        self._generator = torch.Generator().manual_seed(self.seed)

    def _trainable_parameters(self) -> list[nn.Parameter]:
        """What AdamW updates: every parameter of the module (the paper's setting)."""
        return list(self.module_.parameters())

    def _minimise(self, loss: torch.Tensor) -> None:
        """One plain optimiser step on ``loss``."""
        self.optimizer_.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer_.step()

    def _restore_source(self) -> None:
        """Load the source weights back and restart AdamW (its moments are dropped)."""
        self.module_.load_state_dict(self._source_state)
        self.optimizer_.load_state_dict(copy.deepcopy(self._optimizer_state))
        self.optimizer_.zero_grad(set_to_none=True)

    def _prepare(self, X: Any) -> torch.Tensor:
        """Raw rows -> the module's float32 input, on the module's device."""
        x = torch.as_tensor(self.source_model_.prepare(X), dtype=torch.float32)
        parameter = next(self.module_.parameters(), None)
        return x if parameter is None else x.to(parameter.device)

"""SAR: sharpness-aware and reliable entropy minimisation (Niu et al. 2023).

One SAR step on a batch (the SAR paper, Algorithm 1):
1. entropies E(x) of the current model; keep rows with E < E_0 = 0.4 ln C (reliable rows);
2. SAM ascent: gradient g of their mean entropy, move weights by rho * g / ||g|| (rho = 0.05);
3. entropies at the perturbed weights for the kept rows; keep those still below E_0;
4. gradient of their mean entropy at the perturbed weights, move back, take the base
   optimiser's step with that gradient;
5. EMA (momentum 0.9) of the step-3 loss; when it falls below 0.2 the model is reset to the
   source weights (SAR's recovery from collapse).
Paper settings (AdapTable appendix): AdamW on all parameters as the base optimiser, lr 1e-3, one
step per batch, episodic.

Deliberate difference: SAR's reference code uses SGD on normalisation parameters only; the
AdapTable paper uses AdamW on all parameters, which we follow.
Deliberate difference: the AdapTable authors' SAR step forgot the first entropy filter (it
back-propagated the mean entropy of all rows); we filter as the SAR paper says.
When no row passes a filter, the step is skipped (no optimiser step, so AdamW's weight decay is
not applied either); the reference code would step with a NaN / zero gradient.
"""

from __future__ import annotations

import math
from numbers import Real
from typing import ClassVar

import torch

from adaptable.baselines.common import softmax_entropy
from adaptable.baselines.episodic import EpisodicTorchMethod
from adaptable.framework.parameters import Constraint, Interval


class SAR(EpisodicTorchMethod):
    """Reliable, sharpness-aware entropy minimisation with model recovery.

    Args:
        lr: learning rate of the base optimiser AdamW (paper: 1e-3).
        steps: SAM steps per batch (paper: 1).
        episodic: restore the source model before every batch (paper: True).
        rho: SAM neighbourhood radius (SAR: 0.05).
        entropy_margin: E_0 as a fraction of ln C (SAR: 0.4).
        reset_threshold: reset the model when the loss EMA falls below it (SAR: 0.2).
        ema_momentum: momentum of that EMA (SAR: 0.9).
        weight_decay, seed: see :class:`EpisodicTorchMethod`.
    """

    name = "sar"

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        **EpisodicTorchMethod._parameter_constraints,
        "rho": [Interval(Real, 0, None, closed="neither")],
        "entropy_margin": [Interval(Real, 0, 1, closed="right")],
        "reset_threshold": [Interval(Real, None, None, closed="neither")],
        "ema_momentum": [Interval(Real, 0, 1, closed="left")],
    }

    def __init__(
        self,
        *,
        lr: float = 1e-3,
        steps: int = 1,
        episodic: bool = True,
        rho: float = 0.05,
        entropy_margin: float = 0.4,
        reset_threshold: float = 0.2,
        ema_momentum: float = 0.9,
        weight_decay: float = 0.01,
        seed: int = 0,
    ) -> None:
        super().__init__(
            lr=lr, steps=steps, episodic=episodic, weight_decay=weight_decay, seed=seed
        )
        self.rho = rho
        self.entropy_margin = entropy_margin
        self.reset_threshold = reset_threshold
        self.ema_momentum = ema_momentum
        self._check_parameters()

    @property
    def margin(self) -> float:
        """E_0 = entropy_margin * ln C."""
        return self.entropy_margin * math.log(self.n_classes_)

    def _reset_online_state(self) -> None:
        super()._reset_online_state()
        #: EMA of the second-pass loss; persists across batches until reset()
        self.loss_ema_: float | None = None
        #: how many times the collapse guard restored the source model
        self.n_model_resets_ = 0

    def _adapt_step(self, x: torch.Tensor) -> None:
        params = [p for p in self.module_.parameters() if p.requires_grad]
        # Step 1: reliable rows at the current weights.
        entropy = softmax_entropy(self.module_(x))
        reliable = entropy < self.margin
        if not bool(reliable.any()):
            return
        self.optimizer_.zero_grad(set_to_none=True)
        entropy[reliable].mean().backward()
        # Step 2: SAM ascent to the worst point in the rho-ball.
        perturbation = _sam_ascent(params, self.rho)
        # Step 3: the reliable rows at the perturbed weights, filtered again.
        entropy_perturbed = softmax_entropy(self.module_(x))[reliable]
        still_reliable = entropy_perturbed < self.margin
        if not bool(still_reliable.any()):
            _sam_undo(params, perturbation)
            self.optimizer_.zero_grad(set_to_none=True)
            return
        loss = entropy_perturbed[still_reliable].mean()
        self.optimizer_.zero_grad(set_to_none=True)
        loss.backward()
        # Step 4: back to the original weights, descend with the perturbed gradient.
        _sam_undo(params, perturbation)
        self.optimizer_.step()
        self.optimizer_.zero_grad(set_to_none=True)
        # Step 5: collapse guard.
        value = float(loss.detach())
        m = self.ema_momentum
        self.loss_ema_ = value if self.loss_ema_ is None else m * self.loss_ema_ + (1 - m) * value
        if self.loss_ema_ < self.reset_threshold:
            self._restore_source()
            self.n_model_resets_ += 1


def _sam_ascent(params: list[torch.nn.Parameter], rho: float) -> list[torch.Tensor | None]:
    """Move each parameter by rho * grad / ||grad|| (global L2 norm); return the moves."""
    with torch.no_grad():
        norms = [p.grad.norm(p=2) for p in params if p.grad is not None]
        if not norms:
            return [None] * len(params)
        scale = rho / (torch.stack(norms).norm(p=2) + 1e-12)
        moves: list[torch.Tensor | None] = []
        for p in params:
            if p.grad is None:
                moves.append(None)
                continue
            e_w = p.grad * scale
            p.add_(e_w)
            moves.append(e_w)
    return moves


def _sam_undo(params: list[torch.nn.Parameter], moves: list[torch.Tensor | None]) -> None:
    """Undo :func:`_sam_ascent`."""
    with torch.no_grad():
        for p, e_w in zip(params, moves, strict=True):
            if e_w is not None:
                p.sub_(e_w)

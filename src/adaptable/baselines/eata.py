"""EATA: efficient anti-forgetting test-time adaptation (Niu et al. 2022).

One EATA step on a batch (the EATA paper, Eqs. 3-9):
1. reliable rows: prediction entropy E(x) < E_0 = 0.4 ln C;
2. non-redundant rows: |cos(p(x), m)| < epsilon = 0.05, with m the moving average (momentum
   0.9) of the probabilities of the rows selected so far (no filter while m is undefined);
3. loss = mean over selected rows of E(x) / exp(E(x) - E_0) (weights detached)
   + beta * sum_i F_i (theta_i - theta_i^source)^2, the Fisher anti-forgetting regulariser;
4. m is updated with the selected rows' probabilities at every step.
The Fisher information F is the mean over batches of squared gradients of the cross-entropy to
the model's own pseudo-labels, computed once at fit on up to ``fisher_size`` in-distribution
rows (the validation split when given, else source rows), as EATA computes it on unlabelled
in-distribution samples. Paper settings (AdapTable appendix): AdamW on all parameters, lr 1e-5,
10 steps per batch, episodic.

Deliberate difference: the AdapTable authors used the ImageNet margin 2.454 (= ln(1000)/2 - 1),
which filters nothing with 2 classes (ln 2 = 0.69), and they left the Fisher regulariser out. We
use EATA's own rule E_0 = 0.4 ln C and the regulariser (beta = 2000, EATA's ImageNet-C value,
since the AdapTable paper gives none).
The redundancy moving average m persists across batches (episodic resets restore only model and
optimiser, as in EATA's code) and is cleared by reset().
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import torch
import torch.nn.functional as F

from adaptable.baselines.common import softmax_entropy
from adaptable.baselines.episodic import EpisodicTorchMethod
from adaptable.framework.parameters import Constraint, Interval


class EATA(EpisodicTorchMethod):
    """Entropy- and redundancy-filtered, re-weighted entropy minimisation with a Fisher penalty.

    Args:
        lr: AdamW learning rate (paper: 1e-5).
        steps: updates per batch (paper: 10).
        episodic: restore the source model before every batch (paper: True).
        entropy_margin: E_0 as a fraction of ln C (EATA: 0.4).
        redundancy_margin: epsilon of the cosine-similarity filter (EATA: 0.05).
        fisher_alpha: beta, the weight of the Fisher regulariser (EATA: 2000); 0 disables it.
        fisher_size: rows used to estimate the Fisher information (EATA: 2000).
        fisher_batch_size: batch size of that estimate (the test batch size, 64).
        probs_momentum: momentum of the probability moving average (EATA: 0.9).
        weight_decay, seed: see :class:`EpisodicTorchMethod`.
    """

    name = "eata"

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        **EpisodicTorchMethod._parameter_constraints,
        "entropy_margin": [Interval(Real, 0, 1, closed="right")],
        "redundancy_margin": [Interval(Real, 0, None, closed="neither")],
        "fisher_alpha": [Interval(Real, 0, None)],
        "fisher_size": [Interval(Integral, 1, None)],
        "fisher_batch_size": [Interval(Integral, 1, None)],
        "probs_momentum": [Interval(Real, 0, 1, closed="left")],
    }

    def __init__(
        self,
        *,
        lr: float = 1e-5,
        steps: int = 10,
        episodic: bool = True,
        entropy_margin: float = 0.4,
        redundancy_margin: float = 0.05,
        fisher_alpha: float = 2000.0,
        fisher_size: int = 2000,
        fisher_batch_size: int = 64,
        probs_momentum: float = 0.9,
        weight_decay: float = 0.01,
        seed: int = 0,
    ) -> None:
        super().__init__(
            lr=lr, steps=steps, episodic=episodic, weight_decay=weight_decay, seed=seed
        )
        self.entropy_margin = entropy_margin
        self.redundancy_margin = redundancy_margin
        self.fisher_alpha = fisher_alpha
        self.fisher_size = fisher_size
        self.fisher_batch_size = fisher_batch_size
        self.probs_momentum = probs_momentum
        self._check_parameters()

    @property
    def margin(self) -> float:
        """E_0 = entropy_margin * ln C."""
        return self.entropy_margin * math.log(self.n_classes_)

    def _setup(
        self,
        x_source: torch.Tensor,
        y_source: np.ndarray,
        x_valid: torch.Tensor | None,
        y_valid: np.ndarray | None,
    ) -> None:
        rows = x_valid if x_valid is not None else x_source
        if rows.shape[0] > self.fisher_size:
            pick = torch.randperm(rows.shape[0], generator=self._generator)[: self.fisher_size]
            rows = rows[pick]
        self.fisher_, self.anchor_ = self._fisher_information(rows)

    def _fisher_information(
        self, rows: torch.Tensor
    ) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        """Diagonal Fisher (mean over batches of squared pseudo-label CE gradients), anchors."""
        named = [(n, p) for n, p in self.module_.named_parameters() if p.requires_grad]
        fisher = {n: torch.zeros_like(p) for n, p in named}
        batches = torch.split(rows, self.fisher_batch_size)
        for batch in batches:
            self.module_.zero_grad(set_to_none=True)
            logits = self.module_(batch)
            F.cross_entropy(logits, logits.argmax(dim=1).detach()).backward()
            for n, p in named:
                if p.grad is not None:
                    fisher[n] += p.grad.detach() ** 2
        self.module_.zero_grad(set_to_none=True)
        fisher = {n: f / len(batches) for n, f in fisher.items()}
        anchor = {n: p.detach().clone() for n, p in named}
        return fisher, anchor

    def _reset_online_state(self) -> None:
        super()._reset_online_state()
        #: moving average of selected rows' probabilities, (C,) or None before any selection
        self.model_probs_: torch.Tensor | None = None

    def _adapt_step(self, x: torch.Tensor) -> None:
        logits = self.module_(x)
        entropy = softmax_entropy(logits)
        probs = logits.softmax(dim=1)
        # Step 1: reliable rows.
        selected = entropy < self.margin
        # Step 2: non-redundant rows (needs a moving average from earlier selections).
        if self.model_probs_ is not None:
            cosine = F.cosine_similarity(self.model_probs_.unsqueeze(0), probs.detach(), dim=1)
            selected &= cosine.abs() < self.redundancy_margin
        # Step 4 (bookkeeping first, so that an empty selection still leaves m as it was).
        if bool(selected.any()):
            batch_mean = probs[selected].detach().mean(dim=0)
            m = self.probs_momentum
            self.model_probs_ = (
                batch_mean
                if self.model_probs_ is None
                else m * self.model_probs_ + (1 - m) * batch_mean
            )
        else:
            return
        # Step 3: re-weighted entropy + Fisher regulariser.
        weights = torch.exp(-(entropy[selected].detach() - self.margin))
        loss = (entropy[selected] * weights).mean()
        if self.fisher_alpha > 0:
            penalty = sum(
                (self.fisher_[n] * (p - self.anchor_[n]) ** 2).sum()
                for n, p in self.module_.named_parameters()
                if n in self.fisher_
            )
            loss = loss + self.fisher_alpha * penalty
        self._minimise(loss)

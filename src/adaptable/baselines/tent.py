"""TENT: test-time entropy minimisation (Wang et al. 2021), as the AdapTable paper configures it.

Loss: mean Shannon entropy of the batch's predictions. Paper settings: AdamW on all parameters,
lr 1e-4, one step per batch, episodic, model in eval mode (see :mod:`.episodic` for why this
departs from TENT's reference code, which adapts batch-norm affine parameters in train mode).
"""

from __future__ import annotations

import torch

from adaptable.baselines.common import softmax_entropy
from adaptable.baselines.episodic import EpisodicTorchMethod


class Tent(EpisodicTorchMethod):
    """Minimise the mean prediction entropy on each test batch.

    Args:
        lr: AdamW learning rate (paper: 1e-4).
        steps: updates per batch (paper: 1).
        episodic: restore the source model before every batch (paper: True).
        weight_decay, seed: see :class:`EpisodicTorchMethod`.
    """

    name = "tent"

    def _adapt_step(self, x: torch.Tensor) -> None:
        self._minimise(softmax_entropy(self.module_(x)).mean())

"""PL: pseudo-labelling at test time (Lee 2013), as the AdapTable paper configures it.

Loss: cross-entropy between the batch's logits and their own argmax labels. Paper settings:
AdamW, lr 1e-4, one step per batch, episodic.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from adaptable.baselines.episodic import EpisodicTorchMethod


class PseudoLabel(EpisodicTorchMethod):
    """Minimise cross-entropy to the model's own hard predictions on each test batch.

    Args:
        lr: AdamW learning rate (paper: 1e-4).
        steps: updates per batch (paper: 1).
        episodic: restore the source model before every batch (paper: True).
        weight_decay, seed: see :class:`EpisodicTorchMethod`.

    Example:
        >>> method = PseudoLabel().fit(source_model, X_train, y_train)  # doctest: +SKIP
        >>> proba = method.predict_proba(X_batch)  # doctest: +SKIP
    """

    name = "pl"

    def _adapt_step(self, x: torch.Tensor) -> None:
        logits = self.module_(x)
        pseudo_labels = logits.argmax(dim=1).detach()
        self._minimise(F.cross_entropy(logits, pseudo_labels))

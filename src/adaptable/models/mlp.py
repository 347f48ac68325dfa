"""The authors' MLP."""

from __future__ import annotations

import rtdl_revisiting_models as rtdl
from torch import Tensor, nn

from adaptable.encoding import Encoder
from adaptable.models.base import Backbone


class MLP(Backbone):
    """MLP: ``Linear(d, 256) - ReLU - Linear(256, 256)``, head ``Linear(256, 256) - ReLU -
    Linear(256, C)``, no dropout, no batch norm (method.md, section 4).

    Args:
        encoder: fitted Encoder (gives the input width).
        n_classes: number of classes.
        d_block: hidden width (256).
        dropout: dropout after the first activation (0).

    Shapes: ``forward: [N, width] -> [N, C]``; ``features: [N, width] -> [N, d_block]``.

    Example:
        >>> import pandas as pd, torch
        >>> from adaptable.encoding import Encoder
        >>> enc = Encoder().fit(pd.DataFrame({"a": [0.0, 1.0], "b": ["x", "y"]}))
        >>> MLP(enc, 2)(torch.zeros(5, 3)).shape
        torch.Size([5, 2])
    """

    name = "mlp"

    def __init__(
        self, encoder: Encoder, n_classes: int, *, d_block: int = 256, dropout: float = 0.0
    ) -> None:
        super().__init__(encoder, n_classes)
        if d_block <= 0:
            raise ValueError(f"d_block must be positive; got {d_block}")
        self.config = {"d_block": d_block, "dropout": dropout}
        # rtdl's MLP block is Linear - ReLU - Dropout; one block plus a plain Linear gives the
        # authors' encoder exactly (their encoder ends in a Linear, not in an activation).
        self.blocks = rtdl.MLP(
            d_in=self.width, d_out=None, n_blocks=1, d_block=d_block, dropout=dropout
        )
        self.projection = nn.Linear(d_block, d_block)
        self.head = nn.Sequential(
            nn.Linear(d_block, d_block), nn.ReLU(), nn.Linear(d_block, n_classes)
        )
        self.d_features = d_block

    def features(self, x: Tensor) -> Tensor:
        """Output of the second Linear, ``[N, d_block]``."""
        self._check(x)
        return self.projection(self.blocks(x))

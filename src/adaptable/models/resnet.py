"""ResNet for tabular data (Gorishniy et al. 2021) with the authors' hyper-parameters."""

from __future__ import annotations

import rtdl_revisiting_models as rtdl
from torch import Tensor, nn

from adaptable.encoding import Encoder
from adaptable.models.base import Backbone


class ResNet(Backbone):
    """rtdl's ResNet: input projection, ``n_blocks`` residual blocks
    ``BN - Linear - ReLU - Dropout - Linear - Dropout``, head ``BN - ReLU - Linear``.

    Authors' settings (method.md, section 4): ``d_block = 339``, hidden factor 3.825
    (``d_hidden = 1296``), 8 blocks, hidden dropout 0.221, residual dropout 0.306.

    Deliberate difference: the authors list categorical embeddings of size 348 ahead of the
    input projection. On the Encoder's one-hot blocks a per-feature linear embedding followed by
    the linear input projection is itself one linear map of the one-hot columns, so we feed the
    one-hot matrix straight into rtdl's input projection (no separate embedding layer): the same
    function class up to a rank bound of 348 per feature, with fewer parameters.

    Shapes: ``forward: [N, width] -> [N, C]``; ``features: [N, width] -> [N, d_block]`` (the
    residual stream after the last block, before the head's batch norm).

    Example:
        >>> import pandas as pd, torch
        >>> from adaptable.encoding import Encoder
        >>> enc = Encoder().fit(pd.DataFrame({"a": [0.0, 1.0], "b": ["x", "y"]}))
        >>> ResNet(enc, 2, n_blocks=1, d_block=8).eval()(torch.zeros(5, 3)).shape
        torch.Size([5, 2])
    """

    name = "resnet"

    def __init__(
        self,
        encoder: Encoder,
        n_classes: int,
        *,
        n_blocks: int = 8,
        d_block: int = 339,
        d_hidden_multiplier: float = 3.825,
        hidden_dropout: float = 0.221,
        residual_dropout: float = 0.306,
    ) -> None:
        super().__init__(encoder, n_classes)
        self.config = {
            "n_blocks": n_blocks,
            "d_block": d_block,
            "d_hidden_multiplier": d_hidden_multiplier,
            "hidden_dropout": hidden_dropout,
            "residual_dropout": residual_dropout,
        }
        self.body = rtdl.ResNet(
            d_in=self.width,
            d_out=None,
            n_blocks=n_blocks,
            d_block=d_block,
            d_hidden_multiplier=d_hidden_multiplier,
            dropout1=hidden_dropout,
            dropout2=residual_dropout,
        )
        # rtdl's own output block (BN - ReLU - Linear), kept outside the body so that
        # head(features(x)) == forward(x).
        self.head = nn.Sequential(nn.BatchNorm1d(d_block), nn.ReLU(), nn.Linear(d_block, n_classes))
        self.d_features = d_block

    def features(self, x: Tensor) -> Tensor:
        """Residual stream after the last block, ``[N, d_block]``."""
        self._check(x)
        return self.body(x)

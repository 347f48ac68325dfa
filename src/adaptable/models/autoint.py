"""AutoInt (Song et al. 2019) as configured in Gorishniy et al.'s benchmark and the authors' runs."""

from __future__ import annotations

import rtdl_revisiting_models as rtdl
import torch
from torch import Tensor, nn

from adaptable.encoding import Encoder
from adaptable.models.base import Backbone
from adaptable.models.tokens import FeatureTokenizer


class AutoInt(Backbone):
    """Self-attentive feature interactions over one token per original feature.

    Each layer (post-norm): ``x = ReLU(LayerNorm(W_res x + Dropout(MHA(x, x))))`` with
    ``W_res`` a bias-free linear map; the head is ``Linear(d_token * n_tokens, C)`` on the
    flattened tokens. Authors' settings (method.md, section 4): 3 layers, ``d_token = 62``,
    2 heads, attention dropout 0.183, residual dropout 0.

    Tokens come from :class:`~adaptable.models.tokens.FeatureTokenizer` without a bias, as in
    AutoInt's embedding layer; an unseen category (all-zero one-hot block) gives a zero token.

    Shapes: ``forward: [N, width] -> [N, C]``; ``features: [N, width] -> [N, n_tokens * d_token]``.

    Example:
        >>> import pandas as pd, torch
        >>> from adaptable.encoding import Encoder
        >>> enc = Encoder().fit(pd.DataFrame({"a": [0.0, 1.0], "b": ["x", "y"]}))
        >>> AutoInt(enc, 2)(torch.zeros(5, 3)).shape
        torch.Size([5, 2])
    """

    name = "autoint"

    def __init__(
        self,
        encoder: Encoder,
        n_classes: int,
        *,
        n_layers: int = 3,
        d_token: int = 62,
        n_heads: int = 2,
        attention_dropout: float = 0.183,
        residual_dropout: float = 0.0,
    ) -> None:
        super().__init__(encoder, n_classes)
        if n_layers <= 0:
            raise ValueError(f"n_layers must be positive; got {n_layers}")
        self.config = {
            "n_layers": n_layers,
            "d_token": d_token,
            "n_heads": n_heads,
            "attention_dropout": attention_dropout,
            "residual_dropout": residual_dropout,
        }
        self.tokenizer = FeatureTokenizer(encoder, d_token=d_token, bias=False)
        self.layers = nn.ModuleList(
            nn.ModuleDict(
                {
                    "attention": rtdl.MultiheadAttention(
                        d_embedding=d_token, n_heads=n_heads, dropout=attention_dropout
                    ),
                    "residual": nn.Linear(d_token, d_token, bias=False),
                    "normalization": nn.LayerNorm(d_token),
                }
            )
            for _ in range(n_layers)
        )
        self.residual_dropout = nn.Dropout(residual_dropout)
        self.d_features = self.tokenizer.n_tokens * d_token
        self.head = nn.Linear(self.d_features, n_classes)

    def features(self, x: Tensor) -> Tensor:
        """Flattened tokens after the last layer, ``[N, n_tokens * d_token]``."""
        self._check(x)
        tokens = self.tokenizer(x)
        for layer in self.layers:
            interaction = self.residual_dropout(layer["attention"](tokens, tokens))
            tokens = torch.relu(layer["normalization"](layer["residual"](tokens) + interaction))
        return tokens.flatten(1)

"""Per-feature tokens from the Encoder's matrix, for the token-based backbones.

The Encoder lays a row out as standardised numerical columns followed by one one-hot block per
categorical feature. A token model needs one vector per original feature:

- numerical feature j: ``x_j * w_j (+ b_j)`` (a learned direction scaled by the value);
- categorical feature u: ``onehot_u @ E_u (+ b_u)``, which for a one-hot row is exactly the
  embedding-table lookup ``E_u[code]`` of rtdl's ``CategoricalEmbeddings``, and for an all-zero
  block (a category unseen at fit time) is the zero vector (plus the bias): no crash, no index.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from adaptable.encoding import Encoder


class FeatureTokenizer(nn.Module):
    """Map an encoded batch ``[N, width]`` to feature tokens ``[N, n_features, d_token]``.

    Args:
        encoder: a fitted :class:`adaptable.datasets.Encoder`; its schema says which columns form
            each feature.
        d_token: token size.
        bias: add a learned per-feature bias vector (FT-Transformer does; AutoInt does not).

    Example:
        >>> import pandas as pd
        >>> from adaptable.encoding import Encoder
        >>> X = pd.DataFrame({"age": [30.0, 50.0], "job": ["a", "b"]})
        >>> enc = Encoder().fit(X)
        >>> tok = FeatureTokenizer(enc, d_token=4, bias=True)
        >>> tok(torch.as_tensor(enc.transform(X))).shape
        torch.Size([2, 2, 4])
    """

    def __init__(self, encoder: Encoder, *, d_token: int, bias: bool) -> None:
        super().__init__()
        if d_token <= 0:
            raise ValueError(f"d_token must be positive; got {d_token}")
        schema = encoder.schema
        if not schema:
            raise ValueError("The encoder has no features; a token model needs at least one.")
        self.width = encoder.n_features_out_
        self.d_token = d_token
        self.numerical_columns = [b.start for b in encoder.numerical_blocks]
        self.categorical_slices = [(b.start, b.stop) for b in encoder.categorical_blocks]
        n_num = len(self.numerical_columns)
        n_cat_columns = sum(stop - start for start, stop in self.categorical_slices)
        self.n_tokens = n_num + len(self.categorical_slices)
        # Column index tensors as buffers so that the module moves with .to(device).
        self.register_buffer(
            "numerical_index", torch.as_tensor(self.numerical_columns, dtype=torch.long),
            persistent=False,
        )  # fmt: skip
        self.numerical_weight = nn.Parameter(torch.empty(n_num, d_token))
        self.category_weight = nn.Parameter(torch.empty(n_cat_columns, d_token))
        self.bias = nn.Parameter(torch.empty(self.n_tokens, d_token)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """rtdl's initialisation: uniform in ``[-1/sqrt(d), 1/sqrt(d)]``."""
        bound = 1.0 / math.sqrt(self.d_token)
        for p in (self.numerical_weight, self.category_weight, self.bias):
            if p is not None:
                nn.init.uniform_(p, -bound, bound)

    def forward(self, x: Tensor) -> Tensor:
        """``[N, width] -> [N, n_tokens, d_token]`` (numerical tokens first, then categorical)."""
        check_width(x, self.width)
        tokens: list[Tensor] = []
        if self.numerical_columns:
            num = x.index_select(1, self.numerical_index)
            tokens.append(num.unsqueeze(-1) * self.numerical_weight)
        offset = 0
        cat_tokens = []
        for start, stop in self.categorical_slices:
            width = stop - start
            # One small matmul per feature: cheaper than a block-diagonal product on wide tables.
            cat_tokens.append(x[:, start:stop] @ self.category_weight[offset : offset + width])
            offset += width
        if cat_tokens:
            tokens.append(torch.stack(cat_tokens, dim=1))
        out = torch.cat(tokens, dim=1)
        if self.bias is not None:
            out = out + self.bias
        return out


def check_width(x: Tensor, width: int) -> None:
    """Fail clearly when a batch is not an encoded ``[N, width]`` float matrix."""
    if x.ndim != 2 or x.shape[1] != width:
        raise ValueError(
            f"Expected an encoded batch of shape [N, {width}] (the Encoder's output); "
            f"got a tensor of shape {tuple(x.shape)}."
        )

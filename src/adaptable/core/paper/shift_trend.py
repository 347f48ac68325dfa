"""Source statistics and the shift trend s^t (Eq. 1; Algorithm 1, lines 4-6).

The shift-aware calibrator works on the Encoder's matrix: numerical columns standardised, then
one one-hot block per categorical feature. A batch's shift trend is ``x_iu - mean_s(x_u)`` per
encoded column. For a categorical feature the calibrator maps its one-hot block minus the block's
source mean to one value per row with a learned projection ``w_u``; since a row's block is
one-hot, ``(onehot - mean) . w_u = w_u[code] - mean . w_u``, so only the numerical shifts and the
category indices are kept (:class:`ShiftTrendInput`) and the wide one-hot shift matrix is never
built: post-training stays fast and small on tables with thousands of encoded columns.

This module also holds the two adjacencies of the shift trend graph (:data:`ADJACENCIES`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from adaptable.encoding import EncodedBatch

if TYPE_CHECKING:
    # The adjacencies below run inside g_phi's torch network only; the shift trend itself is
    # numpy, read by every calibrator, so importing this module imports no torch.
    import torch

#: adjacency of the shift trend graph: the paper's all-ones, or the authors' final |correlation|
ADJACENCIES = ("complete", "correlation")


@dataclass(frozen=True)
class SourceStatistics:
    """Source column means of the encoded training rows (the sums of Eq. 1).

    Attributes:
        numeric_mean: mean of each numerical encoded column, shape (D_num,).
        category_mean: mean of each one-hot column (category frequencies), shape (W_cat,).
    """

    numeric_mean: np.ndarray
    category_mean: np.ndarray


@dataclass(frozen=True)
class ShiftTrendInput:
    """A batch's shift trend s^t as the calibrator reads it.

    Attributes:
        numeric: shift trend of the numerical columns, ``x - mean_s``, float32 (n, D_num).
        category_index: per categorical feature, the index of the row's one-hot column within the
            concatenated categorical columns (0 .. W_cat-1), or ``W_cat`` for a category unseen at
            fit time (all-zero block); int64 (n, D_cat).
    """

    numeric: np.ndarray
    category_index: np.ndarray

    def __len__(self) -> int:
        return len(self.numeric)


@dataclass(frozen=True)
class ColumnLayout:
    """Which encoded columns are numerical and how the one-hot blocks are laid out.

    Attributes:
        numeric_columns: encoded column index of each numerical feature, (D_num,).
        block_starts: first encoded column of each categorical block, (D_cat,).
        block_sizes: number of known categories of each block, (D_cat,).
        names: original feature names, numerical then categorical (node order).

    Example:
        >>> import pandas as pd
        >>> from adaptable.encoding import Encoder
        >>> X = pd.DataFrame({"a": [0.0, 2.0], "c": ["x", "y"]})
        >>> encoder = Encoder().fit(X)
        >>> layout = ColumnLayout.from_encoder(encoder)
        >>> stats = layout.source_statistics(encoder.encode(X))
        >>> trend = layout.shift_input(encoder.encode(X), stats)
        >>> trend.numeric.tolist(), trend.category_index.tolist()
        ([[-1.0], [1.0]], [[0], [1]])
    """

    numeric_columns: np.ndarray
    block_starts: np.ndarray
    block_sizes: np.ndarray
    names: tuple[str, ...]

    @classmethod
    def from_encoder(cls, encoder: Any) -> ColumnLayout:
        """Read the layout from a fitted :class:`adaptable.encoding.Encoder`'s schema."""
        numeric = [b.start for b in encoder.numerical_blocks]
        blocks = encoder.categorical_blocks
        return cls(
            numeric_columns=np.asarray(numeric, dtype=np.int64),
            block_starts=np.asarray([b.start for b in blocks], dtype=np.int64),
            block_sizes=np.asarray([b.width for b in blocks], dtype=np.int64),
            names=tuple(b.name for b in [*encoder.numerical_blocks, *blocks]),
        )

    @property
    def n_numeric(self) -> int:
        return len(self.numeric_columns)

    @property
    def n_categorical(self) -> int:
        return len(self.block_starts)

    @property
    def categorical_width(self) -> int:
        """W_cat: total number of one-hot columns."""
        return int(self.block_sizes.sum())

    @property
    def block_of_column(self) -> np.ndarray:
        """For each one-hot column, the index of its categorical feature, (W_cat,)."""
        return np.repeat(np.arange(self.n_categorical), self.block_sizes)

    @property
    def block_offsets(self) -> np.ndarray:
        """Index of each categorical block's first column among the W_cat one-hot columns."""
        return np.cumsum(self.block_sizes) - self.block_sizes

    def source_statistics(self, encoded: EncodedBatch) -> SourceStatistics:
        """Means of the encoded source training rows: numbers, and category frequencies counted
        from the codes (no one-hot matrix is built)."""
        n_rows = max(len(encoded), 1)
        category_mean = np.zeros(self.categorical_width)
        if self.n_categorical:
            seen = encoded.codes >= 0
            columns = (encoded.codes + self.block_offsets[None, :])[seen]
            category_mean = np.bincount(columns, minlength=self.categorical_width) / n_rows
        return SourceStatistics(
            numeric_mean=np.asarray(encoded.numeric, dtype=np.float64).mean(axis=0),
            category_mean=category_mean.astype(np.float64),
        )

    def shift_input(self, encoded: EncodedBatch, stats: SourceStatistics) -> ShiftTrendInput:
        """Eq. 1 for a batch encoded once: numerical shift trend and category indices."""
        numeric = (np.asarray(encoded.numeric) - stats.numeric_mean).astype(np.float32)
        codes = np.asarray(encoded.codes, dtype=np.int64)
        index = np.where(codes >= 0, codes + self.block_offsets[None, :], self.categorical_width)
        return ShiftTrendInput(numeric, index.reshape(len(codes), self.n_categorical))

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible state."""
        return {
            "numeric_columns": self.numeric_columns.tolist(),
            "block_starts": self.block_starts.tolist(),
            "block_sizes": self.block_sizes.tolist(),
            "names": list(self.names),
        }

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> ColumnLayout:
        """Inverse of :meth:`to_dict`."""
        return cls(
            np.asarray(state["numeric_columns"], dtype=np.int64),
            np.asarray(state["block_starts"], dtype=np.int64),
            np.asarray(state["block_sizes"], dtype=np.int64),
            tuple(state["names"]),
        )


def correlation_adjacency(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """|Pearson correlation| between features within each batch; diagonal 0, NaN -> 0.

    The authors' final public commit's adjacency. Constant features (zero variance) have an
    undefined correlation, which becomes 0, as there.

    Args:
        values: node values per row, (B, N, D) (categoricals as integer codes).
        mask: which rows are real (not padding), (B, N) bool.

    Returns:
        (B, D, D) adjacency.
    """
    import torch  # loaded: the caller holds tensors

    weight = mask.to(values.dtype).unsqueeze(-1)  # (B, N, 1)
    count = weight.sum(dim=1, keepdim=True).clamp_min(1.0)
    centred = (values - (values * weight).sum(dim=1, keepdim=True) / count) * weight
    cov = centred.transpose(1, 2) @ centred  # (B, D, D), unnormalised
    std = torch.sqrt(torch.diagonal(cov, dim1=1, dim2=2))  # (B, D)
    corr = cov / (std.unsqueeze(2) * std.unsqueeze(1))
    corr = torch.nan_to_num(corr.abs(), nan=0.0, posinf=0.0, neginf=0.0)
    eye = torch.eye(corr.shape[-1], dtype=torch.bool, device=corr.device)
    return corr.masked_fill(eye, 0.0)


def normalized_adjacency(adjacency: torch.Tensor) -> torch.Tensor:
    """GCN normalisation with self-loops: D^-1/2 (A + I) D^-1/2 for A with an empty diagonal."""
    import torch  # loaded: the caller holds tensors

    eye = torch.eye(adjacency.shape[-1], dtype=adjacency.dtype, device=adjacency.device)
    a_hat = adjacency + eye
    inv_sqrt = a_hat.sum(dim=-1).rsqrt()
    return inv_sqrt.unsqueeze(-1) * a_hat * inv_sqrt.unsqueeze(-2)

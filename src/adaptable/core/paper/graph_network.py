"""The shift-aware uncertainty calibrator g_phi as a torch network (Section 3.2, Appendix A).

One graph per batch: a node per original feature whose feature vector is the column's shift
trend over the batch's rows (width = batch size, smaller batches zero-padded). One GCN layer
(symmetric normalisation with self-loops, width -> 128, no bias), ReLU, mean over nodes, the
result concatenated to each row's logits, Linear(128 + C -> 1), and T_i = softplus(., beta=1.1).
Tensors are batched over graphs: shapes are (B, N, .) for B graphs of N rows each, so the
validation loss of a whole split is one forward pass.

Training lives in :mod:`adaptable.core.paper.post_training`; test-time use in
:mod:`adaptable.core.paper.graph_calibrator` (and the numpy kernel in :mod:`adaptable.core.paper.graph_numpy_forward`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from adaptable.core.paper.shift_trend import (
    ADJACENCIES,
    ColumnLayout,
    SourceStatistics,
    correlation_adjacency,
    normalized_adjacency,
)

SOFTPLUS_BETA = 1.1
#: lower bound of T_i, so that z / T_i stays finite in float32
MIN_TEMPERATURE = 1e-3


class ShiftAwareCalibrator(nn.Module):
    """g_phi: per-row temperatures from the logits and the batch's shift trend.

    Args:
        n_numeric: number of numerical features (nodes whose value is the column's shift).
        block_sizes: number of known categories of each categorical feature.
        n_classes: C.
        width: N, the node-feature width = rows per graph (batch size).
        hidden: GCN output width (128 in the authors' code).
        adjacency: ``"complete"`` (paper; all-ones) or ``"correlation"`` (authors' final commit:
            |Pearson correlation| within the batch, categoricals as integer codes).
        category_mean: source frequency of each one-hot column, (W_cat,); zeros when omitted.

    Example:
        >>> net = ShiftAwareCalibrator(n_numeric=3, block_sizes=[2], n_classes=2, width=4)
        >>> numeric = torch.zeros(1, 4, 3); index = torch.zeros(1, 4, 1, dtype=torch.long)
        >>> net(numeric, index, torch.zeros(1, 4, 2)).shape
        torch.Size([1, 4])
    """

    softplus_beta: ClassVar[float] = SOFTPLUS_BETA
    min_temperature: ClassVar[float] = MIN_TEMPERATURE

    def __init__(
        self,
        *,
        n_numeric: int,
        block_sizes: Sequence[int],
        n_classes: int,
        width: int = 64,
        hidden: int = 128,
        adjacency: str = "complete",
        category_mean: np.ndarray | None = None,
    ) -> None:
        super().__init__()
        if adjacency not in ADJACENCIES:
            raise ValueError(f"adjacency must be one of {ADJACENCIES}; got {adjacency!r}.")
        sizes = np.asarray(list(block_sizes), dtype=np.int64)
        if n_numeric + len(sizes) == 0:
            raise ValueError("The calibrator needs at least one feature; got none.")
        if n_classes < 2 or width < 1 or hidden < 1:
            raise ValueError(
                f"Expected n_classes >= 2, width >= 1, hidden >= 1; got {n_classes}, {width}, "
                f"{hidden}."
            )
        self.n_numeric = int(n_numeric)
        self.n_categorical = len(sizes)
        self.n_classes = int(n_classes)
        self.width = int(width)
        self.hidden = int(hidden)
        self.adjacency = adjacency
        cat_width = int(sizes.sum())
        block_of_column = np.repeat(np.arange(len(sizes)), sizes)
        offsets = np.repeat(np.cumsum(sizes) - sizes, sizes)
        # Index W_cat (one past the end) stands for an unseen category: projection 0, code -1.
        self.register_buffer("block_of_column", torch.as_tensor(block_of_column, dtype=torch.long))
        self.register_buffer(
            "code_of_column",
            torch.as_tensor(np.append(np.arange(cat_width) - offsets, -1), dtype=torch.float32),
        )
        mean = np.zeros(cat_width) if category_mean is None else np.asarray(category_mean)
        if mean.shape != (cat_width,):
            raise ValueError(f"category_mean must have shape ({cat_width},); got {mean.shape}.")
        self.register_buffer("category_mean", torch.as_tensor(mean, dtype=torch.float32))
        # One bias-free Linear(k -> 1) per categorical feature, stored as one flat vector; the
        # authors kept these in a Python list, so they were never trained nor saved.
        # Deliberate difference: registered parameters, trained and saved (docs/maintainer/method.md, 1).
        bound = torch.as_tensor(1.0 / np.sqrt(np.repeat(sizes, sizes)), dtype=torch.float32)
        self.category_projection = nn.Parameter((torch.rand(cat_width) * 2 - 1) * bound)
        self.gcn = nn.Linear(self.width, self.hidden, bias=False)
        self.head = nn.Linear(self.hidden + self.n_classes, 1)

    @classmethod
    def for_layout(
        cls,
        layout: ColumnLayout,
        statistics: SourceStatistics,
        n_classes: int,
        *,
        width: int,
        hidden: int,
        adjacency: str,
    ) -> ShiftAwareCalibrator:
        """The network for a table of this layout (one place: fit and load both build it here)."""
        return cls(
            n_numeric=layout.n_numeric,
            block_sizes=layout.block_sizes.tolist(),
            n_classes=n_classes,
            width=width,
            hidden=hidden,
            adjacency=adjacency,
            category_mean=statistics.category_mean,
        )

    @property
    def n_nodes(self) -> int:
        """D, one node per original feature."""
        return self.n_numeric + self.n_categorical

    def node_features(self, numeric: torch.Tensor, category_index: torch.Tensor) -> torch.Tensor:
        """Shift trend per node: numerics as given, categoricals projected, (B, N, D)."""
        if self.n_categorical == 0:
            return numeric
        weights = torch.cat([self.category_projection, self.category_projection.new_zeros(1)])
        # (onehot - mean) . w = w[code] - mean . w, one scalar per block.
        offset = numeric.new_zeros(self.n_categorical).index_add(
            0, self.block_of_column, self.category_projection * self.category_mean
        )
        categorical = weights[category_index] - offset
        return torch.cat([numeric, categorical], dim=-1)

    def row_node_sum(self, numeric: torch.Tensor, category_index: torch.Tensor) -> torch.Tensor:
        """Sum of a row's node values, (B, N); equals ``node_features(...).sum(-1)``."""
        total = numeric.sum(dim=-1)
        if self.n_categorical == 0:
            return total
        weights = torch.cat([self.category_projection, self.category_projection.new_zeros(1)])
        offset = torch.dot(self.category_projection, self.category_mean)
        return total + weights[category_index].sum(dim=-1) - offset

    def batch_representation(
        self, numeric: torch.Tensor, category_index: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        """GCN over the column graph, mean over nodes: one hidden vector per graph, (B, hidden)."""
        row_mask = mask.to(numeric.dtype)
        if self.adjacency == "complete":
            # All-ones adjacency: every normalised entry is 1/D, so every node aggregates the mean
            # of all nodes, all nodes end equal, and the mean over nodes is that one node. The
            # node mean per row needs neither a D x D matrix nor the (B, N, D) node tensor.
            node_mean = self.row_node_sum(numeric, category_index) / self.n_nodes
            return F.relu(self.gcn(node_mean * row_mask))
        nodes = self.node_features(numeric, category_index) * row_mask.unsqueeze(-1)  # (B, N, D)
        # Categoricals as integer codes in the correlation, as the authors.
        values = torch.cat([numeric, self.code_of_column[category_index]], dim=-1)
        a_hat = normalized_adjacency(correlation_adjacency(values, mask))  # (B, D, D)
        hidden = F.relu(self.gcn(a_hat @ nodes.transpose(1, 2)))  # (B, D, hidden)
        return hidden.mean(dim=1)

    def forward(
        self,
        numeric: torch.Tensor,
        category_index: torch.Tensor,
        logits: torch.Tensor,
        mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Per-row temperatures T_i > 0.

        Args:
            numeric: numerical shift trend, (B, N, D_num) with N == width.
            category_index: one-hot column index per categorical feature, (B, N, D_cat).
            logits: source-model logits, (B, N, C).
            mask: real rows (False for padding), (B, N); all True when omitted.

        Returns:
            (B, N) temperatures.
        """
        if numeric.shape[1] != self.width:
            raise ValueError(
                f"Graphs must have {self.width} rows (pad smaller batches); got {numeric.shape[1]}."
            )
        if mask is None:
            mask = torch.ones(numeric.shape[:2], dtype=torch.bool, device=numeric.device)
        summary = self.batch_representation(numeric, category_index, mask)  # (B, hidden)
        # head(concat(summary, z_i)) computed as two products, without building the concatenation.
        weight = self.head.weight[0]
        per_graph = summary @ weight[: self.hidden] + self.head.bias  # (B,)
        score = per_graph.unsqueeze(1) + logits @ weight[self.hidden :]  # (B, N)
        temperature = F.softplus(score, beta=self.softplus_beta)
        # Deliberate difference: a floor on T_i (the authors have none) so z / T_i stays finite.
        return temperature.clamp_min(self.min_temperature)

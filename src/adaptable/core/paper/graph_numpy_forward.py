"""The complete-graph calibrator's forward pass in numpy, for inference on one test batch.

The same function as :meth:`adaptable.core.paper.graph_network.ShiftAwareCalibrator.forward` (in
float64 instead of float32), written as a handful of numpy operations because torch's
per-operation overhead dominates a 64-row batch. With the all-ones adjacency every node of the
column graph aggregates the mean of all nodes, so a row contributes only the mean of its node
values. The kernel holds plain arrays; :func:`adaptable.core.paper.graph_calibrator.complete_graph_kernel`
copies them out of a trained network, so this module knows nothing of torch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: torch's softplus returns its input where ``beta * x`` exceeds this
SOFTPLUS_THRESHOLD = 20.0


@dataclass(frozen=True)
class CompleteGraphKernel:
    """Per-row temperatures T_i of a complete-graph shift-aware calibrator, in numpy.

    A batch longer than ``width`` is cut into consecutive graphs of ``width`` rows; a shorter
    one is the zero-padded graph (zero rows add nothing to the GCN product).
    """

    category_weights: np.ndarray  # (W_cat + 1,), last entry 0 for unseen categories
    offset: float  # mean_s . w summed over blocks
    n_nodes: int
    gcn: np.ndarray  # (width, hidden)
    head_summary: np.ndarray  # (hidden,)
    head_logits: np.ndarray  # (C,)
    bias: float
    softplus_beta: float
    min_temperature: float

    def __call__(
        self, numeric: np.ndarray, category_index: np.ndarray, logits: np.ndarray
    ) -> np.ndarray:
        """Per-row temperatures, (n,), from (n, D_num), (n, D_cat) and (n, C)."""
        node_sum = numeric.sum(axis=1, dtype=np.float64)
        if category_index.shape[1]:
            node_sum += self.category_weights[category_index].sum(axis=1)
        node_mean = (node_sum - self.offset) / self.n_nodes
        score = logits @ self.head_logits + self.bias
        width = len(self.gcn)
        for start in range(0, len(node_mean), width):
            chunk = node_mean[start : start + width]
            summary = np.maximum(chunk @ self.gcn[: len(chunk)], 0.0)
            score[start : start + width] += summary @ self.head_summary
        scaled = self.softplus_beta * score
        temperature = np.where(
            scaled > SOFTPLUS_THRESHOLD, score, np.logaddexp(0.0, scaled) / self.softplus_beta
        )
        return np.maximum(temperature, self.min_temperature)

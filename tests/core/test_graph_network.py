"""The network g_phi: shapes, padding, arguments, and the numpy kernel of the complete graph."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from adaptable.core import ShiftAwareCalibrator, ShiftTrendInput
from adaptable.core.paper.graph_calibrator import complete_graph_kernel
from adaptable.core.paper.post_training import Rows


def test_forward_shapes_positive_and_padding_invariant() -> None:
    torch.manual_seed(0)
    net = ShiftAwareCalibrator(n_numeric=2, block_sizes=[3], n_classes=3, width=8)
    rng = np.random.default_rng(0)
    trend = ShiftTrendInput(
        rng.normal(size=(5, 2)).astype(np.float32), rng.integers(0, 4, size=(5, 1))
    )
    logits = rng.normal(size=(5, 3))
    graphs = Rows.from_arrays(trend, logits).pack(8)
    assert graphs.numeric.shape == (1, 8, 2) and graphs.mask.sum() == 5
    t = net(graphs.numeric, graphs.category_index, graphs.logits, graphs.mask)
    assert t.shape == (1, 8) and bool((t > 0).all())
    # What sits in padding rows must not change the real rows' temperatures.
    graphs.numeric[0, 5:] = 100.0
    t2 = net(graphs.numeric, graphs.category_index, graphs.logits, graphs.mask)
    torch.testing.assert_close(t[0, :5], t2[0, :5])


def test_correlation_network_runs() -> None:
    net = ShiftAwareCalibrator(
        n_numeric=2, block_sizes=[2, 2], n_classes=2, width=4, adjacency="correlation"
    )
    t = net(torch.randn(3, 4, 2), torch.randint(0, 5, (3, 4, 2)), torch.randn(3, 4, 2))
    assert t.shape == (3, 4) and bool(torch.isfinite(t).all())


def test_bad_arguments_are_rejected() -> None:
    with pytest.raises(ValueError, match="adjacency"):
        ShiftAwareCalibrator(n_numeric=1, block_sizes=[], n_classes=2, adjacency="star")
    with pytest.raises(ValueError, match="at least one feature"):
        ShiftAwareCalibrator(n_numeric=0, block_sizes=[], n_classes=2)
    net = ShiftAwareCalibrator(n_numeric=1, block_sizes=[], n_classes=2, width=4)
    with pytest.raises(ValueError, match="4 rows"):
        net(torch.zeros(1, 3, 1), torch.zeros(1, 3, 0, dtype=torch.long), torch.zeros(1, 3, 2))


@pytest.mark.parametrize("n_rows", [1, 5, 8, 19])
def test_numpy_kernel_equals_torch_forward(n_rows: int) -> None:
    torch.manual_seed(2)
    net = ShiftAwareCalibrator(
        n_numeric=2,
        block_sizes=[3, 2],
        n_classes=3,
        width=8,
        category_mean=np.array([0.2, 0.3, 0.5, 0.6, 0.4]),
    ).eval()
    with torch.no_grad():
        net.head.weight.mul_(5.0)  # spread T over both softplus branches
    rng = np.random.default_rng(n_rows)
    trend = ShiftTrendInput(
        rng.normal(size=(n_rows, 2)).astype(np.float32), rng.integers(0, 6, size=(n_rows, 2))
    )
    logits = rng.normal(size=(n_rows, 3)) * 3
    graphs = Rows.from_arrays(trend, logits).pack(8)
    with torch.no_grad():
        expected = net(graphs.numeric, graphs.category_index, graphs.logits, graphs.mask)
    kernel = complete_graph_kernel(net)
    got = kernel(trend.numeric, trend.category_index, logits)
    np.testing.assert_allclose(got, expected.reshape(-1)[:n_rows].numpy(), rtol=1e-5, atol=1e-6)

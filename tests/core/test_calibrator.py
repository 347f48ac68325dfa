"""The calibrator network, its losses, and post-training (determinism, best network kept)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from adaptable.core import ShiftAwareCalibrator, ShiftTrendInput
from adaptable.core.graph_calibrator import complete_graph_kernel
from adaptable.core.post_training import (
    Rows,
    automatic_graphs_per_step,
    calibration_loss,
    calibrator_loss,
    class_weights,
    focal_loss,
    post_train,
)


def test_focal_loss_hand_computed() -> None:
    q = torch.tensor([[0.8, 0.2], [0.4, 0.6]])
    weights = torch.tensor([0.25, 0.75])
    out = focal_loss(q.log(), torch.tensor([0, 0]), weights, gamma=2.0)
    expected = [-0.25 * 0.2**2 * np.log(0.8), -0.25 * 0.6**2 * np.log(0.4)]
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)


def test_calibration_loss_hand_computed() -> None:
    q = torch.tensor([[0.7, 0.2, 0.1], [0.5, 0.3, 0.2]])
    # row 0 correct: (1 - 0.7 + 0.2) / 3; row 1 wrong (label 2): (0.5 - 0.3) / 3
    out = calibration_loss(q, torch.tensor([0, 2]))
    np.testing.assert_allclose(out.numpy(), [0.5 / 3, 0.2 / 3], rtol=1e-6)


def test_class_weights_inverse_frequency_normalised() -> None:
    np.testing.assert_allclose(class_weights(np.array([0.75, 0.25])), [0.25, 0.75])


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


def _source(n: int, seed: int):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=n)
    numeric = (rng.normal(size=(n, 3)) + y[:, None]).astype(np.float32)
    index = rng.integers(0, 3, size=(n, 1))
    logits = np.column_stack([-numeric.sum(1), numeric.sum(1)]) * 0.5
    return ShiftTrendInput(numeric, index), logits, y


#: the paper's post-training settings (AdapTable's defaults)
PAPER = {"lr": 1e-3, "weight_decay": 5e-3, "gamma": 2.0, "cal_weight": 0.1}


def _train(seed: int):
    torch.manual_seed(seed)
    net = ShiftAwareCalibrator(n_numeric=3, block_sizes=[3], n_classes=2, width=16)
    report = post_train(
        net,
        _source(200, 0),
        _source(64, 1),
        class_weights=np.array([0.5, 0.5]),
        epochs=6,
        patience=3,
        seed=seed,
        **PAPER,
    )
    return net, report


def test_post_training_is_deterministic_and_keeps_the_best_network() -> None:
    net_a, report_a = _train(3)
    net_b, report_b = _train(3)
    for key, value in net_a.state_dict().items():
        torch.testing.assert_close(value, net_b.state_dict()[key])
    assert report_a.valid_losses == report_b.valid_losses
    best = int(np.argmin(report_a.valid_losses))
    assert report_a.best_epoch == best
    valid = _source(64, 1)
    graphs = Rows.from_arrays(*valid).pack(16)
    with torch.no_grad():
        loss = float(calibrator_loss(net_a, graphs, torch.tensor([0.5, 0.5]), 2.0, 0.1))
    assert loss == pytest.approx(report_a.valid_losses[best], rel=1e-5)


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


def test_automatic_graphs_per_step() -> None:
    assert automatic_graphs_per_step(64 * 64, 64) == 1  # up to 64 graphs: the authors' steps
    assert automatic_graphs_per_step(64 * 64 + 1, 64) == 3  # 65 graphs -> 32 steps of <= 3
    assert automatic_graphs_per_step(34288, 64) == 17  # Hospital Readmission: 536 graphs

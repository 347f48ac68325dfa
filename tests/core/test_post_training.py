"""Post-training g_phi: its losses (hand-computed), determinism, the best network kept."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from adaptable.core import ShiftAwareCalibrator, ShiftTrendInput
from adaptable.core.paper.post_training import (
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


def test_automatic_graphs_per_step() -> None:
    assert automatic_graphs_per_step(64 * 64, 64) == 1  # up to 64 graphs: the authors' steps
    assert automatic_graphs_per_step(64 * 64 + 1, 64) == 3  # 65 graphs -> 32 steps of <= 3
    assert automatic_graphs_per_step(34288, 64) == 17  # Hospital Readmission: 536 graphs

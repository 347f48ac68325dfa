"""Tests that pin what AdapTable does, end to end.

Each would fail under a planted fault that the rest of the suite once let through:
- the estimator's batch step returning ``softmax(logits)`` (AdapTable does nothing);
- ``GraphCalibrator.calibrate`` ignoring the per-row temperatures (the calibrator does nothing);
- post-training not restoring the best network (the last epoch's is kept).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from safetensors import safe_open
from safetensors.numpy import save_file
from sklearn.metrics import f1_score

from adaptable import AdapTable, datasets
from adaptable.core import (
    GraphCalibrator,
    OnlinePrior,
    ShiftAwareCalibrator,
    ShiftTrendInput,
    adjust_batch,
    post_train,
    softmax,
)
from adaptable.core.paper.post_training import Rows, calibrator_loss, class_weights


@pytest.fixture(scope="module")
def crafted(synthetic, tmp_path_factory, frame_logreg):
    """A fitted AdapTable whose calibrator's temperatures depend strongly on the logits.

    The head is set so that T_i = softplus(4 (z_1 - z_0) - 2): rows the model is sure are class
    1 get a large T_i (a flat, uncertain q_i), rows sure of class 0 a small one. Without the
    temperatures the uncertainty ranking is the reverse for class-1 rows, so the sharpen /
    soften quantiles (Algorithm 1, lines 15-22) pick other rows.
    """
    model = frame_logreg(synthetic)
    method = AdapTable(preset="paper", random_state=0, epochs=1).fit(
        model, synthetic.train.X, synthetic.train.y, synthetic.valid.X, synthetic.valid.y
    )
    path = tmp_path_factory.mktemp("crafted") / "adaptable.safetensors"
    method.save(path)
    with safe_open(str(path), framework="numpy") as handle:
        tensors = {k: handle.get_tensor(k) for k in handle.keys()}  # noqa: SIM118
        metadata = handle.metadata()
    head = np.zeros_like(tensors["calibrator.head.weight"])
    head[0, -2:] = [-4.0, 4.0]
    tensors["calibrator.head.weight"] = head
    tensors["calibrator.head.bias"] = np.array([-2.0], dtype=np.float32)
    # (edited tensors: the digest the file was saved with no longer matches; a file without
    # one, as written before it existed, is read without it)
    meta = json.loads(metadata["adaptable"])
    del meta["digest"]
    save_file(tensors, str(path), metadata={"adaptable": json.dumps(meta)})
    return AdapTable.load(path, model=model), model


def test_predict_proba_is_the_handler_on_the_calibrated_batch(synthetic, crafted) -> None:
    method, model = crafted
    method.reset()
    logits = np.log(model.predict_proba(synthetic.test.X))
    for start in (0, 64, 128):
        rows = slice(start, start + 64)
        online_before = method.state.online_prior
        proba = method.predict_proba(synthetic.test.X.iloc[rows])
        state = method.state
        t_i = state.temperatures
        assert np.ptp(t_i) > 1.0  # the crafted calibrator's temperatures do vary
        expected = adjust_batch(
            logits[rows],
            softmax(logits[rows], t_i),
            state.source_prior,
            OnlinePrior(2, method.alpha, initial=online_before),
            state.temperature,
            method.q_low,
            method.q_high,
        )
        np.testing.assert_allclose(proba, expected.proba, rtol=1e-9)
        np.testing.assert_allclose(state.online_prior, expected.online_prior, rtol=1e-9)
        # The handler changes the model's outputs (an AdapTable that returned softmax(z) fails).
        assert np.abs(proba - softmax(logits[rows])).max() > 0.05
        # And the temperatures change the handler's output: without them it would differ.
        without = adjust_batch(
            logits[rows],
            softmax(logits[rows]),
            state.source_prior,
            OnlinePrior(2, method.alpha, initial=online_before),
            state.temperature,
            method.q_low,
            method.q_high,
        )
        assert np.abs(proba - without.proba).max() > 0.05


def test_graph_calibrator_uses_its_temperatures() -> None:
    torch.manual_seed(0)
    net = ShiftAwareCalibrator(n_numeric=2, block_sizes=[3], n_classes=3, width=8)
    with torch.no_grad():
        net.head.weight.mul_(5.0)
    rng = np.random.default_rng(0)
    trend = ShiftTrendInput(
        rng.normal(size=(8, 2)).astype(np.float32), rng.integers(0, 4, size=(8, 1))
    )
    logits = rng.normal(size=(8, 3)) * 3
    for adjacency in ("complete", "correlation"):
        net.adjacency = adjacency
        q, t_i = GraphCalibrator(net).calibrate(logits, trend)
        graphs = Rows.from_arrays(trend, logits).pack(8)
        with torch.no_grad():
            expected_t = net(graphs.numeric, graphs.category_index, graphs.logits, graphs.mask)
        np.testing.assert_allclose(t_i, expected_t[0].numpy(), rtol=1e-5)
        assert np.ptp(t_i) > 0.2
        np.testing.assert_allclose(q, softmax(logits, t_i), rtol=1e-12)
        assert np.abs(q - softmax(logits)).max() > 0.05


def _rows(n: int, seed: int, flip: bool):
    """Rows whose logits give the label with a margin of 0.5-1.5; ``flip``: the other label."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=n)
    margin = 0.5 + rng.random(n)
    logits = np.column_stack([np.zeros(n), np.where(y == 1, margin, -margin)])
    trend = ShiftTrendInput(
        rng.normal(size=(n, 3)).astype(np.float32), rng.integers(0, 3, size=(n, 1))
    )
    return trend, logits, 1 - y if flip else y


def test_post_training_restores_the_best_network_when_validation_loss_rises() -> None:
    # Every training prediction is right and every validation prediction wrong: each epoch
    # sharpens the predictions (smaller T_i), which lowers the training loss and raises the
    # validation loss, so the best epoch is the first and the network must be restored to it.
    torch.manual_seed(0)
    net = ShiftAwareCalibrator(n_numeric=3, block_sizes=[3], n_classes=2, width=16)
    valid = _rows(64, 1, flip=True)
    report = post_train(
        net,
        _rows(256, 0, flip=False),
        valid,
        class_weights=np.array([0.5, 0.5]),
        epochs=6,
        patience=6,
        seed=0,
        lr=1e-3,
        weight_decay=5e-3,
        gamma=2.0,
        cal_weight=0.1,
    )
    losses = report.valid_losses
    assert len(losses) == 6 and report.best_epoch == 0
    assert np.all(np.diff(losses) > 0)
    with torch.no_grad():
        kept = float(
            calibrator_loss(
                net,
                Rows.from_arrays(*valid).pack(16),
                torch.as_tensor(class_weights([0.5, 0.5])),
                gamma=2.0,
                cal_weight=0.1,
            )
        )
    assert kept == pytest.approx(losses[0], rel=1e-5)
    assert kept < losses[-1] - 0.05


def test_label_shift_moves_the_prior_estimate_and_keeps_macro_f1(frame_logreg) -> None:
    ds = datasets.make_shift_dataset(
        n_train=1000,
        n_valid=300,
        n_test=1280,
        source_prior=[0.8, 0.2],
        target_prior=[0.25, 0.75],
        covariate_shift=0.0,
        seed=4,
    )
    model = frame_logreg(ds)
    method = AdapTable(preset="paper", random_state=0, epochs=3).fit(
        model, ds.train.X, ds.train.y, ds.valid.X, ds.valid.y
    )
    predictions = [
        method.predict(ds.test.X.iloc[start : start + 64]) for start in range(0, 1280, 64)
    ]
    true_prior = np.bincount(ds.test.y, minlength=2) / len(ds.test.y)
    source_prior = method.state.source_prior
    estimate = method.state.online_prior
    # The estimate moved from p_s towards the true target prior, most of the way.
    assert np.abs(estimate - true_prior).sum() < 0.5 * np.abs(source_prior - true_prior).sum()
    source_f1 = f1_score(ds.test.y, model.predict(ds.test.X), average="macro")
    adapted_f1 = f1_score(ds.test.y, np.concatenate(predictions), average="macro")
    assert adapted_f1 >= source_f1


def test_saved_metadata_is_json(synthetic, crafted, tmp_path) -> None:
    method, _ = crafted
    path = tmp_path / "again.safetensors"
    method.save(path)
    with safe_open(str(path), framework="numpy") as handle:
        meta = json.loads(handle.metadata()["adaptable"])
    assert meta["calibrator"] == "gnn" and meta["params"]["random_state"] == 0

"""The training routine: early stopping, best weights restored, determinism, input checks."""

from __future__ import annotations

import pytest
import torch

from adaptable import models
from adaptable.models.training import TrainingConfig, evaluate_loss, fit_module


def _tensors(task, encoder):
    def split(s):
        return torch.from_numpy(encoder.transform(s.X)), torch.as_tensor(s.y)

    return (*split(task.train), *split(task.valid))


def _small_mlp(encoder, seed):
    torch.manual_seed(seed)
    return models.create("mlp", encoder, 3, d_block=16)


def test_best_validation_weights_are_restored(task, encoder):
    xt, yt, xv, yv = _tensors(task, encoder)
    module = _small_mlp(encoder, 0)
    # A large learning rate makes validation loss turn up quickly, so early stopping fires.
    config = TrainingConfig(lr=0.05, max_epochs=30, patience=3)
    history = fit_module(module, xt, yt, xv, yv, seed=0, config=config)
    assert history.epochs < 30  # stopped early ...
    assert history.epochs == history.best_epoch + 1 + 3  # ... exactly `patience` epochs after
    assert history.best_valid_loss == min(history.valid_loss)
    assert evaluate_loss(module, xv, yv) == pytest.approx(history.best_valid_loss, rel=1e-6)
    assert not module.training


def test_same_seed_same_weights_other_seed_other_weights(task, encoder):
    xt, yt, xv, yv = _tensors(task, encoder)
    config = TrainingConfig(max_epochs=2)
    states = []
    for seed in (3, 3, 4):
        module = _small_mlp(encoder, 0)  # same initialisation; the seed drives batch order
        fit_module(module, xt, yt, xv, yv, seed=seed, config=config)
        states.append(module.state_dict())
    for key in states[0]:
        torch.testing.assert_close(states[0][key], states[1][key], rtol=0, atol=0)
    assert any(not torch.equal(states[0][k], states[2][k]) for k in states[0])


def test_training_leaves_the_global_generator_alone(task, encoder):
    xt, yt, xv, yv = _tensors(task, encoder)
    module = _small_mlp(encoder, 0)
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    fit_module(module, xt, yt, xv, yv, config=TrainingConfig(max_epochs=1))
    torch.testing.assert_close(torch.rand(3), expected, rtol=0, atol=0)


def test_bad_inputs_are_refused(task, encoder):
    xt, yt, xv, yv = _tensors(task, encoder)
    module = _small_mlp(encoder, 0)
    with pytest.raises(ValueError, match="int64 labels"):
        fit_module(module, xt, yt.float(), xv, yv)
    with pytest.raises(ValueError, match="float32 features"):
        fit_module(module, xt.double(), yt, xv, yv)
    with pytest.raises(ValueError, match="patience"):
        TrainingConfig(patience=0)

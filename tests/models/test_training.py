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


# --------------------------------------------------------------------------- devices, threads, timings
def test_resolve_device_on_a_machine_without_cuda(monkeypatch):
    from adaptable.models.training import resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu")
    assert resolve_device(None) == torch.device("cpu")
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(torch.device("cpu")) == torch.device("cpu")
    with pytest.raises(ValueError, match="CUDA.*is_available"):
        resolve_device("cuda")
    with pytest.raises(ValueError, match="device must be one of"):
        resolve_device("gpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == torch.device("cuda")
    assert resolve_device("cuda:1") == torch.device("cuda", 1)


def test_history_times_every_epoch_and_names_the_device(task, encoder):
    xt, yt, xv, yv = _tensors(task, encoder)
    history = fit_module(
        _small_mlp(encoder, 0), xt, yt, xv, yv, config=TrainingConfig(max_epochs=3), device="cpu"
    )
    assert len(history.epoch_seconds) == history.epochs == 3
    assert all(s > 0 for s in history.epoch_seconds)
    assert sum(history.epoch_seconds) <= history.seconds
    assert history.device == "cpu"
    # Entries written before these fields existed still load.
    old = {k: v for k, v in history.to_dict().items() if k not in ("epoch_seconds", "device")}
    assert models.TrainingHistory.from_dict(old).epoch_seconds == []


def test_cpu_and_auto_train_the_same_weights_here(task, encoder, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    xt, yt, xv, yv = _tensors(task, encoder)
    states = []
    for device in ("cpu", "auto"):
        module = _small_mlp(encoder, 0)
        fit_module(module, xt, yt, xv, yv, config=TrainingConfig(max_epochs=2), device=device)
        assert next(module.parameters()).device == torch.device("cpu")
        states.append(module.state_dict())
    for key in states[0]:
        torch.testing.assert_close(states[0][key], states[1][key], rtol=0, atol=0)


def test_torch_threads_sets_and_restores_the_callers_setting():
    from adaptable.models.training import torch_threads

    before = torch.get_num_threads()
    other = 2 if before == 1 else 1
    with torch_threads(other):
        assert torch.get_num_threads() == other
    assert torch.get_num_threads() == before
    with torch_threads(None):
        assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError), torch_threads(other):
        raise RuntimeError("restored on error too")
    assert torch.get_num_threads() == before
    with pytest.raises(ValueError, match="threads"), torch_threads(0):
        pass


def test_train_uses_its_thread_count_and_gives_the_callers_back(task, tmp_path, monkeypatch):
    from adaptable.models import registry

    seen = []
    original = registry.fit_module

    def spy(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return original(*args, **kwargs)

    monkeypatch.setattr(registry, "fit_module", spy)
    before = torch.get_num_threads()
    fast = {"overrides": {"d_block": 16}, "training": TrainingConfig(max_epochs=1)}
    models.train("mlp", task, cache_dir=tmp_path, use_cache=False, threads=2, **fast)
    models.train("mlp", task, cache_dir=tmp_path, use_cache=False, **fast)
    assert seen == [2, 1]  # default: one thread
    assert torch.get_num_threads() == before


def test_fused_optimizer_is_opt_in_on_cpu_and_keeps_old_cache_keys(task, encoder):
    assert "fused" not in TrainingConfig().to_dict()  # the keys of existing entries
    assert TrainingConfig(fused=True).to_dict()["fused"] is True
    xt, yt, xv, yv = _tensors(task, encoder)
    states = []
    for fused in (None, False, True):
        module = _small_mlp(encoder, 0)
        fit_module(module, xt, yt, xv, yv, config=TrainingConfig(max_epochs=2, fused=fused))
        states.append(module.state_dict())
    for key in states[0]:
        torch.testing.assert_close(states[0][key], states[1][key], rtol=0, atol=0)  # default
        torch.testing.assert_close(states[0][key], states[2][key], rtol=1e-3, atol=1e-5)


# --------------------------------------------------------------------------- batch order / recipes
def _dataloader_reference(module, xt, yt, seed, epochs, lr):
    """The authors' loop: a shuffling DataLoader on a generator seeded with ``seed``, AdamW."""
    optimizer = torch.optim.AdamW(module.parameters(), lr=lr, weight_decay=0.01)
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(xt, yt),
        batch_size=64,
        shuffle=True,
        generator=torch.Generator().manual_seed(seed),
    )
    module.train()
    for _ in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(module(x), y).backward()
            optimizer.step()
    return module.state_dict()


def test_dataloader_batch_order_trains_the_weights_a_dataloader_loop_trains(task, encoder):
    xt, yt, xv, yv = _tensors(task, encoder)
    # No early stop (patience > epochs), so both loops run the same three epochs; lr large
    # enough that a different batch order in any epoch changes the weights visibly.
    config = TrainingConfig(lr=1e-2, max_epochs=3, patience=5, batch_order="dataloader")
    ours = _small_mlp(encoder, 0)
    history = fit_module(ours, xt, yt, xv, yv, seed=7, config=config)
    assert history.epochs == 3 and history.best_epoch == 2  # the last epoch's weights are kept
    reference = _dataloader_reference(_small_mlp(encoder, 0), xt, yt, seed=7, epochs=3, lr=1e-2)
    for key, value in ours.state_dict().items():
        torch.testing.assert_close(value, reference[key], rtol=0, atol=0)
    plain = _small_mlp(encoder, 0)
    fit_module(plain, xt, yt, xv, yv, seed=7, config=TrainingConfig(lr=1e-2, max_epochs=3))
    assert any(not torch.equal(plain.state_dict()[k], reference[k]) for k in reference)


def test_batch_order_option_keeps_old_cache_keys_and_refuses_unknown_values():
    assert "batch_order" not in TrainingConfig().to_dict()
    assert TrainingConfig(batch_order="dataloader").to_dict()["batch_order"] == "dataloader"
    with pytest.raises(ValueError, match="batch_order"):
        TrainingConfig(batch_order="shuffle")


def test_train_accepts_a_recipe_name(task, tmp_path):
    default = models.train("mlp", task, seed=0, cache_dir=tmp_path, recipe="default")
    again = models.train("mlp", task, seed=0, cache_dir=tmp_path)
    authors = models.train("mlp", task, seed=0, cache_dir=tmp_path, recipe="authors")
    assert again.cache_info["hit"] and again.cache_info["key"] == default.cache_info["key"]
    assert authors.cache_info["key"] != default.cache_info["key"]
    assert authors.cache_info["meta"]["options"]["training"]["batch_order"] == "dataloader"
    with pytest.raises(KeyError, match="recipe"):
        models.train("mlp", task, seed=0, cache_dir=tmp_path, recipe="paper")
    with pytest.raises(ValueError, match="not both"):
        models.train("mlp", task, cache_dir=tmp_path, recipe="authors", training=TrainingConfig())

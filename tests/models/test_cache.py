"""train() and its cache: hits load without training and give identical outputs; any change to
seed, code version or data misses."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from adaptable import datasets, models
from adaptable.models import cache, registry
from adaptable.models.cache import CacheIntegrityWarning
from adaptable.models.training import TrainingConfig

FAST = {"overrides": {"d_block": 16}, "training": TrainingConfig(max_epochs=2)}


@pytest.fixture()
def no_training(monkeypatch):
    """Make any training attempt fail loudly."""

    def boom(*args, **kwargs):
        raise AssertionError("trained although the cache should have been hit")

    monkeypatch.setattr(registry, "fit_module", boom)
    monkeypatch.setattr(registry, "random_search", boom)


def test_deep_model_cache_hit_is_identical_and_trains_nothing(task, tmp_path, monkeypatch):
    first = models.train("mlp", task, seed=0, cache_dir=tmp_path, **FAST)
    assert first.cache_info["hit"] is False
    entry = tmp_path / first.cache_info["key"]
    assert (entry / "weights.safetensors").is_file()
    meta = json.loads((entry / "meta.json").read_text())
    assert meta["name"] == "mlp" and meta["seed"] == 0 and len(meta["history"]["train_loss"]) == 2
    assert not list(entry.glob("*.pt")) and not list(entry.glob("*.pkl"))

    def boom(*args, **kwargs):
        raise AssertionError("retrained")

    monkeypatch.setattr(registry, "fit_module", boom)
    second = models.train("mlp", task, seed=0, cache_dir=tmp_path, **FAST)
    assert second.cache_info["hit"] is True
    X = task.test.X
    np.testing.assert_array_equal(first.predict_logits(X), second.predict_logits(X))
    np.testing.assert_array_equal(first.features(X), second.features(X))
    assert second.history.best_epoch == first.history.best_epoch


def test_cache_dir_defaults_to_the_environment_variable(task, tmp_path, monkeypatch):
    monkeypatch.setenv(models.CACHE_ENV, str(tmp_path / "env-cache"))
    assert models.default_cache_dir() == tmp_path / "env-cache"
    model = models.train("mlp", task, seed=0, **FAST)
    assert model.cache_info["path"].startswith(str(tmp_path / "env-cache"))


def test_seed_code_version_and_data_each_invalidate(task, tmp_path):
    base = models.train("mlp", task, seed=0, cache_dir=tmp_path, **FAST)
    other_seed = models.train("mlp", task, seed=1, cache_dir=tmp_path, **FAST)
    other_code = models.train("mlp", task, seed=0, cache_dir=tmp_path, code_version="x", **FAST)
    changed_y = task.train.y.copy()
    changed_y[0] = (changed_y[0] + 1) % task.n_classes
    other_data = replace(task, train=datasets.Split(task.train.X, changed_y))
    other = models.train("mlp", other_data, seed=0, cache_dir=tmp_path, **FAST)
    keys = {m.cache_info["key"] for m in (base, other_seed, other_code, other)}
    assert len(keys) == 4
    assert not any(m.cache_info["hit"] for m in (other_seed, other_code, other))
    # Seeds give different models; the same seed, retrained without the cache, the same one.
    X = task.test.X
    assert not np.array_equal(base.predict_logits(X), other_seed.predict_logits(X))
    again = models.train("mlp", task, seed=0, use_cache=False, **FAST)
    np.testing.assert_array_equal(base.predict_logits(X), again.predict_logits(X))


@pytest.mark.parametrize("name", ["knn", "logreg", "random_forest", "xgboost", "catboost"])
def test_supervised_cache_round_trip(name, task, tmp_path, monkeypatch):
    space = {
        "knn": {"n_neighbors": [3, 5]},
        "logreg": {"C": [0.1, 1.0]},
        "random_forest": {"n_estimators": [10], "max_depth": [3, 4]},
        "xgboost": {"n_estimators": [10], "max_depth": [2, 3], "learning_rate": [0.3]},
        "catboost": {"iterations": [20], "depth": [3, 4], "learning_rate": [0.3]},
    }[name]
    first = models.train(name, task, seed=0, cache_dir=tmp_path, n_trials=2, search_space=space)
    assert len(first.trials) == 2
    monkeypatch.setattr(registry, "random_search", lambda *a, **k: pytest.fail("searched again"))
    second = models.train(name, task, seed=0, cache_dir=tmp_path, n_trials=2, search_space=space)
    assert second.cache_info["hit"] is True and second.params == first.params
    X = task.test.X
    np.testing.assert_allclose(second.predict_proba(X), first.predict_proba(X), rtol=0, atol=1e-12)
    files = {p.name for p in (tmp_path / first.cache_info["key"]).iterdir()}
    native = {"logreg": "logreg.json", "xgboost": "xgboost.ubj", "catboost": "catboost.cbm"}
    assert files == {"meta.json", "sha256.json"} | ({native[name]} if name in native else set())


def _flip_a_byte(path, offset: int = -1) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def _retrained_with_warning(task, tmp_path, match: str, **kwargs):
    """Train again and check: one integrity warning naming ``match`` and the cache; a miss."""
    with pytest.warns(CacheIntegrityWarning) as caught:
        again = models.train("mlp", task, seed=0, cache_dir=tmp_path, **kwargs)
    messages = [str(w.message) for w in caught]
    assert any(match in m and str(tmp_path) in m for m in messages), messages
    assert again.cache_info["hit"] is False
    return again


def test_a_damaged_entry_is_retrained_with_a_warning(task, tmp_path):
    first = models.train("mlp", task, seed=0, cache_dir=tmp_path, **FAST)
    (tmp_path / first.cache_info["key"] / "weights.safetensors").write_bytes(b"garbage")
    again = _retrained_with_warning(task, tmp_path, "weights.safetensors", **FAST)
    np.testing.assert_array_equal(
        first.predict_logits(task.test.X), again.predict_logits(task.test.X)
    )
    assert models.train("mlp", task, seed=0, cache_dir=tmp_path, **FAST).cache_info["hit"]


def test_flipped_weight_bytes_and_edited_meta_are_detected(task, tmp_path):
    """Issue 11, defect 4: a change that still parses must not load as a cache hit."""
    first = models.train("mlp", task, seed=0, cache_dir=tmp_path, **FAST)
    entry = tmp_path / first.cache_info["key"]
    # One flipped bit inside the last tensor's data: the file is still valid safetensors.
    _flip_a_byte(entry / "weights.safetensors")
    again = _retrained_with_warning(task, tmp_path, "weights.safetensors", **FAST)
    X = task.test.X
    np.testing.assert_array_equal(first.predict_logits(X), again.predict_logits(X))
    # Edited encoder means in meta.json: valid JSON, different predictions if loaded.
    meta = json.loads((entry / "meta.json").read_text())
    meta["encoder"]["mean"] = [v + 1.0 for v in meta["encoder"]["mean"]]
    (entry / "meta.json").write_text(json.dumps(meta))
    _retrained_with_warning(task, tmp_path, "meta.json", **FAST)
    # The entry was replaced: the next call is a clean hit with the original predictions.
    hit = models.train("mlp", task, seed=0, cache_dir=tmp_path, **FAST)
    assert hit.cache_info["hit"] is True
    np.testing.assert_array_equal(first.predict_logits(X), hit.predict_logits(X))


def test_negated_logreg_coefficients_are_detected(task, tmp_path):
    space = {"C": [1.0]}
    first = models.train("logreg", task, seed=0, cache_dir=tmp_path, n_trials=1, search_space=space)
    path = tmp_path / first.cache_info["key"] / "logreg.json"
    stored = json.loads(path.read_text())
    stored["coef"] = (-np.asarray(stored["coef"])).tolist()
    path.write_text(json.dumps(stored))
    with pytest.warns(CacheIntegrityWarning, match="logreg.json"):
        again = models.train(
            "logreg", task, seed=0, cache_dir=tmp_path, n_trials=1, search_space=space
        )
    assert again.cache_info["hit"] is False
    np.testing.assert_allclose(again.predict_proba(task.test.X), first.predict_proba(task.test.X))


@pytest.mark.parametrize(
    "damage, problem",
    [
        (lambda text: text.encode("utf-16"), "not UTF-8"),  # defect 6
        (lambda text: text[: len(text) // 2].encode(), "not valid JSON"),  # defect 7
    ],
    ids=["non-utf8", "truncated"],
)
def test_unreadable_meta_is_named_retrained_and_replaced(task, tmp_path, damage, problem):
    """Issue 11, defects 6 and 7: the warning names meta.json and the cache, the model is
    retrained, and the broken entry is replaced (so the next call is a hit again)."""
    first = models.train("mlp", task, seed=0, cache_dir=tmp_path, **FAST)
    entry = tmp_path / first.cache_info["key"]
    text = (entry / "meta.json").read_text()
    # Rewrite the checksums too, so that the parse itself (not the hash) must catch it.
    (entry / "meta.json").write_bytes(damage(text))
    sums = json.loads((entry / "sha256.json").read_text())
    sums["files"]["meta.json"] = cache.sha256_of(entry / "meta.json")
    (entry / "sha256.json").write_text(json.dumps(sums))
    _retrained_with_warning(task, tmp_path, f"meta.json is {problem}", **FAST)
    assert json.loads((entry / "meta.json").read_text())["name"] == "mlp"
    assert models.train("mlp", task, seed=0, cache_dir=tmp_path, **FAST).cache_info["hit"]


def test_an_entry_without_checksums_is_replaced(task, tmp_path):
    first = models.train("mlp", task, seed=0, cache_dir=tmp_path, **FAST)
    entry = tmp_path / first.cache_info["key"]
    (entry / "sha256.json").unlink()  # an entry written before checksums existed
    _retrained_with_warning(task, tmp_path, "sha256.json is missing", **FAST)
    assert (entry / "sha256.json").is_file()
    assert models.train("mlp", task, seed=0, cache_dir=tmp_path, **FAST).cache_info["hit"]


def test_device_enters_the_key_only_off_the_cpu(task, tmp_path, monkeypatch):
    # "auto" is the CPU on a machine without CUDA: pretend this is one
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    cpu = models.train("mlp", task, seed=0, cache_dir=tmp_path, device="cpu", **FAST)
    auto = models.train("mlp", task, seed=0, cache_dir=tmp_path, device="auto", **FAST)
    assert auto.cache_info["key"] == cpu.cache_info["key"] and auto.cache_info["hit"]
    assert cpu.cache_info["meta"]["history"]["device"] == "cpu"

    # What the key covers when CUDA is asked for (pretended: the run stops at the key).
    class Stop(Exception):
        pass

    options = []

    def record(dataset, name, seed, opts, version=None):
        options.append(opts)
        raise Stop

    monkeypatch.setattr(registry, "cache_key", record)
    monkeypatch.setattr(
        registry, "resolve_device", lambda d: torch.device(d.replace("auto", "cpu"))
    )
    for device in ("cpu", "cuda"):
        with pytest.raises(Stop):
            models.train("mlp", task, seed=0, cache_dir=tmp_path, device=device, **FAST)
    assert "device" not in options[0] and options[1]["device"] == "cuda"

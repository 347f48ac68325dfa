"""TorchSourceModel: raw DataFrame in, logits / probabilities / features out."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from adaptable import models


@pytest.fixture(scope="module")
def source(task, encoder):
    torch.manual_seed(0)
    module = models.create("ft_transformer", encoder, task.n_classes, n_blocks=1, d_token=8)
    return models.TorchSourceModel(module.train(), encoder, task.n_classes, name="ft_transformer")


def test_outputs_have_the_contract_shapes(source, task):
    X = task.test.X.iloc[:10]
    logits = source.predict_logits(X)
    proba = source.predict_proba(X)
    assert logits.shape == proba.shape == (10, 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_array_equal(source.predict(X), logits.argmax(axis=1))
    assert source.features(X).shape == (10, 8)
    assert not source.module.training  # kept in eval mode


def test_prepare_encodes_frames_and_passes_encoded_tensors(source, task, encoder):
    X = task.test.X.iloc[:4]
    x = source.prepare(X)
    assert x.dtype == torch.float32 and x.shape == (4, encoder.n_features_out_)
    torch.testing.assert_close(source.prepare(x), x)
    np.testing.assert_array_equal(source.predict_logits(x), source.predict_logits(X))
    with pytest.raises(ValueError, match=rf"\[N, {encoder.n_features_out_}\]"):
        source.prepare(torch.zeros(4, 2))


def test_eval_mode_makes_predictions_repeatable(source, task):
    X = task.test.X.iloc[:16]
    np.testing.assert_array_equal(source.predict_logits(X), source.predict_logits(X))


def test_wrapping_refuses_non_modules(encoder):
    with pytest.raises(TypeError, match="torch.nn.Module"):
        models.TorchSourceModel(object(), encoder, 2)  # type: ignore[arg-type]


def test_prepare_puts_inputs_on_the_models_device(task, encoder):
    module = models.create("mlp", encoder, task.n_classes, d_block=8)
    model = models.TorchSourceModel(module, encoder, task.n_classes, device="cpu")
    assert model.device == torch.device("cpu")
    assert model.prepare(task.test.X.iloc[:4]).device == model.device
    encoded = torch.from_numpy(encoder.transform(task.test.X.iloc[:4])).double()
    assert model.prepare(encoded).dtype == torch.float32
    assert model.to("cpu") is model
    logits = model.predict_logits(task.test.X.iloc[:4])
    assert isinstance(logits, np.ndarray) and logits.shape == (4, task.n_classes)
    with pytest.raises(ValueError, match="device must be one of"):
        model.to("tpu")

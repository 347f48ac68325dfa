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


def test_logits_from_an_encoded_batch_equal_logits_from_raw_rows(source, task, encoder):
    """Issue 12: the shared-encoding path gives the model exactly what it would compute."""
    X = task.test.X.iloc[:32]
    np.testing.assert_array_equal(
        source.logits_from_encoded(encoder.encode(X)), source.predict_logits(X)
    )


def test_adaptable_gives_the_same_outputs_with_and_without_shared_encoding(source, task):
    """A model hiding its Encoder takes the old path (the adapter encodes its own copy)."""
    from adaptable import AdapTable

    class Opaque:  # the same model, seen only through predict_logits
        def predict_logits(self, X):
            return source.predict_logits(X)

    outputs = []
    for model in (source, Opaque()):
        method = AdapTable(preset="paper", epochs=2, random_state=0).fit(
            model, task.train.X, task.train.y, task.valid.X, task.valid.y
        )
        shared = method._encoded_logits is not None
        outputs.append(
            (shared, [method.predict_proba(task.test.X.iloc[i : i + 34]) for i in (0, 34, 68)])
        )
    assert [shared for shared, _ in outputs] == [True, False]
    for ours, theirs in zip(outputs[0][1], outputs[1][1], strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("calibrator", ["none", "platt"])
def test_paper_preset_without_the_graph_calibrator_runs_on_a_torch_model(source, task, calibrator):
    """Regression: with no shift trend to compute the adapter holds no Encoder, so it must not
    take the shared-encoding path (it raised AttributeError on 'encode')."""
    from adaptable import AdapTable

    method = AdapTable(preset="paper", calibrator=calibrator, random_state=0).fit(
        source, task.train.X, task.train.y, task.valid.X, task.valid.y
    )
    proba = method.predict_proba(task.test.X.iloc[:20])
    assert proba.shape == (20, task.n_classes)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)

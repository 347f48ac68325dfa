"""The four deep backbones: shapes, head(features) == forward, unseen categories, learning."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from torch.nn import functional as F

from adaptable import datasets, models
from adaptable.models.tokens import FeatureTokenizer

# Small variants for training tests; the default (authors') sizes are checked for shapes.
SMALL = {
    "mlp": {"d_block": 32},
    "resnet": {"n_blocks": 2, "d_block": 32},
    "autoint": {"n_layers": 2, "d_token": 8},
    "ft_transformer": {"n_blocks": 2, "d_token": 16, "n_heads": 4},
}
D_FEATURES = {"mlp": 256, "resnet": 339, "ft_transformer": 32}


def _encoded(encoder: datasets.Encoder, frame: pd.DataFrame) -> torch.Tensor:
    return torch.from_numpy(encoder.transform(frame))


@pytest.mark.parametrize("name", list(models.BACKBONES))
def test_default_shapes_and_head_of_features(name, task, encoder):
    torch.manual_seed(0)
    module = models.create(name, encoder, task.n_classes).eval()
    x = _encoded(encoder, task.valid.X.iloc[:7])
    logits = module(x)
    feats = module.features(x)
    assert logits.shape == (7, 3)
    n_tokens = len(task.numerical) + len(task.categorical)
    expected = D_FEATURES.get(name, 62 * n_tokens)
    assert feats.shape == (7, expected) == (7, module.d_features)
    torch.testing.assert_close(module.head(feats), logits, rtol=0, atol=0)


@pytest.mark.parametrize("name", list(models.BACKBONES))
def test_unseen_category_is_an_all_zero_block_and_does_not_crash(name, task, encoder):
    frame = task.valid.X.iloc[:4].copy()
    frame[task.categorical[0]] = "never-seen"
    x = _encoded(encoder, frame)
    block = encoder.categorical_blocks[0]
    assert x[:, block.start : block.stop].abs().sum() == 0
    module = models.create(name, encoder, task.n_classes, **SMALL[name]).eval()
    assert torch.isfinite(module(x)).all()


@pytest.mark.parametrize("name", list(models.BACKBONES))
def test_a_few_steps_reduce_the_training_loss(name, task, encoder):
    torch.manual_seed(0)
    module = models.create(name, encoder, task.n_classes, **SMALL[name])
    x = _encoded(encoder, task.train.X)
    y = torch.as_tensor(task.train.y)
    optimizer = torch.optim.AdamW(module.parameters(), lr=3e-3)

    def loss() -> float:
        module.eval()
        with torch.no_grad():
            return float(F.cross_entropy(module(x), y))

    before = loss()
    generator = torch.Generator().manual_seed(0)
    for _ in range(25):
        module.train()
        index = torch.randperm(len(x), generator=generator)[:64]
        optimizer.zero_grad()
        F.cross_entropy(module(x[index]), y[index]).backward()
        optimizer.step()
    assert loss() < before - 0.05


@pytest.mark.parametrize("name", list(models.BACKBONES))
def test_wrong_width_is_refused_with_the_expected_shape(name, encoder):
    module = models.create(name, encoder, 3, **SMALL[name])
    with pytest.raises(ValueError, match=rf"\[N, {encoder.n_features_out_}\]"):
        module(torch.zeros(2, encoder.n_features_out_ + 1))


def test_tokenizer_matches_hand_computed_tokens():
    frame = pd.DataFrame({"a": [1.0, 3.0], "c": ["x", "y"]})
    encoder = datasets.Encoder().fit(frame)
    tok = FeatureTokenizer(encoder, d_token=2, bias=True)
    with torch.no_grad():
        tok.numerical_weight.copy_(torch.tensor([[2.0, -1.0]]))
        tok.category_weight.copy_(torch.tensor([[10.0, 20.0], [30.0, 40.0]]))
        tok.bias.copy_(torch.tensor([[0.5, 0.5], [1.0, 2.0]]))
    # "a" standardises to -1 / +1; "x" is column 0 of the block, "y" column 1, "z" unseen.
    x = torch.from_numpy(encoder.transform(pd.DataFrame({"a": [1.0, 3.0], "c": ["y", "z"]})))
    expected = torch.tensor(
        [
            [[-2.0 + 0.5, 1.0 + 0.5], [30.0 + 1.0, 40.0 + 2.0]],
            [[2.0 + 0.5, -1.0 + 0.5], [1.0, 2.0]],  # unseen category: the bias alone
        ]
    )
    torch.testing.assert_close(tok(x), expected)


def test_create_rejects_unknown_names_and_bad_arguments(encoder):
    with pytest.raises(KeyError, match="Unknown model 'tabnet'"):
        models.create("tabnet", encoder, 2)
    with pytest.raises(ValueError, match="n_classes"):
        models.create("mlp", encoder, 1)
    with pytest.raises(TypeError, match="Encoder"):
        models.MLP("not an encoder", 2)  # type: ignore[arg-type]


def test_names_lists_all_nine_models():
    assert models.names() == [
        "mlp", "resnet", "autoint", "ft_transformer",
        "knn", "logreg", "random_forest", "xgboost", "catboost",
    ]  # fmt: skip

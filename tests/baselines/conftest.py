"""Fixtures for the baseline tests: a tiny synthetic task and a small trained torch source model.

The source model is the real ``TorchSourceModel`` around the real ``MLP`` backbone (narrowed to
32 units so that every test stays fast), trained for a few hundred full-batch Adam steps.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from adaptable import datasets
from adaptable.models.mlp import MLP
from adaptable.models.source_model import TorchSourceModel


@pytest.fixture(scope="session")
def tiny_task() -> datasets.ShiftDataset:
    """Two classes, label + covariate shift, 300 / 150 / 200 rows."""
    return datasets.make_shift_dataset(n_train=300, n_valid=150, n_test=200, seed=3)


@pytest.fixture(scope="session")
def torch_source(tiny_task: datasets.ShiftDataset) -> TorchSourceModel:
    """A trained MLP source model on ``tiny_task``."""
    encoder = datasets.fit_encoder(tiny_task)
    torch.manual_seed(0)
    module = MLP(encoder, tiny_task.n_classes, d_block=32)
    x = torch.from_numpy(encoder.transform(tiny_task.train.X))
    y = torch.from_numpy(tiny_task.train.y)
    optimiser = torch.optim.Adam(module.parameters(), lr=1e-2)
    for _ in range(150):
        optimiser.zero_grad()
        F.cross_entropy(module(x), y).backward()
        optimiser.step()
    return TorchSourceModel(module.eval(), encoder, tiny_task.n_classes, name="mlp")

"""Small fixtures for the model tests (all built here, all fast)."""

from __future__ import annotations

import pytest

from adaptable import datasets


@pytest.fixture(scope="module")
def task() -> datasets.ShiftDataset:
    """A 3-class mixed-type task, small enough to train on in a second."""
    return datasets.make_shift_dataset(
        n_train=300, n_valid=100, n_test=100, n_classes=3, n_categorical=2, seed=1
    )


@pytest.fixture(scope="module")
def encoder(task: datasets.ShiftDataset) -> datasets.Encoder:
    """The task's Encoder, fitted on train + valid."""
    return datasets.fit_encoder(task)

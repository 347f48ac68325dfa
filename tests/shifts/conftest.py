"""Fixtures for the shift tests: a builder for small hand-made datasets."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

from adaptable.datasets import ShiftDataset, Split

DatasetFactory = Callable[..., ShiftDataset]


def _make_dataset(
    train: pd.DataFrame,
    y_train: np.ndarray,
    test: pd.DataFrame,
    y_test: np.ndarray,
    numerical: list[str],
    categorical: list[str],
    n_classes: int = 2,
) -> ShiftDataset:
    """A ShiftDataset from explicit frames (valid = a copy of train; only train/test matter)."""
    y_train = np.asarray(y_train, dtype=np.int64)
    y_test = np.asarray(y_test, dtype=np.int64)
    return ShiftDataset(
        name="handmade",
        train=Split(train.reset_index(drop=True), y_train),
        valid=Split(train.reset_index(drop=True), y_train),
        test=Split(test.reset_index(drop=True), y_test),
        numerical=numerical,
        categorical=categorical,
        classes=[f"class_{k}" for k in range(n_classes)],
        domain_split="handmade",
    )


@pytest.fixture
def make_dataset() -> DatasetFactory:
    """``make_dataset(train, y_train, test, y_test, numerical, categorical, n_classes=2)``."""
    return _make_dataset

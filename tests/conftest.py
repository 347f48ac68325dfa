"""Shared fixtures. Real-data fixtures skip with a reason when the raw file is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from adaptable import datasets

# Two cores in CI: keep torch from oversubscribing them.
torch.set_num_threads(1)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The data directory CI points at ../shared/data (via $ADAPTABLE_DATA_DIR)."""
    value = os.environ.get(datasets.DATA_DIR_ENV)
    if not value or not Path(value).is_dir():
        pytest.skip(f"${datasets.DATA_DIR_ENV} is not set to an existing directory")
    return Path(value)


@pytest.fixture(scope="session")
def heloc(data_dir: Path) -> datasets.ShiftDataset:
    """HELOC from the data directory (skips when the FICO file is absent)."""
    try:
        return datasets.load("heloc", data_dir=data_dir)
    except datasets.DataFileError as err:
        pytest.skip(f"HELOC raw file absent: {err}")


@pytest.fixture(scope="session")
def readmission() -> datasets.ShiftDataset:
    """Hospital Readmission from the embedded copy (always present)."""
    return datasets.load("hospital_readmission")


@pytest.fixture(scope="session")
def synthetic() -> datasets.ShiftDataset:
    """A small mixed-type task with label and covariate shift."""
    return datasets.make_shift_dataset(seed=0)

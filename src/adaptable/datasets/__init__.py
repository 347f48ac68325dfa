"""The six TableShift tasks AdapTable is evaluated on, the benchmark's domain-split cases (one
record each in ``datasets/data/benchmark_cases.csv``; each role's cases as ``GENERALITY_TASKS``,
``DEVELOPMENT_TASKS``, ``CONFIRMATION_TASKS``, ``HOLDOUT_TASKS``, ``SEALED_TASKS``,
``RESERVE_TASKS``), and the shared Encoder.

>>> from adaptable import datasets
>>> ds = datasets.load("hospital_readmission")  # embedded copy, no data directory needed
"""

from adaptable.datasets._base import (
    DATA_DIR_ENV,
    DataFileError,
    DataFormatError,
    ShiftDataset,
    Split,
    resolve_data_dir,
)
from adaptable.datasets.registry import (
    CONFIRMATION_TASKS,
    DEVELOPMENT_TASKS,
    GENERALITY_TASKS,
    HOLDOUT_TASKS,
    RESERVE_TASKS,
    SEALED_TASKS,
    TASKS,
    TaskInfo,
    available,
    load,
)
from adaptable.datasets.synthetic import make_shift_dataset
from adaptable.encoding import Encoder, FeatureBlock


def fit_encoder(dataset: ShiftDataset) -> Encoder:
    """The experiments' encoder: fitted on train + valid, as the authors do."""
    import pandas as pd

    frame = pd.concat([dataset.train.X, dataset.valid.X], ignore_index=True)
    return Encoder(dataset.numerical, dataset.categorical).fit(frame)


__all__ = [
    "DATA_DIR_ENV",
    "DataFileError",
    "DataFormatError",
    "Encoder",
    "FeatureBlock",
    "ShiftDataset",
    "Split",
    "CONFIRMATION_TASKS",
    "DEVELOPMENT_TASKS",
    "GENERALITY_TASKS",
    "HOLDOUT_TASKS",
    "RESERVE_TASKS",
    "SEALED_TASKS",
    "TASKS",
    "TaskInfo",
    "available",
    "fit_encoder",
    "make_shift_dataset",
    "load",
    "resolve_data_dir",
]

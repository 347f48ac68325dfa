"""Shift scenarios: the test split turned into a seeded test stream.

``natural`` is the test split in a random order; six corruptions modify the raw test features
(``gaussian``, ``uniform``, ``random_drop``, ``column_drop``) or resample the rows along the most
important column (``numerical``, ``categorical``); two label shifts resample the rows by label
(``class_imbalance``, ``temporal``). Definitions: the paper's appendix sections "Common
Corruptions" and "Label Distribution Shifts". Source statistics always come from the train split.

>>> from adaptable import datasets, shifts
>>> stream = shifts.apply("random_drop", datasets.make_shift_dataset(seed=0), seed=0)
>>> X_batch, y_batch = next(stream.batches(64))
>>> X_batch.shape[0], y_batch.dtype.name
(64, 'int64')
"""

from adaptable.shifts.column_shifts import categorical, numerical
from adaptable.shifts.corruptions import column_drop, gaussian, random_drop, uniform
from adaptable.shifts.importance import ColumnImportance, most_important_column
from adaptable.shifts.label_shifts import class_imbalance, class_weights, temporal, temporal_labels
from adaptable.shifts.registry import PAPER_NAMES, SCENARIOS, apply, names, natural
from adaptable.shifts.stream import Stream

__all__ = [
    "PAPER_NAMES",
    "SCENARIOS",
    "ColumnImportance",
    "Stream",
    "apply",
    "categorical",
    "class_imbalance",
    "class_weights",
    "column_drop",
    "gaussian",
    "most_important_column",
    "names",
    "natural",
    "numerical",
    "random_drop",
    "temporal",
    "temporal_labels",
    "uniform",
]

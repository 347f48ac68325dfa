"""A labelled table with no domain split yet: what the benchmark's raw loaders return.

The domain-split cases (:mod:`adaptable.datasets.domain_cases`) cut one such table in two
domains several ways, so the loaders of the extra data sets (Adult, COMPAS, German credit, CMC)
stop before any split.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd


@dataclass
class LabelledTable:
    """Every row of a data set after its row filters and schema step.

    Attributes:
        name: the data set's short name (``adult``, ``compas``...).
        features: the feature columns, positional index 0..N-1; categorical columns are
            ``object`` columns of strings, numerical ones ``int64`` / ``float64``.
        target: ``int64`` labels 0..C-1, shape ``(N,)``.
        classes: the class names, index = label.
        sources: the files read (for reports).
        notes: choices worth reporting (dropped columns, filters).
    """

    name: str
    features: pd.DataFrame
    target: np.ndarray
    classes: list[str]
    sources: list[str]
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.features = self.features.reset_index(drop=True)
        self.target = np.asarray(self.target, dtype=np.int64)
        if len(self.target) != len(self.features):
            raise ValueError(
                f"{self.name}: {len(self.target)} labels for {len(self.features)} feature rows"
            )

"""Which column matters most: an XGBoost model fitted on the SOURCE (train) split.

The numerical and categorical column shifts resample the test rows along the most important
column of one kind. "Most important" follows the authors' code: an XGBoost classifier fitted
on the train split, importance = XGBoost's ``"gain"`` (the average loss reduction of the splits
that use the column; XGBoost's default for ``feature_importances_``), argmax over the columns of
the requested kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from adaptable.datasets import ShiftDataset
from adaptable.optional import require

Kind = Literal["numerical", "categorical"]

#: the authors' XGBClassifier() defaults (100 trees, depth 6, learning rate 0.3); on HELOC's
#: 2,220 source rows the fit takes well under a second on one thread
XGB_PARAMS: dict[str, object] = {
    "n_estimators": 100,
    "max_depth": 6,
    "learning_rate": 0.3,
    "tree_method": "hist",
    "n_jobs": 1,
}


@dataclass(frozen=True)
class ColumnImportance:
    """The chosen column and the gain of every column of its kind (0 for unused columns)."""

    column: str
    kind: Kind
    gains: dict[str, float]


def source_features(dataset: ShiftDataset) -> pd.DataFrame:
    """The train split as XGBoost sees it: numbers as they are, categories as integer codes.

    Categorical values become their index among the train split's sorted categories (an
    ordinal code, as the authors' LabelEncoder gives); XGBoost's trees split on those codes.
    Missing numerical values stay NaN, which XGBoost routes as missing.
    """
    X = dataset.train.X
    out = pd.DataFrame(index=X.index)
    for column in X.columns:
        if column in dataset.categorical:
            values = X[column].astype(str)
            levels = np.sort(values.unique())
            out[column] = np.searchsorted(levels, values.to_numpy()).astype(np.float32)
        else:
            out[column] = pd.to_numeric(X[column], errors="coerce").astype(np.float32)
    return out


def most_important_column(dataset: ShiftDataset, kind: Kind, seed: int) -> ColumnImportance:
    """The column of ``kind`` with the highest XGBoost gain on the SOURCE (train) split.

    Args:
        dataset: the task; only its train split is used.
        kind: ``"numerical"`` or ``"categorical"``.
        seed: XGBoost's ``random_state`` (the fit uses no row or column subsampling, so it is
            deterministic anyway).

    Returns:
        The chosen column with the per-column gains. Ties, and a kind whose columns the trees
        never split on (all gains 0), resolve to the earliest column in table order.

    Raises:
        ValueError: the dataset has no column of ``kind``.
    """
    XGBClassifier = require(
        "xgboost",
        feature="The numerical and categorical column shifts (XGBoost ranks the columns)",
        extra="boosters",
    ).XGBClassifier

    if kind not in ("numerical", "categorical"):
        raise ValueError(f"kind must be 'numerical' or 'categorical'; got {kind!r}")
    candidates = list(dataset.numerical if kind == "numerical" else dataset.categorical)
    if not candidates:
        raise ValueError(
            f"dataset {dataset.name!r} has no {kind} columns, so the {kind} column shift is "
            "undefined for it"
        )
    features = source_features(dataset)
    # XGBoost wants labels 0..K-1; a class absent from the train split would break that.
    _, labels = np.unique(dataset.train.y, return_inverse=True)
    if labels.max() == 0:
        raise ValueError(
            f"dataset {dataset.name!r}: the train split holds a single class, so no model can "
            "rank its columns"
        )
    model = XGBClassifier(**XGB_PARAMS, random_state=seed, importance_type="gain")
    model.fit(features.to_numpy(), labels)
    scores = model.get_booster().get_score(importance_type="gain")
    # The booster names columns f0, f1, ... in input order; unused columns are absent.
    gains = {c: float(scores.get(f"f{features.columns.get_loc(c)}", 0.0)) for c in candidates}
    best = max(candidates, key=lambda c: (gains[c], -candidates.index(c)))
    return ColumnImportance(column=best, kind=kind, gains=gains)

"""Contraceptive Method Choice (1987 Indonesia Contraceptive Prevalence Survey): three classes,
a data set the benchmark cuts.

Raw file: ``cmc.data`` (1,473 rows, 9 attributes + the class, comma-separated, no header;
``cmc.names`` describes them).

Label: the contraceptive method used, 0 = no use (file's 1), 1 = long-term (2), 2 = short-term
(3).

Features: ``wife_age`` and ``n_children`` are numerical; the other seven are categorical as
cmc.names declares them (education, occupation and standard-of-living levels 1-4, and the
binary religion / working / media-exposure flags), kept as the code strings ``"1"`` ... ``"4"``
(``"0"`` / ``"1"`` for the flags).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from adaptable.datasets._base import DataFormatError, check_row_count, find_file, read_csv_checked
from adaptable.datasets._labelled import LabelledTable

NAME = "cmc"
FILES = ["cmc/cmc.data", "cmc.data"]
OBTAIN = (
    "the UCI Machine Learning Repository page 'Contraceptive Method Choice' (CC BY 4.0): save "
    "cmc.data (plain or .gz) under cmc/"
)
RAW_ROWS = 1_473
#: cmc.names' attributes 1-9, then the class
COLUMNS = [
    "wife_age", "wife_education", "husband_education", "n_children", "wife_religion",
    "wife_working", "husband_occupation", "standard_of_living", "media_exposure", "method",
]  # fmt: skip
NUMERICAL = ["wife_age", "n_children"]
#: allowed codes of each categorical attribute (cmc.names)
CODES = {
    "wife_education": {1, 2, 3, 4},
    "husband_education": {1, 2, 3, 4},
    "wife_religion": {0, 1},
    "wife_working": {0, 1},
    "husband_occupation": {1, 2, 3, 4},
    "standard_of_living": {1, 2, 3, 4},
    "media_exposure": {0, 1},
}
TARGET = "method"


def locate(data_dir: Path) -> Path:
    """The raw file (raises DataFileError when absent)."""
    return find_file(data_dir, NAME, FILES, OBTAIN)


def prepare_cmc(data_dir: Path) -> LabelledTable:
    """Every CMC row with its nine attributes.

    Raises:
        DataFileError: the file is absent. DataFormatError: wrong column count, row count,
        codes or labels.
    """
    path = locate(data_dir)
    raw = read_csv_checked(path, NAME, header=None)
    if raw.shape[1] != len(COLUMNS):
        raise DataFormatError(
            f"{path.name} (data set {NAME!r}) has {raw.shape[1]} comma-separated columns; the "
            f"publisher's file has {len(COLUMNS)} (9 attributes and the class)."
        )
    raw.columns = COLUMNS
    check_row_count(raw, RAW_ROWS, NAME, path)
    values = raw.apply(pd.to_numeric, errors="coerce")
    if values.isna().any().any() or not (values == values.round()).all().all():
        raise DataFormatError(f"{path.name} (data set {NAME!r}): every value must be an integer.")
    values = values.astype(np.int64)
    if not values[TARGET].isin([1, 2, 3]).all():
        found = sorted(set(values[TARGET]) - {1, 2, 3})[:5]
        raise DataFormatError(
            f"{path.name} (data set {NAME!r}): the class (last column) must be 1, 2 or 3; "
            f"found {found}."
        )
    table = values[COLUMNS[:-1]].copy()
    for col, allowed in CODES.items():
        bad = sorted(set(table[col]) - allowed)
        if bad:
            raise DataFormatError(
                f"{path.name} (data set {NAME!r}): attribute {col!r} takes codes "
                f"{sorted(allowed)}; found {bad[:5]}."
            )
        table[col] = table[col].astype(str).astype(object)
    return LabelledTable(
        NAME,
        table,
        (values[TARGET] - 1).to_numpy().astype(np.int64),
        classes=["no use", "long-term", "short-term"],
        sources=[str(path)],
    )

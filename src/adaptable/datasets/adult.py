"""UCI Adult (1994 US census extract): income above 50K a year, a data set the benchmark cuts.

Raw files: ``adult.data`` (32,561 rows) and ``adult.test`` (16,281 rows, a leading
``|1x3 Cross validator`` line, labels written ``<=50K.`` / ``>50K.``), comma-separated with a
space after each comma, no header, ``?`` for a missing value. Both are read and stacked (48,842
rows): the benchmark draws its own train / valid / test from the domain split, not from the
publisher's train / test cut.

Label: 1 = income ``>50K``, 0 = ``<=50K``.

Features (12): ``age``, ``workclass``, ``education_num``, ``marital_status``, ``occupation``,
``relationship``, ``race``, ``sex``, ``capital_gain``, ``capital_loss``, ``hours_per_week``,
``native_country``. Left out: ``education`` (the same information as ``education_num``, one
level per number) and ``fnlwgt`` (the census sampling weight, a property of the survey design
rather than of the person). Missing values (``?``, only in workclass, occupation and
native_country) become the category ``"nan"``, as in every other loader.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from adaptable.datasets._base import (
    DataFormatError,
    as_category_strings,
    check_row_count,
    find_file,
    read_csv_checked,
)
from adaptable.datasets._labelled import LabelledTable

NAME = "adult"
TRAIN_FILES = ["extra/adult/adult.data", "adult/adult.data", "adult.data"]
TEST_FILES = ["extra/adult/adult.test", "adult/adult.test", "adult.test"]
OBTAIN = (
    "the UCI Machine Learning Repository page 'Adult' (CC BY 4.0): save adult.data and "
    "adult.test (plain or .gz) under extra/adult/"
)
TRAIN_ROWS = 32_561
TEST_ROWS = 16_281
#: the publisher's column order (adult.names), with '-' written '_'
COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education_num", "marital_status",
    "occupation", "relationship", "race", "sex", "capital_gain", "capital_loss",
    "hours_per_week", "native_country", "income",
]  # fmt: skip
NUMERICAL = ["age", "education_num", "capital_gain", "capital_loss", "hours_per_week"]
CATEGORICAL = [
    "workclass", "marital_status", "occupation", "relationship", "race", "sex", "native_country",
]  # fmt: skip
DROPPED = ["fnlwgt", "education"]
TARGET = "income"
LABELS = ("<=50K", ">50K")


def locate(data_dir: Path) -> list[Path]:
    """Both raw files (raises DataFileError naming the first one missing)."""
    return [find_file(data_dir, NAME, files, OBTAIN) for files in (TRAIN_FILES, TEST_FILES)]


def _read(path: Path, expected_rows: int) -> pd.DataFrame:
    # comment="|" skips adult.test's leading "|1x3 Cross validator" line; no data row holds "|".
    raw = read_csv_checked(
        path, NAME, header=None, names=COLUMNS, skipinitialspace=True, na_values="?",
        comment="|", dtype={c: str for c in CATEGORICAL + ["education", TARGET]},
    )  # fmt: skip
    check_row_count(raw, expected_rows, NAME, path)
    for col in NUMERICAL:
        if not pd.api.types.is_integer_dtype(raw[col]):
            raise DataFormatError(
                f"{path.name} (data set {NAME!r}): column {col!r} must hold whole numbers; "
                f"found {raw[col].dtype} values such as {raw[col].dropna().iloc[:3].tolist()}."
            )
    labels = raw[TARGET].astype(str).str.strip().str.rstrip(".")
    unknown = sorted(set(labels) - set(LABELS))
    if unknown:
        raise DataFormatError(
            f"{path.name} (data set {NAME!r}): the income column must be '<=50K' or '>50K' "
            f"(a trailing '.' allowed); found {unknown[:5]}."
        )
    raw[TARGET] = labels
    return raw


def prepare_adult(data_dir: Path) -> LabelledTable:
    """Every Adult row (adult.data then adult.test) with the features above.

    Raises:
        DataFileError: a file is absent. DataFormatError: wrong row count, columns or labels.
    """
    train_path, test_path = locate(data_dir)
    raw = pd.concat([_read(train_path, TRAIN_ROWS), _read(test_path, TEST_ROWS)], ignore_index=True)
    table = raw[[c for c in COLUMNS if c in NUMERICAL or c in CATEGORICAL]].copy()
    for col in CATEGORICAL:
        table[col] = as_category_strings(table[col].str.strip())
    for col in NUMERICAL:
        table[col] = table[col].astype(np.int64)
    target = (raw[TARGET] == LABELS[1]).to_numpy().astype(np.int64)
    return LabelledTable(
        NAME,
        table,
        target,
        classes=["<=50K", ">50K"],
        sources=[str(train_path), str(test_path)],
        notes=[f"dropped columns: {', '.join(DROPPED)}"],
    )

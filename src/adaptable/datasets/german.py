"""German credit (Statlog, H. Hofmann): good or bad credit risk, a data set the benchmark cuts.

Raw file: ``german.data`` (1,000 rows, 20 attributes + the label, space-separated, no header;
``german.doc`` describes the codes). Categorical attributes keep the publisher's codes as
strings (``A11`` ... ``A202``); names below follow german.doc.

Label: 1 = bad credit risk (the file's class 2, 300 rows), 0 = good (class 1, 700 rows), so
that the positive class is the one a lender looks for.

Features: all 20 attributes; the seven german.doc calls numerical are ``int64``.
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

NAME = "german"
FILES = ["extra/german/german.data", "german/german.data", "german.data"]
OBTAIN = (
    "the UCI Machine Learning Repository page 'Statlog (German Credit Data)' (CC BY 4.0): "
    "save german.data (plain or .gz) under extra/german/"
)
RAW_ROWS = 1_000
#: german.doc's attributes 1-20, then the label
COLUMNS = [
    "checking_status", "duration_months", "credit_history", "purpose", "credit_amount",
    "savings", "employment_since", "installment_rate", "personal_status_sex", "other_debtors",
    "residence_since", "property", "age", "other_installment_plans", "housing",
    "existing_credits", "job", "people_liable", "telephone", "foreign_worker", "risk",
]  # fmt: skip
NUMERICAL = [
    "duration_months", "credit_amount", "installment_rate", "residence_since", "age",
    "existing_credits", "people_liable",
]  # fmt: skip
TARGET = "risk"


def locate(data_dir: Path) -> Path:
    """The raw file (raises DataFileError when absent)."""
    return find_file(data_dir, NAME, FILES, OBTAIN)


def prepare_german(data_dir: Path) -> LabelledTable:
    """Every German credit row with its 20 attributes.

    Raises:
        DataFileError: the file is absent. DataFormatError: wrong column count, row count,
        codes or labels.
    """
    path = locate(data_dir)
    raw = read_csv_checked(path, NAME, sep=" ", header=None, dtype=str)
    if raw.shape[1] != len(COLUMNS):
        raise DataFormatError(
            f"{path.name} (data set {NAME!r}) has {raw.shape[1]} space-separated columns; the "
            f"publisher's file has {len(COLUMNS)} (20 attributes and the class)."
        )
    raw.columns = COLUMNS
    check_row_count(raw, RAW_ROWS, NAME, path)
    labels = raw[TARGET].str.strip()
    if not labels.isin(["1", "2"]).all():
        found = sorted(set(labels.dropna()) - {"1", "2"})[:5]
        raise DataFormatError(
            f"{path.name} (data set {NAME!r}): the class (last column) must be 1 (good) or 2 "
            f"(bad); found {found or 'missing values'}."
        )
    table = raw[COLUMNS[:-1]].copy()
    for col in table.columns:
        if col in NUMERICAL:
            values = pd.to_numeric(table[col], errors="coerce")
            if values.isna().any():
                raise DataFormatError(
                    f"{path.name} (data set {NAME!r}): attribute {col!r} must be a whole number "
                    "in every row."
                )
            table[col] = values.astype(np.int64)
        else:
            codes = table[col].str.strip()
            is_code = codes.str.fullmatch(r"A\d+").fillna(False).astype(bool)
            if not is_code.all():
                raise DataFormatError(
                    f"{path.name} (data set {NAME!r}): attribute {col!r} must hold codes like "
                    f"'A11'; found {sorted(set(codes[~is_code].astype(str)))[:3]}."
                )
            table[col] = as_category_strings(codes)
    return LabelledTable(
        NAME,
        table,
        (labels == "2").to_numpy().astype(np.int64),
        classes=["good", "bad"],
        sources=[str(path)],
    )

"""COMPAS (ProPublica, Broward County FL): two-year recidivism, a data set the benchmark cuts.

Raw file: ``compas-scores-two-years.csv`` (7,214 rows x 53 columns, ProPublica's
compas-analysis repository). Rows are filtered as ProPublica's analysis does (6,172 remain):
the COMPAS screening within 30 days of the arrest (``-30 <= days_b_screening_arrest <= 30``),
a known recidivism outcome (``is_recid != -1``), no ordinary traffic offence
(``c_charge_degree != "O"``) and a COMPAS score present (``score_text != "N/A"``).

Label: ``two_year_recid`` (1 = a new charge within two years).

Features, ProPublica's usual set: ``sex``, ``age``, ``race``, ``juv_fel_count``,
``juv_misd_count``, ``juv_other_count``, ``priors_count``, ``c_charge_degree`` (``F`` felony /
``M`` misdemeanour). Left out on purpose: the COMPAS scores themselves (``decile_score``,
``score_text``, ``v_*``: the tool under study, not the person) and every column written after
the screening (``is_recid``, ``r_*``, ``vr_*``, ``violent_recid``, ``is_violent_recid``,
``event``, ``start``, ``end``, custody dates), which encode the label; names, ids and dates.
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
    require_columns,
)
from adaptable.datasets._labelled import LabelledTable

NAME = "compas"
FILES = [
    "extra/compas/compas-scores-two-years.csv",
    "compas/compas-scores-two-years.csv",
    "compas-scores-two-years.csv",
]
OBTAIN = (
    "ProPublica's compas-analysis repository on GitHub (compas-scores-two-years.csv); save it "
    "(plain or .gz) under extra/compas/"
)
RAW_ROWS = 7_214
TARGET = "two_year_recid"
NUMERICAL = ["age", "juv_fel_count", "juv_misd_count", "juv_other_count", "priors_count"]
CATEGORICAL = ["sex", "race", "c_charge_degree"]
#: table order of the features
FEATURES = [
    "sex", "age", "race", "juv_fel_count", "juv_misd_count", "juv_other_count", "priors_count",
    "c_charge_degree",
]  # fmt: skip
FILTER_COLUMNS = ["days_b_screening_arrest", "is_recid", "score_text"]


def locate(data_dir: Path) -> Path:
    """The raw file (raises DataFileError when absent)."""
    return find_file(data_dir, NAME, FILES, OBTAIN)


def prepare_compas(data_dir: Path) -> LabelledTable:
    """The ProPublica-filtered COMPAS rows with the features above.

    Raises:
        DataFileError: the file is absent. DataFormatError: wrong columns, row count or labels.
    """
    path = locate(data_dir)
    # The publisher's file repeats two column names (decile_score, priors_count); pandas
    # renames the second copies "<name>.1", and the first ones are the ones used here.
    raw = read_csv_checked(path, NAME, low_memory=False)
    require_columns(raw, [TARGET, *FEATURES, *FILTER_COLUMNS], NAME, path)
    check_row_count(raw, RAW_ROWS, NAME, path)
    days = pd.to_numeric(raw["days_b_screening_arrest"], errors="coerce")
    keep = (
        days.between(-30, 30)
        & (pd.to_numeric(raw["is_recid"], errors="coerce") != -1)
        & (raw["c_charge_degree"].astype(str) != "O")
        & (raw["score_text"].astype(str) != "N/A")
        & raw["score_text"].notna()
    ).to_numpy()
    raw = raw[keep].reset_index(drop=True)
    labels = pd.to_numeric(raw[TARGET], errors="coerce")
    if not labels.isin([0, 1]).all():
        raise DataFormatError(
            f"{path.name} (data set {NAME!r}): {TARGET} must be 0 or 1; found "
            f"{sorted(set(labels.dropna().tolist()) - {0, 1})[:5] or 'missing values'}."
        )
    table = raw[FEATURES].copy()
    for col in NUMERICAL:
        values = pd.to_numeric(table[col], errors="coerce")
        if values.isna().any():
            raise DataFormatError(
                f"{path.name} (data set {NAME!r}): column {col!r} must be numeric without gaps."
            )
        table[col] = values.astype(np.int64)
    for col in CATEGORICAL:
        table[col] = as_category_strings(table[col])
    return LabelledTable(
        NAME,
        table,
        labels.to_numpy().astype(np.int64),
        classes=["no recidivism", "recidivism"],
        sources=[str(path)],
        notes=["ProPublica's row filters; no COMPAS score and no post-screening column"],
    )

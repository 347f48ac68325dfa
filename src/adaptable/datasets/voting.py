"""Voting (ANES Time Series Cumulative Data File): turnout; shift to the South (datasets.md 3.2).

The raw file is the ANES CSV release of 16 Sep 2022, ``anes_timeseries_cdf_csv_20220916.csv``
(plain or ``.gz``), or the zip ANES ships it in.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

from adaptable.datasets._base import (
    DataFileError,
    DataFormatError,
    PreparedTable,
    ShiftDataset,
    as_category_strings,
    as_declared_int,
    find_file,
    narrow_numerics,
    read_csv_checked,
    require_columns,
    require_numbers,
)

TASK = "voting"
STEM = "anes_timeseries_cdf_csv_20220916"
CSV_FILES = [f"anes/{STEM}.csv", f"{STEM}/{STEM}.csv", f"{STEM}.csv"]
ZIP_FILES = [f"anes/{STEM}.zip", f"{STEM}.zip", f"{STEM}/{STEM}.zip"]
OBTAIN = (
    "the American National Election Studies Data Center page 'Time Series Cumulative Data File "
    "(1948-2020)', CSV release of 16 Sep 2022 (free registration; accept the ANES terms of use); "
    f"place {STEM}.csv (or the zip) under anes/"
)
TARGET = "VCF0702"  # did the respondent vote in the national elections: 2 = yes
VOTED = 2
SPLIT_COLUMN = "VCF0112"  # Census region
SOUTH = 3
NUMERICAL = ["VCF0004", "VCF0101", "VCF0218", "VCF0224", "VCF0428", "VCF0429"]
# Numeric NA codes that become NaN (AdapTable later fills numerical NaN with 0).
NA_CODES = {"VCF0428": (98, 99), "VCF0429": (98, 99)}
GROUPERS = {"VCF0104": 1, "VCF0105a": 1}  # gender male, race white non-Hispanic -> 1
CATEGORICAL = [
    "VCF0901b", "VCF0301", "VCF0302", "VCF9008", "VCF9010", "VCF9011", "VCF9201", "VCF9202",
    "VCF9203", "VCF9204", "VCF9205", "VCF9206", "VCF0521", "VCF0523", "VCF0875", "VCF9052",
    "VCF0809", "VCF0839", "VCF0822", "VCF0870", "VCF0843", "VCF9045", "VCF0838", "VCF9239",
    "VCF0803", "VCF0846", "VCF0601", "VCF0606", "VCF0612", "VCF0615", "VCF0616", "VCF0617",
    "VCF0310", "VCF0743", "VCF0717", "VCF0718", "VCF0720", "VCF0721", "VCF0701", "VCF0675",
    "VCF0724", "VCF0725", "VCF0726", "VCF0745", "VCF0115", "VCF0140a",
]  # fmt: skip
MISSING_LEVEL = "no answer"
FEATURES = [*NUMERICAL, *GROUPERS, *CATEGORICAL]
REQUIRED = [TARGET, SPLIT_COLUMN, *FEATURES]
# Read exactly as TableShift does: a lone space is missing too, besides pandas' NA strings.
READ_OPTIONS: dict[str, object] = {"na_values": [" "], "keep_default_na": True, "low_memory": False}


def locate(data_dir: Path) -> Path:
    """The ANES CSV (plain or .gz) or the zip it ships in."""
    try:
        return find_file(data_dir, TASK, CSV_FILES, OBTAIN)
    except DataFileError as err:
        for rel in ZIP_FILES:
            if (data_dir / rel).is_file():
                return data_dir / rel
        raise err


def _csv_bytes_from_zip(path: Path) -> bytes:
    """The CSV member of the ANES zip."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = [n for n in archive.namelist() if n.lower().endswith(".csv")]
            if not members:
                raise DataFormatError(f"{path.name} (task {TASK!r}) holds no CSV file.")
            member = next((n for n in members if STEM in n), members[0])
            return archive.read(member)
    except (zipfile.BadZipFile, EOFError, OSError) as err:
        raise DataFormatError(
            f"{path} (task {TASK!r}) is not a readable zip archive: {err}"
        ) from err


def _read(path: Path) -> pd.DataFrame:
    """The needed columns of the CSV; the header is checked first so errors name what is missing."""
    data = _csv_bytes_from_zip(path) if path.suffix.lower() == ".zip" else None

    def source() -> object:
        return path if data is None else io.BytesIO(data)

    header = read_csv_checked(source(), TASK, nrows=0)  # type: ignore[arg-type]
    require_columns(header, REQUIRED, TASK, path)
    wanted = set(REQUIRED)
    return read_csv_checked(
        source(),  # type: ignore[arg-type]
        TASK,
        usecols=lambda c: c in wanted,
        **READ_OPTIONS,
    )


def prepare_voting(data_dir: Path) -> PreparedTable:
    """Voting as AdapTable uses it: in-domain Northeast / North Central / West, test South.

    Args:
        data_dir: the data directory holding the ANES CSV (see :data:`CSV_FILES`).
    """
    path = locate(data_dir)
    raw = _read(path)
    # ANES codes these as numbers, blanks allowed; a word in one would silently become a blank
    # below (and a row with a worded region would go in-domain).
    coded = [TARGET, SPLIT_COLUMN, *NUMERICAL, *GROUPERS]
    require_numbers(raw, coded, TASK, path, missing_ok=True, whole=True)
    # Row filter: only a missing target drops a row (no year filter; dropna is disabled).
    raw = raw[raw[TARGET].notna()].reset_index(drop=True)
    if len(raw) == 0:
        raise DataFormatError(f"{path.name} (task {TASK!r}) has no row with a {TARGET} value.")
    target = (pd.to_numeric(raw[TARGET], errors="coerce") == VOTED).to_numpy().astype(np.int64)
    # Compare region codes numerically ("3" vs "3.0" depends on how the column parsed).
    south = (pd.to_numeric(raw[SPLIT_COLUMN], errors="coerce") == SOUTH).to_numpy()

    table = raw[[c for c in raw.columns if c in FEATURES]].copy()
    # Categorical preparation, before the float32 step: missing -> "no answer", then str().
    # A column without blanks parsed as int gives "1"; one with blanks gives "1.0".
    for col in CATEGORICAL:
        values = table[col].astype(object)
        table[col] = as_category_strings(values.where(table[col].notna(), MISSING_LEVEL))
    table = narrow_numerics(table)
    for col in NUMERICAL:
        values = table[col]
        for code in NA_CODES.get(col, ()):
            values = values.mask(values == code)
        table[col] = as_declared_int(values)
    for col, privileged in GROUPERS.items():
        codes = pd.to_numeric(raw[col], errors="coerce")
        table[col] = (codes == privileged).to_numpy().astype(np.int64)
    return PreparedTable(
        TASK,
        table,
        target,
        ood_mask=south,
        classes=["did not vote", "voted"],
        domain_split=(
            "Census region Northeast / North Central / West or missing (in-domain: train/valid) "
            "vs South (out-of-domain test)"
        ),
        sources=[str(path)],
    )


def load_voting(data_dir: Path) -> ShiftDataset:
    """The task split as AdapTable uses it (see :func:`prepare_voting`)."""
    return prepare_voting(data_dir).to_dataset()

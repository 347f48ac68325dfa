"""Hospital Readmission (UCI Diabetes 130-US hospitals): shift in admission source
(datasets.md 3.3)."""

from __future__ import annotations

import io
import zipfile
from importlib import resources
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
    check_row_count,
    data_dir_hint,
    find_file,
    narrow_numerics,
    read_csv_checked,
    require_columns,
    require_numbers,
)

TASK = "hospital_readmission"
CSV_FILES = ["diabetes_readmission/diabetic_data.csv", "diabetic_data.csv"]
ZIP_FILES = ["diabetes_readmission/dataset_diabetes.zip", "dataset_diabetes.zip"]
OBTAIN = (
    "the UCI Machine Learning Repository page 'Diabetes 130-US hospitals for years 1999-2008' "
    "(CC BY 4.0); place dataset_diabetes.zip or diabetic_data.csv under diabetes_readmission/"
)
EMBEDDED = "diabetic_data.csv.gz"
RAW_ROWS = 101_766
TARGET = "readmitted"
LABELS = ("NO", "<30", ">30")
SPLIT_COLUMN = "admission_source_id"
EMERGENCY_ROOM = 7
NUMERICAL = [
    "race", "gender", "admission_type_id", "discharge_disposition_id", "time_in_hospital",
    "num_lab_procedures", "num_procedures", "num_medications", "number_outpatient",
    "number_emergency", "number_inpatient", "number_diagnoses",
]  # fmt: skip
CATEGORICAL = [
    "age", "weight", "payer_code", "medical_specialty", "diag_1", "diag_2", "diag_3",
    "max_glu_serum", "A1Cresult", "metformin", "repaglinide", "nateglinide", "chlorpropamide",
    "glimepiride", "acetohexamide", "glipizide", "glyburide", "tolbutamide", "pioglitazone",
    "rosiglitazone", "acarbose", "miglitol", "troglitazone", "tolazamide", "examide",
    "citoglipton", "insulin", "glyburide-metformin", "glipizide-metformin",
    "glimepiride-pioglitazone", "metformin-rosiglitazone", "metformin-pioglitazone", "change",
    "diabetesMed",
]  # fmt: skip


def locate(data_dir: Path | None) -> tuple[object, str]:
    """The raw file to read: the data directory's CSV or zip, else the copy shipped inside."""
    if data_dir is not None:
        try:
            return find_file(data_dir, TASK, CSV_FILES, OBTAIN), "data directory"
        except DataFileError:
            pass
        for rel in ZIP_FILES:
            if (data_dir / rel).is_file():
                return data_dir / rel, "data directory"
    embedded = resources.files("adaptable.datasets") / "data" / EMBEDDED
    if embedded.is_file():
        return embedded, "embedded copy (UCI, CC BY 4.0)"
    raise DataFileError(
        f"Task {TASK!r} needs diabetic_data.csv (plain or .gz) or dataset_diabetes.zip under "
        f"{str(data_dir)!r}; none found. Obtain it from {OBTAIN}. " + data_dir_hint()
    )


def _read(source: object) -> pd.DataFrame:
    na = {"na_values": ["?"], "low_memory": False}
    if isinstance(source, Path) and source.suffix == ".zip":
        try:
            with zipfile.ZipFile(source) as archive:
                member = next(
                    (n for n in archive.namelist() if n.endswith("diabetic_data.csv")), None
                )
                if member is None:
                    raise DataFormatError(f"{source.name} holds no diabetic_data.csv.")
                return read_csv_checked(io.BytesIO(archive.read(member)), TASK, **na)  # type: ignore[arg-type]
        except zipfile.BadZipFile as err:
            raise DataFormatError(f"{source} is not a readable zip archive: {err}") from err
    if not isinstance(source, Path):  # a packaged resource
        with resources.as_file(source) as path:  # type: ignore[arg-type]
            return read_csv_checked(path, TASK, compression="gzip", **na)
    return read_csv_checked(source, TASK, **na)


def load_readmission(data_dir: Path | None) -> ShiftDataset:
    """Hospital Readmission as AdapTable uses it: in-domain admission sources other than the
    Emergency Room, out-of-domain test Emergency Room.

    Args:
        data_dir: the data directory (its ``diabetic_data.csv[.gz]`` or ``dataset_diabetes.zip``
            is preferred); ``None`` or no file there falls back to the embedded copy.
    """
    return prepare_readmission(data_dir).to_dataset()


def prepare_readmission(data_dir: Path | None) -> PreparedTable:
    """Hospital Readmission's whole table before the domain split (see
    :func:`load_readmission`)."""
    source, origin = locate(data_dir)
    raw = _read(source)
    name = Path(str(source))
    require_columns(raw, [TARGET, SPLIT_COLUMN, *NUMERICAL, *CATEGORICAL], TASK, name)
    check_row_count(raw, RAW_ROWS, TASK, name)
    # UCI's file: whole-number ids and counts without gaps, three readmission labels.
    counts = [c for c in NUMERICAL if c not in ("race", "gender")]
    require_numbers(raw, [SPLIT_COLUMN, *counts], TASK, name, whole=True)
    unknown = sorted(set(raw[TARGET].dropna().astype(str)) - set(LABELS)) or (
        ["<missing>"] if raw[TARGET].isna().any() else []
    )
    if unknown:
        raise DataFormatError(
            f"{name.name} (task {TASK!r}): column {TARGET!r} must hold {', '.join(LABELS)}; "
            f"found {unknown[:5]}. The file is not the publisher's (edited or corrupted)."
        )
    raw = raw[raw["race"].notna()].reset_index(drop=True)
    target = (raw[TARGET].astype(str) != "NO").to_numpy().astype(np.int64)
    split_values = raw[SPLIT_COLUMN]

    table = narrow_numerics(raw[[c for c in raw.columns if c in NUMERICAL or c in CATEGORICAL]])
    for col in table.columns:
        if col in CATEGORICAL:
            table[col] = as_category_strings(table[col])
        elif col not in ("race", "gender"):
            table[col] = as_declared_int(table[col])
    # TableShift's Grouper: sensitive attributes become 0/1 numerical features.
    table["race"] = (raw["race"] == "Caucasian").astype(np.int64)
    table["gender"] = (raw["gender"] == "Male").astype(np.int64)
    keep = table[NUMERICAL].notna().all(axis=1).to_numpy()  # dropna rows (removes none here)
    return PreparedTable(
        TASK,
        table[keep],
        target[keep],
        ood_mask=(split_values == EMERGENCY_ROOM).to_numpy()[keep],
        classes=["not readmitted", "readmitted"],
        domain_split=(
            "admission source other than Emergency Room (in-domain) vs Emergency Room "
            "(out-of-domain test)"
        ),
        sources=[f"{name.name} ({origin})"],
    )

"""Diabetes (BRFSS): diagnosed diabetes; shift in race (datasets.md 3.6).

The raw files are CDC's BRFSS annual survey files in SAS transport format, one per year
(2015, 2017, 2019, 2021): ``LLCP<year>XPT.zip`` as CDC ships it (its member ``LLCP<year>.XPT``
carries a trailing space in the name) or the bare ``LLCP<year>.XPT`` (plain or ``.gz``), found by
name, in any letter case, under ``<data_dir>/brfss/`` (any layout) or directly in the data
directory. Every year present is used, in ascending order; the years used are recorded in
``sources`` and ``notes``.
"""

from __future__ import annotations

import re
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
    data_dir_hint,
    narrow_numerics,
    read_xport_checked,
    require_columns,
    require_numbers,
)

TASK = "diabetes"
FOLDER = "brfss"
YEARS = (2015, 2017, 2019, 2021)
OBTAIN = (
    "the CDC Behavioral Risk Factor Surveillance System 'Annual Survey Data' page of each year "
    "(2015, 2017, 2019, 2021), 'SAS Transport Format' download (LLCP<year>XPT.zip); place them "
    "under brfss/"
)
# Year-specific variable names -> the common name (datasets.md 3.6, per-file alignment).
RENAMES: dict[str, tuple[str, ...]] = {
    "FRUIT_ONCE_PER_DAY": ("_FRTLT1", "_FRTLT1A"),
    "VEG_ONCE_PER_DAY": ("_VEGLT1", "_VEGLT1A"),
    "CHOL_CHK_PAST_5_YEARS": ("_CHOLCHK", "_CHOLCH1", "_CHOLCH2", "_CHOLCH3"),
    "DIABETES": ("DIABETE3", "DIABETE4"),
    "DRNK_PER_WEEK": ("_DRNKWEK", "_DRNKWK1"),
    "SEX": ("SEX", "SEXVAR"),
    "MEDCOST": ("MEDCOST", "MEDCOST1"),
    "INCOME": ("INCOME2", "INCOME3"),
    "HIGH_BLOOD_PRESS": ("_RFHYPE5", "_RFHYPE6"),
    "HEALTH_COV": ("_HCVU651", "_HCVU652"),
    "TOLDHI": ("TOLDHI2", "TOLDHI3"),
}
COMMON = [
    "IYEAR", "PHYSHLTH", "MENTHLTH", "_BMI5", "_BMI5CAT", "SMOKE100", "SMOKDAY2", "CVDSTRK3",
    "_MICHD", "_RFBING5", "_TOTINDA", "MARITAL", "CHECKUP1", "EDUCA", "_STATE", "_PRACE1",
]  # fmt: skip
TARGET = "DIABETES"
SPLIT_COLUMN = "PRACE1"
ID_RACE = (1,)  # White
OOD_RACE = (2, 3, 4, 5, 6)  # Black, AIAN, Asian, NHOPI, other
NUMERICAL = ["PHYSHLTH", "MENTHLTH", "BMI5", "DRNK_PER_WEEK", "IYEAR", "SEX"]
CATEGORICAL = [
    "HIGH_BLOOD_PRESS", "CHOL_CHK_PAST_5_YEARS", "TOLDHI", "BMI5CAT", "SMOKE100", "SMOKDAY2",
    "CVDSTRK3", "MICHD", "FRUIT_ONCE_PER_DAY", "VEG_ONCE_PER_DAY", "RFBING5", "TOTINDA",
    "INCOME", "MARITAL", "CHECKUP1", "EDUCA", "HEALTH_COV", "STATE", "MEDCOST",
]  # fmt: skip
# Deliberate difference: TableShift's column order comes from iterating a Python set and so
# changes between runs (datasets.md 8.27); ours is fixed: numerical then categorical as listed.
FEATURES = [*NUMERICAL, *CATEGORICAL]
# Schema step NA codes. On numeric columns they become NaN and the row is dropped; on the
# categorical ones they merge with blanks into the level "nan".
NUMERIC_NA_CODES = {
    "PHYSHLTH": (77, 99), "MENTHLTH": (77, 99), "DRNK_PER_WEEK": (99900,),
    SPLIT_COLUMN: (7, 8, 77, 99),
}  # fmt: skip
CATEGORICAL_NA_CODES = {
    "HIGH_BLOOD_PRESS": (9,), "CHOL_CHK_PAST_5_YEARS": (9,), "SMOKE100": (7, 9),
    "CVDSTRK3": (7, 9), "CHECKUP1": (7, 9), "MEDCOST": (7, 9), "FRUIT_ONCE_PER_DAY": (9,),
    "VEG_ONCE_PER_DAY": (9,), "RFBING5": (9,), "TOTINDA": (9,), "MARITAL": (9,), "EDUCA": (9,),
    "INCOME": (77, 99),
}  # fmt: skip
# Already strings before the schema step, so their 7 / 9 codes stay as levels.
NOT_ASKED = ("SMOKDAY2", "TOLDHI")
NOT_ASKED_LEVEL = "NOTASKED_MISSING"
DRINKS_UNKNOWN = 99900
NONE_DAYS = 88  # PHYSHLTH / MENTHLTH "none"
FEMALE = 1  # SEX after the "code - 1" recode


def _index_files(data_dir: Path) -> dict[int, list[Path]]:
    """Year -> BRFSS files found (zip first, then bare XPT), in path order."""
    pattern = re.compile(r"^llcp(?P<year>\d{4})(?P<kind>xpt\.zip|\.xpt|\.xpt\.gz)$", re.IGNORECASE)
    candidates: list[Path] = []
    if (data_dir / FOLDER).is_dir():
        candidates.extend(sorted((data_dir / FOLDER).rglob("*")))
    if data_dir.is_dir():
        candidates.extend(sorted(data_dir.iterdir()))
    found: dict[int, list[Path]] = {}
    for path in candidates:
        match = pattern.match(path.name)
        if match and int(match["year"]) in YEARS and path.is_file():
            found.setdefault(int(match["year"]), []).append(path)
    for paths in found.values():
        paths.sort(key=lambda p: (not p.name.lower().endswith(".zip"), str(p)))
    return found


def find_year_files(data_dir: Path) -> dict[int, Path]:
    """The file to read for every year present.

    Raises:
        DataFileError: no year's file is present.
    """
    found = _index_files(data_dir)
    if not found:
        raise DataFileError(
            f"Task {TASK!r} needs the BRFSS files LLCP2015XPT.zip, LLCP2017XPT.zip, "
            f"LLCP2019XPT.zip and LLCP2021XPT.zip (or the LLCP<year>.XPT inside them, plain or "
            f".gz) under {str(data_dir / FOLDER)!r}; none found. Obtain them from {OBTAIN}. "
            + data_dir_hint()
        )
    return {year: found[year][0] for year in sorted(found)}


def locate(data_dir: Path) -> list[str]:
    """The files that would be read (for :func:`adaptable.datasets.available`)."""
    return [str(p) for p in find_year_files(data_dir).values()]


def _wanted_columns() -> list[str]:
    return [*COMMON, *(name for names in RENAMES.values() for name in names)]


def _read_year(year: int, path: Path) -> tuple[pd.DataFrame, list[str]]:
    """One year's needed columns, renamed to the common names, IYEAR parsed, CHOL recoded."""
    wanted = _wanted_columns()
    if path.name.lower().endswith(".zip"):
        try:
            with zipfile.ZipFile(path) as archive:
                # CDC's member is "LLCP<year>.XPT " with a trailing space.
                members = [n for n in archive.namelist() if n.strip().lower() == f"llcp{year}.xpt"]
                if not members:
                    raise DataFormatError(
                        f"{path.name} (task {TASK!r}) holds no LLCP{year}.XPT member; it has "
                        f"{archive.namelist()[:5]}."
                    )
                with archive.open(members[0]) as stream:
                    raw = read_xport_checked(stream, TASK, f"{path.name}:{members[0]}", wanted)  # type: ignore[arg-type]
        except (zipfile.BadZipFile, EOFError) as err:
            raise DataFormatError(f"{path} (task {TASK!r}) is not a readable zip: {err}") from err
    else:
        raw = read_xport_checked(path, TASK, path.name, wanted)
    require_columns(raw, COMMON, TASK, path)
    notes: list[str] = []
    renamed: dict[str, pd.Series] = {}
    for common, sources in RENAMES.items():
        present = [s for s in sources if s in raw.columns]
        if not present:
            raise DataFormatError(
                f"{path.name} (task {TASK!r}) has none of {', '.join(sources)} (for {common})."
            )
        if len(present) > 1:
            notes.append(f"{path.name}: several of {present} present; {present[0]} used.")
        renamed[common] = raw[present[0]]
    frame = pd.concat([raw[COMMON], pd.DataFrame(renamed)], axis=1)
    # The target, the split variable and the numerical features are SAS numeric codes in
    # CDC's files (IYEAR is text and parsed below).
    coded = [TARGET, "_PRACE1", "SEX", "PHYSHLTH", "MENTHLTH", "_BMI5", "DRNK_PER_WEEK"]
    require_numbers(frame, coded, TASK, path, missing_ok=True, first_line=None)
    frame["IYEAR"] = _parse_year(frame["IYEAR"], path)
    # The CHOL_CHK recode keys on the interview year (2015 only), not the file year.
    chol = frame["CHOL_CHK_PAST_5_YEARS"]
    shift = (frame["IYEAR"] == 2015) & chol.between(1, 4)
    frame["CHOL_CHK_PAST_5_YEARS"] = chol.where(~shift, chol + 1)
    return frame, notes


def _parse_year(values: pd.Series, path: Path) -> pd.Series:
    """IYEAR is text such as ``"2015"`` in CDC's files; keep its digits as a number."""
    if pd.api.types.is_numeric_dtype(values):
        return values.astype(np.float64)
    text = values.map(lambda v: v.decode("latin-1") if isinstance(v, bytes) else v)
    digits = text.astype(object).where(text.notna(), "").astype(str).str.extract(r"(\d+)")[0]
    parsed = pd.to_numeric(digits, errors="coerce")
    if parsed.notna().sum() == 0 and len(values):
        raise DataFormatError(
            f"{path.name} (task {TASK!r}): IYEAR holds no year ({values.iloc[0]!r})."
        )
    return parsed.astype(np.float64)


def prepare_diabetes(data_dir: Path) -> PreparedTable:
    """Diabetes as AdapTable uses it: in-domain White respondents, out-of-domain the others.

    Args:
        data_dir: the data directory; BRFSS files are searched under ``data_dir/brfss`` and
            in ``data_dir`` itself.
    """
    # Deliberate difference: TableShift downloads all four years; we read the years present
    # (at least one) and say in ``notes`` which are missing, rather than refuse to load.
    files = find_year_files(data_dir)
    frames, notes = [], []
    for year, path in files.items():  # stacked in 2015, 2017, 2019, 2021 order
        frame, year_notes = _read_year(year, path)
        frames.append(frame)
        notes.extend(year_notes)
    raw = pd.concat(frames, ignore_index=True)

    # Shared preparation (datasets.md 3.6), in TableShift's order.
    raw["SEX"] = raw["SEX"] - 1
    for col in ("PHYSHLTH", "MENTHLTH"):
        raw[col] = raw[col].mask(raw[col] == NONE_DAYS, 0.0)
    raw = raw[raw["DRNK_PER_WEEK"] != DRINKS_UNKNOWN]
    for col in NOT_ASKED:
        values = raw[col].astype(object).where(raw[col].notna(), NOT_ASKED_LEVEL)
        raw[col] = as_category_strings(values)
    raw = raw.rename(columns=lambda c: c.lstrip("_"))
    # Target: 1 = yes; 2 (pregnancy only), 3 (no), 4 (pre-diabetes) = 0; 7, 9, blank dropped.
    # Done explicitly: TableShift's in-place replace is a no-op under Copy-on-Write.
    code = raw[TARGET]
    raw = raw[code.isin([1, 2, 3, 4])].reset_index(drop=True)
    target = (raw[TARGET] == 1).to_numpy().astype(np.int64)

    table = narrow_numerics(raw[[*FEATURES, SPLIT_COLUMN]])
    # Schema step: NA codes, then the declared kinds.
    for col, codes in NUMERIC_NA_CODES.items():
        table[col] = table[col].mask(table[col].isin(codes))
    for col in CATEGORICAL:
        values = table[col]
        if col not in NOT_ASKED:
            values = values.mask(values.isin(CATEGORICAL_NA_CODES.get(col, ())))
        table[col] = as_category_strings(values)
    for col in ("PHYSHLTH", "MENTHLTH", "BMI5", "DRNK_PER_WEEK", SPLIT_COLUMN):
        table[col] = table[col].astype(np.float64)
    table["IYEAR"] = as_declared_int(table["IYEAR"])
    table["SEX"] = as_declared_int(table["SEX"])
    # dropna rows: only numerical columns can still hold NaN.
    keep = table[[*NUMERICAL, SPLIT_COLUMN]].notna().all(axis=1).to_numpy()
    table, target = table[keep].reset_index(drop=True), target[keep]
    race = table[SPLIT_COLUMN].to_numpy()
    table["SEX"] = (table["SEX"] == FEMALE).astype(np.int64)  # Grouper: female = 1

    years = ", ".join(str(y) for y in files)
    notes.insert(0, f"BRFSS years used: {years} ({len(table):,} respondents after filters).")
    missing = [y for y in YEARS if y not in files]
    if missing:
        notes.append(
            f"The paper's task stacks BRFSS {', '.join(map(str, YEARS))} (1,444,176 "
            f"respondents); missing here: {', '.join(map(str, missing))}, so sizes and class "
            "balance differ from the paper."
        )
    return PreparedTable(
        TASK,
        table[FEATURES],
        target,
        ood_mask=np.isin(race, OOD_RACE),
        id_mask=np.isin(race, ID_RACE),
        classes=["no diabetes", "diabetes"],
        domain_split=(
            "preferred race White (in-domain: train/valid) vs Black, American Indian / Alaska "
            f"Native, Asian, Native Hawaiian / Pacific Islander, other (out-of-domain test); "
            f"BRFSS {years}"
        ),
        sources=[str(p) for p in files.values()],
        notes=notes,
    )


def load_diabetes(data_dir: Path) -> ShiftDataset:
    """The task split as AdapTable uses it (see :func:`prepare_diabetes`)."""
    return prepare_diabetes(data_dir).to_dataset()

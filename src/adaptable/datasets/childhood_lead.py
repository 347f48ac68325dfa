"""Childhood Lead (NHANES): blood lead in children; shift in family income (datasets.md 3.5).

The raw files are CDC's per-cycle SAS transport files: a demographics file (``DEMO_J.XPT``) and a
blood-lead laboratory file (``PBCD_J.XPT``) per two-year cycle. They are found by name anywhere
under ``<data_dir>/nhanes/`` (any sub-folder layout, any letter case, plain or ``.gz``). Every
cycle whose files are all present is used, in ascending cycle order; the ones used are recorded in
the dataset's ``sources`` and ``notes``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from adaptable.datasets._base import (
    DataFileError,
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

TASK = "childhood_lead"
FOLDER = "nhanes"
OBTAIN = (
    "the CDC/NCHS NHANES website, each cycle's 'Demographics Data' page (DEMO file) and "
    "'Laboratory Data' page (blood lead file), SAS transport format; place them anywhere under "
    "nhanes/ in the data directory"
)
# Cycle start year -> (demographics file, blood-lead lab files), as TableShift fetches them.
# Deliberate difference: TableShift also fetches DBQ_* / INQ_* questionnaires and outer-joins
# them, but uses none of their columns; we do not require them.
CYCLES: dict[int, tuple[str, tuple[str, ...]]] = {
    1999: ("DEMO", ("LAB06",)),
    2001: ("DEMO_B", ("L06_B", "L06_2_B")),
    2003: ("DEMO_C", ("L06BMT_C",)),
    2005: ("DEMO_D", ("PBCD_D",)),
    2007: ("DEMO_E", ("PBCD_E",)),
    2009: ("DEMO_F", ("PBCD_F",)),
    2011: ("DEMO_G", ("PBCD_G",)),
    2013: ("DEMO_H", ("PBCD_H",)),
    2015: ("DEMO_I", ("PBCD_I",)),
    2017: ("DEMO_J", ("PBCD_J",)),
}
ID_COLUMN = "SEQN"
LEAD = "LBXBPB"  # blood lead, ug/dL
INCOME_RATIO = "INDFMPIR"  # family income to poverty ratio
AGE = "RIDAGEYR"
DEMO_REQUIRED = [ID_COLUMN, "RIAGENDR", AGE, "RIDRETH1", INCOME_RATIO]
LAB_REQUIRED = [ID_COLUMN, LEAD]
DEMO_OPTIONAL = ["RIDRETH3", "DMDBORN4", "DMDEDUC2", "DMDMARTL"]
CATEGORICAL = ["DMDBORN4", "DMDEDUC2", "DMDMARTL"]
# Feature order of the task table. Deliberate difference: TableShift's order follows the
# file-system listing of its cache folder, which is not reproducible (datasets.md 8.3, 8.27).
FEATURES = ["RIAGENDR", AGE, "DMDBORN4", "DMDEDUC2", "DMDMARTL", "nhanes_year", "RIDRETH_merged"]
LEAD_REFERENCE_VALUE = 3.5  # CDC blood lead reference value, ug/dL; >= is positive
INCOME_CUTOFF = 1.3  # PIR <= 1.3 is the out-of-domain (low-income) side
MAX_AGE = 18
MALE = 1  # RIAGENDR code
NON_HISPANIC_WHITE = 3  # RIDRETH1 and RIDRETH3 code
PAPER_CYCLES = (1999, 2003, 2005, 2007, 2009, 2011, 2013, 2015, 2017)


@dataclass(frozen=True)
class Cycle:
    """One NHANES cycle whose demographics and blood-lead files were found."""

    year: int
    demo: Path
    labs: tuple[Path, ...]

    @property
    def label(self) -> str:
        """The cycle as NHANES names it, e.g. ``"2017-2018"``."""
        return f"{self.year}-{self.year + 1}"


def _index_files(root: Path) -> dict[str, list[Path]]:
    """CDC file stem (upper case) -> matching files under ``root``, in sorted path order."""
    pattern = re.compile(r"^(?P<stem>[A-Za-z0-9_]+)\.xpt(\.gz)?$", re.IGNORECASE)
    found: dict[str, list[Path]] = {}
    for path in sorted(root.rglob("*")):
        match = pattern.match(path.name)
        if match and path.is_file():
            found.setdefault(match["stem"].upper(), []).append(path)
    return found


def find_cycles(data_dir: Path) -> tuple[list[Cycle], list[str]]:
    """Cycles whose files are all present under ``data_dir/nhanes``, and notes on the rest.

    Raises:
        DataFileError: no cycle has both its demographics and its blood-lead file.
    """
    root = data_dir / FOLDER
    files = _index_files(root) if root.is_dir() else {}
    cycles: list[Cycle] = []
    notes: list[str] = []
    for year, (demo, labs) in CYCLES.items():
        present = [name for name in (demo, *labs) if name in files]
        if not present:
            continue
        missing = [name for name in (demo, *labs) if name not in files]
        if missing:
            notes.append(
                f"NHANES {year}-{year + 1} not used: found {', '.join(present)} but not "
                f"{', '.join(missing)}."
            )
            continue
        for name in (demo, *labs):
            if len(files[name]) > 1:
                notes.append(
                    f"{name}: several copies under {FOLDER}/; using {files[name][0]} "
                    f"(first in path order)."
                )
        cycles.append(Cycle(year, files[demo][0], tuple(files[lab][0] for lab in labs)))
    if not cycles:
        seen = ", ".join(sorted(files)) or "no .XPT files"
        raise DataFileError(
            f"Task {TASK!r} needs, for at least one NHANES cycle, the demographics file and the "
            f"blood-lead laboratory file (for 2017-2018: DEMO_J.XPT and PBCD_J.XPT; plain or .gz, "
            f"any letter case, any folder layout) under {str(root)!r}. Found there: {seen}. "
            f"Obtain them from {OBTAIN}. " + data_dir_hint()
        )
    return cycles, notes


def locate(data_dir: Path) -> list[str]:
    """The usable cycles (for :func:`adaptable.datasets.available`)."""
    cycles, _ = find_cycles(data_dir)
    return [f"{c.label}: {c.demo.name} + {', '.join(p.name for p in c.labs)}" for c in cycles]


def _read_cycle(cycle: Cycle) -> tuple[pd.DataFrame | None, str | None]:
    """One cycle's files joined on SEQN, or ``None`` and the reason it is skipped."""
    demo = read_xport_checked(cycle.demo, TASK, cycle.demo.name)
    require_columns(demo, DEMO_REQUIRED, TASK, cycle.demo)
    # CDC stores these as SAS numeric variables; the respondent id is never blank.
    require_numbers(demo, [ID_COLUMN], TASK, cycle.demo, first_line=None)
    require_numbers(demo, DEMO_REQUIRED, TASK, cycle.demo, missing_ok=True, first_line=None)
    tables = [demo]
    for lab_path in cycle.labs:
        lab = read_xport_checked(lab_path, TASK, lab_path.name)
        require_columns(lab, LAB_REQUIRED, TASK, lab_path)
        require_numbers(lab, [ID_COLUMN], TASK, lab_path, first_line=None)
        require_numbers(lab, LAB_REQUIRED, TASK, lab_path, missing_ok=True, first_line=None)
        tables.append(lab)
    # TableShift joins a cycle's files with an integrity check and silently skips the whole
    # cycle when two files share a column other than SEQN (this very probably drops 2001-02,
    # whose two lead files both hold LBXBPB; datasets.md 3.5). Reproduced here, but reported.
    seen: set[str] = set()
    for table, path in zip(tables, (cycle.demo, *cycle.labs), strict=True):
        shared = (set(table.columns) - {ID_COLUMN}) & seen
        if shared:
            return None, (
                f"NHANES {cycle.label} skipped as TableShift does: {path.name} repeats "
                f"column(s) {', '.join(sorted(shared))} of another file of the cycle."
            )
        seen |= set(table.columns) - {ID_COLUMN}
    joined = demo[[c for c in demo.columns if c in DEMO_REQUIRED or c in DEMO_OPTIONAL]]
    for lab in tables[1:]:
        joined = joined.merge(lab[[ID_COLUMN, LEAD]], on=ID_COLUMN, how="outer")
    joined = joined.sort_values(ID_COLUMN, kind="stable").reset_index(drop=True)
    joined["nhanes_year"] = cycle.year
    return joined, None


def prepare_childhood_lead(data_dir: Path) -> PreparedTable:
    """Childhood Lead as AdapTable uses it: in-domain PIR > 1.3, out-of-domain PIR <= 1.3.

    Args:
        data_dir: the data directory; the CDC files are searched under ``data_dir/nhanes``.

    Returns:
        The task; ``sources`` lists the files read, ``notes`` the cycles used and skipped.
    """
    # Deliberate difference: TableShift downloads every cycle; we use the cycles whose files are
    # present (the 2017-18 pair alone still splits) and record which in ``notes``.
    cycles, notes = find_cycles(data_dir)
    frames: list[pd.DataFrame] = []
    used: list[Cycle] = []
    for cycle in cycles:  # ascending cycle order (datasets.md 8.3)
        frame, skipped = _read_cycle(cycle)
        if frame is None:
            notes.append(str(skipped))
            continue
        frames.append(frame)
        used.append(cycle)
    if not frames:
        raise DataFileError(
            f"Task {TASK!r}: no usable NHANES cycle under {str(data_dir / FOLDER)!r} "
            f"({'; '.join(notes)}). Obtain the files from {OBTAIN}. " + data_dir_hint()
        )
    raw = pd.concat(frames, ignore_index=True)
    for col in DEMO_OPTIONAL:  # absent from early cycles (RIDRETH3, DMDBORN4 from 2011)
        if col not in raw.columns:
            raw[col] = np.nan

    # Row filters, then target and split indicator on the float64 values as read.
    keep = raw[LEAD].notna() & raw[INCOME_RATIO].notna() & raw[AGE].notna()
    raw = raw[keep & (raw[AGE] <= MAX_AGE)].reset_index(drop=True)
    target = (raw[LEAD] >= LEAD_REFERENCE_VALUE).to_numpy().astype(np.int64)
    low_income = (raw[INCOME_RATIO] <= INCOME_CUTOFF).to_numpy()

    # RIDRETH3 (2011+) where present, else RIDRETH1; both code non-Hispanic white as 3.
    race = raw["RIDRETH3"].where(raw["RIDRETH3"].notna(), raw["RIDRETH1"])
    table = pd.DataFrame(
        {
            "RIAGENDR": raw["RIAGENDR"],
            AGE: raw[AGE],
            # Categorical preparation: missing -> "MISSING", then str() ("1.0"); the declared
            # NA codes 77 / 99 have no effect in TableShift, so they stay as levels.
            **{c: as_category_strings(raw[c].astype(object).where(raw[c].notna(), "MISSING"))
               for c in CATEGORICAL},
            "nhanes_year": raw["nhanes_year"],
        }
    )  # fmt: skip
    table = narrow_numerics(table)
    table[AGE] = as_declared_int(table[AGE])
    table["nhanes_year"] = as_declared_int(table["nhanes_year"])
    # Grouper: sensitive attributes become 0/1 numerical features (compared on numeric codes).
    table["RIAGENDR"] = (pd.to_numeric(raw["RIAGENDR"]) == MALE).astype(np.int64)
    table["RIDRETH_merged"] = (pd.to_numeric(race) == NON_HISPANIC_WHITE).astype(np.int64)
    table = table[FEATURES]

    labels = ", ".join(c.label for c in used)
    notes.insert(0, f"NHANES cycles used: {labels} ({len(raw):,} children aged <= {MAX_AGE}).")
    missing = [y for y in PAPER_CYCLES if y not in {c.year for c in used}]
    if missing:
        notes.append(
            "The paper's task stacks cycles "
            f"{', '.join(f'{y}-{y + 1}' for y in PAPER_CYCLES)} (27,499 children); "
            f"missing here: {', '.join(f'{y}-{y + 1}' for y in missing)}, so sizes and class "
            "balance differ from the paper."
        )
    return PreparedTable(
        TASK,
        table,
        target,
        ood_mask=low_income,
        classes=["blood lead < 3.5 ug/dL", "blood lead >= 3.5 ug/dL"],
        domain_split=(
            "family income-to-poverty ratio > 1.3 (in-domain: train/valid) vs <= 1.3 "
            f"(out-of-domain test); NHANES cycles {labels}"
        ),
        sources=[str(p) for c in used for p in (c.demo, *c.labs)],
        notes=notes,
    )


def load_childhood_lead(data_dir: Path) -> ShiftDataset:
    """The task split as AdapTable uses it (see :func:`prepare_childhood_lead`)."""
    return prepare_childhood_lead(data_dir).to_dataset()

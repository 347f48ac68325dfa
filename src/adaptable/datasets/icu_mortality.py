"""ICU Mortality (MIMIC-III via MIMIC-Extract): in-hospital death; shift in insurance
(datasets.md 3.4).

The raw file is MIMIC-Extract's ``all_hourly_data.h5`` (tables ``patients`` and
``vitals_labs``). Reading it needs PyTables (``pip install "adaptable-tta[mimic]"`` or
``pip install tables``).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np
import pandas as pd

from adaptable.datasets._base import (
    DataFileError,
    DataFormatError,
    PreparedTable,
    ShiftDataset,
    as_category_strings,
    data_dir_hint,
    require_columns,
    require_numbers,
)

TASK = "icu_mortality"
FILE = "all_hourly_data.h5"
FILES = [f"mimic_extract/{FILE}", f"mimic/{FILE}", f"icu_mortality/{FILE}", FILE]
OBTAIN = (
    "PhysioNet (credentialed access: CITI training and the MIMIC-III data-use agreement), then "
    "either the MIMIC-Extract authors' pre-built all_hourly_data.h5 or your own run of the "
    "MLforHealth 'MIMIC_Extract' pipeline on MIMIC-III v1.4; place it under mimic_extract/"
)
ID_LEVELS = ["subject_id", "hadm_id", "icustay_id"]
HOUR_LEVEL = "hours_in"
TARGET = "mort_hosp"
SPLIT_COLUMN = "insurance"
ID_INSURANCE = ("Private", "Government", "Self Pay")
OOD_INSURANCE = ("Medicare", "Medicaid")
STATICS = ["gender", "age", "ethnicity"]
PATIENT_COLUMNS = [TARGET, "max_hours", SPLIT_COLUMN, *STATICS]
WINDOW_HOURS = 24  # first 24 h of the stay are the features
GAP_HOURS = 6  # stays must last longer than window + gap
TSM_FILL = 100  # time_since_measured before any measurement
AGGREGATES = ("mask", "mean", "time_since_measured")
# TableShift deletes these characters from column names (after spaces become underscores).
_NAME_DELETE = re.compile(r'[\[\]{}.:<>/,"]')

# Appendix A of datasets.md: `mean` variables TableShift declares integer (cast by truncation).
MEAN_INTEGER_ALL_HOURS = frozenset(
    """alanine_aminotransferase albumin_ascites albumin_pleural albumin_urine alkaline_phosphate
    asparate_aminotransferase calcium_urine chloride_urine cholesterol cholesterol_hdl
    cholesterol_ldl creatinine_ascites creatinine_body_fluid creatinine_pleural creatinine_urine
    eosinophils fraction_inspired_oxygen height lactate_dehydrogenase lactate_dehydrogenase_pleural
    lymphocytes_ascites lymphocytes_atypical lymphocytes_atypical_csl lymphocytes_body_fluid
    lymphocytes_percent lymphocytes_pleural monocytes_csl positive_end-expiratory_pressure_set
    potassium_serum red_blood_cell_count_ascites red_blood_cell_count_csf
    red_blood_cell_count_pleural red_blood_cell_count_urine total_protein total_protein_urine
    troponin-i venous_pvo2 white_blood_cell_count_urine""".split()
)


def _hours(*spans: int | tuple[int, int]) -> frozenset[int]:
    out: set[int] = set()
    for span in spans:
        lo, hi = span if isinstance(span, tuple) else (span, span)
        out.update(range(lo, hi + 1))
    return frozenset(out)


MEAN_INTEGER_HOURS: dict[str, frozenset[int]] = {
    "anion_gap": _hours((7, 23)),
    "bicarbonate": _hours((6, 23)),
    "blood_urea_nitrogen": _hours((7, 23)),
    "central_venous_pressure": _hours(23),
    "chloride": _hours((7, 23)),
    "co2": _hours((3, 23)),
    "diastolic_blood_pressure": _hours(12, 14, 20),
    "glascow_coma_scale_total": _hours((11, 23)),
    "glucose": _hours((16, 22)),
    "heart_rate": _hours(13),
    "mean_corpuscular_volume": _hours((7, 23)),
    "oxygen_saturation": _hours(23),
    "partial_pressure_of_carbon_dioxide": _hours((17, 19)),
    "partial_pressure_of_oxygen": _hours((17, 23)),
    "peak_inspiratory_pressure": _hours((19, 23)),
    "platelets": _hours((7, 23)),
    "positive_end-expiratory_pressure": _hours((4, 23)),
    "pulmonary_artery_pressure_mean": _hours(17, 19, 20, 23),
    "pulmonary_artery_pressure_systolic": _hours(23),
    "pulmonary_capillary_wedge_pressure": _hours(13, 14, (17, 23)),
    "respiratory_rate_set": _hours((3, 23)),
    "sodium": _hours((2, 23)),
    "tidal_volume_observed": _hours((3, 23)),
    "tidal_volume_set": _hours((2, 23)),
    "tidal_volume_spontaneous": _hours((7, 23)),
}
N_VARIABLES = 104  # MIMIC-Extract's level-2 variables in the canonical file


def clean_name(name: str) -> str:
    """TableShift's column renaming: spaces -> ``_``, then ``[ ] { } . : < > / , "`` deleted.

    Example:
        >>> clean_name("co2 (etco2, pco2, etc.)")
        'co2_(etco2_pco2_etc)'
    """
    return _NAME_DELETE.sub("", str(name).replace(" ", "_"))


def is_integer_kind(variable: str, aggregate: str, hour: int) -> bool:
    """Whether TableShift declares column ``<variable>_<aggregate>_<hour>`` integer."""
    if aggregate != "mean":
        return True  # every mask_* and time_since_measured_* column
    return variable in MEAN_INTEGER_ALL_HOURS or hour in MEAN_INTEGER_HOURS.get(variable, ())


def locate(data_dir: Path) -> Path:
    """Path of ``all_hourly_data.h5`` under the data directory."""
    for rel in FILES:
        if (data_dir / rel).is_file():
            return data_dir / rel
        if (data_dir / (rel + ".gz")).is_file():
            raise DataFormatError(
                f"{data_dir / (rel + '.gz')} is gzip-compressed; HDF5 files must be read "
                f"uncompressed. Run `gunzip` on it first (task {TASK!r})."
            )
    raise DataFileError(
        f"Task {TASK!r} needs the raw file {FILE!r} (MIMIC-Extract output) under the data "
        f"directory {str(data_dir)!r}, e.g. as {FILES[0]!r}, and it is not there. Obtain it "
        f"from {OBTAIN}. " + data_dir_hint()
    )


def _require_pytables() -> None:
    if importlib.util.find_spec("tables") is None:
        raise ImportError(
            f"Task {TASK!r} reads {FILE} (HDF5), which needs PyTables. Install it with "
            '`pip install "adaptable-tta[mimic]"` (or `pip install tables`).'
        )


def _read_table(path: Path, key: str) -> pd.DataFrame:
    try:
        table = pd.read_hdf(path, key)
    except KeyError as err:
        raise DataFormatError(
            f"{path.name} (task {TASK!r}) has no table {key!r}; expected MIMIC-Extract's "
            "all_hourly_data.h5 with tables 'patients' and 'vitals_labs'."
        ) from err
    except ImportError:
        raise
    except Exception as err:  # PyTables raises its own HDF5 error types on corrupt files
        raise DataFormatError(
            f"Could not read table {key!r} of {str(path)!r} (task {TASK!r}): "
            f"{type(err).__name__}: {err}. The file looks truncated or is not HDF5."
        ) from err
    if not isinstance(table, pd.DataFrame):
        raise DataFormatError(f"{path.name}: {key!r} is not a table (got {type(table).__name__}).")
    return table


def _check_index(frame: pd.DataFrame, levels: list[str], key: str, path: Path) -> None:
    names = list(frame.index.names)
    missing = [n for n in levels if n not in names]
    if missing:
        raise DataFormatError(
            f"{path.name} (task {TASK!r}): table {key!r} should be indexed by {levels}; its index "
            f"levels are {names} (missing {missing})."
        )


def _impute(values: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """MIMIC-Extract's simple imputer on rows (stay, hour) in file order (datasets.md 3.4, 3).

    Args:
        values: the ``vitals_labs`` rows kept, columns (variable, aggregate).

    Returns:
        ``{"mask", "mean", "time_since_measured"}`` -> frames of shape (rows, variables).
    """
    agg_level = values.columns.nlevels - 1
    means = values.xs("mean", axis=1, level=agg_level)
    counts = values.xs("count", axis=1, level=agg_level).reindex(columns=means.columns)
    by_stay = means.groupby(level=ID_LEVELS, sort=False)
    filled = by_stay.ffill()
    filled = filled.fillna(by_stay.transform("mean")).fillna(0.0)
    mask = (counts > 0).astype(np.float64)
    absent = 1.0 - mask
    hours_absent = absent.cumsum()
    # Known quirk, reproduced: the cumulative sum and the forward fill run over the whole
    # table, not per stay, so a stay's first hours depend on the stay before it.
    since = hours_absent - hours_absent.where(absent == 0).ffill()
    return {"mask": mask, "mean": filled, "time_since_measured": since.fillna(TSM_FILL)}


def _pivot(
    parts: dict[str, pd.DataFrame], stays: pd.MultiIndex, hours: np.ndarray
) -> tuple[np.ndarray, list[tuple[str, str, int]]]:
    """One row per stay: float32 matrix with columns (variable, aggregate, hour); NaN if absent."""
    variables = [clean_name(v) for v in parts["mean"].columns]
    hour_ids = np.asarray(hours, dtype=np.int64)
    n_stays, n_hours = len(stays), WINDOW_HOURS
    out = np.full((n_stays, len(variables) * len(AGGREGATES) * n_hours), np.nan, dtype=np.float32)
    stay_pos = stays.get_indexer(parts["mean"].index.droplevel(HOUR_LEVEL))
    columns: list[tuple[str, str, int]] = []
    block = 0
    for v_index, variable in enumerate(variables):
        for aggregate in AGGREGATES:
            values = parts[aggregate].iloc[:, v_index].to_numpy(dtype=np.float32)
            cols = block + hour_ids
            out[stay_pos, cols] = values
            columns.extend((variable, aggregate, h) for h in range(n_hours))
            block += n_hours
    return out, columns


def prepare_icu_mortality(data_dir: Path) -> PreparedTable:
    """ICU Mortality as AdapTable uses it: in-domain private / government / self-pay insurance,
    out-of-domain Medicare / Medicaid.

    Args:
        data_dir: the data directory holding ``all_hourly_data.h5`` (see :data:`FILES`).

    Raises:
        ImportError: PyTables is not installed.
    """
    path = locate(data_dir)
    _require_pytables()
    patients = _read_table(path, "patients")
    _check_index(patients, ID_LEVELS, "patients", path)
    require_columns(patients, PATIENT_COLUMNS, TASK, path)
    require_numbers(patients, [TARGET, "max_hours"], TASK, path, whole=True, first_line=None)
    require_numbers(patients, ["age"], TASK, path, missing_ok=True, first_line=None)
    insurance_seen = set(patients[SPLIT_COLUMN].dropna().astype(str))
    if not insurance_seen & {*ID_INSURANCE, *OOD_INSURANCE}:
        raise DataFormatError(
            f"{path.name} (task {TASK!r}): column {SPLIT_COLUMN!r} holds none of "
            f"{', '.join((*ID_INSURANCE, *OOD_INSURANCE))}; found {sorted(insurance_seen)[:5]}."
        )
    vitals = _read_table(path, "vitals_labs")
    _check_index(vitals, [*ID_LEVELS, HOUR_LEVEL], "vitals_labs", path)
    if vitals.columns.nlevels != 2 or not {"mean", "count"} <= set(
        vitals.columns.get_level_values(1)
    ):
        raise DataFormatError(
            f"{path.name} (task {TASK!r}): 'vitals_labs' should have two column levels "
            "(variable, aggregate) with 'mean' and 'count' aggregates; got columns "
            f"{list(vitals.columns[:4])} ..."
        )

    # Cohort: stays longer than window + gap; their first 24 hours.
    patients = patients.reset_index().set_index(ID_LEVELS)
    patients = patients[patients["max_hours"] > WINDOW_HOURS + GAP_HOURS]
    hours = vitals.index.get_level_values(HOUR_LEVEL).to_numpy()
    stay_ids = vitals.index.get_level_values("icustay_id")
    in_window = (hours >= 0) & (hours < WINDOW_HOURS)
    rows = stay_ids.isin(patients.index.get_level_values("icustay_id")) & in_window
    aggregates = vitals.columns.get_level_values(1)
    kept = vitals.loc[rows, aggregates.isin(["mean", "count"])]
    kept.index = kept.index.reorder_levels([*ID_LEVELS, HOUR_LEVEL])
    hours = hours[rows]
    del vitals  # the full hourly table is by far the largest object; free it before pivoting
    parts = _impute(kept)
    stays = kept.index.droplevel(HOUR_LEVEL).unique().sort_values()  # (subject, hadm, icustay)
    matrix, columns = _pivot(parts, stays, hours)

    statics = patients.reindex(stays)
    complete = (
        ~np.isnan(matrix).any(axis=1) & statics[PATIENT_COLUMNS].notna().all(axis=1).to_numpy()
    )
    matrix, statics = matrix[complete], statics[complete]
    if len(statics) == 0:
        raise DataFormatError(f"{path.name} (task {TASK!r}): no ICU stay survives the filters.")

    # Declared kinds: integer columns are truncated (lossless on the canonical file), the rest
    # float64. Everything went through float32 first, as in TableShift.
    data: dict[str, np.ndarray] = {}
    truncated = 0
    for j, (variable, aggregate, hour) in enumerate(columns):
        values = matrix[:, j]
        if is_integer_kind(variable, aggregate, hour):
            as_int = values.astype(np.int64)
            truncated += int(np.count_nonzero(as_int != values))
            data[f"{variable}_{aggregate}_{hour}"] = as_int
        else:
            data[f"{variable}_{aggregate}_{hour}"] = values.astype(np.float64)
    table = pd.DataFrame(data)
    table["gender"] = (statics["gender"].astype(str) == "M").to_numpy().astype(np.int64)
    table["age"] = statics["age"].to_numpy(dtype=np.float32).astype(np.float64)
    table["ethnicity"] = as_category_strings(statics["ethnicity"].reset_index(drop=True))

    insurance = statics[SPLIT_COLUMN].astype(str).to_numpy()
    target = pd.to_numeric(statics[TARGET]).to_numpy().astype(np.int64)
    notes = [f"{len(table):,} ICU stays (the paper's task has 23,944)."]
    n_variables = len(columns) // (len(AGGREGATES) * WINDOW_HOURS)
    if n_variables != N_VARIABLES:
        notes.append(f"{n_variables} level-2 variables; the canonical file has {N_VARIABLES}.")
    if truncated:
        notes.append(
            f"The integer-kind cast truncated {truncated:,} non-integer values (none on the "
            "canonical file); this file differs from the one TableShift's kinds were taken from."
        )
    return PreparedTable(
        TASK,
        table,
        target,
        ood_mask=np.isin(insurance, OOD_INSURANCE),
        id_mask=np.isin(insurance, ID_INSURANCE),
        classes=["survived", "died in hospital"],
        domain_split=(
            "insurance Private / Government / Self Pay (in-domain: train/valid) vs Medicare / "
            "Medicaid (out-of-domain test)"
        ),
        sources=[str(path)],
        notes=notes,
    )


def load_icu_mortality(data_dir: Path) -> ShiftDataset:
    """The task split as AdapTable uses it (see :func:`prepare_icu_mortality`)."""
    return prepare_icu_mortality(data_dir).to_dataset()

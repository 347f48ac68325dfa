"""Fixtures for the data-layer tests: small raw files written in each publisher's exact schema.

Each writer builds its file from a list of hand-chosen rows, so the tests can state the expected
target, filters, groupers and kinds row by row.
"""

from __future__ import annotations

import gzip
import math
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

# --------------------------------------------------------------------------- split arithmetic


def split_sizes(n_id: int, n_ood: int) -> tuple[int, int, int]:
    """(train, valid, ood_test) sizes of TableShift's split, by datasets.md section 2."""
    rest = math.ceil(0.2 * n_id)
    id_test = math.ceil(0.5 * rest)
    return n_id - rest, rest - id_test, n_ood - math.ceil(0.1 * n_ood)


def load_case_or_skip(case: str, data_dir: Path) -> tuple[object, tuple[int, int, int, int]]:
    """A domain-split case from the real files and its (train, valid, id_test, test) rows;
    skips the test, naming the file, when the raw file is absent."""
    from adaptable import datasets

    try:
        ds = datasets.load(case, data_dir=data_dir)
    except datasets.DataFileError as err:
        pytest.skip(f"raw file of {case} absent: {err}")
    return ds, tuple(len(s.y) for s in (ds.train, ds.valid, ds.id_test, ds.test))


def assert_case_as_documented(
    case: str, spec: object, data_dir: Path, documented: tuple[int, int, int, int]
) -> None:
    """A development, confirmation or holdout case cut from the real files: its documented sizes, the
    split column kept or dropped, the class count, and a kept column separating the domains."""
    ds, sizes = load_case_or_skip(case, data_dir)
    assert sizes == documented
    assert (spec.column in ds.features) is spec.kept
    assert ds.n_classes == (3 if case.startswith("cmc") else 2)
    if spec.kept:  # the kept split column separates the two domains exactly
        first = pd.concat([ds.train.X, ds.valid.X, ds.id_test.X])
        assert np.all(spec.in_first(first)) and not np.any(spec.in_first(ds.test.X))


@pytest.fixture(scope="session")
def expected_sizes() -> Callable[[int, int], tuple[int, int, int]]:
    """The split-size rule as a function of the in-domain and out-of-domain row counts."""
    return split_sizes


# --------------------------------------------------------------------------- ANES (voting)

SOUTH_STATES = ["AL", "GA", "TX", "VA"]
OTHER_STATES = {1: ["NY", "MA"], 2: ["OH", "IL"], 4: ["CA", "WA"]}
ANES_CATEGORICAL = [
    "VCF0301", "VCF0302", "VCF9008", "VCF9010", "VCF9011", "VCF9201", "VCF9202", "VCF9203",
    "VCF9204", "VCF9205", "VCF9206", "VCF0521", "VCF0523", "VCF0875", "VCF9052", "VCF0809",
    "VCF0839", "VCF0822", "VCF0870", "VCF0843", "VCF9045", "VCF0838", "VCF9239", "VCF0803",
    "VCF0846", "VCF0601", "VCF0606", "VCF0612", "VCF0615", "VCF0616", "VCF0617", "VCF0310",
    "VCF0743", "VCF0717", "VCF0718", "VCF0720", "VCF0721", "VCF0701", "VCF0675", "VCF0724",
    "VCF0725", "VCF0726", "VCF0745", "VCF0115", "VCF0140a",
]  # fmt: skip
ANES_ROWS = 80


def anes_table() -> pd.DataFrame:
    """The ANES cumulative file's columns as text, blanks as a single space (as ANES writes)."""
    rows = []
    for i in range(ANES_ROWS):
        region = " " if i % 13 == 5 else str(1 + i % 4)  # some rows without a region (in-domain)
        state = (
            SOUTH_STATES[i % 4]
            if region == "3"
            else (" " if region == " " else OTHER_STATES[int(region)][i % 2])
        )
        row = {
            "Version": "ANES_CDF_VERSION:2022-Sep-16",
            "VCF0004": str(1948 + 2 * (i % 36)),
            "VCF0006": str(10000 + i),  # case id: not a feature
            "VCF0101": " " if i % 11 == 3 else str(18 + i % 60),  # age with blanks -> float
            "VCF0104": str(1 + i % 2),  # gender, no blanks -> parsed as int
            "VCF0105a": " " if i % 17 == 2 else str(1 + i % 7),  # race with blanks
            "VCF0112": region,
            "VCF0218": "98" if i == 7 else str(i % 97),  # 98 kept as a number
            "VCF0224": str((3 * i) % 97),
            "VCF0428": "98" if i % 10 == 4 else ("99" if i % 10 == 6 else str(i % 90)),
            "VCF0429": str((5 * i) % 90),
            "VCF0702": " " if i % 9 == 8 else str(i % 3),  # 0 DK/NA, 1 no, 2 voted; blank dropped
            "VCF0901b": state,
        }
        for j, col in enumerate(ANES_CATEGORICAL):
            row[col] = " " if (i + j) % 7 == 0 else str(1 + (i + j) % 3)
        row["VCF0302"] = str(1 + i % 5)  # a categorical without blanks -> "1"-style levels
        row["VCF9201"] = "-9" if i % 6 == 1 else (" " if i % 6 == 2 else str(1 + i % 4))
        rows.append(row)
    return pd.DataFrame(rows)


def write_anes(folder: Path, table: pd.DataFrame | None = None, compress: str = "") -> Path:
    """Write the ANES CSV under ``folder/anes/`` (``compress``: "", "gz" or "zip")."""
    table = anes_table() if table is None else table
    text = table.to_csv(index=False)
    stem = "anes_timeseries_cdf_csv_20220916"
    (folder / "anes").mkdir(parents=True, exist_ok=True)
    if compress == "gz":
        path = folder / "anes" / f"{stem}.csv.gz"
        path.write_bytes(gzip.compress(text.encode()))
    elif compress == "zip":
        path = folder / "anes" / f"{stem}.zip"
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr(f"{stem}/{stem}.csv", text)
    else:
        path = folder / "anes" / f"{stem}.csv"
        path.write_text(text)
    return path


@pytest.fixture()
def anes_dir(tmp_path: Path) -> Path:
    write_anes(tmp_path)
    return tmp_path


# --------------------------------------------------------------------------- NHANES (lead)


def nhanes_demo(year: int, n: int, seqn_start: int) -> pd.DataFrame:
    """A demographics file of one cycle: children and adults, RIDRETH3 / DMDBORN4 from 2011."""
    i = np.arange(n)
    demo = pd.DataFrame(
        {
            "SEQN": (seqn_start + i).astype(float),
            "SDDSRVYR": float((year - 1997) // 2),
            "RIAGENDR": (1 + i % 2).astype(float),
            "RIDAGEYR": np.where(i % 10 == 9, 19.0, 1.0 + i % 18),  # every 10th is 19: dropped
            "RIDRETH1": (1 + i % 5).astype(float),
            "DMDEDUC2": np.nan,  # adult-only questions: missing for children
            "DMDMARTL": np.nan,
            # PIR: 1.3 exactly is out-of-domain; every 7th is missing (row dropped).
            "INDFMPIR": np.where(i % 7 == 6, np.nan, np.round(0.5 + (i % 8) * 0.4, 2)),
        }
    )
    demo.loc[i % 8 == 2, "INDFMPIR"] = 1.3
    if year >= 2011:
        # RIDRETH3 splits Asian (6) out of RIDRETH1's "other" (5); white stays 3.
        demo.insert(5, "RIDRETH3", np.where(i % 5 == 4, 6.0, 1.0 + i % 5))
        demo.insert(6, "DMDBORN4", np.where(i % 6 == 5, 2.0, 1.0))
    else:
        demo.insert(5, "DMDBORN2", 1.0)
    return demo


def nhanes_lab(demo: pd.DataFrame, lead_column: str = "LBXBPB") -> pd.DataFrame:
    """Blood lead for all but every 9th respondent; 3.5 exactly is positive."""
    i = np.arange(len(demo))
    lead = np.where(i % 4 == 0, 3.5, np.where(i % 4 == 1, 3.49, 0.8 + (i % 5)))
    lab = pd.DataFrame({"SEQN": demo["SEQN"], lead_column: lead, "LBDBPBSI": lead * 0.0483})
    return lab[i % 9 != 8].reset_index(drop=True)


def write_xpt(frame: pd.DataFrame, path: Path, name: str) -> Path:
    """Write a SAS transport (v5) file as CDC ships them; ``.gz`` paths are gzip-compressed."""
    pyreadstat = pytest.importorskip("pyreadstat")
    path.parent.mkdir(parents=True, exist_ok=True)
    target = path.with_name(path.name[:-3]) if path.name.endswith(".gz") else path
    pyreadstat.write_xport(frame, str(target), table_name=name[:8], file_format_version=5)
    if target != path:
        path.write_bytes(gzip.compress(target.read_bytes()))
        target.unlink()
    return path


@pytest.fixture()
def nhanes_dir(tmp_path: Path) -> Path:
    """Three complete cycles in three different layouts, one incomplete, one 2001 pair."""
    root = tmp_path / "nhanes"
    d05 = nhanes_demo(2005, 30, 30000)
    write_xpt(d05, root / "2005-2006" / "demo_d.xpt", "DEMO_D")
    write_xpt(nhanes_lab(d05), root / "2005-2006" / "PbCd_D.XPT", "PBCD_D")
    d11 = nhanes_demo(2011, 30, 60000)
    write_xpt(d11, root / "DEMO_G.XPT.gz", "DEMO_G")
    write_xpt(nhanes_lab(d11), root / "lab" / "deep" / "PBCD_G.xpt.gz", "PBCD_G")
    d17 = nhanes_demo(2017, 30, 90000)
    write_xpt(d17, root / "demographics" / "DEMO_J.XPT", "DEMO_J")
    write_xpt(nhanes_lab(d17), root / "laboratory" / "PBCD_J.XPT", "PBCD_J")
    # 2015: demographics only -> not usable; 2001: two lead files sharing LBXBPB -> skipped.
    write_xpt(nhanes_demo(2015, 10, 80000), root / "DEMO_I.XPT", "DEMO_I")
    d01 = nhanes_demo(2001, 10, 20000)
    write_xpt(d01, root / "2001" / "DEMO_B.XPT", "DEMO_B")
    write_xpt(nhanes_lab(d01), root / "2001" / "L06_B.XPT", "L06_B")
    write_xpt(nhanes_lab(d01), root / "2001" / "L06_2_B.XPT", "L06_2_B")
    return tmp_path


# --------------------------------------------------------------------------- BRFSS (diabetes)

BRFSS_NAMES = {
    2015: {
        "FRUIT": "_FRTLT1", "VEG": "_VEGLT1", "CHOL": "_CHOLCHK", "DIAB": "DIABETE3",
        "DRNK": "_DRNKWEK", "SEX": "SEX", "MEDCOST": "MEDCOST", "INCOME": "INCOME2",
        "BP": "_RFHYPE5", "COV": "_HCVU651", "TOLDHI": "TOLDHI2",
    },
    2021: {
        "FRUIT": "_FRTLT1A", "VEG": "_VEGLT1A", "CHOL": "_CHOLCH3", "DIAB": "DIABETE4",
        "DRNK": "_DRNKWK1", "SEX": "SEXVAR", "MEDCOST": "MEDCOST1", "INCOME": "INCOME3",
        "BP": "_RFHYPE6", "COV": "_HCVU652", "TOLDHI": "TOLDHI3",
    },
}  # fmt: skip


def brfss_table(year: int, n: int) -> pd.DataFrame:
    """One BRFSS year: numeric codes as float, IYEAR as text; BMI5 = 2000 + row (an id)."""
    names = BRFSS_NAMES[year]
    i = np.arange(n)
    nan = np.nan
    diab = np.array([1.0, 3.0, 2.0, 4.0, 3.0, 1.0, 7.0, 3.0, 9.0, nan, 3.0, 1.0])[i % 12]
    frame = pd.DataFrame(
        {
            "_STATE": (1.0 + i % 5),
            "IYEAR": [str(year + (k % 5 == 4)) for k in i],  # some interviews the next year
            "PHYSHLTH": np.array([88.0, 3.0, 77.0, 30.0, 5.0, 99.0, 1.0, 88.0])[i % 8],
            "MENTHLTH": np.array([2.0, 88.0, 4.0, 0.0, 7.0])[i % 5],
            names["DIAB"]: diab,
            names["SEX"]: (1.0 + i % 2),
            "_BMI5": np.where(i % 23 == 22, nan, 2000.0 + i),
            "_BMI5CAT": (1.0 + i % 4),
            "SMOKE100": np.array([1.0, 2.0, 7.0, 9.0, nan])[i % 5],
            "SMOKDAY2": np.array([1.0, nan, 7.0, 3.0])[i % 4],
            "CVDSTRK3": np.array([2.0, 1.0, 9.0])[i % 3],
            "_MICHD": np.array([2.0, 1.0, nan])[i % 3],
            "_RFBING5": np.array([1.0, 2.0, 9.0])[i % 3],
            "_TOTINDA": np.array([1.0, 2.0, 9.0, 1.0])[i % 4],
            "MARITAL": (1.0 + i % 6),
            "CHECKUP1": np.array([1.0, 2.0, 3.0, 7.0, 9.0])[i % 5],
            "EDUCA": (1.0 + i % 6),
            "_PRACE1": np.array([1.0, 2.0, 1.0, 3.0, 1.0, 4.0, 5.0, 6.0, 1.0, 77.0, 1.0])[i % 11],
            names["FRUIT"]: np.array([1.0, 2.0, 9.0])[i % 3],
            names["VEG"]: np.array([2.0, 1.0, 9.0])[i % 3],
            names["CHOL"]: np.array([1.0, 2.0, 3.0, 4.0, 9.0, nan])[i % 6],
            names["DRNK"]: np.where(i % 19 == 18, 99900.0, (i % 4) * 100.0),
            names["MEDCOST"]: np.array([1.0, 2.0, 7.0])[i % 3],
            names["INCOME"]: np.array([1.0, 5.0, 8.0, 77.0, 99.0])[i % 5],
            names["BP"]: np.array([1.0, 2.0, 9.0])[i % 3],
            names["COV"]: np.array([1.0, 2.0, nan])[i % 3],
            names["TOLDHI"]: np.array([1.0, 2.0, 7.0, nan])[i % 4],
            "_LLCPWT": 100.0 + i,  # an unused column
        }
    )
    return frame


def write_brfss(folder: Path, year: int, n: int, form: str) -> Path:
    """``form``: "zip" (CDC's LLCP<year>XPT.zip, member with a trailing space), "xpt", "gz"."""
    table = brfss_table(year, n)
    root = folder / "brfss"
    if form == "zip":
        xpt = write_xpt(table, root / f"tmp{year}.xpt", f"LLCP{year}")
        path = root / f"LLCP{year}XPT.zip"
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            archive.write(xpt, arcname=f"LLCP{year}.XPT ")
        xpt.unlink()
        return path
    suffix = ".XPT.gz" if form == "gz" else ".XPT"
    return write_xpt(table, root / f"{year}" / f"LLCP{year}{suffix}", f"LLCP{year}")


@pytest.fixture()
def brfss_dir(tmp_path: Path) -> Path:
    write_brfss(tmp_path, 2015, 120, "zip")
    write_brfss(tmp_path, 2021, 120, "xpt")
    return tmp_path


# --------------------------------------------------------------------------- MIMIC-Extract

MIMIC_VARIABLES = """alanine_aminotransferase albumin albumin_ascites albumin_pleural albumin_urine
alkaline_phosphate anion_gap asparate_aminotransferase basophils bicarbonate bilirubin
blood_urea_nitrogen calcium calcium_ionized calcium_urine cardiac_index cardiac_output_fick
cardiac_output_thermodilution central_venous_pressure chloride chloride_urine cholesterol
cholesterol_hdl cholesterol_ldl co2 co2_(etco2_pco2_etc) creatinine creatinine_ascites
creatinine_body_fluid creatinine_pleural creatinine_urine diastolic_blood_pressure eosinophils
fibrinogen fraction_inspired_oxygen fraction_inspired_oxygen_set glascow_coma_scale_total glucose
heart_rate height hematocrit hemoglobin lactate lactate_dehydrogenase lactate_dehydrogenase_pleural
lactic_acid lymphocytes lymphocytes_ascites lymphocytes_atypical lymphocytes_atypical_csl
lymphocytes_body_fluid lymphocytes_percent lymphocytes_pleural magnesium mean_blood_pressure
mean_corpuscular_hemoglobin mean_corpuscular_hemoglobin_concentration mean_corpuscular_volume
monocytes monocytes_csl neutrophils oxygen_saturation partial_pressure_of_carbon_dioxide
partial_pressure_of_oxygen partial_thromboplastin_time peak_inspiratory_pressure ph ph_urine
phosphate phosphorous plateau_pressure platelets positive_end-expiratory_pressure
positive_end-expiratory_pressure_set post_void_residual potassium potassium_serum
prothrombin_time_inr prothrombin_time_pt pulmonary_artery_pressure_mean
pulmonary_artery_pressure_systolic pulmonary_capillary_wedge_pressure red_blood_cell_count
red_blood_cell_count_ascites red_blood_cell_count_csf red_blood_cell_count_pleural
red_blood_cell_count_urine respiratory_rate respiratory_rate_set sodium
systemic_vascular_resistance systolic_blood_pressure temperature tidal_volume_observed
tidal_volume_set tidal_volume_spontaneous total_protein total_protein_urine troponin-i troponin-t
venous_pvo2 weight white_blood_cell_count white_blood_cell_count_urine""".split()


def mimic_level2_name(clean: str) -> str:
    """MIMIC-Extract's LEVEL2 name (spaces, punctuation) for a renamed variable."""
    return "co2 (etco2, pco2, etc.)" if clean == "co2_(etco2_pco2_etc)" else clean.replace("_", " ")


# Stays (subject order = file order). (insurance, max_hours, ethnicity, mort_hosp, gender, age)
MIMIC_STAYS: list[tuple[str, int, str | None, int, str, float]] = (
    [("Private", 40, "WHITE", 0, "M", 61.5), ("Medicare", 20, "WHITE", 1, "F", 80.0)]
    + [("Medicare", 50, "BLACK/AFRICAN AMERICAN", 0, "F", 77.25)]
    + [(("Private", "Government", "Self Pay")[k % 3], 31 + k, "WHITE" if k % 2 else "ASIAN",
        int(k % 4 == 0), "MF"[k % 2], 40.0 + k) for k in range(14)]
    + [(("Medicare", "Medicaid")[k % 2], 35 + k, "HISPANIC OR LATINO" if k % 3 else "WHITE",
        int(k % 3 == 0), "FM"[k % 2], 60.0 + k) for k in range(14)]
    + [("Medicaid", 30, "WHITE", 1, "M", 50.0),  # max_hours not > 30: excluded
       ("Private", 45, None, 0, "F", 33.0),  # missing ethnicity: incomplete, excluded
       ("Medicare", 45, "WHITE", 0, "M", 70.0)]  # hour 5 row missing: incomplete, excluded
)  # fmt: skip
HOURS_MISSING_STAY = len(MIMIC_STAYS) - 1


def mimic_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    """(patients, vitals_labs) shaped like MIMIC-Extract's all_hourly_data.h5 tables.

    Measurements: heart rate in stay 0 at hours 2 (80) and 4 (90); in stay 2 at hour 1 (70);
    temperature 36.6 in every stay at hour 0; everything else never measured.
    """
    patient_rows, index = [], []
    for k, (ins, max_hours, eth, died, sex, age) in enumerate(MIMIC_STAYS):
        index.append((100 + k, 1000 + k, 5000 + k))
        patient_rows.append(
            {"gender": sex, "ethnicity": eth, "age": age, "insurance": ins,
             "admittime": pd.Timestamp("2130-01-01") + pd.Timedelta(days=k),
             "diagnosis_at_admission": "SEPSIS", "mort_icu": died, "mort_hosp": died,
             "hospital_expire_flag": died, "max_hours": max_hours, "los_icu": max_hours / 24}
        )  # fmt: skip
    names = ["subject_id", "hadm_id", "icustay_id"]
    patients = pd.DataFrame(patient_rows, index=pd.MultiIndex.from_tuples(index, names=names))
    rows = []
    for k, (_, max_hours, *_rest) in enumerate(MIMIC_STAYS):
        for hour in range(min(max_hours, 27)):  # the file holds hours beyond the 24-h window
            if k == HOURS_MISSING_STAY and hour == 5:
                continue
            rows.append((*index[k], hour))
    row_index = pd.MultiIndex.from_tuples(rows, names=[*names, "hours_in"])
    level2 = [mimic_level2_name(v) for v in MIMIC_VARIABLES]
    columns = pd.MultiIndex.from_product(
        [level2, ["count", "mean", "std"]], names=["LEVEL2", "Aggregation Function"]
    )
    values = np.full((len(rows), len(columns)), np.nan)
    vitals = pd.DataFrame(values, index=row_index, columns=columns)
    vitals.loc[:, (slice(None), "count")] = 0.0

    def measure(stay: int, hour: int, variable: str, value: float) -> None:
        key = (*index[stay], hour)
        vitals.loc[key, (variable, "mean")] = value
        vitals.loc[key, (variable, "count")] = 1.0
        vitals.loc[key, (variable, "std")] = 0.0

    measure(0, 2, "heart rate", 80.0)
    measure(0, 4, "heart rate", 90.0)
    measure(2, 1, "heart rate", 70.0)
    measure(0, 25, "heart rate", 500.0)  # after the window: must not leak into the means
    for k in range(len(MIMIC_STAYS)):
        measure(k, 0, "temperature", 36.6)
    return patients, vitals


def write_mimic(folder: Path) -> Path:
    pytest.importorskip("tables")
    patients, vitals = mimic_tables()
    path = folder / "mimic_extract" / "all_hourly_data.h5"
    path.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        # PyTables warns that "Aggregation Function" is no Python identifier; MIMIC-Extract's
        # file has exactly that level name.
        warnings.simplefilter("ignore")
        patients.to_hdf(path, key="patients")
        vitals.to_hdf(path, key="vitals_labs")
    return path


@pytest.fixture(scope="module")
def mimic_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("mimic")
    write_mimic(folder)
    return folder

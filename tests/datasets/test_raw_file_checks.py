"""Every loader checks its raw file's columns, kinds and split column.

A wrong cell must end in a DataFormatError naming the file and the column, never in rows sent to
the wrong split, NaN features, or ``invalid literal for int()``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from adaptable import datasets
from adaptable.datasets import heloc, readmission

from .conftest import anes_table, brfss_table, nhanes_demo, nhanes_lab, write_anes, write_xpt

HELOC_ROWS = 60


def heloc_table() -> pd.DataFrame:
    """A small HELOC file in FICO's schema: whole numbers everywhere, both sides of the split."""
    i = np.arange(HELOC_ROWS)
    columns = {
        heloc.TARGET: np.where(i % 3 == 0, "Bad", "Good"),
        heloc.SPLIT_COLUMN: 40 + i,  # 40..99: both sides of 63
    }
    for k, name in enumerate([*heloc.NUMERICAL, *heloc.CATEGORICAL]):
        columns[name] = (i * (k + 1)) % 9 - (i % 17 == 0) * 9  # some -9 special values
    return pd.DataFrame(columns)


@pytest.fixture()
def heloc_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(heloc, "RAW_ROWS", HELOC_ROWS)
    (tmp_path / "heloc").mkdir()
    heloc_table().to_csv(tmp_path / "heloc" / "heloc_dataset_v1.csv", index=False)
    return tmp_path


def _heloc_csv(folder: Path) -> Path:
    return folder / "heloc" / "heloc_dataset_v1.csv"


def test_a_clean_small_heloc_file_loads(heloc_dir: Path) -> None:
    ds = datasets.load("heloc", data_dir=heloc_dir)
    assert len(ds.train.y) + len(ds.valid.y) > 0 and len(ds.test.y) > 0
    assert all(ds.train.X[c].dtype == np.int64 for c in ds.numerical)


def test_heloc_missing_split_value_is_refused(heloc_dir: Path) -> None:
    """Defect 5: NaN in ExternalRiskEstimate used to send the row to the out-of-domain side."""
    table = heloc_table().astype({heloc.SPLIT_COLUMN: float})
    table.loc[4, heloc.SPLIT_COLUMN] = np.nan
    table.to_csv(_heloc_csv(heloc_dir), index=False)
    with pytest.raises(datasets.DataFormatError) as info:
        datasets.load("heloc", data_dir=heloc_dir)
    message = str(info.value)
    assert "heloc_dataset_v1.csv" in message and "'ExternalRiskEstimate'" in message
    assert "line 6" in message  # header is line 1, row 4 (0-based) is line 6


def test_heloc_torn_last_line_is_refused(heloc_dir: Path) -> None:
    """Defect 5: a last line cut in the middle used to load as NaN cells."""
    text = _heloc_csv(heloc_dir).read_text()
    torn = text.rstrip("\n")
    _heloc_csv(heloc_dir).write_text(torn[: torn.rfind(",", 0, len(torn) - 20)] + "\n")
    with pytest.raises(datasets.DataFormatError, match=r"heloc_dataset_v1.csv.*missing value"):
        datasets.load("heloc", data_dir=heloc_dir)


def test_heloc_text_in_a_numeric_column_names_file_and_column(heloc_dir: Path) -> None:
    """Defect 11: used to be ``invalid literal for int() with base 10: 'many'``."""
    table = heloc_table().astype({"NumTotalTrades": object})
    table.loc[10, "NumTotalTrades"] = "many"
    table.to_csv(_heloc_csv(heloc_dir), index=False)
    with pytest.raises(datasets.DataFormatError) as info:
        datasets.load("heloc", data_dir=heloc_dir)
    message = str(info.value)
    assert "heloc_dataset_v1.csv" in message and "'NumTotalTrades'" in message
    assert "'many'" in message and "invalid literal" not in message


def test_heloc_fraction_in_a_count_is_refused(heloc_dir: Path) -> None:
    table = heloc_table().astype({"NumTrades60Ever2DerogPubRec": float})
    table.loc[3, "NumTrades60Ever2DerogPubRec"] = 2.5
    table.to_csv(_heloc_csv(heloc_dir), index=False)
    with pytest.raises(datasets.DataFormatError, match="whole numbers, but line 5 holds 2.5"):
        datasets.load("heloc", data_dir=heloc_dir)


@pytest.fixture(scope="module")
def readmission_rows() -> pd.DataFrame:
    """The first 400 rows of the embedded UCI file, as text (as the publisher's CSV holds)."""
    source, _ = readmission.locate(None)
    with readmission.resources.as_file(source) as path:
        return pd.read_csv(path, compression="gzip", nrows=400, dtype=str, keep_default_na=False)


def _write_readmission(folder: Path, table: pd.DataFrame) -> None:
    (folder / "diabetes_readmission").mkdir(exist_ok=True)
    table.to_csv(folder / "diabetes_readmission" / "diabetic_data.csv", index=False)


def test_readmission_split_column_and_target_are_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, readmission_rows: pd.DataFrame
) -> None:
    monkeypatch.setattr(readmission, "RAW_ROWS", len(readmission_rows))
    _write_readmission(tmp_path, readmission_rows)
    assert datasets.load("hospital_readmission", data_dir=tmp_path).n_classes == 2
    worded = readmission_rows.copy()
    worded.loc[7, "admission_source_id"] = "Emergency Room"  # used to go in-domain silently
    _write_readmission(tmp_path, worded)
    with pytest.raises(
        datasets.DataFormatError, match=r"diabetic_data.csv.*'admission_source_id'.*line 9"
    ):
        datasets.load("hospital_readmission", data_dir=tmp_path)
    relabelled = readmission_rows.copy()
    relabelled.loc[3, "readmitted"] = "YES"  # used to count as readmitted silently
    _write_readmission(tmp_path, relabelled)
    with pytest.raises(datasets.DataFormatError, match=r"'readmitted'.*\['YES'\]"):
        datasets.load("hospital_readmission", data_dir=tmp_path)


def test_voting_region_in_words_is_refused(tmp_path: Path) -> None:
    table = anes_table()
    table.loc[2, "VCF0112"] = "South"  # used to become NaN, i.e. in-domain
    write_anes(tmp_path, table)
    with pytest.raises(datasets.DataFormatError, match=r"'VCF0112'.*line 4 holds 'South'"):
        datasets.load("voting", data_dir=tmp_path)


def test_childhood_lead_text_income_ratio_is_refused(tmp_path: Path) -> None:
    demo = nhanes_demo(2017, 30, 1)
    lab = nhanes_lab(demo)
    demo["INDFMPIR"] = demo["INDFMPIR"].map(lambda v: "" if pd.isna(v) else f"{v:.2f}")
    demo.loc[5, "INDFMPIR"] = "low"
    write_xpt(demo, tmp_path / "nhanes" / "DEMO_J.XPT", "DEMO_J")
    write_xpt(lab, tmp_path / "nhanes" / "PBCD_J.XPT", "PBCD_J")
    with pytest.raises(datasets.DataFormatError, match=r"DEMO_J.XPT.*'INDFMPIR'.*row 6 holds"):
        datasets.load("childhood_lead", data_dir=tmp_path)


def test_diabetes_text_race_is_refused(tmp_path: Path) -> None:
    table = brfss_table(2015, 40)
    table["_PRACE1"] = table["_PRACE1"].map(lambda v: f"{v:.0f}")
    table.loc[9, "_PRACE1"] = "White"
    write_xpt(table, tmp_path / "brfss" / "LLCP2015.XPT", "LLCP2015")
    with pytest.raises(datasets.DataFormatError, match=r"LLCP2015.XPT.*'_PRACE1'.*row 10"):
        datasets.load("diabetes", data_dir=tmp_path)


def test_icu_mortality_checks_target_and_insurance(tmp_path: Path) -> None:
    pytest.importorskip("tables")
    import warnings

    from .conftest import mimic_tables

    patients, vitals = mimic_tables()
    path = tmp_path / "mimic_extract" / "all_hourly_data.h5"
    path.parent.mkdir(parents=True)

    def write(frame: pd.DataFrame) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            frame.to_hdf(path, key="patients")
            vitals.to_hdf(path, key="vitals_labs")

    worded = patients.astype({"mort_hosp": object})
    worded.iloc[3, worded.columns.get_loc("mort_hosp")] = "died"
    write(worded)
    with pytest.raises(datasets.DataFormatError, match=r"'mort_hosp'.*row 4 holds 'died'"):
        datasets.load("icu_mortality", data_dir=tmp_path)
    coded = patients.assign(insurance=patients["insurance"].map({"Private": 1}).fillna(2))
    write(coded.astype({"insurance": str}))
    with pytest.raises(datasets.DataFormatError, match=r"'insurance' holds none of Private"):
        datasets.load("icu_mortality", data_dir=tmp_path)


def test_missing_file_errors_name_every_way_to_point_at_the_data(tmp_path: Path) -> None:
    """The message names --data-dir, the API argument, the variable and the default."""
    for task in ("heloc", "voting", "childhood_lead", "diabetes", "icu_mortality"):
        with pytest.raises(datasets.DataFileError) as info:
            datasets.load(task, data_dir=tmp_path)
        message = str(info.value)
        for needle in ("--data-dir", "data_dir=", "$ADAPTABLE_DATA_DIR", "the default is"):
            assert needle in message, (task, needle)


def test_require_numbers_reports_rows_for_binary_files() -> None:
    from adaptable.datasets._base import require_numbers

    frame = pd.DataFrame({"x": [1.0, np.nan, 3.0]})
    require_numbers(frame, ["x"], "t", "f.xpt", missing_ok=True, first_line=None)
    with pytest.raises(datasets.DataFormatError, match=r"f.xpt \(task 't'\).*row 2"):
        require_numbers(frame, ["x"], "t", "f.xpt", first_line=None)

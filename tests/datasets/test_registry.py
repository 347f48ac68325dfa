"""Registry (`load`, `available`) and clear errors on bad input."""

from __future__ import annotations

import gzip
from pathlib import Path

import pandas as pd
import pytest

from adaptable import datasets

from .conftest import nhanes_demo, write_anes


def test_available_lists_every_task(tmp_path: Path) -> None:
    write_anes(tmp_path)
    status = datasets.available(tmp_path)
    assert [name for name, info in status.items() if info["group"] == "paper"] == list(
        datasets.TASKS
    )
    assert status["voting"]["present"] is True
    assert status["voting"]["file"].endswith("anes_timeseries_cdf_csv_20220916.csv")
    assert status["hospital_readmission"]["present"] is True  # the embedded copy
    for task in ("heloc", "icu_mortality", "childhood_lead", "diabetes"):
        assert status[task]["present"] is False
        assert task in str(status[task]["reason"])


def test_available_uses_environment_variable(tmp_path: Path, monkeypatch) -> None:
    write_anes(tmp_path)
    monkeypatch.setenv(datasets.DATA_DIR_ENV, str(tmp_path))
    assert datasets.resolve_data_dir(None) == tmp_path
    assert datasets.available()["voting"]["present"] is True


def test_unknown_task() -> None:
    with pytest.raises(KeyError, match=r"Unknown task 'adult'.*childhood_lead.*voting"):
        datasets.load("adult")
    with pytest.raises(KeyError, match=r"Unknown task 'helco'\. Did you mean 'heloc'\?"):
        datasets.load("helco")
    with pytest.raises(KeyError) as caught:
        datasets.load("xyzzy")
    assert "Did you mean" not in str(caught.value)


def test_aliases_resolve() -> None:
    from adaptable.datasets.registry import _info

    assert _info("anes").name == "voting"
    assert _info("mimic_extract_mort_hosp").name == "icu_mortality"
    assert _info("nhanes_lead").name == "childhood_lead"
    assert _info("brfss_diabetes").name == "diabetes"
    assert _info("diabetes_readmission").name == "hospital_readmission"


@pytest.mark.parametrize(
    ("task", "needles"),
    [
        ("heloc", ["heloc_dataset_v1.csv", "'heloc'", "FICO", "Explainable Machine Learning"]),
        ("voting", ["anes_timeseries_cdf_csv_20220916.csv", "'voting'", "American National Election Studies"]),
        ("icu_mortality", ["all_hourly_data.h5", "'icu_mortality'", "PhysioNet", "MIMIC_Extract"]),
        ("childhood_lead", ["DEMO_J.XPT", "PBCD_J.XPT", "'childhood_lead'", "CDC/NCHS NHANES"]),
        ("diabetes", ["LLCP2015XPT.zip", "'diabetes'", "Behavioral Risk Factor Surveillance System"]),
    ],
)  # fmt: skip
def test_missing_file_names_file_task_and_publisher(
    tmp_path: Path, task: str, needles: list[str]
) -> None:
    with pytest.raises(datasets.DataFileError) as info:
        datasets.load(task, data_dir=tmp_path)
    for needle in needles:
        assert needle in str(info.value), needle
    assert isinstance(info.value, FileNotFoundError)


def test_readmission_falls_back_to_embedded_copy(tmp_path: Path) -> None:
    from adaptable.datasets import readmission

    source, origin = readmission.locate(tmp_path)
    assert "embedded" in origin


def test_truncated_gzip(tmp_path: Path) -> None:
    folder = tmp_path / "diabetes_readmission"
    folder.mkdir()
    full = gzip.compress(b"encounter_id,patient_nbr,race\n" + b"1,2,Caucasian\n" * 5000)
    (folder / "diabetic_data.csv.gz").write_bytes(full[: len(full) // 3])
    with pytest.raises(datasets.DataFormatError, match="truncated or corrupted"):
        datasets.load("hospital_readmission", data_dir=tmp_path)


def test_malformed_and_wrong_columns(tmp_path: Path) -> None:
    folder = tmp_path / "heloc"
    folder.mkdir()
    (folder / "heloc_dataset_v1.csv").write_bytes(b"\x00\xff\xfe binary junk \x00\x81" * 50)
    with pytest.raises(datasets.DataFormatError):
        datasets.load("heloc", data_dir=tmp_path)
    pd.DataFrame({"RiskPerformance": ["Good"], "Other": [1]}).to_csv(
        folder / "heloc_dataset_v1.csv", index=False
    )
    with pytest.raises(datasets.DataFormatError, match="ExternalRiskEstimate"):
        datasets.load("heloc", data_dir=tmp_path)


def test_malformed_xpt_and_wrong_nhanes_columns(tmp_path: Path) -> None:
    pytest.importorskip("pyreadstat")
    from .conftest import nhanes_lab, write_xpt

    root = tmp_path / "nhanes"
    root.mkdir()
    (root / "DEMO_J.XPT").write_bytes(b"this is not a SAS transport file" * 10)
    write_xpt(nhanes_lab(nhanes_demo(2017, 20, 1)), root / "PBCD_J.XPT", "PBCD_J")
    with pytest.raises(datasets.DataFormatError, match="DEMO_J.XPT.*SAS transport"):
        datasets.load("childhood_lead", data_dir=tmp_path)
    write_xpt(nhanes_demo(2017, 20, 1).drop(columns=["INDFMPIR"]), root / "DEMO_J.XPT", "DEMO_J")
    with pytest.raises(datasets.DataFormatError, match="INDFMPIR"):
        datasets.load("childhood_lead", data_dir=tmp_path)


def test_seed_must_be_an_int() -> None:
    with pytest.raises(TypeError, match="seed"):
        datasets.load("hospital_readmission", seed="0")  # type: ignore[arg-type]

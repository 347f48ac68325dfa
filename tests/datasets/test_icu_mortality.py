"""ICU Mortality (MIMIC-Extract): cohort, imputation (incl. the cross-stay quirk), pivot, kinds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from adaptable import datasets
from adaptable.datasets import icu_mortality

from .conftest import MIMIC_STAYS

pytest.importorskip("tables")


@pytest.fixture(scope="module")
def prepared(mimic_dir: Path) -> icu_mortality.PreparedTable:
    return icu_mortality.prepare_icu_mortality(mimic_dir)


def _kept_stays() -> list[int]:
    """Stays with max_hours > 30, all 24 hours, complete statics (the fixture's last three fail)."""
    return [k for k in range(len(MIMIC_STAYS) - 3) if MIMIC_STAYS[k][1] > 30]


def test_cohort_target_and_split_masks(prepared) -> None:
    kept = _kept_stays()
    assert len(prepared.target) == len(kept) == 30
    assert prepared.target.tolist() == [MIMIC_STAYS[k][3] for k in kept]
    insurance = [MIMIC_STAYS[k][0] for k in kept]
    assert prepared.ood_mask.tolist() == [i in ("Medicare", "Medicaid") for i in insurance]
    assert prepared.id_mask.tolist() == [
        i in ("Private", "Government", "Self Pay") for i in insurance
    ]


def test_imputation_by_hand(prepared) -> None:
    X = prepared.features
    first, second = 0, 1  # fixture stays 0 and 2 (stay 1 is too short and is removed first)
    # Stay 0 heart rate: measured 80 at hour 2 and 90 at hour 4 (500 at hour 25 is outside the
    # window). Forward fill, then the stay's 24-h mean (85) before the first measurement.
    hr = [X.loc[first, f"heart_rate_mean_{h}"] for h in range(24)]
    assert hr[:6] == [85, 85, 80, 80, 90, 90] and hr[23] == 90
    assert [X.loc[first, f"heart_rate_mask_{h}"] for h in range(6)] == [0, 0, 1, 0, 1, 0]
    tsm = [X.loc[first, f"heart_rate_time_since_measured_{h}"] for h in range(6)]
    assert tsm == [100, 100, 0, 1, 0, 1]  # nothing measured before in the whole table -> 100
    # The quirk: the count runs across stays. Stay 2 (measured at hour 1 only) starts 19 absent
    # hours after stay 0's last measurement (hours 5..23), so its hour 0 reads 20.
    tsm2 = [X.loc[second, f"heart_rate_time_since_measured_{h}"] for h in range(3)]
    assert tsm2 == [20, 0, 1]
    assert X.loc[second, "heart_rate_mean_0"] == 70  # stay mean fills the leading gap
    # Never-measured variables: mean 0, mask 0, time since measured 100.
    assert X.loc[first, "albumin_mean_3"] == 0 and X.loc[first, "albumin_mask_3"] == 0
    assert X.loc[first, "albumin_time_since_measured_3"] == 100
    # Float-kind mean keeps its float32 value; integer-kind columns are int64.
    assert X.loc[first, "temperature_mean_0"] == pytest.approx(float(np.float32(36.6)))
    assert X["temperature_mean_0"].dtype == np.float64
    assert X["heart_rate_mean_13"].dtype == np.int64  # Appendix A: integer at hour 13 only
    assert X["heart_rate_mean_12"].dtype == np.float64
    assert X["troponin-i_mean_0"].dtype == np.int64
    assert X["heart_rate_mask_0"].dtype == np.int64


def test_columns_kinds_and_statics(prepared) -> None:
    X = prepared.features
    assert X.shape[1] == 7491  # 104 variables x 3 aggregates x 24 hours + 3 statics
    assert "co2_(etco2_pco2_etc)_mean_0" in X.columns
    assert "positive_end-expiratory_pressure_set_mask_23" in X.columns
    assert "insurance" not in X.columns and "mort_hosp" not in X.columns
    kept = _kept_stays()
    assert X["gender"].tolist() == [int(MIMIC_STAYS[k][4] == "M") for k in kept]
    assert X["ethnicity"].tolist() == [MIMIC_STAYS[k][2] for k in kept]
    np.testing.assert_allclose(X["age"], [MIMIC_STAYS[k][5] for k in kept])
    assert not any("truncated" in n for n in prepared.notes)


def test_split(mimic_dir: Path, prepared, expected_sizes) -> None:
    ds = datasets.load("icu_mortality", data_dir=mimic_dir)
    n_ood, n_id = int(prepared.ood_mask.sum()), int(prepared.id_mask.sum())
    assert (len(ds.train.y), len(ds.valid.y), len(ds.test.y)) == expected_sizes(n_id, n_ood)
    assert (len(ds.numerical), len(ds.categorical)) == (7490, 1)  # the paper's 7,491
    assert ds.categorical == ["ethnicity"]


def test_bad_files(tmp_path: Path) -> None:
    folder = tmp_path / "mimic_extract"
    folder.mkdir()
    (folder / "all_hourly_data.h5").write_bytes(b"\x89HDF\r\n\x1a\n truncated")
    with pytest.raises(datasets.DataFormatError, match="truncated or is not HDF5"):
        datasets.load("icu_mortality", data_dir=tmp_path)
    import pandas as pd

    (folder / "all_hourly_data.h5").unlink()
    pd.DataFrame({"a": [1]}).to_hdf(folder / "all_hourly_data.h5", key="codes")
    with pytest.raises(datasets.DataFormatError, match="no table 'patients'"):
        datasets.load("icu_mortality", data_dir=tmp_path)


def test_missing_pytables_is_a_clear_error(mimic_dir: Path, monkeypatch) -> None:
    monkeypatch.setattr(icu_mortality.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ImportError, match=r"PyTables.*adaptable-tta\[mimic\]"):
        datasets.load("icu_mortality", data_dir=mimic_dir)


def test_gzipped_h5_is_refused_clearly(tmp_path: Path) -> None:
    (tmp_path / "all_hourly_data.h5.gz").write_bytes(b"\x1f\x8b")
    with pytest.raises(datasets.DataFormatError, match="gunzip"):
        datasets.load("icu_mortality", data_dir=tmp_path)

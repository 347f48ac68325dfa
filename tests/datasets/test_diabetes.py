"""Diabetes (BRFSS): per-year renames, recodes, NA codes, target, filters, groupers, split."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from adaptable import datasets
from adaptable.datasets import diabetes

from .conftest import BRFSS_NAMES, brfss_table, write_brfss

pytest.importorskip("pyreadstat")


def _expected(year: int, n: int) -> pd.DataFrame:
    """The rows the loader must keep, with their expected values, by the spec's rules."""
    raw = brfss_table(year, n)
    names = BRFSS_NAMES[year]
    iyear = raw["IYEAR"].astype(int)
    keep = (
        raw[names["DIAB"]].isin([1, 2, 3, 4])
        & ~raw["PHYSHLTH"].isin([77, 99])
        & ~raw["MENTHLTH"].isin([77, 99])
        & (raw[names["DRNK"]] != 99900)
        & raw["_PRACE1"].isin([1, 2, 3, 4, 5, 6])
        & raw["_BMI5"].notna()
    )
    chol = raw[names["CHOL"]]
    chol = chol.where(~((iyear == 2015) & chol.between(1, 4)), chol + 1)
    out = pd.DataFrame(
        {
            "BMI5": raw["_BMI5"],
            "IYEAR": iyear,
            "PHYSHLTH": raw["PHYSHLTH"].replace(88, 0),
            "SEX": (raw[names["SEX"]] == 2).astype(int),  # female = 1 after code - 1
            "CHOL": chol.map(lambda v: "nan" if np.isnan(v) or v == 9 else str(v)),
            "TOLDHI": raw[names["TOLDHI"]].map(lambda v: "NOTASKED_MISSING" if np.isnan(v) else str(v)),
            "INCOME": raw[names["INCOME"]].map(lambda v: "nan" if v in (77, 99) else str(v)),
            "target": (raw[names["DIAB"]] == 1).astype(int),
            "ood": raw["_PRACE1"].isin([2, 3, 4, 5, 6]),
        }
    )  # fmt: skip
    return out[keep].reset_index(drop=True)


def test_rows_target_and_recodes(brfss_dir: Path) -> None:
    prepared = diabetes.prepare_diabetes(brfss_dir)
    expected = pd.concat([_expected(2015, 120), _expected(2021, 120)], ignore_index=True)
    X = prepared.features
    assert len(X) == len(expected)
    np.testing.assert_array_equal(X["BMI5"].to_numpy(), expected["BMI5"].to_numpy())
    assert X["IYEAR"].tolist() == expected["IYEAR"].tolist()
    assert X["PHYSHLTH"].tolist() == expected["PHYSHLTH"].tolist()
    assert X["SEX"].tolist() == expected["SEX"].tolist()
    # CHOL_CHK recode keys on the interview year: 2015 interviews shift 1-4 up by one.
    assert X["CHOL_CHK_PAST_5_YEARS"].tolist() == expected["CHOL"].tolist()
    assert X["TOLDHI"].tolist() == expected["TOLDHI"].tolist()  # 7 stays a level
    assert X["INCOME"].tolist() == expected["INCOME"].tolist()
    np.testing.assert_array_equal(prepared.target, expected["target"].to_numpy())
    np.testing.assert_array_equal(prepared.ood_mask, expected["ood"].to_numpy())
    assert "7.0" in set(X["SMOKDAY2"]) and "NOTASKED_MISSING" in set(X["SMOKDAY2"])
    assert "9.0" not in set(X["CVDSTRK3"]) and "nan" in set(X["CVDSTRK3"])
    assert "nan" in set(X["MICHD"])  # blanks become a level, rows kept


def test_split_kinds_years(brfss_dir: Path, expected_sizes) -> None:
    prepared = diabetes.prepare_diabetes(brfss_dir)
    ds = datasets.load("brfss_diabetes", data_dir=brfss_dir)
    n_ood = int(prepared.ood_mask.sum())
    n_id = int(prepared.id_mask.sum())
    assert n_id + n_ood == len(prepared.target)  # no race code outside 1-6 survives
    assert (len(ds.train.y), len(ds.valid.y), len(ds.test.y)) == expected_sizes(n_id, n_ood)
    assert (len(ds.numerical), len(ds.categorical)) == (6, 19)  # the paper's 25 = 6 + 19
    assert set(ds.numerical) == {"PHYSHLTH", "MENTHLTH", "BMI5", "DRNK_PER_WEEK", "IYEAR", "SEX"}
    assert "PRACE1" not in ds.features
    assert "BRFSS years used: 2015, 2021" in ds.notes[0]
    assert any("missing here: 2017, 2019" in n for n in ds.notes)
    assert [Path(s).name for s in ds.sources] == ["LLCP2015XPT.zip", "LLCP2021.XPT"]


def test_gzipped_xpt_and_zip_member_name(tmp_path: Path) -> None:
    path = write_brfss(tmp_path, 2015, 60, "zip")
    with zipfile.ZipFile(path) as archive:
        assert archive.namelist() == ["LLCP2015.XPT "]  # CDC's trailing space
    write_brfss(tmp_path, 2021, 60, "gz")
    assert [Path(s).name for s in diabetes.locate(tmp_path)] == [
        "LLCP2015XPT.zip",
        "LLCP2021.XPT.gz",
    ]
    ds = datasets.load("diabetes", data_dir=tmp_path)
    assert len(ds.train.y) > 0


def test_bad_files(tmp_path: Path) -> None:
    (tmp_path / "brfss").mkdir()
    with zipfile.ZipFile(tmp_path / "brfss" / "LLCP2015XPT.zip", "w") as archive:
        archive.writestr("README.txt", "not the data")
    with pytest.raises(datasets.DataFormatError, match="no LLCP2015.XPT member"):
        datasets.load("diabetes", data_dir=tmp_path)
    (tmp_path / "brfss" / "LLCP2015XPT.zip").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(datasets.DataFormatError, match="not a readable zip"):
        datasets.load("diabetes", data_dir=tmp_path)

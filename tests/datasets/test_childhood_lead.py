"""Childhood Lead (NHANES): multi-cycle discovery, filters, target, groupers, split."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from adaptable import datasets
from adaptable.datasets import childhood_lead

pytest.importorskip("pyreadstat")


def _expected_rows(year: int, n: int) -> pd.DataFrame:
    """The fixture's rows that survive the filters, computed from the same rules by hand."""
    i = np.arange(n)
    age = np.where(i % 10 == 9, 19.0, 1.0 + i % 18)
    pir = np.where(i % 7 == 6, np.nan, np.round(0.5 + (i % 8) * 0.4, 2))
    pir[i % 8 == 2] = 1.3
    has_lead = i % 9 != 8
    keep = has_lead & ~np.isnan(pir) & (age <= 18)
    lead = np.where(i % 4 == 0, 3.5, np.where(i % 4 == 1, 3.49, 0.8 + (i % 5)))
    if year >= 2011:
        race = np.where(i % 5 == 4, 6.0, 1.0 + i % 5)
        born = np.where(i % 6 == 5, "2.0", "1.0")
    else:
        race = 1.0 + i % 5
        born = np.full(n, "MISSING")
    return pd.DataFrame(
        {
            "RIAGENDR": (i % 2 == 0).astype(np.int64),  # code 1 (male) on even rows
            "RIDAGEYR": age.astype(np.int64),
            "DMDBORN4": born,
            "nhanes_year": year,
            "RIDRETH_merged": (race == 3).astype(np.int64),
            "target": (lead >= 3.5).astype(np.int64),
            "ood": pir <= 1.3,
        }
    )[keep].reset_index(drop=True)


def test_cycles_found_in_any_layout_and_recorded(nhanes_dir: Path) -> None:
    cycles, notes = childhood_lead.find_cycles(nhanes_dir)
    assert [c.year for c in cycles] == [2001, 2005, 2011, 2017]
    assert any("2015-2016 not used" in n and "PBCD_I" in n for n in notes)
    prepared = childhood_lead.prepare_childhood_lead(nhanes_dir)
    assert "NHANES cycles used: 2005-2006, 2011-2012, 2017-2018" in prepared.notes[0]
    # 2001-02: its two lead files share LBXBPB, so TableShift's join check drops the cycle.
    assert any("2001-2002 skipped" in n and "LBXBPB" in n for n in prepared.notes)
    names = sorted(Path(s).name for s in prepared.sources)
    assert names == sorted(
        ["demo_d.xpt", "PbCd_D.XPT", "DEMO_G.XPT.gz", "PBCD_G.xpt.gz", "DEMO_J.XPT", "PBCD_J.XPT"]
    )
    assert "2005-2006, 2011-2012, 2017-2018" in prepared.domain_split


def test_rows_target_groupers_kinds(nhanes_dir: Path) -> None:
    prepared = childhood_lead.prepare_childhood_lead(nhanes_dir)
    expected = pd.concat(
        [_expected_rows(2005, 30), _expected_rows(2011, 30), _expected_rows(2017, 30)],
        ignore_index=True,
    )
    table = prepared.features
    assert list(table.columns) == [
        "RIAGENDR", "RIDAGEYR", "DMDBORN4", "DMDEDUC2", "DMDMARTL", "nhanes_year",
        "RIDRETH_merged",
    ]  # fmt: skip
    assert len(table) == len(expected)
    for col in ["RIAGENDR", "RIDAGEYR", "DMDBORN4", "nhanes_year", "RIDRETH_merged"]:
        assert table[col].tolist() == expected[col].tolist(), col
    assert set(table["DMDEDUC2"]) == {"MISSING"} and set(table["DMDMARTL"]) == {"MISSING"}
    np.testing.assert_array_equal(prepared.target, expected["target"].to_numpy())
    np.testing.assert_array_equal(prepared.ood_mask, expected["ood"].to_numpy())


def test_split_kinds_and_sizes(nhanes_dir: Path, expected_sizes) -> None:
    prepared = childhood_lead.prepare_childhood_lead(nhanes_dir)
    ds = datasets.load("nhanes_lead", data_dir=nhanes_dir)
    n_ood = int(prepared.ood_mask.sum())
    sizes = expected_sizes(len(prepared.target) - n_ood, n_ood)
    assert (len(ds.train.y), len(ds.valid.y), len(ds.test.y)) == sizes
    assert ds.numerical == ["RIAGENDR", "RIDAGEYR", "nhanes_year", "RIDRETH_merged"]
    assert ds.categorical == ["DMDBORN4", "DMDEDUC2", "DMDMARTL"]
    for split in (ds.train, ds.valid, ds.test):
        assert split.y.dtype == np.int64
        assert all(split.X[c].dtype == object for c in ds.categorical)


def test_real_2017_cycle(data_dir: Path, tmp_path: Path) -> None:
    """datasets.md 3.5: the 2017-18 files alone give 1,554 children, 948 ID / 606 OOD."""
    found = {p.name.upper(): p for p in (data_dir / "nhanes").rglob("*") if p.is_file()}
    wanted = [n for n in found if n.startswith(("DEMO_J.", "PBCD_J."))]
    if len(wanted) < 2:
        pytest.skip("NHANES 2017-2018 DEMO_J / PBCD_J not in the data directory")
    for name in wanted:  # only this cycle, whatever else the data directory holds
        (tmp_path / "nhanes").mkdir(exist_ok=True)
        shutil.copy(found[name], tmp_path / "nhanes" / found[name].name)
    prepared = childhood_lead.prepare_childhood_lead(tmp_path)
    assert len(prepared.target) == 1554
    assert int(prepared.ood_mask.sum()) == 606
    ds = prepared.to_dataset()
    assert (len(ds.train.y), len(ds.valid.y), len(ds.test.y)) == (758, 95, 545)
    assert (len(ds.numerical), len(ds.categorical)) == (4, 3)
    assert int(prepared.target.sum()) == 7  # LBXBPB >= 3.5 (datasets.md says 6; see report)

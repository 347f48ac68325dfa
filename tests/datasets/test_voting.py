"""Voting (ANES): target, row filter, NA codes, groupers, string forms of codes, split."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from adaptable import datasets
from adaptable.datasets import voting

from .conftest import SOUTH_STATES, anes_table, write_anes


@pytest.fixture()
def prepared(anes_dir: Path) -> voting.PreparedTable:
    return voting.prepare_voting(anes_dir)


def test_row_filter_and_target(prepared) -> None:
    raw = anes_table()
    kept = raw[raw["VCF0702"] != " "].reset_index(drop=True)
    assert len(prepared.target) == len(kept) < len(raw)
    # 2 = voted -> 1; 1 (did not vote) and 0 (DK / NA) -> 0.
    np.testing.assert_array_equal(prepared.target, (kept["VCF0702"] == "2").astype(int))
    np.testing.assert_array_equal(prepared.ood_mask, (kept["VCF0112"] == "3").to_numpy())


def test_features_codes_and_groupers(prepared) -> None:
    raw = anes_table()
    kept = raw[raw["VCF0702"] != " "].reset_index(drop=True)
    X = prepared.features
    assert len(X.columns) == 54
    assert not {"VCF0702", "VCF0112", "VCF0006", "Version"} & set(X.columns)
    # Groupers: 1 for code 1 (male; white non-Hispanic), else 0 (blank too).
    assert X["VCF0104"].tolist() == (kept["VCF0104"] == "1").astype(int).tolist()
    assert X["VCF0105a"].tolist() == (kept["VCF0105a"] == "1").astype(int).tolist()
    # Thermometer NA codes: 98 / 99 -> NaN for VCF0428 only; VCF0218 keeps 98 as a number.
    expected_428 = [np.nan if v in ("98", "99") else float(v) for v in kept["VCF0428"]]
    np.testing.assert_array_equal(X["VCF0428"].to_numpy(), np.array(expected_428))
    assert 98 in set(X["VCF0218"])
    # dropna is disabled: rows with a missing age stay, as NaN in a float column.
    assert X["VCF0101"].dtype == np.float64 and X["VCF0101"].isna().sum() > 0
    assert X["VCF0004"].dtype == np.int64
    # Categoricals: blank -> "no answer"; a column with blanks parses as float ("1.0"),
    # one without as int ("1"); the declared NA codes of VCF9201 stay as levels.
    assert set(X["VCF0301"]) == {"1.0", "2.0", "3.0", "no answer"}
    assert set(X["VCF0302"]) == {"1", "2", "3", "4", "5"}
    assert "-9.0" in set(X["VCF9201"]) and "no answer" in set(X["VCF9201"])
    assert X["VCF0901b"].tolist() == [v if v != " " else "no answer" for v in kept["VCF0901b"]]


def test_split_sizes_kinds_and_regions(anes_dir: Path, prepared, expected_sizes) -> None:
    ds = datasets.load("voting", data_dir=anes_dir)
    n_ood = int(prepared.ood_mask.sum())
    sizes = expected_sizes(len(prepared.target) - n_ood, n_ood)
    assert (len(ds.train.y), len(ds.valid.y), len(ds.test.y)) == sizes
    assert (len(ds.numerical), len(ds.categorical)) == (8, 46)  # the paper's 54 = 8 + 46
    assert set(ds.numerical) == {
        "VCF0004", "VCF0101", "VCF0218", "VCF0224", "VCF0428", "VCF0429", "VCF0104", "VCF0105a",
    }  # fmt: skip
    # Test rows are the South; in-domain rows are not (the state column shows it).
    assert set(ds.test.X["VCF0901b"]) <= set(SOUTH_STATES)
    assert not set(ds.train.X["VCF0901b"]) & set(SOUTH_STATES)
    assert not set(ds.valid.X["VCF0901b"]) & set(SOUTH_STATES)
    assert ds.classes == ["did not vote", "voted"]


@pytest.mark.parametrize("compress", ["gz", "zip"])
def test_compressed_copies_read_the_same(tmp_path: Path, prepared, compress: str) -> None:
    write_anes(tmp_path, compress=compress)
    other = voting.prepare_voting(tmp_path)
    assert other.features.equals(prepared.features)
    np.testing.assert_array_equal(other.target, prepared.target)


def test_wrong_columns(tmp_path: Path) -> None:
    write_anes(tmp_path, anes_table().drop(columns=["VCF0702", "VCF0428"]))
    with pytest.raises(datasets.DataFormatError, match=r"VCF0702.*VCF0428|VCF0428.*VCF0702"):
        datasets.load("voting", data_dir=tmp_path)


def test_truncated_gzip(tmp_path: Path) -> None:
    path = write_anes(tmp_path, compress="gz")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(datasets.DataFormatError, match="truncated or corrupted"):
        datasets.load("voting", data_dir=tmp_path)

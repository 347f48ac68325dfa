"""HELOC (real file, via the `heloc` fixture) and Hospital Readmission (embedded copy) against
datasets.md sections 3-5 and the paper's table "dataset details"."""

from __future__ import annotations

import numpy as np
import pytest

from adaptable import datasets


def _counts(ds: datasets.ShiftDataset) -> list[tuple[int, int]]:
    """(rows, positives) of train / valid / test."""
    return [(len(s.y), int(s.y.sum())) for s in (ds.train, ds.valid, ds.test)]


def _check_common(ds: datasets.ShiftDataset) -> None:
    assert ds.n_classes == 2
    for split in (ds.train, ds.valid, ds.test):
        assert split.y.dtype == np.int64 and set(np.unique(split.y)) <= {0, 1}
        assert list(split.X.columns) == ds.features
        for col in ds.categorical:
            assert split.X[col].dtype == object
            assert split.X[col].map(type).eq(str).all(), col
        for col in ds.numerical:
            assert split.X[col].dtype in (np.int64, np.float64), col
    prior = ds.source_prior()
    assert prior.sum() == pytest.approx(1.0)
    y = np.concatenate([ds.train.y, ds.valid.y])
    assert prior[1] == pytest.approx(y.mean())


def test_heloc_sizes_balance_and_features(heloc: datasets.ShiftDataset) -> None:
    # Paper: 2,220 / 278 / 6,914; spec: 535 positives in train (24.1 %), 3,934 in test (56.9 %).
    assert _counts(heloc) == [(2220, 535), (278, 55), (6914, 3934)]
    assert (len(heloc.numerical), len(heloc.categorical)) == (20, 2)
    assert heloc.categorical == ["MaxDelq2PublicRecLast12M", "MaxDelqEver"]
    assert "ExternalRiskEstimate" not in heloc.features
    assert heloc.classes == ["Bad", "Good"]
    _check_common(heloc)
    # Categorical levels are the raw codes as float strings ("-9.0", "0.0", ...).
    assert all(v.endswith(".0") for v in set(heloc.train.X["MaxDelqEver"]))
    encoder = datasets.fit_encoder(heloc)
    assert encoder.n_features_out_ == 38  # 20 + 10 + 8


def test_readmission_sizes_balance_and_features(readmission: datasets.ShiftDataset) -> None:
    # Paper: 34,288 / 4,286 / 50,968; spec: 42.4 % / 42.2 % / 49.4 % readmitted.
    assert _counts(readmission) == [(34288, 14546), (4286, 1808), (50968, 25170)]
    assert (len(readmission.numerical), len(readmission.categorical)) == (12, 34)
    assert "admission_source_id" not in readmission.features
    assert not {"encounter_id", "patient_nbr", "readmitted"} & set(readmission.features)
    for col in ("race", "gender"):  # Grouper columns: 0/1 integers, numerical
        assert col in readmission.numerical
        assert set(readmission.train.X[col]) == {0, 1}
    _check_common(readmission)
    encoder = datasets.fit_encoder(readmission)
    assert encoder.n_features_out_ == 2097  # 12 numerical + 2,085 one-hot
    diag = [b for b in encoder.categorical_blocks if b.name.startswith("diag_")]
    assert sum(b.width for b in diag) == 1905


def test_summary_reports_sizes_and_rates(readmission: datasets.ShiftDataset) -> None:
    summary = readmission.summary()
    assert summary["train_rows"] == 34288 and summary["test_rows"] == 50968
    assert summary["test_positive_rate"] == pytest.approx(25170 / 50968)


def test_embedded_readmission_copy_gives_the_same_split(tmp_path, readmission) -> None:
    embedded = datasets.load("hospital_readmission", data_dir=tmp_path)  # empty directory
    assert "embedded" in embedded.sources[0]
    assert _counts(embedded) == _counts(readmission)
    assert embedded.test.X.equals(readmission.test.X)

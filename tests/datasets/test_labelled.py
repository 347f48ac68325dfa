"""The labelled tables the benchmark cuts: the Adult / COMPAS / German / CMC loaders and their
domain splits, on small files written in each publisher's exact schema, plus the real files
when present (every case's sizes: ``test_benchmark_cases.py``).
"""

from __future__ import annotations

import csv
import gzip
import io
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from adaptable import datasets
from adaptable.datasets import adult, cmc, compas, domain_cases, german
from adaptable.datasets._base import split_positions

from .conftest import split_sizes

# --------------------------------------------------------------------------- raw-file writers

ADULT_EDUCATION = [("HS-grad", 9), ("Bachelors", 13), ("11th", 7), ("Masters", 14)]
ADULT_MARITAL = ["Married-civ-spouse", "Never-married", "Divorced"]


def adult_row(i: int, test: bool) -> str:
    """One line of adult.data / adult.test (", "-separated, "?" for missing)."""
    education, number = ADULT_EDUCATION[i % 4]
    marital = ADULT_MARITAL[i % 3]
    workclass = ["?", "Private", "Private", "State-gov", "Self-emp-not-inc"][i % 5]
    occupation = "?" if i % 7 == 3 else ["Tech-support", "Sales", "Exec-managerial"][i % 3]
    country = ["United-States", "?", "Mexico", "United-States", "India", "United-States"][i % 6]
    income = ">50K" if i % 4 in (1, 3) else "<=50K"
    fields = [
        20 + i % 40, workclass, 10_000 + i, education, number, marital, occupation,
        "Husband" if marital == "Married-civ-spouse" else "Not-in-family",
        ["White", "Black"][i % 2], ["Male", "Female"][i % 2], 2174 if i % 9 == 0 else 0, 0,
        40, country, income + ("." if test else ""),
    ]  # fmt: skip
    return ", ".join(map(str, fields))


def write_adult(folder: Path, n_train: int = 60, n_test: int = 40, gz: bool = True) -> Path:
    """adult.data and adult.test (with its leading comment line) under ``extra/adult``."""
    where = folder / "extra" / "adult"
    where.mkdir(parents=True, exist_ok=True)
    data = "\n".join(adult_row(i, False) for i in range(n_train)) + "\n\n"
    test = "|1x3 Cross validator\n" + "\n".join(adult_row(n_train + i, True) for i in range(n_test))
    for name, text in (("adult.data", data), ("adult.test", test + "\n")):
        if gz:
            (where / f"{name}.gz").write_bytes(gzip.compress(text.encode()))
        else:
            (where / name).write_text(text)
    return folder


COMPAS_HEADER = (
    "id,name,first,last,compas_screening_date,sex,dob,age,age_cat,race,juv_fel_count,"
    "decile_score,juv_misd_count,juv_other_count,priors_count,days_b_screening_arrest,c_jail_in,"
    "c_jail_out,c_case_number,c_offense_date,c_arrest_date,c_days_from_compas,c_charge_degree,"
    "c_charge_desc,is_recid,r_case_number,r_charge_degree,r_days_from_arrest,r_offense_date,"
    "r_charge_desc,r_jail_in,r_jail_out,violent_recid,is_violent_recid,vr_case_number,"
    "vr_charge_degree,vr_offense_date,vr_charge_desc,type_of_assessment,decile_score,score_text,"
    "screening_date,v_type_of_assessment,v_decile_score,v_score_text,v_screening_date,in_custody,"
    "out_custody,priors_count,start,end,event,two_year_recid"
).split(",")
COMPAS_ROWS = 80


def compas_rows() -> list[dict[str, str]]:
    """ProPublica's columns; rows 5, 10, ... fail one of the four filters in turn."""
    rows = []
    for i in range(COMPAS_ROWS):
        row = dict.fromkeys(COMPAS_HEADER, "")
        row.update(
            {
                "id": str(i + 1),
                "name": f"person {i}",
                "sex": "Female" if i % 3 == 0 else "Male",
                "age": str(19 + i % 50),
                "race": ["African-American", "Caucasian", "Hispanic"][i % 3],
                "juv_fel_count": str(i % 2),
                "juv_misd_count": "0",
                "juv_other_count": str(int(i % 3 == 1)),
                "priors_count": str(i % 6),
                "days_b_screening_arrest": "-1",
                "c_charge_degree": "M" if i % 2 else "F",
                "is_recid": str(int(i % 4 == 0)),
                "decile_score": str(1 + i % 10),
                "score_text": "Low",
                "event": str(int(i % 4 == 0)),
                "two_year_recid": str(int(i % 4 == 0 or i % 7 == 0)),
            }
        )
        if i % 20 == 5:
            row["days_b_screening_arrest"] = "45"  # screened too late: filtered
        elif i % 20 == 10:
            row["is_recid"] = "-1"  # unknown outcome: filtered
        elif i % 20 == 15:
            row["c_charge_degree"] = "O"  # ordinary traffic offence: filtered
        elif i % 20 == 19:
            row["score_text"] = "N/A"  # no score: filtered
        elif i % 20 == 1:
            row["days_b_screening_arrest"] = ""  # missing: filtered (as ProPublica's filter)
        rows.append(row)
    return rows


def write_compas(folder: Path, rows: list[dict[str, str]] | None = None) -> Path:
    """compas-scores-two-years.csv.gz under ``extra/compas`` (its header repeats two names)."""
    rows = compas_rows() if rows is None else rows
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COMPAS_HEADER)
    for row in rows:
        # The duplicated names hold the same value in the publisher's file.
        writer.writerow([row[name] for name in COMPAS_HEADER])
    where = folder / "extra" / "compas"
    where.mkdir(parents=True, exist_ok=True)
    (where / "compas-scores-two-years.csv.gz").write_bytes(
        gzip.compress(buffer.getvalue().encode())
    )
    return folder


GERMAN_ROWS = 60


def german_line(i: int) -> str:
    """One line of german.data: 20 attributes (codes and integers) and the class (1 good, 2 bad)."""
    fields = [
        f"A1{1 + i % 4}", 6 + i % 30, f"A3{i % 5}", ["A40", "A41", "A43", "A46"][i % 4],
        1000 + 37 * i, f"A6{1 + i % 5}", f"A7{1 + i % 5}", 1 + i % 4, f"A9{1 + i % 4}", "A101",
        1 + i % 4, f"A12{1 + i % 4}", 20 + i % 50, "A143", ["A152", "A151", "A152", "A153"][i % 4],
        1 + i % 2, "A173", 1, ["A191", "A192"][i % 2], "A201", 2 if i % 3 == 0 else 1,
    ]  # fmt: skip
    return " ".join(map(str, fields))


def write_german(folder: Path, n: int = GERMAN_ROWS) -> Path:
    where = folder / "extra" / "german"
    where.mkdir(parents=True, exist_ok=True)
    (where / "german.data").write_text("\n".join(german_line(i) for i in range(n)) + "\n")
    return folder


CMC_ROWS = 90


def cmc_line(i: int) -> str:
    """One line of cmc.data: 9 attributes and the method (1-3)."""
    fields = [
        20 + i % 25, 1 + i % 4, 1 + (i + 1) % 4, i % 6, i % 2, (i // 2) % 2, 1 + i % 4, 1 + i % 4,
        int(i % 3 == 0), 1 + i % 3,
    ]  # fmt: skip
    return ",".join(map(str, fields))


def write_cmc(folder: Path, n: int = CMC_ROWS) -> Path:
    (folder / "cmc").mkdir(parents=True, exist_ok=True)
    (folder / "cmc" / "cmc.data").write_text("\n".join(cmc_line(i) for i in range(n)) + "\n")
    return folder


@pytest.fixture()
def extra_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data directory with all four small files; the publishers' row counts set to theirs."""
    monkeypatch.setattr(adult, "TRAIN_ROWS", 60)
    monkeypatch.setattr(adult, "TEST_ROWS", 40)
    monkeypatch.setattr(compas, "RAW_ROWS", COMPAS_ROWS)
    monkeypatch.setattr(german, "RAW_ROWS", GERMAN_ROWS)
    monkeypatch.setattr(cmc, "RAW_ROWS", CMC_ROWS)
    for write in (write_adult, write_compas, write_german, write_cmc):
        write(tmp_path)
    return tmp_path


def _all_rows(ds: datasets.ShiftDataset) -> int:
    return sum(len(s.y) for s in (ds.train, ds.valid, ds.id_test, ds.test))


def _check_kinds(ds: datasets.ShiftDataset) -> None:
    for split in (ds.train, ds.valid, ds.id_test, ds.test):
        assert split.y.dtype == np.int64
        assert set(np.unique(split.y)) <= set(range(ds.n_classes))
        assert list(split.X.columns) == ds.features
        for col in ds.categorical:
            assert split.X[col].dtype == object and split.X[col].map(type).eq(str).all(), col
        for col in ds.numerical:
            assert split.X[col].dtype in (np.int64, np.float64), col


# --------------------------------------------------------------------------- loaders


def test_adult_reads_both_files_labels_and_missing_values(extra_dir: Path) -> None:
    table = adult.prepare_adult(extra_dir)
    assert len(table.features) == 100
    assert list(table.features.columns) == [
        "age", "workclass", "education_num", "marital_status", "occupation", "relationship",
        "race", "sex", "capital_gain", "capital_loss", "hours_per_week", "native_country",
    ]  # fmt: skip
    # income >50K for i % 4 in (1, 3), in adult.data and in adult.test (written ">50K.")
    np.testing.assert_array_equal(table.target, [int(i % 4 in (1, 3)) for i in range(100)])
    assert table.classes == ["<=50K", ">50K"]
    assert table.features["workclass"].tolist()[:3] == ["nan", "Private", "Private"]
    assert (table.features["native_country"] == "nan").sum() == sum(i % 6 == 1 for i in range(100))
    assert table.features["age"].dtype == np.int64
    assert table.features["occupation"].map(type).eq(str).all()


def test_adult_plain_files_read_like_gzip(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(adult, "TRAIN_ROWS", 60)
    monkeypatch.setattr(adult, "TEST_ROWS", 40)
    plain = adult.prepare_adult(write_adult(tmp_path / "a", gz=False))
    packed = adult.prepare_adult(write_adult(tmp_path / "b", gz=True))
    pd.testing.assert_frame_equal(plain.features, packed.features)


def test_compas_applies_propublica_filters_and_keeps_no_score(extra_dir: Path) -> None:
    table = compas.prepare_compas(extra_dir)
    kept = [i for i in range(COMPAS_ROWS) if i % 20 not in (1, 5, 10, 15, 19)]
    assert len(table.features) == len(kept) == 60
    np.testing.assert_array_equal(
        table.target, [int(i % 4 == 0 or i % 7 == 0) for i in kept]
    )  # fmt: skip
    assert list(table.features.columns) == compas.FEATURES
    assert not {"decile_score", "score_text", "is_recid", "event"} & set(table.features.columns)
    assert set(table.features["c_charge_degree"]) == {"F", "M"}
    assert table.features["priors_count"].tolist()[:3] == [0, 2, 3]  # the first copy (rows 0, 2, 3)


def test_german_codes_numbers_and_bad_as_positive(extra_dir: Path) -> None:
    table = german.prepare_german(extra_dir)
    assert table.features.shape == (GERMAN_ROWS, 20)
    np.testing.assert_array_equal(table.target, [int(i % 3 == 0) for i in range(GERMAN_ROWS)])
    assert table.classes == ["good", "bad"]
    assert table.features["credit_amount"].tolist()[:2] == [1000, 1037]
    assert table.features["housing"].tolist()[:4] == ["A152", "A151", "A152", "A153"]
    assert set(table.features.select_dtypes("int64").columns) == set(german.NUMERICAL)


def test_cmc_three_classes_and_code_strings(extra_dir: Path) -> None:
    table = cmc.prepare_cmc(extra_dir)
    assert table.features.shape == (CMC_ROWS, 9)
    np.testing.assert_array_equal(table.target, [i % 3 for i in range(CMC_ROWS)])
    assert table.classes == ["no use", "long-term", "short-term"]
    assert table.features["wife_education"].tolist()[:5] == ["1", "2", "3", "4", "1"]
    assert table.features["media_exposure"].tolist()[:3] == ["1", "0", "0"]
    assert set(table.features.select_dtypes("int64").columns) == {"wife_age", "n_children"}


# --------------------------------------------------------------------------- clear errors


@pytest.mark.parametrize(
    "case, missing, publisher",
    [
        ("adult_education", "adult.data", "UCI"),
        ("compas_sex", "compas-scores-two-years.csv", "ProPublica"),
        ("german_housing", "german.data", "UCI"),
        ("cmc_media", "cmc.data", "UCI"),
    ],
)
def test_absent_file_names_it_and_where_to_get_it(tmp_path, case, missing, publisher) -> None:
    with pytest.raises(datasets.DataFileError, match=missing) as err:
        datasets.load(case, data_dir=tmp_path)
    assert publisher in str(err.value)
    status = datasets.available(tmp_path)[case]
    assert status["present"] is False and status["group"] == "generality"


def test_adult_test_file_missing_is_named(tmp_path: Path) -> None:
    write_adult(tmp_path)
    (tmp_path / "extra" / "adult" / "adult.test.gz").unlink()
    with pytest.raises(datasets.DataFileError, match="adult.test"):
        adult.prepare_adult(tmp_path)


def test_wrong_row_counts_are_format_errors(tmp_path: Path) -> None:
    # No monkeypatch: the small files are not the publishers' sizes.
    for write, prepare, size in (
        (write_adult, adult.prepare_adult, "32,561"),
        (write_compas, compas.prepare_compas, "7,214"),
        (write_german, german.prepare_german, "1,000"),
        (write_cmc, cmc.prepare_cmc, "1,473"),
    ):
        write(tmp_path)
        with pytest.raises(datasets.DataFormatError, match=size):
            prepare(tmp_path)


def test_bad_labels_and_columns_are_format_errors(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(german, "RAW_ROWS", GERMAN_ROWS)
    monkeypatch.setattr(cmc, "RAW_ROWS", CMC_ROWS)
    monkeypatch.setattr(compas, "RAW_ROWS", COMPAS_ROWS)
    write_german(tmp_path)
    path = tmp_path / "extra" / "german" / "german.data"
    path.write_text(path.read_text().replace(" 2\n", " 3\n", 1))
    with pytest.raises(datasets.DataFormatError, match=r"1 \(good\) or 2"):
        german.prepare_german(tmp_path)
    (tmp_path / "cmc").mkdir()
    (tmp_path / "cmc" / "cmc.data").write_text("\n".join(cmc_line(i)[:-2] for i in range(90)))
    with pytest.raises(datasets.DataFormatError, match="9 attributes and the class"):
        cmc.prepare_cmc(tmp_path)
    rows = compas_rows()
    for row in rows:
        del row["two_year_recid"]
    header = [c for c in COMPAS_HEADER if c != "two_year_recid"]
    text = "\n".join([",".join(header)] + [",".join(r[c] for c in header) for r in rows])
    (tmp_path / "compas-scores-two-years.csv").write_text(text)
    with pytest.raises(datasets.DataFormatError, match="two_year_recid"):
        compas.prepare_compas(tmp_path)


def test_adult_bad_income_is_a_format_error(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(adult, "TRAIN_ROWS", 60)
    monkeypatch.setattr(adult, "TEST_ROWS", 40)
    write_adult(tmp_path, gz=False)
    path = tmp_path / "extra" / "adult" / "adult.data"
    path.write_text(path.read_text().replace("<=50K", "50K-or-less", 1))
    with pytest.raises(datasets.DataFormatError, match="50K-or-less"):
        adult.prepare_adult(tmp_path)


# --------------------------------------------------------------------------- the cases


def test_case_split_follows_the_domains_and_tableshift_fractions(extra_dir: Path) -> None:
    ds = datasets.load("adult_country", data_dir=extra_dir)
    table = adult.prepare_adult(extra_dir)
    country = table.features["native_country"]
    n_first, n_second = int((country == "United-States").sum()), int((~country.isin(
        ["United-States", "nan"])).sum())  # fmt: skip
    train, valid, ood = split_sizes(n_first, n_second)
    assert (len(ds.train.y), len(ds.valid.y), len(ds.test.y)) == (train, valid, ood)
    assert len(ds.id_test.y) == n_first - train - valid
    assert _all_rows(ds) < len(table.features)  # the unknown-country rows are in neither domain
    assert "native_country" not in ds.features  # the split column is dropped
    # The rows are those of TableShift's split over the positions of each domain.
    parts = split_positions(
        (~country.isin(["United-States", "nan"])).to_numpy(), (country == "United-States").to_numpy()
    )  # fmt: skip
    np.testing.assert_array_equal(ds.train.y, table.target[parts.train])
    np.testing.assert_array_equal(ds.test.y, table.target[parts.ood_test])
    np.testing.assert_array_equal(ds.id_test.y, table.target[parts.id_test])
    _check_kinds(ds)


@pytest.mark.parametrize(
    "case, column, kept, first, dropped_too",
    [
        ("adult_education", "education_num", True, lambda v: v <= 9, ()),
        ("adult_married", "marital_status", False, None, ("relationship",)),
        ("adult_private", "workclass", False, None, ()),
        ("compas_sex", "sex", False, None, ()),
        ("compas_charge", "c_charge_degree", False, None, ()),
        ("german_housing", "housing", False, None, ()),
        ("german_purpose", "purpose", False, None, ()),
        ("cmc_education", "wife_education", False, None, ()),
        ("cmc_media", "media_exposure", False, None, ()),
    ],
)
def test_each_case_drops_or_keeps_its_column(
    extra_dir: Path, case, column, kept, first, dropped_too
) -> None:
    ds = datasets.load(case, data_dir=extra_dir)
    assert (column in ds.features) is kept
    assert not set(dropped_too) & set(ds.features)
    if kept:  # the kept split column shows the two domains
        for split in (ds.train, ds.valid, ds.id_test):
            assert split.X[column].map(first).all()
        assert not ds.test.X[column].map(first).any()
    assert case in ds.domain_split or column in ds.domain_split
    _check_kinds(ds)


def test_case_domains_are_the_described_ones(extra_dir: Path) -> None:
    german_table = german.prepare_german(extra_dir).features
    ds = datasets.load("german_purpose", data_dir=extra_dir)
    n_car = int(german_table["purpose"].isin(["A40", "A41"]).sum())
    assert len(ds.train.y) + len(ds.valid.y) + len(ds.id_test.y) == n_car
    assert len(ds.test.y) == (GERMAN_ROWS - n_car) - math.ceil(0.1 * (GERMAN_ROWS - n_car))
    media = datasets.load("cmc_media", data_dir=extra_dir)
    assert media.n_classes == 3
    n_good = sum(int(i % 3 != 0) for i in range(CMC_ROWS))  # media_exposure 0 = good
    assert len(media.train.y) + len(media.valid.y) + len(media.id_test.y) == n_good


def test_changed_raw_file_is_read_again(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(german, "RAW_ROWS", GERMAN_ROWS)
    write_german(tmp_path)
    before = datasets.load("german_housing", data_dir=tmp_path)
    path = tmp_path / "extra" / "german" / "german.data"
    path.write_text(path.read_text().replace("A152", "A151"))  # nobody owns a home any more
    with pytest.raises(datasets.DataFormatError, match="in-domain"):
        datasets.load("german_housing", data_dir=tmp_path)
    assert len(before.train.y) > 0


# --------------------------------------------------------------------------- real files


def test_real_base_tables_have_the_documented_rows(data_dir: Path) -> None:
    expected = {"adult": (48_842, 0.2393), "compas": (6_172, 0.4551), "german": (1_000, 0.3)}
    for name, (rows, positive_rate) in expected.items():
        try:
            table = domain_cases.base(name).prepare(data_dir)
        except datasets.DataFileError as err:
            pytest.skip(f"raw file of {name} absent: {err}")
        assert len(table.features) == rows
        assert table.target.mean() == pytest.approx(positive_rate, abs=1e-4)
    try:
        table = cmc.prepare_cmc(data_dir)
    except datasets.DataFileError as err:
        pytest.skip(f"cmc.data absent: {err}")
    assert np.bincount(table.target).tolist() == [629, 333, 511]  # MANIFEST.md's counts


def test_cli_lists_the_cases_apart_from_the_paper_tasks(tmp_path: Path, capsys) -> None:
    from adaptable.cli import main

    write_german(tmp_path)
    assert main(["datasets", "--data-dir", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == [f"data folder: {tmp_path} (--data-dir)", ""]
    lines = lines[2:]
    assert lines[0] == "[paper]"
    starts = [
        lines.index(f"[{group}]")
        for group in ("generality", "development", "confirmation", "holdout", "sealed", "reserve")
    ]
    assert all(lines[start - 1] == "" for start in starts)
    # the last group ends where the other names begin
    ends = [*(start - 1 for start in starts[1:]), lines.index("[other names]") - 1]
    for start, end, tasks in zip(
        starts,
        ends,
        (
            datasets.GENERALITY_TASKS,
            datasets.DEVELOPMENT_TASKS,
            datasets.CONFIRMATION_TASKS,
            datasets.HOLDOUT_TASKS,
            datasets.SEALED_TASKS,
            datasets.RESERVE_TASKS,
        ),
        strict=True,
    ):
        assert [line.split()[0] for line in lines[start + 1 : end]] == list(tasks)
    assert lines[lines.index("[generality]") + 1].split() == ["heloc_burden", "absent"]
    assert next(line for line in lines if line.startswith("german_housing")).endswith("present")

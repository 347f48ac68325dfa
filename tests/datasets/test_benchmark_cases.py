"""The benchmark's case records (``datasets/data/benchmark_cases.csv``): how a record and a
split rule read, and every case cut from the publishers' files with the sizes its record
documents (skipped where a raw file is absent)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from adaptable import datasets
from adaptable.datasets import benchmark_cases
from adaptable.datasets.benchmark_cases import CASES, ROLES, by_role, read_cases, split_rule

from .conftest import assert_case_as_documented, load_case_or_skip

HEADER = (
    "name,role,base,title,column,kept,also_dropped,first,first_rule,second,second_rule,"
    "label_shift,label_shift_order,train_rows,valid_rows,id_test_rows,test_rows,class_balance\n"
)
ROW = (
    "toy,development,german,Toy,age,yes,a|b,age <= 30,<= 30,age > 30,,binary,2,8,1,1,5,0.5 -> 0.4\n"
)


def test_a_record_reads_every_column() -> None:
    case = read_cases(HEADER + ROW)["toy"]
    assert (case.role, case.base, case.column, case.kept) == ("development", "german", "age", True)
    assert case.also_dropped == ("a", "b") and case.dropped == ["a", "b"]
    assert (case.label_shift, case.label_shift_order) == ("binary", 2)
    assert case.sizes == (8, 1, 1, 5) and case.is_domain_case
    frame = pd.DataFrame({"age": [25, 30, 31, None]})
    assert case.in_first(frame).tolist() == [True, True, False, False]
    # no second rule: the second domain is every row not in the first (a missing age included)
    assert case.in_second(frame).tolist() == [False, False, True, True]
    assert case.description() == (
        "age <= 30 (in-domain: train/valid) vs age > 30 (test); split column age kept as a "
        "feature; also dropped: a, b"
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ((",development,", ",tuning,"), "unknown role 'tuning'"),
        ((",binary,", ",ternary,"), "unknown label_shift"),
        ((",yes,", ",maybe,"), "kept must be yes or no"),
        ((",<= 30,", ",about 30,"), "split rule 'about 30'"),
    ],
)
def test_a_bad_record_is_refused(change: tuple[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        read_cases(HEADER + ROW.replace(*change))


def test_a_name_given_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="'toy' is listed twice"):
        read_cases(HEADER + ROW + ROW)


@pytest.mark.parametrize(
    ("rule", "values", "expected"),
    [
        ("in A|C", ["A", "B", "C", "nan"], [True, False, True, False]),
        ("not in A|nan", ["A", "B", "C", "nan"], [False, True, True, False]),
        ("== 0", [0, 1, -9, None], [True, False, False, False]),
        ("<= 2", [2, 3, -9, None], [True, False, True, False]),
        ("> 2", [2, 3, -9, None], [False, True, False, False]),
        ("0..2", [0, 2, 3, -9], [True, True, False, False]),
        ("1..inf", [0, 1, 400, -8], [False, True, True, False]),
        ("== -7", [-7, -8, 0, 7], [True, False, False, False]),
    ],
)
def test_split_rules_select_the_rows_they_say(rule: str, values: list, expected: list) -> None:
    frame = pd.DataFrame({"c": values})
    assert split_rule("c", rule)(frame).tolist() == expected


def test_numbers_stored_as_text_compare_as_numbers() -> None:
    frame = pd.DataFrame({"c": ["10", "9", "x"]})
    assert split_rule("c", "> 9")(frame).tolist() == [True, False, False]


def test_every_role_is_documented_and_every_case_has_one() -> None:
    assert list(ROLES) == list(dict.fromkeys(case.role for case in CASES.values()))
    assert all(ROLES[role] for role in ROLES)
    assert sum(len(by_role(role)) for role in ROLES) == len(CASES) == 75
    with pytest.raises(KeyError, match="unknown role 'tuning'"):
        by_role("tuning")


def test_only_the_papers_natural_shifts_have_no_base() -> None:
    assert [c.name for c in CASES.values() if not c.is_domain_case] == [
        "heloc",
        "hospital_readmission",
    ]
    assert len(benchmark_cases.domain_splits()) == 73


@pytest.mark.parametrize("role", list(ROLES))
def test_each_role_has_three_binary_label_shifts_then_at_most_one_dirichlet(role: str) -> None:
    shifted = sorted((c for c in by_role(role) if c.label_shift), key=lambda c: c.label_shift_order)
    kinds = [c.label_shift for c in shifted]
    assert kinds[:3] == ["binary"] * 3 and kinds[3:] in ([], ["dirichlet"])
    assert [c.label_shift_order for c in shifted] == list(range(1, len(shifted) + 1))
    for case in shifted:  # a Dirichlet draw needs three classes: CMC's
        assert (case.label_shift == "dirichlet") == case.name.startswith("cmc")


@pytest.mark.parametrize("index", range(len(ROLES)), ids=list(ROLES))
def test_no_case_cuts_along_a_column_an_earlier_role_cuts(index: int) -> None:
    # a design chosen on one role is checked on the next: no two roles share a split column
    roles = list(ROLES)
    base_of = {"heloc": "heloc", "hospital_readmission": "hospital_readmission"}
    used = {
        (case.base or base_of[case.name], case.column)
        for role in roles[:index]
        for case in by_role(role)
    }
    for case in by_role(roles[index]):
        key = (case.base or base_of[case.name], case.column)
        assert key not in used, case.name
        used.add(key)


@pytest.mark.parametrize(
    ("case", "column", "first", "second"),
    [
        # HELOC's negative special codes (-9, -8, -7) belong to neither domain.
        ("heloc_history", "MSinceOldestTradeOpen", [121, 400], [0, 120]),
        ("heloc_file_age", "AverageMInFile", [61, 400], [0, 60]),
        ("heloc_balance", "PercentTradesWBalance", [0, 67], [68, 100]),
        ("heloc_recent_trade", "MSinceMostRecentTradeOpen", [0, 5], [6, 200]),
        ("heloc_satisfactory", "NumSatisfactoryTrades", [20, 80], [0, 19]),
        ("heloc_open_trades", "NumTradesOpeninLast12M", [0, 1], [2, 19]),
        ("heloc_install_balance", "NumInstallTradesWBalance", [0, 2], [3, 23]),
        ("heloc_revolving", "NumRevolvingTradesWBalance", [0, 3], [4, 32]),
        ("heloc_install_burden", "NetFractionInstallBurden", [0, 70], [71, 471]),
    ],
)
def test_helocs_special_codes_are_in_neither_domain(
    case: str, column: str, first: list[int], second: list[int]
) -> None:
    spec = CASES[case]
    frame = pd.DataFrame({column: [-9, -8, -7, *first, *second]})
    assert spec.in_first(frame).tolist() == [False] * 3 + [True] * 2 + [False] * 2
    assert spec.in_second(frame).tolist() == [False] * 5 + [True] * 2


def test_heloc_inquiry_recency_puts_no_record_in_neither_domain() -> None:
    # -9 (no bureau record) and -8 (no usable inquiries) in neither domain; -7 (condition not
    # met: no inquiry) is the second domain; months since the last inquiry, 0 included, the first
    spec = CASES["heloc_inquiry_recency"]
    frame = pd.DataFrame({"MSinceMostRecentInqexcl7days": [-9, -8, -7, 0, 1, 24]})
    assert spec.in_first(frame).tolist() == [False, False, False, True, True, True]
    assert spec.in_second(frame).tolist() == [False, False, True, False, False, False]


def test_adult_country_leaves_an_unknown_country_in_neither_domain() -> None:
    frame = pd.DataFrame({"native_country": ["United-States", "Mexico", "nan"]})
    assert CASES["adult_country"].in_first(frame).tolist() == [True, False, False]
    assert CASES["adult_country"].in_second(frame).tolist() == [False, True, False]


def _shares(y: np.ndarray, n_classes: int) -> str:
    shares = np.bincount(y, minlength=n_classes) / len(y)
    return f"{shares[1]:.2f}" if n_classes == 2 else "/".join(f"{s:.2f}" for s in shares)


@pytest.mark.parametrize("name", list(CASES))
def test_real_files_give_each_records_sizes_and_balance(data_dir: Path, name: str) -> None:
    case = CASES[name]
    if case.is_domain_case:
        assert_case_as_documented(name, case, data_dir, case.sizes)
    ds, sizes = load_case_or_skip(name, data_dir)
    assert sizes == case.sizes
    source = np.concatenate([ds.train.y, ds.valid.y])
    balance = f"{_shares(source, ds.n_classes)} -> {_shares(ds.test.y, ds.n_classes)}"
    assert balance == case.class_balance


@pytest.mark.parametrize(
    ("case", "file"),
    [
        ("compas_race", "compas-scores-two-years"),
        ("german_employment", "german.data"),
        ("german_savings", "german.data"),
        ("german_telephone", "german.data"),
        ("heloc_open_trades", "heloc"),
    ],
)
def test_an_absent_file_is_named_with_where_to_get_it(tmp_path: Path, case: str, file: str):
    with pytest.raises(datasets.DataFileError, match=file):
        datasets.load(case, data_dir=tmp_path)

"""The holdout benchmark's domain splits: registered apart, disjoint from every earlier group,
and cut as documented from the publishers' files."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from adaptable import datasets
from adaptable.datasets import domain_cases

from .conftest import assert_case_as_documented

#: (train, valid, id_test, test) rows of each case from the publishers' files
REAL_SIZES = {
    "heloc_file_age": (5605, 701, 701, 2577),
    "heloc_balance": (4107, 513, 514, 4247),
    "heloc_recent_trade": (3722, 465, 466, 4696),
    "adult_capital_loss": (37248, 4656, 4656, 2053),
    "compas_misdemeanour": (4656, 582, 582, 316),
    "compas_felony": (4771, 596, 597, 187),
    "german_savings": (482, 60, 61, 357),
    "german_duration": (436, 55, 55, 408),
    "german_property": (411, 51, 52, 437),
    "cmc_religion": (1002, 125, 126, 198),
    "cmc_husband_occupation": (489, 61, 62, 774),
}


def test_documented_sizes_cover_every_case() -> None:
    assert list(REAL_SIZES) == list(datasets.HOLDOUT_TASKS)


@pytest.mark.parametrize(
    ("case", "column", "first", "second"),
    [
        # HELOC's negative special codes (-9, -8, -7) belong to neither domain.
        ("heloc_file_age", "AverageMInFile", [61, 400], [0, 60]),
        ("heloc_balance", "PercentTradesWBalance", [0, 67], [68, 100]),
        ("heloc_recent_trade", "MSinceMostRecentTradeOpen", [0, 5], [6, 200]),
    ],
)
def test_helocs_special_codes_are_in_neither_domain(
    case: str, column: str, first: list[int], second: list[int]
) -> None:
    spec = domain_cases.HOLDOUT_CASES[case]
    frame = pd.DataFrame({column: [-9, -8, -7, *first, *second]})
    assert spec.in_first(frame).tolist() == [False] * 3 + [True] * 2 + [False] * 2
    assert spec.in_second(frame).tolist() == [False] * 5 + [True] * 2


def test_an_absent_file_is_named_with_where_to_get_it(tmp_path: Path) -> None:
    with pytest.raises(datasets.DataFileError, match="german.data"):
        datasets.load("german_savings", data_dir=tmp_path)


@pytest.mark.parametrize("case", list(REAL_SIZES))
def test_real_files_give_the_documented_sizes_and_domains(data_dir: Path, case: str) -> None:
    assert_case_as_documented(case, domain_cases.HOLDOUT_CASES[case], data_dir, REAL_SIZES[case])

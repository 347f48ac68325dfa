"""The confirmation benchmark's domain splits: registered apart, disjoint from the generality
and development cases, and cut as documented from the publishers' files."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from adaptable import datasets
from adaptable.datasets import domain_cases

from .conftest import assert_case_as_documented

#: (train, valid, id_test, test) rows of each case from the publishers' files
REAL_SIZES = {
    "heloc_history": (6211, 776, 777, 1681),
    "heloc_utilization": (3446, 431, 431, 4482),
    "heloc_installments": (3571, 446, 447, 4866),
    "adult_occupation": (19855, 2482, 2482, 21620),
    "adult_capital": (35845, 4481, 4481, 3631),
    "compas_juvenile": (4568, 571, 572, 414),
    "german_employment": (341, 43, 43, 515),
    "german_history": (424, 53, 53, 423),
    "german_amount": (429, 54, 54, 416),
    "cmc_living": (547, 68, 69, 710),
    "cmc_husband_education": (719, 90, 90, 516),
}


def test_documented_sizes_cover_every_case() -> None:
    assert list(REAL_SIZES) == list(datasets.CONFIRMATION_TASKS)


def test_between_keeps_helocs_special_codes_out_of_both_domains() -> None:
    frame = pd.DataFrame({"MSinceOldestTradeOpen": [-9, -8, 0, 120, 121, 400]})
    case = domain_cases.CONFIRMATION_CASES["heloc_history"]
    assert case.in_first(frame).tolist() == [False, False, False, False, True, True]
    assert case.in_second(frame).tolist() == [False, False, True, True, False, False]


def test_an_absent_file_is_named_with_where_to_get_it(tmp_path: Path) -> None:
    with pytest.raises(datasets.DataFileError, match="german.data"):
        datasets.load("german_employment", data_dir=tmp_path)


@pytest.mark.parametrize("case", list(REAL_SIZES))
def test_real_files_give_the_documented_sizes_and_domains(data_dir: Path, case: str) -> None:
    assert_case_as_documented(
        case, domain_cases.CONFIRMATION_CASES[case], data_dir, REAL_SIZES[case]
    )

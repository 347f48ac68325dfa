"""The development benchmark's domain splits: registered apart, disjoint from the generality
cases, and cut as documented from the publishers' files."""

from __future__ import annotations

from pathlib import Path

import pytest

from adaptable import datasets
from adaptable.datasets import domain_cases

from .conftest import assert_case_as_documented

#: (train, valid, id_test, test) rows of each case from the publishers' files
REAL_SIZES = {
    "heloc_inquiries": (3139, 392, 393, 5881),
    "heloc_trades": (4309, 539, 539, 4564),
    "adult_sex": (26120, 3265, 3265, 14572),
    "adult_age": (17876, 2235, 2235, 23846),
    "adult_race": (33409, 4176, 4177, 6372),
    "adult_hours": (27592, 3449, 3449, 12916),
    "compas_race": (2540, 317, 318, 2697),
    "compas_age": (2352, 294, 295, 2907),
    "compas_priors": (2571, 321, 322, 2662),
    "german_age": (471, 59, 59, 369),
    "german_checking": (315, 39, 40, 545),
    "cmc_age": (624, 78, 78, 623),
    "cmc_working": (883, 110, 111, 332),
    "cmc_children": (519, 65, 65, 741),
}


def test_documented_sizes_cover_every_case() -> None:
    assert list(REAL_SIZES) == list(datasets.DEVELOPMENT_TASKS)


def test_an_absent_file_is_named_with_where_to_get_it(tmp_path: Path) -> None:
    with pytest.raises(datasets.DataFileError, match="compas-scores-two-years"):
        datasets.load("compas_race", data_dir=tmp_path)


@pytest.mark.parametrize("case", list(REAL_SIZES))
def test_real_files_give_the_documented_sizes_and_domains(data_dir: Path, case: str) -> None:
    assert_case_as_documented(
        case, domain_cases.DEVELOPMENT_CASES[case], data_dir, REAL_SIZES[case]
    )

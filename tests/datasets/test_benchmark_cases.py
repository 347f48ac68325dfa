"""The development, confirmation, holdout, sealed and reserve benchmarks' domain splits, cut as
documented from the publishers' files (the group checks: ``test_case_groups.py``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from adaptable import datasets
from adaptable.datasets import domain_cases, registry

from .conftest import assert_case_as_documented

#: per group, (train, valid, id_test, test) rows of each case from the publishers' files
REAL_SIZES = {
    "development": {
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
    },
    "confirmation": {
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
    },
    "holdout": {
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
    },
    "sealed": {
        "readmission_inpatient": (52649, 6581, 6582, 30312),
        "readmission_stay": (49332, 6167, 6167, 34044),
        "readmission_insulin": (37196, 4650, 4650, 47697),
        "readmission_payer": (25284, 3160, 3161, 61099),
        "heloc_satisfactory": (3997, 500, 500, 4386),
        "heloc_open_trades": (4028, 504, 504, 4351),
        "heloc_install_balance": (4408, 551, 552, 3149),
        "german_job": (622, 78, 78, 199),
        "german_installment_rate": (293, 37, 37, 569),
        "german_telephone": (323, 40, 41, 536),
        "german_existing_credits": (506, 63, 64, 330),
    },
    "reserve": {
        "readmission_age": (53584, 6698, 6699, 29260),
        "readmission_medications": (43176, 5397, 5398, 40969),
        "readmission_specialty": (39012, 4877, 4877, 45654),
        "readmission_diabetes_med": (61193, 7649, 7650, 20700),
        "readmission_procedures": (36400, 4550, 4550, 48593),
        "heloc_revolving": (3960, 495, 496, 4287),
        "heloc_inquiry_recency": (6032, 754, 754, 1669),
        "heloc_install_burden": (2343, 293, 293, 3170),
        "german_personal_status": (438, 55, 55, 406),
        "german_other_plans": (651, 81, 82, 167),
        "german_residence": (350, 44, 44, 505),
    },
}


@pytest.mark.parametrize("group", list(REAL_SIZES))
def test_documented_sizes_cover_every_case(group: str) -> None:
    assert list(REAL_SIZES[group]) == list(registry.GROUPS[group])


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
    spec = domain_cases.ALL_CASES[case]
    frame = pd.DataFrame({column: [-9, -8, -7, *first, *second]})
    assert spec.in_first(frame).tolist() == [False] * 3 + [True] * 2 + [False] * 2
    assert spec.in_second(frame).tolist() == [False] * 5 + [True] * 2


def test_heloc_inquiry_recency_puts_no_record_in_neither_domain() -> None:
    # -9 (no bureau record) and -8 (no usable inquiries) in neither domain; -7 (condition not
    # met: no inquiry) is the second domain; months since the last inquiry, 0 included, the first
    spec = domain_cases.ALL_CASES["heloc_inquiry_recency"]
    frame = pd.DataFrame({"MSinceMostRecentInqexcl7days": [-9, -8, -7, 0, 1, 24]})
    assert spec.in_first(frame).tolist() == [False, False, False, True, True, True]
    assert spec.in_second(frame).tolist() == [False, False, True, False, False, False]


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


@pytest.mark.parametrize(
    ("group", "case"), [(g, c) for g, sizes in REAL_SIZES.items() for c in sizes]
)
def test_real_files_give_the_documented_sizes_and_domains(
    data_dir: Path, group: str, case: str
) -> None:
    spec = domain_cases.ALL_CASES[case]
    assert_case_as_documented(case, spec, data_dir, REAL_SIZES[group][case])

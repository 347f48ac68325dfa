"""The benchmark case groups (generality, development, confirmation, holdout, sealed, reserve): each
registered apart and in its order, disjoint from every other task, and none cutting a data set
along a column that an earlier group (or the paper's two natural shifts) cuts: a design chosen
on one group is checked on the next."""

from __future__ import annotations

from pathlib import Path

import pytest

from adaptable import datasets
from adaptable.datasets import domain_cases, registry

#: (group, its cases, its registered task names), in the order designs pass through them
GROUPS = [
    ("generality", domain_cases.CASES, datasets.GENERALITY_TASKS),
    ("development", domain_cases.DEVELOPMENT_CASES, datasets.DEVELOPMENT_TASKS),
    ("confirmation", domain_cases.CONFIRMATION_CASES, datasets.CONFIRMATION_TASKS),
    ("holdout", domain_cases.HOLDOUT_CASES, datasets.HOLDOUT_TASKS),
    ("sealed", domain_cases.SEALED_CASES, datasets.SEALED_TASKS),
    ("reserve", domain_cases.RESERVE_CASES, datasets.RESERVE_TASKS),
]
#: the split columns of the paper's natural shifts (tasks of their own, not domain cases)
PAPER_SPLITS = {("heloc", "ExternalRiskEstimate"), ("hospital_readmission", "admission_source_id")}


@pytest.mark.parametrize(("group", "cases", "tasks"), GROUPS, ids=[g for g, *_ in GROUPS])
def test_each_group_is_listed_apart_in_its_order(group, cases, tasks, tmp_path: Path) -> None:
    assert list(tasks) == list(cases)
    status = datasets.available(tmp_path)
    assert [n for n, i in status.items() if i["group"] == group] == list(tasks)
    others = set(datasets.TASKS).union(*(set(t) for g, _, t in GROUPS if g != group))
    assert not set(tasks) & others
    assert set(cases.items()) <= set(domain_cases.ALL_CASES.items())


def test_all_cases_are_the_six_groups() -> None:
    assert list(domain_cases.CASE_GROUPS) == [group for group, *_ in GROUPS]
    assert list(registry.GROUPS) == ["paper", *(group for group, *_ in GROUPS)]
    assert domain_cases.ALL_CASES == {
        **domain_cases.CASES,
        **domain_cases.DEVELOPMENT_CASES,
        **domain_cases.CONFIRMATION_CASES,
        **domain_cases.HOLDOUT_CASES,
        **domain_cases.SEALED_CASES,
        **domain_cases.RESERVE_CASES,
    }


@pytest.mark.parametrize("index", range(len(GROUPS)), ids=[g for g, *_ in GROUPS])
def test_no_case_cuts_along_a_column_an_earlier_group_cuts(index: int) -> None:
    used = set(PAPER_SPLITS)
    for _, cases, _ in GROUPS[:index]:
        used |= {(c.base, c.column) for c in cases.values()}
    for case in GROUPS[index][1].values():
        assert (case.base, case.column) not in used, case.name

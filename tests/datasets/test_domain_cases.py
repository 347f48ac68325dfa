"""Domain splits as the loader cuts them: each role's cases registered apart and in the order
of ``benchmark_cases.csv``, disjoint from every other task, and each data set a case cuts
named with its loader."""

from __future__ import annotations

from pathlib import Path

import pytest

from adaptable import datasets
from adaptable.datasets import domain_cases, registry
from adaptable.datasets.benchmark_cases import ROLES, by_role

#: (role, its registered task names under the suites' old names)
GROUPS = [
    ("generality", datasets.GENERALITY_TASKS),
    ("development", datasets.DEVELOPMENT_TASKS),
    ("confirmation", datasets.CONFIRMATION_TASKS),
    ("holdout", datasets.HOLDOUT_TASKS),
    ("sealed", datasets.SEALED_TASKS),
    ("reserve", datasets.RESERVE_TASKS),
]


@pytest.mark.parametrize(("role", "tasks"), GROUPS, ids=[g for g, _ in GROUPS])
def test_each_role_is_listed_apart_in_the_files_order(role, tasks, tmp_path: Path) -> None:
    in_file = [c.name for c in by_role(role) if c.is_domain_case]
    assert list(tasks) == in_file == list(domain_cases.CASE_GROUPS[role])
    status = datasets.available(tmp_path)
    assert [n for n, i in status.items() if i["group"] == role] == list(tasks)
    others = set(datasets.TASKS).union(*(set(t) for g, t in GROUPS if g != role))
    assert not set(tasks) & others


def test_the_registry_groups_are_the_paper_then_the_roles() -> None:
    assert list(domain_cases.CASE_GROUPS) == list(ROLES)
    assert list(registry.GROUPS) == ["paper", *ROLES]
    assert sum(len(tasks) for _, tasks in GROUPS) == len(domain_cases.ALL_CASES) == 73


def test_each_base_names_its_loader() -> None:
    for name in domain_cases.BASES:
        found = domain_cases.base(name)
        assert found.name == name and callable(found.prepare) and callable(found.locate)
        assert "http" in found.obtain or "Kaggle" in found.obtain or found.obtain
    with pytest.raises(KeyError, match="Unknown data set 'iris'"):
        domain_cases.base("iris")


def test_a_case_loaded_from_a_missing_folder_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(datasets.DataFileError, match="german.data"):
        domain_cases.load_case("german_housing", tmp_path)
    assert "german" in domain_cases.obtain("german_housing").lower() or domain_cases.obtain(
        "german_housing"
    )

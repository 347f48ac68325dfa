"""`adaptable reproduce confirmation`, `holdout`, `sealed` and `reserve`: benchmarks built like the
development one on split columns and label-shift pools no earlier benchmark uses."""

from __future__ import annotations

import pytest

from adaptable import datasets, shifts
from adaptable.experiments import paper
from adaptable.experiments.tables import table_specs

#: (table, its domain splits, its registered tasks, the benchmarks before it, the CMC case
#: whose in-domain rows give the Dirichlet label shifts, None where there is none)
LATER = [
    (
        "confirmation",
        paper.CONFIRMATION_DOMAIN_SPLITS,
        datasets.CONFIRMATION_TASKS,
        ("generality", "development"),
        "cmc_husband_education",
    ),
    (
        "holdout",
        paper.HOLDOUT_DOMAIN_SPLITS,
        datasets.HOLDOUT_TASKS,
        ("generality", "development", "confirmation"),
        "cmc_religion",
    ),
    (
        "sealed",
        paper.SEALED_DOMAIN_SPLITS,
        datasets.SEALED_TASKS,
        ("generality", "development", "confirmation", "holdout"),
        None,  # no three-class task left: no Dirichlet shift
    ),
    (
        "reserve",
        paper.RESERVE_DOMAIN_SPLITS,
        datasets.RESERVE_TASKS,
        ("generality", "development", "confirmation", "holdout", "sealed"),
        None,
    ),
]


@pytest.mark.parametrize(
    ("name", "splits", "tasks", "earlier", "dirichlet"), LATER, ids=[n for n, *_ in LATER]
)
def test_cases_are_the_groups_datasets_and_registered_scenarios(
    name, splits, tasks, earlier, dirichlet
) -> None:
    table = paper.TABLES[name]
    assert len(table.cells()) == 11 + 9 + (0 if dirichlet is None else 3)
    assert set(splits) == set(tasks)
    others = {d for before in earlier for d, _ in paper.TABLES[before].cells()}
    for dataset, scenario in table.cells():
        assert dataset in tasks and dataset not in others
        assert scenario in shifts.SCENARIOS
        if scenario != "natural":
            assert scenario.startswith("prior_dirichlet") == (dataset == dirichlet)


@pytest.mark.parametrize("name", [n for n, *_ in LATER])
def test_rows_and_summary_are_the_development_benchmarks(name: str) -> None:
    table, development = paper.TABLES[name], paper.TABLES["development"]
    assert table.rows == development.rows
    assert table.summary == development.summary
    assert len(table_specs(table, [0, 1, 2])) == len(table.cells()) * len(table.rows) * 3


def test_reproduce_all_leaves_the_sealed_benchmark_out() -> None:
    from adaptable.cli import _table_names

    every = _table_names("all")
    assert "sealed" not in every and "reserve" not in every and "holdout" in every
    assert set(every) | set(paper.SEALED_TABLES) == set(paper.TABLES)
    assert _table_names("sealed") == ["sealed"]
    assert _table_names("reserve") == ["reserve"]

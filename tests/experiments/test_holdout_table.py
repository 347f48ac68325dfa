"""`adaptable reproduce holdout`: cases fixed after every design of the default adapter."""

from __future__ import annotations

from adaptable import datasets, shifts
from adaptable.experiments import paper
from adaptable.experiments.tables import table_specs

TABLE = paper.TABLES["holdout"]


def test_cases_are_holdout_datasets_and_registered_scenarios() -> None:
    assert len(TABLE.cells()) == 11 + 9 + 3
    assert set(paper.HOLDOUT_DOMAIN_SPLITS) == set(datasets.HOLDOUT_TASKS)
    others = {
        d
        for name in ("generality", "development", "confirmation")
        for d, _ in paper.TABLES[name].cells()
    }
    for dataset, scenario in TABLE.cells():
        assert dataset in datasets.HOLDOUT_TASKS and dataset not in others
        assert scenario in shifts.SCENARIOS
        if scenario != "natural":
            assert scenario.startswith("prior_dirichlet") == (dataset == "cmc_religion")


def test_rows_and_summary_are_the_development_benchmarks() -> None:
    development = paper.TABLES["development"]
    assert TABLE.rows == development.rows
    assert TABLE.summary == development.summary
    assert len(table_specs(TABLE, [0, 1, 2])) == len(TABLE.cells()) * len(TABLE.rows) * 3

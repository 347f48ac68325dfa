"""`adaptable reproduce development`: the table the default adapter's design is chosen on."""

from __future__ import annotations

from adaptable import datasets, shifts
from adaptable.experiments import paper
from adaptable.experiments.tables import table_specs

TABLE = paper.TABLES["development"]


def test_cases_are_development_datasets_and_registered_scenarios() -> None:
    assert len(TABLE.cells()) == 14 + 9 + 3
    assert set(paper.DEVELOPMENT_DOMAIN_SPLITS) == set(datasets.DEVELOPMENT_TASKS)
    for dataset, scenario in TABLE.cells():
        assert dataset in datasets.DEVELOPMENT_TASKS
        assert scenario in shifts.SCENARIOS
    # No case of the held-out generality benchmark, and no label-shift pool of it.
    generality = {d for d, _ in paper.TABLES["generality"].cells()}
    assert not {d for d, _ in TABLE.cells()} & generality
    for dataset, scenario in TABLE.cells():
        if scenario != "natural":
            assert scenario.startswith("prior_dirichlet") == (dataset == "cmc_age")


def test_rows_are_the_decision_references_and_the_default_adapter() -> None:
    assert [r.label for r in TABLE.rows if r.model == "mlp"] == [
        "Source", "Balanced", "EM", "AdapTable (default)", "default, fallback=plugin",
        "default, fallback=between", "default, stream_check=model", "Oracle prior",
    ]  # fmt: skip
    # The default adapter runs with its defaults (no paper preset is added to this table), and
    # once with each opt-in fallback and once as the previous default.
    options = [r.option_dict for r in TABLE.rows if r.method == "adaptable" and r.model == "mlp"]
    assert options == [
        {}, {"fallback": "plugin"}, {"fallback": "between"}, {"stream_check": "model"},
    ]  # fmt: skip
    assert TABLE.summary == paper.TABLES["generality"].summary
    specs = table_specs(TABLE, [0, 1, 2])
    assert len(specs) == len(TABLE.cells()) * len(TABLE.rows) * 3

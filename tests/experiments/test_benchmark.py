"""The benchmark's tables, one per role, built from the case records: each role's cells in the
records' order, the label shifts the records ask for, the same columns and summary for every
role but generality, and :func:`benchmark.combine`'s role column."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest

from adaptable import datasets, models, shifts
from adaptable.cli import parse_method
from adaptable.datasets.benchmark_cases import ROLES, read_cases
from adaptable.experiments import benchmark
from adaptable.experiments.spec import ExperimentSpec
from adaptable.experiments.tables import table_specs

#: role -> (domain splits, the case whose rows give the Dirichlet shifts or None)
SHAPES = {
    "generality": (17, "cmc_education"),
    "development": (14, "cmc_age"),
    "confirmation": (11, "cmc_husband_education"),
    "holdout": (11, "cmc_religion"),
    "sealed": (11, None),  # no three-class task left: no Dirichlet shift
    "reserve": (11, None),
}
TASKS = {
    "generality": datasets.GENERALITY_TASKS,
    "development": datasets.DEVELOPMENT_TASKS,
    "confirmation": datasets.CONFIRMATION_TASKS,
    "holdout": datasets.HOLDOUT_TASKS,
    "sealed": datasets.SEALED_TASKS,
    "reserve": datasets.RESERVE_TASKS,
}

TABLE = benchmark.TABLES["generality"]


def test_there_is_one_table_per_role_in_role_order() -> None:
    assert list(benchmark.TABLES) == list(ROLES)
    assert benchmark.DEFAULT_ROLES == ("generality", "development", "confirmation", "holdout")


@pytest.mark.parametrize("role", list(ROLES))
def test_a_roles_cells_are_its_cases_then_their_label_shifts(role: str) -> None:
    table = benchmark.TABLES[role]
    splits, dirichlet = SHAPES[role]
    assert len(table.cells()) == splits + 9 + (0 if dirichlet is None else 3)
    natural = [d for d, s in table.cells() if s == "natural"]
    paper_tasks = {"heloc", "hospital_readmission"} if role == "generality" else set()
    assert set(natural) == set(TASKS[role]) | paper_tasks
    earlier = list(ROLES)[: list(ROLES).index(role)]
    others = {d for before in earlier for d, _ in benchmark.TABLES[before].cells()}
    for dataset, scenario in table.cells():
        assert dataset not in others
        assert scenario in shifts.SCENARIOS
        if scenario != "natural":
            assert scenario.startswith("prior_dirichlet") == (dataset == dirichlet)


def test_label_shifts_follow_the_records_order_not_the_domain_order() -> None:
    shifted = [d for d, s in benchmark.TABLES["sealed"].cells() if s == "prior_0.1"]
    assert shifted == ["heloc_open_trades", "readmission_stay", "readmission_payer"]


def test_role_cases_reads_hand_made_records(generality_records: list[dict]) -> None:
    header = (
        "name,role,base,title,column,kept,also_dropped,first,first_rule,second,second_rule,"
        "label_shift,label_shift_order,train_rows,valid_rows,id_test_rows,test_rows,"
        "class_balance\n"
    )
    rows = [
        "a,holdout,german,A,x,no,,x A,in A,x B,,binary,2,1,1,1,1,\n",
        "b,holdout,cmc,B,y,no,,y A,in A,y B,,dirichlet,3,1,1,1,1,\n",
        "c,holdout,german,C,z,no,,z A,in A,z B,,binary,1,1,1,1,1,\n",
        "d,holdout,german,D,w,no,,w A,in A,w B,,,,1,1,1,1,\n",
    ]
    cases = list(read_cases(header + "".join(rows)).values())
    cells = benchmark.role_cases(cases)
    assert cells[:4] == (("a", "natural"), ("b", "natural"), ("c", "natural"), ("d", "natural"))
    assert [d for d, _ in cells[4:]] == ["c"] * 3 + ["a"] * 3 + ["b"] * 3
    assert [s for _, s in cells[4:7]] == list(benchmark.BINARY_PRIORS)
    assert [s for _, s in cells[10:]] == list(benchmark.DIRICHLET_PRIORS)


def test_rows_are_the_decision_references_and_the_default_adapter() -> None:
    table = benchmark.TABLES["development"]
    assert [r.label for r in table.rows if r.model == "mlp"] == [
        "Source", "Balanced", "EM", "AdapTable (default)", "default, fallback=plugin",
        "default, fallback=between", "default, stream_check=model", "Oracle prior",
    ]  # fmt: skip
    options = [r.option_dict for r in table.rows if r.method == "adaptable" and r.model == "mlp"]
    assert options == [
        {}, {"fallback": "plugin"}, {"fallback": "between"}, {"stream_check": "model"},
    ]  # fmt: skip
    assert len(table_specs(table, [0, 1, 2])) == len(table.cells()) * len(table.rows) * 3


@pytest.mark.parametrize("role", [r for r in ROLES if r != "generality"])
def test_every_role_but_generality_has_the_development_columns(role: str) -> None:
    table, development = benchmark.TABLES[role], benchmark.TABLES["development"]
    assert table.rows == development.rows
    assert table.summary == development.summary == benchmark.TABLES["generality"].summary
    generality_labels = {r.label for r in benchmark.TABLES["generality"].rows}
    assert generality_labels - {r.label for r in table.rows} == {
        "AdapTable (paper)",
        "default + temperature calibrator",
    }


def test_check_roles_names_each_unknown_role_once() -> None:
    assert benchmark.check_roles(["holdout", "sealed"]) == []
    assert benchmark.check_roles(["chosen", "holdout", "chosen"]) == [
        "unknown role 'chosen'; choose from " + ", ".join(ROLES)
    ]


def test_combine_puts_the_role_first_and_keeps_the_order() -> None:
    a = pd.DataFrame({"table": ["holdout", "holdout"], "value": [1, 2]})
    b = pd.DataFrame({"table": ["sealed"], "value": [3]})
    joined = benchmark.combine({"holdout": a, "sealed": b})
    assert list(joined.columns) == ["role", "table", "value"]
    assert joined.to_dict("list") == {
        "role": ["holdout", "holdout", "sealed"],
        "table": ["benchmark"] * 3,
        "value": [1, 2, 3],
    }
    assert list(a["table"]) == ["holdout", "holdout"]  # the inputs are left as they were
    assert benchmark.combine({}).empty


def test_cases_are_registered_datasets_and_scenarios() -> None:
    assert len(TABLE.cells()) == 17 + 9 + 3
    natural = [d for d, s in TABLE.cells() if s == "natural"]
    assert set(natural) == {"heloc", "hospital_readmission"} | set(datasets.GENERALITY_TASKS)
    for dataset, scenario in TABLE.cells():
        assert dataset in datasets.TASKS or dataset in datasets.GENERALITY_TASKS
        assert scenario in shifts.SCENARIOS
    label_shift = [c for c in TABLE.cells() if c[1] != "natural"]
    assert {d for d, _ in label_shift} == {
        "heloc", "hospital_readmission", "adult_education", "cmc_education",
    }  # fmt: skip
    # cmc (3 classes) gets the Dirichlet draws, the binary tasks the positive rates
    for dataset, scenario in label_shift:
        assert scenario.startswith("prior_dirichlet") == (dataset == "cmc_education")


def test_columns_are_the_issue_method_specs_for_each_model() -> None:
    assert list(dict.fromkeys(r.model for r in TABLE.rows)) == ["logreg", "xgboost", "mlp"]
    assert set(benchmark.MODELS) <= set(models.names())
    for model in benchmark.MODELS:
        specs = [
            ExperimentSpec("heloc", "natural", r.model, r.method, 0, r.option_dict).label
            for r in TABLE.rows
            if r.model == model
        ]
        assert specs == [
            "source", "balanced", "em", "adaptable[preset=paper]", "adaptable",
            "adaptable[calibrator=temperature]", "adaptable[fallback=plugin]",
            "adaptable[fallback=between]", "adaptable[stream_check=model]", "oracle_prior",
        ]  # fmt: skip
        # The CLI's spelling of each column parses to the same (method, options).
        for text, row in zip(specs, (r for r in TABLE.rows if r.model == model), strict=True):
            assert parse_method(text) == (row.method, row.option_dict)
    assert TABLE.metrics == ("macro_f1", "balanced_accuracy", "accuracy")
    assert all(r.paper_method is None for r in TABLE.rows)  # no paper values


def test_table_specs_cover_cases_models_seeds_and_group_by_source() -> None:
    specs = table_specs(TABLE, [0, 1, 2])
    assert len(specs) == 29 * 3 * 3 * 10
    assert {(s.dataset, s.scenario) for s in specs} == set(TABLE.cells())
    # Experiments sharing a source model are adjacent (one training / cache load each).
    sources = [s.source_key for s in specs]
    assert len([k for k, _ in itertools.groupby(sources)]) == len(set(sources)) == 17 * 3 * 3
    only = table_specs(TABLE, [0], ["cmc_education"], ["mlp"])
    assert {s.scenario for s in only} == {"natural", *benchmark.DIRICHLET_PRIORS}
    assert len(only) == 4 * 10

"""Which tables a reproduce request runs, and the problems found before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from adaptable.experiments import benchmark, paper
from adaptable.experiments.components import RunContext
from adaptable.experiments.reproduce import (
    SEALED_TABLES,
    TABLES,
    Request,
    reproduce_benchmark,
    request_problems,
    table_names,
)
from adaptable.experiments.store import ResultStore


def test_every_table_is_the_papers_then_each_roles() -> None:
    assert list(TABLES) == [*paper.TABLES, *benchmark.TABLES]
    assert SEALED_TABLES == ("sealed", "reserve")


def test_all_and_benchmark_leave_the_sealed_roles_out_unless_named() -> None:
    every = table_names("all")
    assert "sealed" not in every and "reserve" not in every and "holdout" in every
    assert set(every) | set(SEALED_TABLES) == set(TABLES)
    assert table_names("benchmark") == ["generality", "development", "confirmation", "holdout"]
    assert table_names("benchmark", ["sealed", "holdout", "sealed"]) == ["sealed", "holdout"]
    assert table_names("sealed") == ["sealed"] and table_names("main") == ["main"]


@pytest.mark.parametrize(
    ("table", "request_", "roles", "expected"),
    [
        ("main", Request([0]), ["sealed"], ["--roles goes with 'adaptable reproduce benchmark'"]),
        ("benchmark", Request([0], several=True), ["chosen"], ["unknown role 'chosen'"]),
        (
            "generality",
            Request([0], datasets=["heloc_trades"]),
            None,
            ["Table 'generality' has no cases for dataset(s) ['heloc_trades']"],
        ),
        ("benchmark", Request([0], datasets=["heloc_trades"], several=True), None, []),
        (
            "benchmark",
            Request([0], datasets=["voting"], several=True),
            None,
            ["no table holds dataset(s) ['voting']"],
        ),
        ("main", Request([0], models=["logreg"]), None, []),
        (
            "generality",
            Request([0], models=["knn"]),
            None,
            ["Table 'generality' has no rows for model(s) ['knn']"],
        ),
    ],
)
def test_request_problems(table, request_, roles, expected) -> None:
    problems = request_problems(table, request_, roles)
    assert len(problems) == len(expected)
    for problem, start in zip(problems, expected, strict=True):
        assert problem.startswith(start)


def test_a_benchmark_whose_roles_are_all_skipped_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    request = Request([0], datasets=["voting"], out=tmp_path / "t", run=False, several=True)
    store = ResultStore(tmp_path / "r.jsonl")
    assert reproduce_benchmark(["holdout"], request, store, RunContext(), None) == 0
    assert "[benchmark] nothing to write" in capsys.readouterr().err
    assert not (tmp_path / "t").exists()

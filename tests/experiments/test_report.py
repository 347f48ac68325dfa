"""The terminal report of a sweep: the plan line, the counts and one line per distinct error,
and the warnings of the experiments run on stderr."""

from __future__ import annotations

import pytest

from adaptable.experiments.report import plan_line, print_warnings, report_sweep
from adaptable.experiments.spec import ExperimentSpec
from adaptable.experiments.store import ResultStore
from adaptable.experiments.sweep import SweepResult


def test_plan_line_counts_what_the_store_holds(tmp_path) -> None:
    specs = [ExperimentSpec("toy", "natural", "softmax", m, 0) for m in ("source", "prior")]
    store = ResultStore(tmp_path / "r.jsonl")
    store.append({"key": specs[0].key, "spec": specs[0].to_dict(), "metrics": {"accuracy": 0.5}})
    assert plan_line(specs, store) == "2 experiments (1 already in the results store, 1 to run)"
    assert plan_line(specs, store, run=False) == (
        "2 experiments (1 in the results store; --no-run runs none)"
    )


def test_report_groups_failures_by_error_and_prints_new_warnings(
    capsys: pytest.CaptureFixture[str],
) -> None:
    warning = {"category": "UserWarning", "message": "careful", "count": 2}
    result = SweepResult(
        records=[{"key": "a", "warnings": [warning]}, {"key": "b", "warnings": [warning]}],
        ran=["a"],
        reused=["b"],
        failures={"c": "ValueError: bad", "d": "ValueError: bad", "e": "KeyError: x"},
        skipped={"heloc": "file absent"},
        seconds=1.25,
    )
    report_sweep(result)
    out, err = capsys.readouterr()
    # the counts on stdout; what went wrong on stderr, out of the tables that scripts read
    assert out.splitlines() == ["1 experiment run, 1 reused from the store, 3 failed, in 1.2 s"]
    assert err.splitlines() == [
        "skipped dataset heloc: file absent",
        "failed c (and 1 more with the same error): ValueError: bad",
        "failed e: KeyError: x",
        "warning (a): UserWarning: careful",  # b was reused: not shown
    ]


def test_print_warnings_names_one_experiment_and_how_many_more(
    capsys: pytest.CaptureFixture[str],
) -> None:
    warning = {"category": "RuntimeWarning", "message": "overflow", "count": 1}
    print_warnings([{"key": k, "warnings": [warning]} for k in ("a", "b", "c")])
    assert capsys.readouterr().err == "warning (a and 2 more): RuntimeWarning: overflow\n"

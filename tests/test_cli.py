"""The ``adaptable`` command, with the test doubles of ``adaptable.experiments.testing``."""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

import adaptable
from adaptable import cli
from adaptable.cli import entry, path_checks
from adaptable.cli.commands import workers
from adaptable.experiments import testing
from adaptable.experiments.components import RunContext
from adaptable.experiments.experiment import run_experiment
from adaptable.experiments.reproduce import TABLES
from adaptable.experiments.spec import ExperimentSpec
from adaptable.experiments.store import ResultStore
from adaptable.experiments.tables import table_specs

TOY = testing.COMPONENTS


def _usage_error(argv: list[str], capsys: pytest.CaptureFixture[str], components=TOY) -> str:
    """Run the command, expect argparse's exit status 2; returns stderr."""
    with pytest.raises(SystemExit) as info:
        cli.main(argv, components=components)
    assert info.value.code == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    return captured.err


def test_parse_method() -> None:
    assert cli.parse_method("tent") == ("tent", {})
    assert cli.parse_method("adaptable[calibrator=none,alpha=0.2]") == (
        "adaptable", {"calibrator": "none", "alpha": 0.2},
    )  # fmt: skip
    with pytest.raises(argparse.ArgumentTypeError, match="key=value"):
        cli.parse_method("adaptable[alpha]")


def test_run_prints_a_table_and_reuses_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "run", "--datasets", "toy", "heloc", "--models", "softmax", "--methods", "source",
        "prior[alpha=0.2]", "--seeds", "0", "1", "--results", str(tmp_path / "r.jsonl"), "--no-progress",
    ]  # fmt: skip
    # heloc's data is absent: the table of toy is printed, but the run exits 1 and the skip
    # goes to stderr, out of the table that scripts read
    assert cli.main(argv, components=TOY) == 1
    captured = capsys.readouterr()
    out = captured.out
    assert "8 experiments (0 already in the results store, 8 to run)" in out
    assert "| toy | natural | softmax | prior[alpha=0.2] | 2 |" in out
    assert "4 experiments run, 0 reused" in out
    assert "skipped dataset heloc: toy data set 'heloc' is absent" in captured.err
    assert "skipped" not in out
    assert cli.main(argv, components=TOY) == 1
    out = capsys.readouterr().out
    assert "(4 already in the results store, 4 to run)" in out
    assert "0 experiments run, 4 reused" in out


def test_run_reports_each_warning_once_with_the_experiments_that_raised_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import warnings

    original = testing.ToySource.predict_proba

    def noisy(self, X_batch, oracle_labels=None):
        warnings.warn("the stream looks odd", UserWarning, stacklevel=1)
        return original(self, X_batch, oracle_labels)

    monkeypatch.setattr(testing.ToySource, "predict_proba", noisy)
    argv = ["run", "--datasets", "toy", "--models", "softmax", "--methods", "source", "prior",
            "--seeds", "0", "1", "--results", str(tmp_path / "r.jsonl"), "--no-progress"]  # fmt: skip
    assert cli.main(argv, components=TOY) == 0
    captured = capsys.readouterr()
    # both toy methods predict through ToySource: four experiments, one line, on stderr
    assert captured.err.splitlines() == [
        "warning (toy|natural|softmax|source|seed=0 and 3 more): UserWarning: the stream looks odd"
    ]
    assert "the stream looks odd" not in captured.out
    assert cli.main(argv, components=TOY) == 0  # everything reused: nothing new to report
    assert "warning (" not in capsys.readouterr().err
    # adaptable plot reports the warnings of the experiments it ran, the same way
    argv = ["plot", "label_distribution", "--datasets", "toy", "--models", "softmax",
            "--method", "prior", "--out", str(tmp_path / "f"), "--results",
            str(tmp_path / "p.jsonl"), "--no-progress"]  # fmt: skip
    assert cli.main(argv, components=TOY) == 0
    assert capsys.readouterr().err.splitlines() == [
        "warning (toy|natural|softmax|source|seed=0 and 1 more): UserWarning: the stream looks odd"
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--seeds", "99999999999999999999"], "argument --seeds: a seed must lie between 0 and"),
        (["--seeds", "-1"], "argument --seeds: a seed must lie between 0 and"),
        (["--seeds", "one"], "a seed must be a whole number; got 'one'"),
        (["--methods", "prior[alpha]"], "method options must be key=value pairs; got 'alpha'"),
        (["--workers", "-3"], "argument --workers: must be at least 1; got -3"),
        (["--threads", "0"], "argument --threads: must be at least 1; got 0"),
        (["--data-dir", "/does/not/exist"], "--data-dir '/does/not/exist' is not a folder"),
        (["--methods", "prior[alpha=2]"], "method prior[alpha=2]: alpha must lie in [0, 1]"),
        (["--methods", "source[bogus=1]"], "method source[bogus=1]: "),
    ],
    ids=[
        "seed-overflow",
        "seed-negative",
        "seed-word",
        "option-without-value",
        "workers",
        "threads",
        "data-dir",
        "option-value",
        "option-name",
    ],  # fmt: skip
)
def test_bad_arguments_are_usage_errors_not_tracebacks(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Option values checked by building each method once."""
    base = ["run", "--datasets", "toy", "--models", "softmax", "--methods", "source"]
    err = _usage_error([*base, "--results", str(tmp_path / "r.jsonl"), *argv], capsys)
    assert err.startswith("usage: adaptable run ")  # the subcommand's usage
    assert message in err
    assert not (tmp_path / "r.jsonl").exists()


def test_ray_executor_without_ray_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a)
    )
    err = _usage_error(["run", "--datasets", "toy", "--models", "softmax", "--methods", "source",
                        "--executor", "ray"], capsys)  # fmt: skip
    assert "--executor ray needs the ray package: pip install 'adaptable-tta[ray]'" in err


def test_unknown_names_are_rejected_before_any_work_each_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Nothing loads or trains, and each problem is printed once."""

    def no_work(*args, **kwargs):
        raise AssertionError("work started before the names were checked")

    components = replace(TOY, load_dataset=no_work, train_model=no_work)
    argv = [
        "run", "--datasets", "toy", "nope", "--models", "softmax", "mlpp", "--methods", "source",
        "tentt", "tentt", "--scenarios", "natural", "gaus", "--seeds", "0", "1", "2",
        "--results", str(tmp_path / "r.jsonl"),
    ]  # fmt: skip
    err = _usage_error(argv, capsys, components)
    assert "4 problems:" in err
    for needle in ("unknown dataset 'nope'", "unknown model 'mlpp'", "unknown method 'tentt'",
                   "unknown scenario 'gaus'"):  # fmt: skip
        assert err.count(needle) == 1, needle
    assert "choose from softmax" in err
    err = _usage_error(["plot", "nofig", "--datasets", "nope"], capsys, components)
    assert err.startswith("usage: adaptable plot ")
    assert "unknown figure 'nofig'" in err and "unknown dataset 'nope'" in err
    err = _usage_error(["reproduce", "main", "--models", "softmax"], capsys, components)
    assert err.startswith("usage: adaptable reproduce ")
    assert "has no rows for model(s) ['softmax']" in err


def test_a_store_line_without_spec_is_rerun_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A key-only line used to count as finished, then raise KeyError."""
    store = tmp_path / "r.jsonl"
    spec = ExperimentSpec("toy", "natural", "softmax", "source", 0)
    store.write_text(json.dumps({"key": spec.key}) + "\n")
    argv = ["run", "--datasets", "toy", "--models", "softmax", "--methods", "source",
            "--results", str(store), "--no-progress"]  # fmt: skip
    assert cli.main(argv, components=TOY) == 0
    out, err = capsys.readouterr()
    assert "1 experiment run, 0 reused" in out and "| toy | natural | softmax | source |" in out
    # one line on stderr, not a Python warning with its source line
    assert err == f"warning: {store}:1: skipping a record: the record has no 'spec' field\n"


def test_help_lists_valid_names_without_rest_markup(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ([], ["run"], ["reproduce"], ["plot"], ["datasets"]):
        with pytest.raises(SystemExit) as info:
            cli.main([*command, "--help"], components=TOY)
        assert info.value.code == 0
        text = capsys.readouterr().out
        assert "`" not in text and ":class:" not in text, command
        if command == ["run"]:
            assert "valid names:" in text
            for needle in ("datasets:  toy, toy3", "models:    softmax", "prior",
                           "scenarios: natural, sorted"):  # fmt: skip
                assert needle in text, needle


def test_version_and_python_dash_m(capsys: pytest.CaptureFixture[str]) -> None:
    from adaptable import __version__

    with pytest.raises(SystemExit) as info:
        cli.main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.strip() == f"adaptable {__version__}"
    done = subprocess.run(
        [sys.executable, "-m", "adaptable", "run", "--seeds", "-1"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2 and "usage: adaptable run" in done.stderr
    assert "Traceback" not in done.stderr


def test_one_option_spelling_everywhere() -> None:
    parser = cli.build_parser(TOY)
    for command in (["run"], ["reproduce", "main"], ["plot"]):
        args = parser.parse_args(
            [*command, "--datasets", "a", "b", "--models", "m", "--seeds", "3"]
        )
        assert (args.datasets, args.models, args.seeds) == (["a", "b"], ["m"], [3])
    # the old singular spelling of `plot` still works (argparse accepts unique prefixes)
    old = parser.parse_args(["plot", "--dataset", "heloc", "--model", "mlp", "--seed", "2"])
    assert (old.datasets, old.models, old.seeds) == (["heloc"], ["mlp"], [2])
    assert parser.parse_args(["plot"]).datasets == ["hospital_readmission"]  # embedded data


def test_reproduce_lists_skipped_datasets_and_keeps_a_table_when_nothing_ran(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "oracle.md").write_text("an earlier run's table\n")
    argv = ["reproduce", "oracle", "--seeds", "0", "--out", str(tmp_path),
            "--results", str(tmp_path / "r.jsonl"), "--no-progress"]  # fmt: skip
    # the toy providers hold none of the paper's datasets: all skipped, each said on stderr,
    # exit 1, and the earlier table is not replaced by an empty one
    assert cli.main(argv, components=TOY) == 1
    captured = capsys.readouterr()
    assert "skipped dataset heloc: toy data set 'heloc' is absent" in captured.err
    assert "[oracle] nothing to write" in captured.err
    assert "skipped dataset" not in captured.out
    assert (tmp_path / "oracle.md").read_text() == "an earlier run's table\n"
    assert not (tmp_path / "oracle.csv").exists()


def _store_of(tmp_path: Path, specs: list[ExperimentSpec], f1s) -> ResultStore:
    """A results store holding one toy record per spec, each with its own macro-F1."""
    toy = run_experiment(
        ExperimentSpec("toy", "natural", "softmax", "source", 0), RunContext(components=TOY)
    )
    store = ResultStore(tmp_path / "r.jsonl")
    for spec, f1 in zip(specs, f1s, strict=True):
        store.append({**toy, "key": spec.key, "spec": spec.to_dict(),
                      "metrics": {**toy["metrics"], "macro_f1": f1}})  # fmt: skip
    return store


def test_reproduce_no_run_needs_only_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tables rebuilt from the results store on a machine without the raw files."""
    store = _store_of(tmp_path, table_specs(TABLES["oracle"], [0], ["heloc"]), (0.61, 0.65, 0.9))

    def no_data(*args, **kwargs):
        raise AssertionError("--no-run looked at the raw data")

    components = replace(TOY, dataset_status=no_data, load_dataset=no_data)
    empty = tmp_path / "no-data"
    empty.mkdir()
    argv = ["reproduce", "oracle", "--no-run", "--seeds", "0", "--out", str(tmp_path / "t"),
            "--results", str(store.path), "--data-dir", str(empty)]  # fmt: skip
    assert cli.main(argv, components=components) == 0
    text = (tmp_path / "t" / "oracle.md").read_text()
    assert "| mlp | AdapTable | 65.0" in text and "| mlp | Source | 61.0" in text
    assert "Voting (`voting`): no results for this table in the results store" in text
    assert "6 experiments (3 in the results store; --no-run runs none)" in capsys.readouterr().out


def test_reproduce_draws_a_benchmark_tables_two_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A table with summary lines gets its gains curve and its risk-and-reach figure."""
    specs = table_specs(TABLES["generality"], [0], ["heloc"], ["logreg"])
    natural = [spec for spec in specs if spec.scenario == "natural"]
    store = _store_of(tmp_path, natural, [0.5 + 0.01 * i for i in range(len(natural))])
    argv = ["reproduce", "generality", "--no-run", "--seeds", "0", "--datasets", "heloc",
            "--out", str(tmp_path / "t"), "--results", str(store.path)]  # fmt: skip
    assert cli.main(argv, components=TOY) == 0
    wrote = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("wrote "))
    for name in ("generality_gains.png", "generality_risk.png"):
        assert (tmp_path / "t" / name).stat().st_size > 0
        assert str(tmp_path / "t" / name) in wrote


def test_plot_says_up_front_how_many_experiments_it_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["plot", "label_distribution", "reliability", "--datasets", "toy", "--models",
            "softmax", "--method", "prior", "--out", str(tmp_path), "--results",
            str(tmp_path / "r.jsonl"), "--no-progress"]  # fmt: skip
    assert cli.main(argv, components=TOY) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith("2 figures for 1 dataset / model / seed combination: ")
    assert "2 experiments (0 already in the results store, 2 to run)" in first
    assert "plus 1 calibration pass over" in first
    assert (tmp_path / "label_distribution_toy_softmax_prior_s0.png").is_file()
    assert (tmp_path / "reliability_toy_softmax_prior_s0.png").is_file()


def test_a_closed_pipe_ends_the_command_quietly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``adaptable datasets | head -1``: the reader goes away, no traceback."""
    import io
    import os

    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line
    with open(write_end, "w", buffering=1) as pipe:  # line by line, as a terminal would
        monkeypatch.setattr(sys, "stdout", pipe)
        assert cli.main(["datasets", "--data-dir", str(tmp_path)]) == 1
        # a stream without a descriptor (a notebook's): cannot be asked, taken as the reader gone
        monkeypatch.setattr(sys, "stdout", io.StringIO())
        monkeypatch.setattr(entry, "_dispatch", _raise_broken_pipe)
        assert cli.main(["datasets"]) == 1
    assert capsys.readouterr().err == ""


def _raise_broken_pipe(*args: object) -> int:
    raise BrokenPipeError(32, "a worker's pipe")


def test_a_broken_pipe_that_is_not_standard_outputs_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(entry, "_dispatch", _raise_broken_pipe)
    with (tmp_path / "stdout").open("w") as healthy:
        monkeypatch.setattr(sys, "stdout", healthy)
        with pytest.raises(BrokenPipeError, match="a worker's pipe"):
            cli.main(["datasets"])


def test_every_registered_task_is_a_known_dataset() -> None:
    """`adaptable datasets` lists the benchmarks' domain cases, so run and reproduce take them."""
    from adaptable.datasets.registry import GROUPS
    from adaptable.experiments.components import Components, unknown_names

    tasks = [name for names in GROUPS.values() for name in names]
    assert "heloc_delinquency" in tasks and "readmission_age" in tasks
    assert unknown_names(Components(), dataset=tasks) == []
    assert unknown_names(Components(), dataset=["heloc_delinquencyy"]) != []


def test_a_task_added_with_register_is_listed_and_known() -> None:
    from adaptable.datasets import registry
    from adaptable.experiments.components import Components, unknown_names

    info = registry.TaskInfo("my_task", "Mine", lambda d: None, lambda d: d / "mine.csv", "here")
    registry.register("my_task", lambda: info)
    try:
        assert registry.names()[-1] == "my_task"
        assert registry.available()["my_task"]["group"] == "registered"
        assert unknown_names(Components(), dataset=["my_task", "readmission"]) == []
        assert registry.canonical("readmission") == "hospital_readmission"
        assert registry.canonical("my_task") == "my_task"
    finally:
        registry.unregister("my_task")
    assert "my_task" not in registry.names()
    with pytest.raises(KeyError, match="not a registered task"):
        registry.unregister("heloc")


def test_an_alias_runs_as_the_task_it_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["reproduce", "generality", "--datasets", "readmission", "--models", "logreg",
            "--seeds", "0", "--no-run", "--out", str(tmp_path), "--results",
            str(tmp_path / "r.jsonl")]  # fmt: skip
    assert cli.main(argv) == 1  # --no-run on an empty store: nothing to write
    assert "[generality] 40 experiments" in capsys.readouterr().out  # 4 shifts x 10 columns
    parser = cli.build_parser(cli.Components())
    args = parser.parse_args(["run", "--datasets", "readmission", "heloc", "anes"])
    cli.check_args(args, cli.Components())
    assert args.datasets == ["hospital_readmission", "heloc", "voting"]


def test_reproduce_checks_a_benchmarks_datasets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["reproduce", "generality", "--datasets", "heloc_trades", "--no-run",
            "--out", str(tmp_path), "--results", str(tmp_path / "r.jsonl")]  # fmt: skip
    err = _usage_error(argv, capsys, cli.Components())
    assert "Table 'generality' has no cases for dataset(s) ['heloc_trades']" in err
    # with "all", each table runs the requested datasets it holds, and says when none (here
    # --no-run finds nothing stored for the one that holds it: nothing written, exit 1)
    argv[1] = "all"
    assert cli.main(argv) == 1
    out, err = capsys.readouterr()
    for table in ("main", "corruptions", "generality", "holdout"):
        assert f"[{table}] skipped: none of --datasets is among its datasets" in err
    # a dataset no table holds is a usage error, not a run that does nothing
    argv[argv.index("heloc_trades")] = "readmission_age"  # a reserve case
    argv[1] = "all"
    err = _usage_error(argv, capsys, cli.Components())
    assert "no table holds dataset(s) ['readmission_age']" in err
    # heloc_trades is a development case (its domain split and its label shifts)
    wanted = len(table_specs(TABLES["development"], [0, 1, 2], ["heloc_trades"]))
    assert wanted > 0 and f"[development] {wanted} experiments (0 in the results store" in out


def test_reproduce_benchmark_writes_one_table_with_a_role_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import csv

    specs = [
        spec
        for role, dataset in (("development", "heloc_trades"), ("holdout", "heloc_balance"))
        for spec in table_specs(TABLES[role], [0], [dataset], ["logreg"])
        if spec.scenario == "natural"
    ]
    store = _store_of(tmp_path, specs, [0.5 + 0.01 * i for i in range(len(specs))])
    out = tmp_path / "t"
    argv = ["reproduce", "benchmark", "--roles", "development", "holdout", "sealed", "--no-run",
            "--seeds", "0", "--datasets", "heloc_trades", "heloc_balance", "--out", str(out),
            "--results", str(store.path)]  # fmt: skip
    assert cli.main(argv, components=cli.Components()) == 0  # --no-run: no raw data needed
    printed = capsys.readouterr().err
    assert "[sealed] skipped: none of --datasets is among its datasets" in printed
    with open(out / "benchmark.csv") as handle:
        lines = list(csv.DictReader(handle))
    assert list(lines[0])[:2] == ["role", "table"]
    assert list(dict.fromkeys(line["role"] for line in lines)) == ["development", "holdout"]
    assert {line["dataset"] for line in lines if line["role"] == "holdout"} == {"heloc_balance"}
    with open(out / "benchmark_summary.csv") as handle:
        summary = list(csv.DictReader(handle))
    source = [s for s in summary if s["method"] == "Source" and s["group"] == "domain splits"]
    assert [(s["role"], s["cases"]) for s in source if s["metric"] == "macro_f1"] == [
        ("development", "1"),
        ("holdout", "1"),
    ]
    text = (out / "benchmark.md").read_text()
    assert "| development | chosen on:" in text and "| holdout | judged once:" in text
    assert text.index("## Development benchmark") < text.index("## Holdout benchmark")
    for name in ("development_gains.png", "holdout_risk.png"):
        assert (out / name).stat().st_size > 0


def test_reproduce_roles_go_with_benchmark_only(capsys: pytest.CaptureFixture[str]) -> None:
    err = _usage_error(["reproduce", "main", "--roles", "sealed", "--no-run"], capsys)
    assert "--roles goes with 'adaptable reproduce benchmark' only" in err
    err = _usage_error(["reproduce", "benchmark", "--roles", "chosen", "--no-run"], capsys)
    assert "unknown role 'chosen'" in err


# --------------------------------------------------------------------------- interruptions
_TOY_MAIN = (
    "import sys\n"
    "from adaptable import cli\n"
    "from adaptable.experiments import testing\n"
    "if __name__ == '__main__':\n"
    "    sys.exit(cli.main(sys.argv[1:], components=testing.COMPONENTS))\n"
)


def _start_slow_toy_run(store: Path, workers: int):
    """``adaptable run`` on the toy components, slow enough to interrupt (0.5 s per batch), in
    a session of its own (its workers share its process group); returns once a record is in
    the store."""
    import os
    import time

    argv = [sys.executable, "-c", _TOY_MAIN, "run", "--datasets", "toy", "--models", "softmax",
            "--methods", "source[delay=0.5]", "prior[delay=0.5]", "--seeds", "0", "1", "2", "3",
            "--results", str(store), "--workers", str(workers)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(Path(adaptable.__file__).parents[1])}
    process = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 90
    while not (store.exists() and store.stat().st_size) and time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[0]
        time.sleep(0.2)
    return process


def _group_gone(group: int, seconds: float) -> bool:
    """Whether every process of ``group`` exits within ``seconds``."""
    import os
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


def _kill_group(group: int) -> None:
    import os
    import signal

    try:
        os.killpg(group, signal.SIGKILL)
    except ProcessLookupError:
        pass


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and process groups")
@pytest.mark.parametrize("workers", [1, 2])
def test_ctrl_c_says_in_one_line_what_was_saved(tmp_path: Path, workers: int) -> None:
    """Ctrl-C (SIGINT to the terminal's process group): no traceback from the parent or the
    workers, one line, exit status 130, and no process left behind."""
    import signal

    store = tmp_path / "r.jsonl"
    process = _start_slow_toy_run(store, workers)
    try:
        import os

        os.killpg(process.pid, signal.SIGINT)
        output, _ = process.communicate(timeout=60)
        assert process.returncode == cli.EXIT_INTERRUPTED, output
        assert "Traceback" not in output and "KeyboardInterrupt" not in output, output
        saved = len(ResultStore(store).completed())
        lines = [line for line in output.splitlines() if line.startswith("interrupted:")]
        assert lines == [
            f"interrupted: {saved} experiment{'s' * (saved != 1)} saved by this run ({saved} in "
            f"the results store {store}); run the same command again to resume: saved "
            "experiments are not run again"
        ]
        assert _group_gone(process.pid, 15)
    finally:
        _kill_group(process.pid)


#: ``python -m adaptable ARGS`` where importing the module named first raises
#: KeyboardInterrupt, as Ctrl-C does while the command is still importing its modules
_INTERRUPT_ON_IMPORT = (
    "import runpy, sys\n"
    "class Interrupt:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name == TRIP:\n"
    "            raise KeyboardInterrupt\n"
    "TRIP = sys.argv[1]\n"
    "sys.meta_path.insert(0, Interrupt())\n"
    "sys.argv = ['adaptable', *sys.argv[2:]]\n"
    "runpy.run_module('adaptable', run_name='__main__', alter_sys=True)\n"
)


@pytest.mark.parametrize("module", ["numpy", "adaptable.experiments.components"])
def test_ctrl_c_while_the_command_imports_is_one_line_and_exit_status_130(
    tmp_path: Path, module: str
) -> None:
    """Ctrl-C in the first moments of ``adaptable run``, while it imports its modules: one
    line and exit status 130, as later, not a KeyboardInterrupt traceback (exit -2)."""
    import os

    argv = [sys.executable, "-c", _INTERRUPT_ON_IMPORT, module, "run", "--results",
            str(tmp_path / "r.jsonl"), "--no-progress"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(Path(adaptable.__file__).parents[1])}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == cli.EXIT_INTERRUPTED, done.stderr
    assert done.stderr == "adaptable: interrupted\n" and done.stdout == ""


def _interrupting_names(kind: str) -> list[str]:
    raise KeyboardInterrupt  # Ctrl-C while the options are checked


def test_ctrl_c_while_the_options_are_checked_or_data_listed_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from adaptable import datasets

    components = replace(TOY, known_names=_interrupting_names)
    monkeypatch.setattr(datasets, "available", _interrupting_names)
    for argv, given in ((["run", "--datasets", "toy"], components), (["datasets"], TOY)):
        try:
            code = cli.main(argv, components=given)
        except KeyboardInterrupt:
            pytest.fail(f"adaptable {argv[0]}: Ctrl-C escaped as a KeyboardInterrupt")
        assert code == cli.EXIT_INTERRUPTED
        assert capsys.readouterr().err == "adaptable: interrupted\n"


def _no_work(*args, **kwargs):
    raise AssertionError("work started before the arguments were checked")


def test_methods_that_need_a_torch_model_are_refused_on_other_models(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """FTAT (ensemble), LAME and parameter-updating methods over a GBDT: one usage error per
    method, naming the pair, before any data loads (not a failure per experiment)."""
    components = replace(cli.Components(), load_dataset=_no_work, train_model=_no_work)
    argv = ["run", "--datasets", "heloc", "--models", "xgboost", "mlp", "--methods", "source",
            "tent", "ftat", "ftat[ensemble=false]", "lame", "--results", str(tmp_path / "r")]  # fmt: skip
    err = _usage_error(argv, capsys, components)
    assert "3 problems:" in err
    assert "method 'tent' cannot run on model(s) xgboost: it updates the source model's " in err
    assert "method 'ftat' cannot run on model(s) xgboost" in err and "ftat[ensemble=false]" in err
    assert "method 'lame' cannot run on model(s) xgboost: it reads the source model's " in err
    assert "'ftat[ensemble=false]' cannot" not in err and "'source' cannot" not in err
    err = _usage_error(["plot", "--models", "catboost", "--method", "lame"], capsys, components)
    assert "method 'lame' cannot run on model(s) catboost" in err
    assert not (tmp_path / "r").exists()


def test_device_cuda_without_cuda_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import adaptable.experiments.process as process

    monkeypatch.setattr(process, "cuda_problem", lambda: "no CUDA device here")
    base = ["--datasets", "toy", "--models", "softmax", "--device", "cuda"]
    err = _usage_error(["run", *base, "--results", str(tmp_path / "r")], capsys)
    assert "--device cuda: no CUDA device here; use --device cpu or auto" in err
    # reading CUDA results from the store needs no CUDA
    argv = ["reproduce", "oracle", "--no-run", "--device", "cuda", "--seeds", "0", "--out",
            str(tmp_path / "t"), "--results", str(tmp_path / "r")]  # fmt: skip
    cli.main(argv, components=TOY)
    assert "--device cuda" not in capsys.readouterr().err


# --------------------------------------------------------------------------- polish
def test_batch_size_reaches_the_stream_and_the_experiment_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "r.jsonl"
    base = ["run", "--datasets", "toy", "--models", "softmax", "--methods", "source",
            "--results", str(store), "--no-progress"]  # fmt: skip
    assert cli.main([*base, "--batch-size", "100"], components=TOY) == 0
    assert cli.main(base, components=TOY) == 0  # the paper's size: another experiment
    records = ResultStore(store).completed()
    assert list(records) == [
        "toy|natural|softmax|source|seed=0|batch=100",
        "toy|natural|softmax|source|seed=0",
    ]
    sizes = [r["traces"]["size"] for r in records.values()]
    assert sizes == [[100, 100, 100, 20], [64] * 5]  # 320 test rows
    assert "1 experiment (0 already in the results store, 1 to run)" in capsys.readouterr().out
    _usage_error([*base, "--batch-size", "0"], capsys)


def test_reproduce_at_another_batch_size_writes_files_of_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    specs = [replace(s, batch_size=32) for s in table_specs(TABLES["oracle"], [0], ["heloc"])]
    store = _store_of(tmp_path, specs, (0.61, 0.65, 0.9))
    argv = ["reproduce", "oracle", "--no-run", "--seeds", "0", "--datasets", "heloc",
            "--out", str(tmp_path / "t"), "--results", str(store.path)]  # fmt: skip
    assert cli.main([*argv, "--batch-size", "32"], components=TOY) == 0
    text = (tmp_path / "t" / "oracle_batch32.md").read_text()
    assert "| mlp | AdapTable | 65.0" in text
    assert not (tmp_path / "t" / "oracle.md").exists()  # the paper-size table is untouched
    # at the paper's size the store holds none of the table's experiments
    assert cli.main(argv, components=TOY) == 1
    assert "nothing to write" in capsys.readouterr().err


def test_plot_takes_a_figure_name_that_a_list_option_swallowed() -> None:
    parser = cli.build_parser(TOY)
    toy = ["--models", "softmax", "--method", "prior"]
    for argv in (
        ["plot", *toy, "--datasets", "toy", "reliability"],
        ["plot", "reliability", *toy, "--datasets", "toy"],
        ["plot", "--figures", "reliability", *toy, "--datasets", "toy"],
        ["plot", "--datasets", "toy", "--models", "softmax", "--method", "prior", "reliability"],
    ):
        args = parser.parse_args(argv)
        cli.check_args(args, TOY)
        assert (args.figures, args.datasets) == (["reliability"], ["toy"]), argv
    argv = ["plot", "--datasets", "toy", "--methods", "prior", "--models", "softmax", "efficiency"]
    args = parser.parse_args(argv)
    cli.check_args(args, TOY)
    assert (args.method, args.models, args.figures) == ("prior", ["softmax"], ["efficiency"])
    args = parser.parse_args(["plot", "--datasets", "reliability", *toy])  # the figure alone
    args.subparser.error = _no_work
    cli.check_args(args, TOY)
    assert (args.datasets, args.figures) == (["hospital_readmission"], ["reliability"])


def test_unknown_names_suggest_the_closest_and_case_is_folded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "--datasets", "TOY", "--models", "Softmax", "--methods", "SOURCE",
            "--results", str(tmp_path / "r.jsonl"), "--no-progress"]  # fmt: skip
    assert cli.main(argv, components=TOY) == 0
    assert "| toy | natural | softmax | source |" in capsys.readouterr().out
    err = _usage_error(["run", "--datasets", "tyo", "--methods", "priors", "--models", "x"],
                       capsys)  # fmt: skip
    assert "unknown dataset 'tyo'; did you mean toy?" in err
    assert "unknown method 'priors'; did you mean prior?" in err
    assert "unknown model 'x'; choose from softmax" in err  # a short list is given whole
    err = _usage_error(["run", "--datasets", "qqqq"], capsys, cli.Components())
    assert "unknown dataset 'qqqq'; --help lists the" in err and "heloc" not in err
    # the names argparse and the figure list hold get the same hint
    err = _usage_error(["reproduce", "mian"], capsys)
    assert "unknown table 'mian'; did you mean main?" in err
    args = cli.build_parser().parse_args(["reproduce", "MAIN"])  # folded, as datasets are
    assert args.table == "main"
    # roles and figures are folded before they are checked (the toy components know no
    # adaptable method, so plot's other checks refuse it here)
    for argv, field, folded in (
        (["reproduce", "benchmark", "--roles", "HOLDOUT", "holdout"], "roles", ["holdout"]),
        (["plot", "RELIABILITY", "--datasets", "toy"], "figures", ["reliability"]),
    ):
        args = cli.build_parser(TOY).parse_args(argv)
        with contextlib.suppress(SystemExit):
            cli.check_args(args, TOY)
        assert getattr(args, field) == folded
        assert "did you mean" not in capsys.readouterr().err
    err = _usage_error(["reproduce", "benchmark", "--roles", "holdut"], capsys)
    assert "unknown role 'holdut'; did you mean holdout?" in err
    err = _usage_error(["plot", "relability", "--datasets", "toy"], capsys, TOY)
    assert "unknown figure 'relability'; did you mean reliability?" in err
    err = _usage_error(["plot", "--datasets", "toy", "relabilty"], capsys, TOY)
    assert "unknown dataset 'relabilty'" in err and "did you mean the figure reliability?" in err


def test_a_run_found_whole_in_the_store_needs_no_raw_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: '1 already in the results store, 0 to run', then 'skipped dataset heloc' and
    exit 1, because the absent raw files were checked first."""
    spec = ExperimentSpec("heloc", "natural", "softmax", "source", 0)
    store = _store_of(tmp_path, [spec], [0.6])
    argv = ["run", "--datasets", "heloc", "--models", "softmax", "--methods", "source",
            "--results", str(store.path), "--no-progress"]  # fmt: skip
    assert cli.main(argv, components=TOY) == 0
    out = capsys.readouterr().out
    assert "(1 already in the results store, 0 to run)" in out
    assert "| heloc | natural | softmax | source | 1 | 60.0 |" in out
    assert "skipped" not in out


def test_reproduce_refuses_datasets_a_paper_table_does_not_hold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["reproduce", "main", "--datasets", "adult_age", "heloc", "--out", str(tmp_path),
            "--results", str(tmp_path / "r.jsonl")]  # fmt: skip
    err = _usage_error(argv, capsys, replace(cli.Components(), load_dataset=_no_work))
    assert "Table 'main' does not hold dataset(s) ['adult_age']" in err
    assert list(tmp_path.iterdir()) == []


def test_reproduce_runs_a_paper_table_on_a_paper_dataset_it_has_no_numbers_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The paper reports its corruptions on three datasets; the table runs on any of its six
    (here from a store, so nothing trains)."""
    spec = next(
        s
        for s in table_specs(TABLES["corruptions"], [0], ["hospital_readmission"])
        if s.method == "source"
    )
    store = _store_of(tmp_path, [spec], [0.6])
    out = tmp_path / "t"
    argv = ["reproduce", "corruptions", "--datasets", "hospital_readmission", "--seeds", "0",
            "--no-run", "--out", str(out), "--results", str(store.path), "--no-progress"]  # fmt: skip
    assert cli.main(argv, components=TOY) == 0
    table = (out / "corruptions.md").read_text()
    assert "Hospital Readmission" in table and "60.0" in table


def test_reproduce_no_run_on_a_store_without_the_table_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "t"
    argv = ["reproduce", "label_shift", "--no-run", "--out", str(out), "--results",
            str(tmp_path / "r.jsonl")]  # fmt: skip
    assert cli.main(argv, components=TOY) == 1
    printed = capsys.readouterr().err
    assert "[label_shift] nothing to write: the results store" in printed
    assert "run it without --no-run first" in printed
    assert not out.exists()


def test_plot_reports_its_own_warnings_as_run_does_and_names_whole_labels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import warnings

    import adaptable.experiments.figures as figures

    original = figures.calibration_analysis

    def noisy(*args, **kwargs):
        warnings.warn("few rows in a scenario", UserWarning, stacklevel=1)
        return original(*args, **kwargs)

    monkeypatch.setattr(figures, "calibration_analysis", noisy)
    argv = ["plot", "label_distribution", "reliability", "--datasets", "toy", "--models",
            "softmax", "--method", "prior", "--out", str(tmp_path), "--results",
            str(tmp_path / "r.jsonl"), "--progress"]  # fmt: skip
    assert cli.main(argv, components=TOY) == 0
    err = capsys.readouterr().err
    assert "warning (figures): UserWarning: few rows in a scenario" in err.splitlines()
    assert "test_cli.py" not in err  # no raw warning with its file and line
    assert "toy softmax source seed 0" in err  # each experiment shows a bar over its batches
    # the experiments' bar names the whole label (it was cut at 30 characters)
    argv = ["run", "--datasets", "toy", "--models", "softmax", "--methods",
            "prior[alpha=0.25,temperature=1.5]", "--results", str(tmp_path / "r.jsonl"),
            "--progress"]  # fmt: skip
    assert cli.main(argv, components=TOY) == 0
    assert "toy softmax prior[alpha=0.25,temperature=1.5]" in capsys.readouterr().err


def test_plain_defaults_plural_counts_and_aligned_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(SystemExit):
        cli.main(["run", "--help"], components=TOY)
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: hospital_readmission)" in text and "(default: mlp)" in text
    assert "['" not in text
    store = _store_of(tmp_path, table_specs(TABLES["oracle"], [0], ["heloc"]), (0.6, 0.6, 0.6))
    argv = ["reproduce", "oracle", "--no-run", "--seeds", "0", "--datasets", "heloc", "--out",
            str(tmp_path / "t"), "--results", str(store.path)]  # fmt: skip
    assert cli.main(argv, components=TOY) == 0
    assert "over seed 0." in (tmp_path / "t" / "oracle.md").read_text()
    from adaptable import datasets

    listed = {"a": {"present": True, "group": "g"},
              "a_very_long_task_name_indeed": {"present": False, "group": "g"}}  # fmt: skip
    monkeypatch.setattr(datasets, "available", lambda data_dir=None: listed)
    capsys.readouterr()
    assert cli.main(["datasets"]) == 0
    out = capsys.readouterr().out
    folder, out = out.split("\n\n", 1)
    assert folder.startswith("data folder: ")
    tasks, names = out.split("\n\n[other names]\n")
    lines = tasks.splitlines()[1:]
    assert [line.index("present" if "present" in line else "absent") for line in lines] == [30, 30]
    # the other names every command accepts, each with the task it stands for
    assert "readmission = hospital_readmission" in names and "anes = voting" in names


@pytest.fixture(scope="module")
def saved_adapter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A default adapter saved after 30 batches of a synthetic stream, labels of 20 rows a
    batch given by row id five batches late."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    from adaptable import AdapTable

    rng = np.random.default_rng(0)
    x = rng.normal(size=(6000, 3))
    y = (x[:, 0] + 0.5 * rng.normal(size=6000) > 0).astype(int)
    model = LogisticRegression().fit(x[:2000], y[:2000])
    adapter = AdapTable(random_state=0).fit(model, x[:2000], y[:2000], x[2000:2500], y[2000:2500])
    stream_x, stream_y = x[2500:], y[2500:]
    for t in range(30):
        adapter.predict(stream_x[t * 64 : (t + 1) * 64])
        if t >= 5:
            rows = np.arange((t - 5) * 64, (t - 5) * 64 + 20)
            adapter.partial_fit(None, stream_y[rows], rows=rows)
    path = tmp_path_factory.mktemp("drift") / "adapter.safetensors"
    adapter.save(path, drop_updates=True)  # (the report is what the drift command reads)
    return path


def test_drift_figure_draws_the_batches_the_summary_reads(
    saved_adapter: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import adaptable.experiments.drift_figure as drift_figure

    drawn = []
    plot = drift_figure.plot_drift_report
    monkeypatch.setattr(
        drift_figure,
        "plot_drift_report",
        lambda report, **kw: drawn.append(report) or plot(report, **kw),
    )
    for extra, batches in ((["--last-batches", "10"], list(range(20, 30))), ([], list(range(30)))):
        assert (
            cli.main(["drift", str(saved_adapter), *extra, "--figure", str(tmp_path / "f.png")])
            == 0
        )
        assert drawn.pop()["batch"].tolist() == batches


def test_drift_prints_a_saved_adapters_summary_and_writes_its_report(
    saved_adapter: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main(["drift", str(saved_adapter), "--last-batches", "10",
                     "--report", str(tmp_path / "r.csv"), "--figure", str(tmp_path / "r.png")])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0 and out.startswith("Batches 20-29: 640 rows") and "verdict: " in out
    import pandas as pd

    assert len(pd.read_csv(tmp_path / "r.csv")) == 30
    assert (tmp_path / "r.png").stat().st_size > 10_000
    assert cli.main(["drift", str(saved_adapter), "--json", "--reference", "0.99"]) == 0
    fields = json.loads(capsys.readouterr().out)
    assert fields["reference"] == 0.99 and fields["reference_sd"] == 0.0
    assert fields["labelled_rows"] == 25 * 20 and fields["estimate_kind"] == "label-corrected"
    assert fields["verdict"] == "degraded"  # a logistic regression is far from 99 % macro-F1


def test_drift_prints_the_columns_that_moved_most(
    saved_adapter: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], edited_copy
) -> None:
    assert cli.main(["drift", str(saved_adapter)]) == 0
    lines = capsys.readouterr().out.splitlines()
    start = lines.index(
        "Columns that moved most against the held-out rows (0 of 3 flagged at 5 %, Holm-corrected):"
    )
    shown = [line.split() for line in lines[start + 1 :]]  # the three columns of the arrays
    assert sorted(row[0] for row in shown) == ["0", "1", "2"]
    assert {row[1] for row in shown} == {"numerical"} and "flagged" not in lines[-1]
    assert cli.main(["drift", str(saved_adapter), "--columns", "0"]) == 0
    assert "Columns" not in capsys.readouterr().out
    assert cli.main(["drift", str(saved_adapter), "--json", "--columns", "2"]) == 0
    columns = json.loads(capsys.readouterr().out)["feature_drift"]
    assert len(columns) == 2 and {"column", "distance", "p_value", "flagged"} <= set(columns[0])
    assert columns[0]["rows_seen"] == 30 * 64 and columns[0]["unseen_share"] is None

    def earlier(tensors, meta):  # a file written before the columns were followed
        del meta["feature_drift"]
        meta.pop("digest", None)  # (files written before the record had no digest either)
        for key in [k for k in tensors if k.startswith("feature_drift.")]:
            del tensors[key]

    older = str(edited_copy(saved_adapter, tmp_path, earlier))
    assert cli.main(["drift", older]) == 0
    assert "Columns: this file keeps no per-column record" in capsys.readouterr().out
    assert cli.main(["drift", older, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["feature_drift"] is None
    assert cli.main(["drift", older, "--columns", "-1"]) == 2
    assert "--columns: must be 0 or more; got -1" in capsys.readouterr().err


def test_drift_names_the_reports_warnings_in_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    from adaptable import AdapTable

    rng = np.random.default_rng(1)
    x = rng.normal(size=(900, 2))
    y = np.where(x[:, 0] > 0, "a", "a_low")  # prior_a_low twice: the report uses positions
    model = LogisticRegression().fit(x[:600], y[:600])
    adapter = AdapTable(random_state=0).fit(model, x[:400], y[:400], x[400:600], y[400:600])
    for t in range(3):
        adapter.predict(x[600 + 64 * t : 664 + 64 * t])
    adapter.save(tmp_path / "a.safetensors")
    code = cli.main(["drift", str(tmp_path / "a.safetensors"), "--report", str(tmp_path / "r.csv")])
    err = capsys.readouterr().err
    assert code == 0 and "adaptable drift: warning: the report's columns cannot name" in err
    assert "UserWarning" not in err and "prior_0" in (tmp_path / "r.csv").read_text()


def test_drift_refuses_a_missing_file_and_bad_options_in_one_line(
    saved_adapter: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["drift", str(saved_adapter.parent / "absent.safetensors")]) == 2
    err = capsys.readouterr().err
    assert "absent.safetensors" in err and "Traceback" not in err and len(err.splitlines()) == 1
    assert cli.main(["drift", str(saved_adapter), "--tolerance", "-1"]) == 2
    assert "--tolerance: a fraction from 0 to 1" in capsys.readouterr().err


def test_drift_creates_the_reports_folder_and_refuses_what_it_cannot_write_in_one_line(
    saved_adapter: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--report`` creates its missing folders as ``--figure`` does; an unsupported figure
    suffix or a folder that is a file is one line on stderr and exit status 2."""
    report = tmp_path / "new" / "folder" / "r.csv"
    assert cli.main(["drift", str(saved_adapter), "--report", str(report)]) == 0
    assert report.stat().st_size > 0
    capsys.readouterr()
    assert cli.main(["drift", str(saved_adapter), "--figure", str(tmp_path / "r.xyz")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # refused before the summary
    [line] = captured.err.splitlines()
    assert line.startswith(f"adaptable drift: --figure {tmp_path / 'r.xyz'}: matplotlib writes "
                           "no format with the suffix '.xyz': use .png, or one of ")  # fmt: skip
    assert ".pdf" in line and not (tmp_path / "r.xyz").exists()
    (tmp_path / "file").write_text("")
    for option, name in (("--report", "r.csv"), ("--figure", "r.png")):
        path = tmp_path / "file" / name
        assert cli.main(["drift", str(saved_adapter), option, str(path)]) == 2
        assert capsys.readouterr().err.splitlines() == [
            f"adaptable drift: {option} {path}: '{tmp_path / 'file'}' is not a folder"
        ]


def test_drift_figure_of_classes_named_low_and_high_draws_them_without_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Classes ``high``, ``low``, ``mid``: the report's ``prior_low`` is a class, not an
    interval bound; every panel's legend has lines (matplotlib warns on an empty one)."""
    import warnings

    import numpy as np
    from sklearn.linear_model import LogisticRegression

    from adaptable import AdapTable
    from adaptable.core.report.drift_log import report_classes

    rng = np.random.default_rng(0)
    x = rng.normal(size=(1400, 2))
    y = np.array(["low", "mid", "high"])[np.digitize(x[:, 0] + 0.3 * x[:, 1], [-0.5, 0.5])]
    model = LogisticRegression().fit(x[:800], y[:800])
    adapter = AdapTable(random_state=0).fit(model, x[:800], y[:800], x[800:1200], y[800:1200])
    for t in range(3):
        adapter.predict(x[1200 + 64 * t : 1264 + 64 * t])
    assert report_classes(adapter.report().columns) == ["high", "low", "mid"]
    path = tmp_path / "three.safetensors"
    adapter.save(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib's "No artists with labels" is a UserWarning
        assert cli.main(["drift", str(path), "--figure", str(tmp_path / "f.png")]) == 0
    assert (tmp_path / "f.png").stat().st_size > 10_000
    assert "Traceback" not in capsys.readouterr().err


@pytest.fixture(scope="module")
def three_classes_with_labels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A default adapter of three classes saved after 20 batches, labels of 20 rows a batch
    given by row id three batches late (the label panel draws every kind of line per class)."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    from adaptable import AdapTable

    rng = np.random.default_rng(0)
    x = rng.normal(size=(2600, 2))
    y = np.digitize(x[:, 0] + 0.3 * x[:, 1], [-0.5, 0.5])
    model = LogisticRegression().fit(x[:800], y[:800])
    adapter = AdapTable(random_state=0).fit(model, x[:800], y[:800], x[800:1200], y[800:1200])
    stream_x, stream_y = x[1200:], y[1200:]
    for t in range(20):
        adapter.predict(stream_x[t * 64 : (t + 1) * 64])
        if t >= 3:
            rows = np.arange((t - 3) * 64, (t - 3) * 64 + 20)
            adapter.partial_fit(None, stream_y[rows], rows=rows)
    path = tmp_path_factory.mktemp("three") / "three.safetensors"
    adapter.save(path, drop_updates=True)  # (the report is what the drift command reads)
    return path


def _legends_cover_nothing_and_say_each_label_once(figure) -> None:
    """Every panel's legend lies outside every panel's axes and lists each label once."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)  # a saved figure may have lost its canvas
    canvas.draw()  # the layout places the legends
    renderer = canvas.get_renderer()
    boxes = [ax.get_window_extent(renderer) for ax in figure.axes]
    legends = [ax.get_legend() for ax in figure.axes if ax.get_legend() is not None]
    assert len(legends) == 3  # performance, label shares, tests
    for legend in legends:
        labels = [text.get_text() for text in legend.get_texts()]
        assert len(labels) == len(set(labels)), labels
        box = legend.get_window_extent(renderer)
        assert not any(box.overlaps(axes) for axes in boxes), labels


def test_the_drift_figure_names_the_stream_and_its_legends_cover_nothing(
    three_classes_with_labels: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``adaptable drift FILE --figure``: the title says what the stream is (the adapter's
    setting, its batches and rows), not the file's name; the label panel lists each kind of
    line once (not once per class) and no legend covers a line."""
    import numpy as np

    import adaptable.experiments.plots as plots
    from adaptable import AdapTable
    from adaptable.experiments.drift_figure import plot_drift_report

    drawn = []
    save = plots.save_figure
    monkeypatch.setattr(
        plots, "save_figure", lambda fig, path: drawn.append(fig) or save(fig, path)
    )
    path = three_classes_with_labels
    assert cli.main(["drift", str(path), "--figure", str(tmp_path / "f.png")]) == 0
    [figure] = drawn
    title = figure.get_suptitle()
    assert path.name not in title and path.stem not in title
    assert "default preset" in title and "3 classes" in title
    assert "batches 0-19, 1,280 rows" in title
    _legends_cover_nothing_and_say_each_label_once(figure)
    labels = [t.get_text() for t in figure.axes[1].get_legend().get_texts()]
    assert {"labelled share", "estimate p_t(0)", "estimate p_t(2)"} <= set(labels)
    # the library's figure with the stream's true shares too, and without a title
    report = AdapTable.load(path).report()
    figure = plot_drift_report(report, true_shares=np.full((len(report), 3), 1 / 3))
    assert figure.get_suptitle() == "Drift report: batches 0-19, 1,280 rows"
    _legends_cover_nothing_and_say_each_label_once(figure)
    assert "true share" in [t.get_text() for t in figure.axes[1].get_legend().get_texts()]


def _create_with_adaptable(name: str, **options: object) -> object:
    """The toy methods, and AdapTable itself as ``adaptable``."""
    if name == "adaptable":
        from adaptable import AdapTable

        return AdapTable(**options)
    return testing.create_method(name, **options)


def _known_with_adaptable(kind: str) -> list[str]:
    names = testing.known_names(kind)
    return [*names, "adaptable"] if kind == "method" else names


WITH_ADAPTABLE = replace(TOY, create_method=_create_with_adaptable,
                         known_names=_known_with_adaptable)  # fmt: skip


def test_feedback_without_methods_runs_the_adapter_alone_as_the_readme_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``adaptable run --feedback 0.05 10 --drift-figure drift.png`` (the README's command, on
    the toy data): one experiment, the default adapter's, and its figure."""
    store = tmp_path / "r.jsonl"
    argv = ["run", "--datasets", "toy", "--models", "softmax", "--feedback", "0.5", "1",
            "--drift-figure", str(tmp_path / "drift.png"), "--results", str(store),
            "--no-progress"]  # fmt: skip
    assert cli.main(argv, components=WITH_ADAPTABLE) == 0
    out = capsys.readouterr().out
    assert "1 experiment (0 already in the results store, 1 to run)" in out
    assert "with late labels: 50 % of each batch's rows, 1 batch late" in out
    assert list(ResultStore(store).completed()) == [
        "toy|natural|softmax|adaptable|seed=0|feedback=0.5@1"
    ]
    assert f"drift report figure: {tmp_path / 'drift.png'}" in out and "verdict: " in out
    assert (tmp_path / "drift.png").stat().st_size > 10_000
    with pytest.raises(SystemExit):
        cli.main(["run", "--help"], components=TOY)
    assert "with --feedback: adaptable alone" in " ".join(capsys.readouterr().out.split())


def _warning_shift(name: str, dataset, seed: int):
    """The toy streams, each built with a warning (as a resampled shift warns of its repeats);
    any scenario but ``natural``/``sorted`` is the natural stream, so that every one builds."""
    import warnings

    warnings.warn(f"the {name} stream repeats rows", UserWarning, stacklevel=2)
    return testing.apply_shift(name if name in ("natural", "sorted") else "natural", dataset, seed)


def _escaped_warnings(argv: list[str], components) -> list[str]:
    """Run the command (exit status 0) and return the warnings that left it raw, which Python
    would print with their file and line (pytest's own capture would hide them)."""
    import warnings

    with warnings.catch_warnings(record=True) as escaped:
        warnings.simplefilter("always")
        assert cli.main(argv, components=components) == 0
    return [str(w.message) for w in escaped]


def test_the_drift_figures_rerun_does_not_print_the_experiments_warnings_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``run --feedback ... --drift-figure``: the figure reruns the experiment; a warning the
    sweep's report has printed is not printed again, raw, by the rerun. When the experiment
    is reused from the store, the rerun's warning is one line in the CLI's words."""
    components = replace(WITH_ADAPTABLE, apply_shift=_warning_shift)
    argv = ["run", "--datasets", "toy", "--models", "softmax", "--feedback", "0.5", "1",
            "--drift-figure", str(tmp_path / "drift.png"), "--results", str(tmp_path / "r.jsonl"),
            "--no-progress"]  # fmt: skip
    assert _escaped_warnings(argv, components) == []  # none printed raw, with a source line
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "stream repeats rows" in line]
    assert lines == [
        "warning (toy|natural|softmax|adaptable|seed=0|feedback=0.5@1): UserWarning: the "
        "natural stream repeats rows"
    ], err
    assert _escaped_warnings(argv, components) == []  # reused: the sweep reports nothing
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "stream repeats rows" in line]
    assert lines == ["warning (drift figure): UserWarning: the natural stream repeats rows"], err


def test_plot_prints_only_the_warnings_of_the_figures_asked_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``plot reliability label_distribution``: the reliability figure reads the natural
    stream alone, so the shifted streams of the temperature-vs-MMD figure (and their warnings)
    are not built; asked for that figure, their warnings are printed, once each."""
    components = replace(TOY, apply_shift=_warning_shift)
    argv = ["plot", "reliability", "label_distribution", "--datasets", "toy", "--models",
            "softmax", "--method", "prior", "--out", str(tmp_path), "--results",
            str(tmp_path / "r.jsonl"), "--no-progress"]  # fmt: skip
    assert _escaped_warnings(argv, components) == []
    err = capsys.readouterr().err
    assert "numerical stream" not in err and "test_cli.py" not in err, err
    assert cli.main([*argv[:1], "temperature_mmd", *argv[3:]], components=components) == 0
    err = capsys.readouterr().err
    assert "warning (figures): UserWarning: the numerical stream repeats rows" in err.splitlines()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--methods", "source", "prior", "adaptable", "--feedback", "0.05", "10"],
         "--feedback: source (no partial_fit) and prior (no partial_fit) take no late labels; "
         "run those without --feedback, or leave out --methods to run adaptable alone"),
        (["--methods", "adaptable[preset=paper]", "--feedback", "0.05", "10"],
         "--feedback: adaptable[preset=paper] takes no late labels; "),
        (["--methods", "adaptable", "--feedback", "2", "10"],
         "argument --feedback: SHARE must lie between 0 and 1; got 2"),
        (["--feedback", "nan", "10"], "argument --feedback: SHARE must lie between 0 and 1"),
        (["--feedback", "0.05", "-1"],
         "argument --feedback: DELAY must be a whole number of batches, 0 or more; got -1"),
        (["--feedback", "0.05", "1.5"], "DELAY must be a whole number of batches"),
        (["--methods", "source", "prior", "--drift-figure", "d.png"],
         "--drift-figure draws one experiment; this run has 2: give one dataset, model, method"),
        (["--methods", "source", "--drift-figure", "d.png"],
         "--drift-figure: source keeps no drift report; use adaptable"),
        (["--methods", "adaptable", "--drift-figure", "d.xyz"],
         "--drift-figure d.xyz: matplotlib writes no format with the suffix '.xyz': use .png"),
    ],
    ids=["no-partial-fit", "paper-preset", "share", "share-nan", "delay-negative",
         "delay-fraction", "drift-figure-several", "drift-figure-no-report",
         "drift-figure-suffix"],
)  # fmt: skip
def test_feedback_and_drift_figure_are_checked_before_any_work(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Methods that take no labels, a share outside [0, 1], a delay that is no whole number of
    batches, a drift figure of several experiments (or of a method without a report, or to a
    file matplotlib cannot write): one line after the usage, exit status 2, nothing run."""
    components = replace(WITH_ADAPTABLE, load_dataset=_no_work, train_model=_no_work)
    base = ["run", "--datasets", "toy", "--models", "softmax", "--results", str(tmp_path / "r")]
    err = _usage_error([*base, *argv], capsys, components)
    assert err.startswith("usage: adaptable run ")
    assert err.splitlines()[-1].startswith("adaptable run: error: ") and message in err
    assert not (tmp_path / "r").exists()
    # no labels reach anyone with a share of 0: any method runs
    args = cli.build_parser(TOY).parse_args([*base, "--methods", "source", "--feedback", "0", "3"])
    cli.check_args(args, components)
    assert args.feedback == (0.0, 3)


def test_a_figure_path_that_cannot_be_written_is_found_before_any_work(tmp_path) -> None:
    from adaptable.cli.path_checks import os_reason, unwritable

    afile = tmp_path / "afile"
    afile.write_text("")
    assert unwritable(str(afile / "x.png")) == f"{str(afile)!r} is not a folder"
    assert unwritable(str(tmp_path)) == f"{str(tmp_path)!r} is a folder"
    assert unwritable(str(tmp_path / "new" / "deeper" / "x.png")) is None
    assert os_reason(RuntimeError("'xelatex' not found")) == "'xelatex' not found"


def test_repeated_names_and_seeds_are_one_experiment_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "--datasets", "toy", "toy", "--models", "softmax", "SOFTMAX", "--methods",
            "source", "source", "--seeds", "0", "0", "--scenarios", "natural", "natural",
            "--results", str(tmp_path / "r.jsonl"), "--no-progress"]  # fmt: skip
    assert cli.main(argv, components=TOY) == 0
    out = capsys.readouterr().out
    assert "1 experiment (0 already in the results store, 1 to run)" in out
    assert "| toy | natural | softmax | source | 1 |" in out
    # reproduce: a seed given twice would weigh twice in the means; first of each kept, in order
    argv = ["reproduce", "oracle", "--seeds", "2", "0", "0", "2", "--datasets", "heloc",
            "HELOC", "--no-run", "--results", str(tmp_path / "r.jsonl")]  # fmt: skip
    args = cli.build_parser(TOY).parse_args(argv)
    cli.check_args(args, TOY)
    assert (args.seeds, args.datasets) == ([2, 0], ["heloc"])
    args = cli.build_parser(TOY).parse_args(
        ["plot", "--datasets", "toy", "--models", "softmax", "--methods", "prior", "PRIOR"]
    )
    cli.check_args(args, TOY)
    assert args.method == "prior"


def test_a_missing_data_folder_from_the_environment_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    base = ["run", "--datasets", "toy", "--models", "softmax", "--methods", "source",
            "--results", str(tmp_path / "r.jsonl")]  # fmt: skip
    monkeypatch.setenv("ADAPTABLE_DATA_DIR", str(tmp_path / "missing"))
    err = _usage_error(base, capsys)
    assert f"ADAPTABLE_DATA_DIR '{tmp_path / 'missing'}' is not a folder" in err.splitlines()[-1]
    assert not (tmp_path / "r.jsonl").exists()
    monkeypatch.delenv("ADAPTABLE_DATA_DIR")
    assert "--data-dir: an empty path" in _usage_error([*base, "--data-dir", ""], capsys)


def test_output_and_cache_folders_that_cannot_be_are_usage_errors_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    afile = tmp_path / "afile"
    afile.write_text("")
    store = ["--results", str(tmp_path / "r.jsonl")]
    cases = [
        (["reproduce", "oracle", "--no-run", "--out", str(afile), *store], "--out"),
        (["plot", "label_distribution", "--datasets", "toy", "--models", "softmax", "--method",
          "prior", "--out", str(afile / "x"), *store], "--out"),
        (["run", "--datasets", "toy", "--models", "softmax", "--methods", "source", "--cache-dir",
          str(afile), *store],
         "--cache-dir"),
    ]  # fmt: skip
    if Path("/proc/self").is_dir():  # a place where nothing can be created, even by root
        cases.append((["reproduce", "oracle", "--no-run", "--out", "/proc/x", *store], "--out"))
    for argv, option in cases:
        err = _usage_error(argv, capsys)
        assert err.splitlines()[-1].startswith(f"adaptable {argv[0]}: error: {option} ")
    assert not (tmp_path / "r.jsonl").exists()
    # a folder still to be made passes, and the check leaves nothing behind
    assert path_checks.folder_problem(str(tmp_path / "new" / "deeper")) is None
    assert not (tmp_path / "new").exists()


def test_path_options_expand_a_tilde_the_shell_left(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    monkeypatch.chdir(tmp_path)
    argv = ["run", "--datasets", "toy", "--models", "softmax", "--methods", "source",
            "--results=~/r.jsonl", "--cache-dir=~/cache", "--no-progress"]  # fmt: skip
    assert cli.main(argv, components=TOY) == 0
    assert (tmp_path / "home" / "r.jsonl").exists() and not (tmp_path / "~").exists()
    args = cli.build_parser(TOY).parse_args(["reproduce", "oracle", "--out", "~/t"])
    cli.check_args(args, TOY)
    assert args.out == str(tmp_path / "home" / "t")


def test_drift_refuses_options_out_of_range_by_the_options_names(
    saved_adapter: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    afile = tmp_path / "afile"
    afile.write_text("")
    cases = [
        (["--tolerance", "5"], "--tolerance: a fraction from 0 to 1 (0.05 is 5 points); got 5"),
        (["--last-batches", "0"], "--last-batches: must be at least 1; got 0"),
        (["--deviations", "-1"], "--deviations: must be 0 or more"),
        (["--reference", "72"], "--reference: a fraction from 0 to 1"),
        (["--report", str(afile / "r.csv")], f"--report {afile / 'r.csv'}: "),
    ]
    for options, message in cases:
        assert cli.main(["drift", str(saved_adapter), *options]) == 2
        out, err = capsys.readouterr()
        assert out == ""  # found before the summary is printed
        assert err.splitlines() == [f"adaptable drift: {err.split(': ', 1)[1].rstrip()}"]
        assert message in err


def test_a_drift_figure_that_fails_after_the_run_says_which_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import adaptable.experiments.drift_figure as drift_figure

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", "d.png")

    monkeypatch.setattr(drift_figure, "draw_experiment", refuse)
    argv = ["run", "--datasets", "toy", "--models", "softmax", "--methods", "adaptable",
            "--drift-figure", str(tmp_path / "d.png"), "--results", str(tmp_path / "r.jsonl"),
            "--no-progress"]  # fmt: skip
    assert cli.main(argv, components=WITH_ADAPTABLE) == 1
    err = capsys.readouterr().err
    assert f"adaptable run: --drift-figure {tmp_path / 'd.png'}: Permission denied" in err


def test_progress_bars_only_on_a_terminal_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    parser = cli.build_parser(TOY)

    def progress(argv: list[str], terminal: bool) -> bool:
        monkeypatch.setattr(sys.stderr, "isatty", lambda: terminal)
        args = parser.parse_args(["plot", "--datasets", "toy", "--models", "softmax",
                                  "--method", "prior", *argv])  # fmt: skip
        cli.check_args(args, TOY)
        assert args.no_progress == (args.progress != "bars")
        return args.progress

    assert progress([], terminal=False) == "lines"  # a log gets lines, not redrawn bars
    assert progress([], terminal=True) == "bars"
    assert progress(["--progress"], terminal=False) == "bars"
    assert progress(["--no-progress"], terminal=True) == "off"
    assert progress(["--no-progress"], terminal=False) == "off"
    assert progress(["--progress", "--no-progress"], terminal=True) == "off"  # the last wins


def test_without_a_terminal_run_says_each_model_and_experiment_done_in_a_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Standard error not a terminal (a log): one line per source model ready and per
    experiment finished, with the count and the time elapsed, rather than minutes of silence;
    ``--no-progress`` silences them."""
    import re

    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    argv = ["run", "--datasets", "toy", "--models", "softmax", "--methods", "source", "prior",
            "--results", str(tmp_path / "r.jsonl")]  # fmt: skip
    assert cli.main(argv, components=TOY) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if " elapsed)" in line]
    assert len(lines) == 3, err
    assert re.fullmatch(r"source model ready: softmax on toy, seed 0 \(1/1, \d+\.\d s elapsed\)",
                        lines[0])  # fmt: skip
    done = sorted(re.sub(r" \(\d/2, .*", "", line) for line in lines[1:])
    assert done == [
        "experiment done: toy natural softmax prior seed 0",
        "experiment done: toy natural softmax source seed 0",
    ]
    assert "\r" not in err  # no bar redrawn
    argv[-1] = str(tmp_path / "quiet.jsonl")
    assert cli.main([*argv, "--no-progress"], components=TOY) == 0
    assert " elapsed)" not in capsys.readouterr().err


def test_reproduce_benchmark_says_latex_is_for_the_papers_tables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["reproduce", "benchmark", "--roles", "development", "--latex", "--no-run",
            "--seeds", "0", "--datasets", "heloc_trades", "--out", str(tmp_path / "t"),
            "--results", str(tmp_path / "r.jsonl")]  # fmt: skip
    assert cli.main(argv, components=cli.Components()) == 1  # nothing stored
    err = capsys.readouterr().err
    assert "--latex applies to the paper's tables only" in err


def test_local_workers_past_the_cpus_are_capped_with_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from adaptable.experiments import executors

    made = []
    real = executors.make_executor
    monkeypatch.setattr(executors, "make_executor", lambda *a, **k: made.append(k) or real(*a, **k))
    monkeypatch.setattr(workers, "_usable_cpus", lambda: 2)
    argv = ["run", "--datasets", "toy", "--models", "softmax", "--methods", "source",
            "--workers", "64", "--results", str(tmp_path / "r.jsonl"), "--no-progress"]  # fmt: skip
    assert cli.main(argv, components=TOY) == 0
    assert made[-1]["workers"] == 2
    assert "--workers 64: this machine lets the command use 2 CPUs" in capsys.readouterr().err
    argv[argv.index("64")] = "2"  # within the CPUs: as asked, no note
    assert cli.main(argv, components=TOY) == 0
    assert made[-1]["workers"] == 2 and "--workers" not in capsys.readouterr().err


def test_usable_cpus_follow_a_containers_quota(tmp_path: Path) -> None:
    quota = tmp_path / "cpu.max"
    quota.write_text("150000 100000\n")  # docker --cpus 1.5: two processes at most
    assert workers._usable_cpus(str(quota)) == min(2, workers._usable_cpus(str(tmp_path / "none")))
    quota.write_text("50000 100000\n")  # half a CPU: one process
    assert workers._usable_cpus(str(quota)) == 1
    quota.write_text("max 100000\n")  # no quota
    assert workers._usable_cpus(str(quota)) == workers._usable_cpus(str(tmp_path / "none")) >= 1
    quota.write_text("garbage")
    assert workers._usable_cpus(str(quota)) >= 1


def test_run_refuses_a_drift_figure_over_the_results_store_before_any_work(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = tmp_path / "r.jsonl"
    store.write_text("")
    components = replace(WITH_ADAPTABLE, load_dataset=_no_work, train_model=_no_work)
    argv = ["run", "--datasets", "toy", "--models", "softmax", "--methods", "adaptable",
            "--feedback", "0.05", "2", "--results", str(store), "--drift-figure", str(store)]  # fmt: skip
    err = _usage_error(argv, capsys, components)
    assert f"--drift-figure {store}: the same file as --results; name another" in err
    assert store.read_text() == ""


@pytest.mark.parametrize(
    ("outputs", "message"),
    [
        (["--report", "{file}"], "--report {file}: the file read as FILE; name another"),
        (["--figure", "{file}"], "--figure {file}: the file read as FILE; name another"),
        (["--report", "{x}", "--figure", "{x}"], "--figure {x}: the same file as --report"),
    ],
    ids=["report-over-adapter", "figure-over-adapter", "report-and-figure"],
)
def test_drift_refuses_an_output_over_its_input_or_the_other_output(
    saved_adapter: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    outputs: list[str], message: str,
) -> None:  # fmt: skip
    copy = tmp_path / "adapter.safetensors"
    copy.write_bytes(saved_adapter.read_bytes())
    paths = {"file": str(copy), "x": str(tmp_path / "x.csv")}
    argv = ["drift", str(copy), *(o.format(**paths) for o in outputs)]
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert message.format(**paths) in captured.err and captured.out == ""
    assert copy.read_bytes() == saved_adapter.read_bytes()
    assert not (tmp_path / "x.csv").exists()


def test_datasets_says_which_folder_it_read_and_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ADAPTABLE_DATA_DIR", raising=False)
    (tmp_path / "env").mkdir()
    (tmp_path / "arg").mkdir()
    assert cli.main(["datasets"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert (
        first.startswith("data folder: ") and "(the default; name another with --data-dir" in first
    )
    monkeypatch.setenv("ADAPTABLE_DATA_DIR", str(tmp_path / "env"))
    assert cli.main(["datasets"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        f"data folder: {tmp_path / 'env'} ($ADAPTABLE_DATA_DIR)"
    )
    assert cli.main(["datasets", "--data-dir", str(tmp_path / "arg")]) == 0
    assert (
        capsys.readouterr().out.splitlines()[0] == f"data folder: {tmp_path / 'arg'} (--data-dir)"
    )


def test_the_drift_figure_refuses_what_is_not_a_report_in_its_own_words(
    saved_adapter: Path,
) -> None:
    import numpy as np

    from adaptable import AdapTable
    from adaptable.experiments.drift_figure import plot_drift_report

    report = AdapTable.load(saved_adapter).report()
    for bad in (report.to_numpy(), None):
        with pytest.raises(TypeError, match="report must be the DataFrame AdapTable.report"):
            plot_drift_report(bad)
    with pytest.raises(ValueError, match="has no rows"):
        plot_drift_report(report.iloc[:0])
    with pytest.raises(ValueError, match=r"lacks the columns \['batch'\]"):
        plot_drift_report(report.drop(columns="batch"))
    with pytest.raises(ValueError, match=r"true_shares must have shape \(30, 2\).*got \(30, 3\)"):
        plot_drift_report(report, true_shares=np.full((30, 3), 1 / 3))
    figure = plot_drift_report(report, true_shares=np.full((30, 2), 0.5))
    assert len(figure.axes) == 4

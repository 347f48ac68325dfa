"""The runner and sweeps, with the small test doubles of ``adaptable.experiments.testing``."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from adaptable.experiments import testing
from adaptable.experiments.components import RunContext, clear_memo
from adaptable.experiments.experiment import run_experiment
from adaptable.experiments.spec import ExperimentSpec, grid
from adaptable.experiments.store import ResultStore
from adaptable.experiments.sweep import run_sweep

CONTEXT = RunContext(components=testing.COMPONENTS)


def test_record_holds_metrics_timings_and_traces() -> None:
    spec = ExperimentSpec("toy3", "natural", "softmax", "prior", 0, {"alpha": 0.3})
    record = run_experiment(spec, CONTEXT)
    assert record["key"] == spec.key
    assert record["spec"]["options"] == {"alpha": 0.3}
    for value in record["metrics"].values():
        assert 0.0 <= value <= 1.0
    traces = record["traces"]
    assert sum(traces["size"]) == record["rows"] == 320
    assert len(traces["size"]) == 5  # ceil(320 / 64)
    for field in ("true", "predicted", "pseudo", "estimate"):
        for dist in traces[field]:
            assert len(dist) == 3 and sum(dist) == pytest.approx(1.0, abs=1e-4)
    assert all(t is not None and t >= 1.0 for t in traces["temperature"])
    assert record["timing"]["seconds_per_row"] > 0
    assert np.sum(record["confusion"]) == 320
    # the toy without a state has no estimate or temperature
    plain = run_experiment(ExperimentSpec("toy3", "natural", "softmax", "source", 0), CONTEXT)
    assert plain["traces"]["estimate"] == [None] * 5
    assert plain["metrics"]["accuracy"] != record["metrics"]["accuracy"]


def test_deterministic_under_a_seed_and_options_matter() -> None:
    spec = ExperimentSpec("toy", "natural", "softmax", "prior", 1)
    clear_memo()
    first = run_experiment(spec, CONTEXT)
    clear_memo()
    second = run_experiment(spec, CONTEXT)
    assert first["metrics"] == second["metrics"]
    assert first["traces"]["true"] == second["traces"]["true"]
    other = run_experiment(
        ExperimentSpec("toy", "natural", "softmax", "source", 1, {"temperature": 5.0}), CONTEXT
    )
    assert other["metrics"]["ece"] != first["metrics"]["ece"]


def test_sweep_trains_each_source_model_once_and_resumes(tmp_path: Path) -> None:
    clear_memo()
    testing.TRAIN_CALLS.clear()
    store = ResultStore(tmp_path / "r.jsonl")
    specs = grid(
        ["toy", "missing"], ["natural", "sorted"], ["softmax"], ["source", "prior", "fail"], [0, 1]
    )
    result = run_sweep(specs, store, context=CONTEXT, progress=False)
    assert result.skipped == {"missing": "toy data set 'missing' is absent"}
    assert len(result.ran) == 8 and len(result.failures) == 4
    assert all("always fails" in e for e in result.failures.values())
    assert testing.TRAIN_CALLS == {("synthetic", "softmax", 0): 1, ("synthetic", "softmax", 1): 1}
    assert len(store.completed()) == 8
    again = run_sweep(specs, store, context=CONTEXT, progress=False)
    # finished experiments are reused; only the failing ones are tried again
    assert again.ran == [] and len(again.reused) == 8 and len(again.failures) == 4
    assert [r["key"] for r in again.records] == [r["key"] for r in result.records]


_KILLED_SWEEP = textwrap.dedent(
    """
    import sys
    from adaptable.experiments import testing
    from adaptable.experiments.components import RunContext
    from adaptable.experiments.spec import grid
    from adaptable.experiments.store import ResultStore
    from adaptable.experiments.sweep import run_sweep

    specs = grid(["toy"], ["natural", "sorted"], ["softmax"],
                 [("source", {"delay": 0.08, "temperature": t}) for t in (1, 2, 3)], [0, 1])
    run_sweep(specs, ResultStore(sys.argv[1]),
              context=RunContext(components=testing.COMPONENTS), progress=False)
    """
)


def test_killed_sweep_rerun_completes_only_the_missing(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_SWEEP, str(path)], env=env)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if path.exists() and len(path.read_bytes().splitlines()) >= 3:
                break
            assert proc.poll() is None, "the sweep ended before it could be killed"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    with open(path, "a") as handle:  # as if it died in the middle of writing a line
        handle.write('{"key": "toy|natural|softmax|source')
    before = set(ResultStore(path).completed())
    assert 3 <= len(before) < 12
    # delay is an option, so the rerun must use the same one to match the stored keys
    specs = grid(["toy"], ["natural", "sorted"], ["softmax"],
                 [("source", {"delay": 0.08, "temperature": t}) for t in (1, 2, 3)], [0, 1])  # fmt: skip
    result = run_sweep(specs, ResultStore(path), context=CONTEXT, progress=False)
    assert set(result.ran) == {s.key for s in specs} - before
    assert set(result.reused) == before
    completed = ResultStore(path).completed()
    assert set(completed) == {s.key for s in specs}
    assert len(path.read_text().splitlines()) == 12  # the torn line was cut, nothing doubled


def test_failure_in_a_method_is_reported_not_raised(tmp_path: Path) -> None:
    result = run_sweep(
        [ExperimentSpec("toy", "natural", "softmax", "nope", 0)],
        ResultStore(tmp_path / "r.jsonl"),
        context=CONTEXT,
        progress=False,
    )
    assert "toy method 'nope' unknown" in next(iter(result.failures.values()))
    assert result.records == []


def test_only_the_oracle_study_passes_test_labels() -> None:
    plain = run_experiment(ExperimentSpec("toy", "natural", "softmax", "source", 0), CONTEXT)
    oracle = run_experiment(
        ExperimentSpec(
            "toy", "natural", "softmax", "source", 0, {"calibrator": "oracle_test_labels"}
        ),
        CONTEXT,
    )
    assert not plain["uses_test_labels"] and oracle["uses_test_labels"]
    # mixing in the true labels half and half makes every prediction right
    assert oracle["metrics"]["accuracy"] == 1.0 > plain["metrics"]["accuracy"]


def test_progress_names_the_source_model_and_stays_quiet_when_all_is_reused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Say which model trains (not a bar frozen at 0/N); no empty bars."""
    clear_memo()
    store = ResultStore(tmp_path / "r.jsonl")
    specs = grid(["toy"], ["natural"], ["softmax"], ["source", "prior"], [0])
    run_sweep(specs, store, context=CONTEXT, progress=True)
    err = capsys.readouterr().err
    assert "training or loading softmax on toy (seed 0)" in err
    assert "1/1" in err  # the source-model bar finished ...
    assert "experiments: 100%" in err and "2/2" in err  # ... before the experiments' bar ran
    assert err.index("1/1") < err.index("experiments:")
    again = run_sweep(specs, store, context=CONTEXT, progress=True)
    assert len(again.reused) == 2
    assert capsys.readouterr().err == ""  # everything reused: no bar at all


def test_training_and_batch_bars_show_only_under_the_sweeps_bars(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With bars, in this process: a trainer that takes ``quiet`` gets ``quiet=False`` and each
    experiment draws a bar over its test batches; without bars, neither. The context passed in
    is left as it was."""
    quiet_seen: list[bool] = []

    def train(name, dataset, seed, cache_dir=None, device="auto", quiet=True):
        quiet_seen.append(quiet)
        return testing.train_model(name, dataset, seed, cache_dir, device)

    context = RunContext(components=dataclasses.replace(testing.COMPONENTS, train_model=train))
    specs = [ExperimentSpec("toy", "natural", "softmax", "source", 0)]
    for progress, quiet in ((True, False), (False, True)):
        clear_memo()
        run_sweep(specs, ResultStore(tmp_path / f"{progress}.jsonl"), context=context,
                  progress=progress)  # fmt: skip
        assert quiet_seen.pop() is quiet
        batch_bar = "toy softmax source seed 0" in capsys.readouterr().err
        assert batch_bar is progress
    assert not context.show_training and not context.show_batches
    clear_memo()


def test_progress_lines_say_each_step_done_and_draw_no_bar(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``progress="lines"`` (a log): a line per source model ready and per experiment done,
    counted, with the time since the sweep started; no bar, no per-epoch or per-batch bar
    under it. A style that is not one is refused before any work."""
    quiet_seen: list[bool] = []

    def train(name, dataset, seed, cache_dir=None, device="auto", quiet=True):
        quiet_seen.append(quiet)
        return testing.train_model(name, dataset, seed, cache_dir, device)

    clear_memo()
    context = RunContext(components=dataclasses.replace(testing.COMPONENTS, train_model=train))
    specs = grid(["toy"], ["natural"], ["softmax"], ["source", "prior"], [0, 1])
    run_sweep(specs, ResultStore(tmp_path / "r.jsonl"), context=context, progress="lines")
    lines = capsys.readouterr().err.splitlines()
    assert quiet_seen == [True, True]
    assert [line.split(" (")[0] for line in lines[:2]] == [
        "source model ready: softmax on toy, seed 0",
        "source model ready: softmax on toy, seed 1",
    ]
    assert sorted(line.split(" (")[0] for line in lines[2:]) == sorted(
        f"experiment done: toy natural softmax {method} seed {seed}"
        for method in ("source", "prior")
        for seed in (0, 1)
    )
    assert [line.split(" (")[1].split(",")[0] for line in lines] == [
        "1/2", "2/2", "1/4", "2/4", "3/4", "4/4",
    ]  # fmt: skip
    assert all(line.endswith(" s elapsed)") for line in lines)
    with pytest.raises(ValueError, match="progress must be True, False or one of bars, lines"):
        run_sweep(specs, ResultStore(tmp_path / "x.jsonl"), context=context, progress="loud")
    assert not (tmp_path / "x.jsonl").exists()
    clear_memo()


def test_warnings_are_printed_above_the_progress_bar(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warning of the sweep itself (here: while a source model trains) is printed above the
    bars, on a line of its own."""
    import warnings

    clear_memo()

    def noisy(*args, **kwargs):
        warnings.warn("a warning while a source model trains", UserWarning, stacklevel=1)
        return testing.train_model(*args, **kwargs)

    context = RunContext(components=dataclasses.replace(testing.COMPONENTS, train_model=noisy))
    shown_before = warnings.showwarning
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        run_sweep([ExperimentSpec("toy", "natural", "softmax", "source", 0)],
                  ResultStore(tmp_path / "r.jsonl"), context=context, progress=True)  # fmt: skip
    err = capsys.readouterr().err
    warning_lines = [line for line in err.split("\n") if "UserWarning: a warning while" in line]
    assert len(warning_lines) == 1
    # on a line of its own: tqdm.write clears the bar first (no bar text glued in front)
    assert warning_lines[0].split("\r")[-1].startswith(f"{__file__}:"), warning_lines[0]
    assert warnings.showwarning is shown_before  # restored afterwards
    clear_memo()


def _noisy_source(monkeypatch: pytest.MonkeyPatch) -> None:
    """The toy source warns twice per batch (from one line), and once more on its first batch."""
    import warnings

    original = testing.ToySource.predict_proba

    def noisy(self, X_batch, oracle_labels=None):
        for _ in range(2):
            warnings.warn("a warning from inside an experiment", UserWarning, stacklevel=1)
        if not getattr(self, "_warned", False):
            self._warned = True
            warnings.warn("only once", RuntimeWarning, stacklevel=1)
        return original(self, X_batch, oracle_labels)

    monkeypatch.setattr(testing.ToySource, "predict_proba", noisy)


def test_an_experiments_warnings_are_kept_in_its_record_not_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import warnings

    from adaptable.experiments.report import warning_summary

    _noisy_source(monkeypatch)
    specs = [ExperimentSpec("toy", "natural", "softmax", "source", seed) for seed in (0, 1)]
    with warnings.catch_warnings():
        warnings.simplefilter("default")  # Python's own: once per location
        store = ResultStore(tmp_path / "r.jsonl")
        result = run_sweep(specs, store, context=CONTEXT, progress=False)
    assert "a warning from inside" not in capsys.readouterr().err
    # every occurrence counted, in each experiment (not just the first of the process)
    for record in result.records:
        assert record["warnings"] == [
            {"category": "UserWarning", "message": "a warning from inside an experiment",
             "count": 10},  # two per batch, five batches
            {"category": "RuntimeWarning", "message": "only once", "count": 1},
        ]  # fmt: skip
    summary = warning_summary(result.records)
    assert [(e["category"], e["experiments"], e["count"]) for e in summary] == [
        ("UserWarning", 2, 20),
        ("RuntimeWarning", 2, 2),
    ]
    assert summary[0]["example"] == specs[0].key
    assert warning_summary([{"key": "old record without the field"}]) == []
    # A filter set by the caller still applies: ignored warnings are not kept, errors raise.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "only once")
        record = run_experiment(specs[0], CONTEXT)
    assert [w["message"] for w in record["warnings"]] == ["a warning from inside an experiment"]
    with warnings.catch_warnings():
        warnings.filterwarnings("error", category=RuntimeWarning)
        with pytest.raises(RuntimeWarning, match="only once"):
            run_experiment(specs[0], CONTEXT)
    # Each filter keeps its place: a "default" above an "ignore" still shows its warnings
    # (every time, counted), and an "error" above an "ignore" still raises.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warnings.filterwarnings("default", category=RuntimeWarning)
        record = run_experiment(specs[0], CONTEXT)
    assert record["warnings"] == [
        {"category": "RuntimeWarning", "message": "only once", "count": 1}
    ]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=UserWarning)
        warnings.filterwarnings("error", "a warning from", UserWarning)
        with pytest.raises(UserWarning, match="a warning from inside"):
            run_experiment(specs[0], CONTEXT)


def test_a_failed_experiment_reports_the_warnings_before_its_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import warnings

    from adaptable.experiments.sweep import _run_task

    def warns_then_fails(self, X_batch, oracle_labels=None):
        warnings.warn("most categories unseen", UserWarning, stacklevel=1)
        raise ValueError("cannot go on")

    monkeypatch.setattr(testing.ToySource, "predict_proba", warns_then_fails)
    outcome = _run_task(ExperimentSpec("toy", "natural", "softmax", "source", 0), CONTEXT)
    assert outcome["failed"]
    assert outcome["error"] == (
        "ValueError: cannot go on (warned before: UserWarning: most categories unseen)"
    )
    assert outcome["warnings"] == [
        {"category": "UserWarning", "message": "most categories unseen", "count": 1}
    ]


DEVICES_SEEN: list[str] = []


def _recording_train_model(name, dataset, seed, cache_dir=None, device="auto"):
    DEVICES_SEEN.append(device)
    return testing.train_model(name, dataset, seed, cache_dir, device)


RECORDING = dataclasses.replace(testing.COMPONENTS, train_model=_recording_train_model)


def test_the_device_reaches_the_model_trainer_and_the_record() -> None:
    clear_memo()
    spec = ExperimentSpec("toy", "natural", "softmax", "source", 0)
    record = run_experiment(spec, RunContext(components=RECORDING, device="cpu"))
    assert DEVICES_SEEN[-1] == "cpu"
    assert record["device"] == "cpu"  # the toy model has no device: reported as CPU
    run_experiment(spec, RunContext(components=RECORDING))
    assert DEVICES_SEEN[-1] == "auto"  # another device, another memo entry
    with pytest.raises(ValueError, match="device must be one of"):
        RunContext(device="gpu")
    clear_memo()


def test_cli_device_option(tmp_path: Path) -> None:
    from adaptable import cli

    argv = ["run", "--datasets", "toy", "--models", "softmax", "--methods", "source",
            "--results", str(tmp_path / "r.jsonl"), "--no-progress", "--device", "cpu"]  # fmt: skip
    clear_memo()
    assert cli.main(argv, components=RECORDING) == 0
    assert DEVICES_SEEN[-1] == "cpu"
    with pytest.raises(SystemExit):
        cli.main([*argv[:-1], "gpu"], components=RECORDING)
    clear_memo()


def test_adaptable_gets_the_experiment_seed_so_reruns_are_identical() -> None:
    from adaptable import AdapTable
    from adaptable.experiments.components import _create_method
    from adaptable.experiments.process import seed_method

    method = AdapTable()
    seed_method(method, 7, {})
    assert method.random_state == 7
    chosen = AdapTable(random_state=3)
    seed_method(chosen, 7, {"random_state": 3})
    assert chosen.random_state == 3
    seed_method(testing.ToySource(), 7, {})  # no random_state: nothing to do
    # Without the seed the reservoir and bootstrap draw fresh entropy and two runs differ.
    created = []

    def create(name, **options):
        created.append(_create_method(name, **options))
        return created[-1]

    context = RunContext(components=dataclasses.replace(testing.COMPONENTS, create_method=create))
    spec = ExperimentSpec("toy3", "natural", "softmax", "adaptable", 1, {"fallback": "plugin"})
    first, second = run_experiment(spec, context), run_experiment(spec, context)
    assert [m.random_state for m in created] == [1, 1]
    assert first["metrics"] == second["metrics"]
    assert first["traces"]["predicted"] == second["traces"]["predicted"]


@dataclasses.dataclass(frozen=True)
class _FrozenError(Exception):
    """An exception that takes no new attribute."""

    detail: str


def test_an_exception_that_takes_no_attribute_is_still_the_reported_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from adaptable.experiments.sweep import _run_task

    def fails(self, X_batch, oracle_labels=None):
        raise _FrozenError("the real cause")

    monkeypatch.setattr(testing.ToySource, "predict_proba", fails)
    outcome = _run_task(ExperimentSpec("toy", "natural", "softmax", "source", 0), CONTEXT)
    assert outcome["error"].startswith("_FrozenError: ")
    assert "the real cause" in outcome["error"] and outcome["warnings"] == []


def test_fit_and_predict_stream_are_the_experiments_own_loop() -> None:
    from adaptable.experiments.experiment import fit_experiment, predict_stream, shifted_stream
    from adaptable.experiments.metrics import classification_metrics

    spec = ExperimentSpec("toy3", "natural", "softmax", "prior", 0, {"alpha": 0.3})
    record = run_experiment(spec, CONTEXT)
    fitted = fit_experiment(spec, CONTEXT)
    batches = list(predict_stream(fitted, shifted_stream(fitted, "natural", CONTEXT)))
    assert [len(b.y) for b in batches] == record["traces"]["size"]
    assert all(b.proba.shape == (len(b.y), 3) and b.seconds >= 0 for b in batches)
    y = np.concatenate([b.y for b in batches])
    scores = classification_metrics(y, np.concatenate([b.proba for b in batches]))
    assert {k: round(v, 6) for k, v in scores.items()} == record["metrics"]
    # a caller may stop early; the stream's batch size can be chosen
    fitted = fit_experiment(spec, CONTEXT)
    first = next(predict_stream(fitted, shifted_stream(fitted, "natural", CONTEXT), 10))
    assert len(first.y) == 10


def test_predict_stream_refuses_a_wrongly_shaped_prediction() -> None:
    from adaptable.experiments.experiment import fit_experiment, predict_stream, shifted_stream

    fitted = fit_experiment(ExperimentSpec("toy", "natural", "softmax", "source", 0), CONTEXT)

    class OneColumn:
        def predict_proba(self, X):
            return np.ones((len(X), 1))

    fitted.method = OneColumn()
    with pytest.raises(ValueError, match="returned shape"):
        next(predict_stream(fitted, shifted_stream(fitted, "natural", CONTEXT)))


def test_a_cuda_sweep_never_reuses_a_cpu_result(tmp_path: Path) -> None:
    """The device is compared when the store is looked up; a record without one is a CPU
    result; a model without a device (``device_bound`` false) counts on every device."""
    import json

    spec = ExperimentSpec("toy", "natural", "softmax", "source", 0)
    record = run_experiment(spec, CONTEXT)
    assert record["device_bound"] is False  # the toy model has no device
    on_cpu = {**record, "device": "cpu", "device_bound": True}
    older = {k: v for k, v in on_cpu.items() if k not in ("device", "device_bound")}
    for stored in (on_cpu, older):
        path = tmp_path / f"{len(stored)}.jsonl"
        path.write_text(json.dumps(stored) + "\n")
        # named, not "auto": on a machine with CUDA, auto would be the GPU
        cpu_context = RunContext(components=testing.COMPONENTS, device="cpu")
        cpu = run_sweep([spec], ResultStore(path), context=cpu_context, progress=False)
        assert cpu.reused == [spec.key] and cpu.ran == []
        cuda_context = RunContext(components=testing.COMPONENTS, device="cuda")
        cuda = run_sweep([spec], ResultStore(path), context=cuda_context, progress=False)
        assert cuda.ran == [spec.key] and cuda.reused == []
        # the new record has no device: it answers for any, so the next sweep reuses it
        again = run_sweep([spec], ResultStore(path), context=cuda_context, progress=False)
        assert again.reused == [spec.key]
        # tables rebuilt with --no-run read whatever ran, unless a device is named
        from adaptable.experiments.sweep import stored_only

        assert len(stored_only([spec], ResultStore(path), CONTEXT).records) == 1


def test_a_failed_source_model_fails_its_experiments_without_retraining(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    specs = grid(["toy"], ["natural"], ["nomodel"], ["source", "prior"], [0])
    result = run_sweep(specs, ResultStore(tmp_path / "r.jsonl"), context=CONTEXT, progress=False)
    assert set(result.failures) == {s.key for s in specs}
    assert set(result.failures.values()) == {
        "source model failed: KeyError: \"toy model 'nomodel' unknown; use 'softmax'\""
    }
    assert capsys.readouterr().err == ""  # without a bar, the final report alone says it


@pytest.mark.parametrize("foreign", [b"hello\n", None])
def test_run_sweep_refuses_a_foreign_store_before_running_anything(
    tmp_path: Path, foreign: bytes | None
) -> None:
    from adaptable.experiments.store import ResultsPathError

    path = tmp_path / "foreign.txt"
    if foreign is None:
        path.mkdir()  # a folder
    else:
        path.write_bytes(foreign)

    def untouchable(*args: object, **kwargs: object) -> None:
        raise AssertionError("no source model may train for a store that cannot take records")

    context = RunContext(
        components=dataclasses.replace(testing.COMPONENTS, train_model=untouchable)
    )
    spec = ExperimentSpec("toy", "natural", "softmax", "source", 0)
    with pytest.raises(ResultsPathError, match="foreign.txt"):
        run_sweep([spec], ResultStore(path), context=context, progress=False)
    if foreign is not None:
        assert path.read_bytes() == foreign

"""Local process pool and Ray: same results, same store."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adaptable.experiments import testing
from adaptable.experiments.components import RunContext
from adaptable.experiments.executors import LocalExecutor, make_executor
from adaptable.experiments.experiment import run_experiment
from adaptable.experiments.spec import grid
from adaptable.experiments.store import ResultStore
from adaptable.experiments.sweep import run_sweep

CONTEXT = RunContext(components=testing.COMPONENTS)
SPECS = grid(["toy", "toy3"], ["natural"], ["softmax"], ["source", ("prior", {"alpha": 0.2})], [0])


def test_process_pool_matches_in_process_results(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "pool.jsonl")
    result = run_sweep(
        SPECS, store, context=CONTEXT, executor=LocalExecutor(workers=2), progress=False
    )
    assert not result.failures and len(result.ran) == 4
    pids = {r["pid"] for r in store.completed().values()}
    assert len(pids) >= 1
    for record in result.records:
        here = run_experiment(next(s for s in SPECS if s.key == record["key"]), CONTEXT)
        assert here["metrics"] == record["metrics"]


def test_executor_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="workers"):
        LocalExecutor(workers=0)
    with pytest.raises(ValueError, match="'local' or 'ray'"):
        make_executor("slurm")


def test_an_unreachable_ray_cluster_is_one_line_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ray = pytest.importorskip("ray")
    from adaptable import cli
    from adaptable.experiments.executors import ClusterUnreachable, RayExecutor

    def refuse(**options):  # what ray.init does after its retries
        raise ConnectionError(f"Failed to connect to Ray cluster at {options['address']}")

    from adaptable.experiments import executors

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", refuse)
    # a port that refuses at once: refused before Ray retries it for minutes
    with pytest.raises(ClusterUnreachable, match="'127.0.0.1:1' .*accepts no connection"):
        RayExecutor(address="127.0.0.1:1")
    with pytest.raises(ClusterUnreachable, match="'ray://127.0.0.1:1' .*accepts no connection"):
        RayExecutor(address="ray://127.0.0.1:1")
    # a port that answers but is no Ray cluster: Ray's own refusal, and a malformed address
    monkeypatch.setattr(executors, "_check_reachable", lambda address: None)
    with pytest.raises(ClusterUnreachable, match="cannot reach the Ray cluster at '10.0.0.9:6379'"):
        RayExecutor(address="10.0.0.9:6379")
    monkeypatch.setattr(ray, "init", lambda **options: (_ for _ in ()).throw(ValueError("bad")))
    with pytest.raises(ClusterUnreachable, match="'garbage' \\(bad\\)"):
        RayExecutor(address="garbage")
    monkeypatch.setattr(ray, "init", refuse)
    argv = ["run", "--datasets", "toy", "--models", "softmax", "--methods", "source",
            "--executor", "ray", "--ray-address", "10.0.0.9:6379",
            "--results", str(tmp_path / "r.jsonl"), "--no-progress"]  # fmt: skip
    assert cli.main(argv, components=testing.COMPONENTS) == 1
    err = capsys.readouterr().err
    assert (
        err.startswith("adaptable run: error: cannot reach the Ray cluster")
        and "Traceback" not in err
    )


def test_tiny_sweep_on_local_ray(tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")
    from adaptable.experiments.executors import RayExecutor

    executor = RayExecutor(workers=1)
    try:
        store = ResultStore(tmp_path / "ray.jsonl")
        result = run_sweep(SPECS[:3], store, context=CONTEXT, executor=executor, progress=False)
        assert not result.failures, result.failures
        assert len(result.ran) == 3
        # the rest runs locally into the same store and reuses what Ray finished
        rest = run_sweep(SPECS, store, context=CONTEXT, progress=False)
        assert len(rest.reused) == 3 and len(rest.ran) == 1
        ray_record = store.completed()[SPECS[0].key]
        assert ray_record["metrics"] == run_experiment(SPECS[0], CONTEXT)["metrics"]
    finally:
        executor.close()
    assert not ray.is_initialized()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and process groups")
def test_pool_workers_exit_when_their_parent_is_killed(tmp_path: Path) -> None:
    """``kill -9`` of ``adaptable run --workers 2``: the workers (and with them the pool's
    resource tracker) exit by themselves instead of living on with their memory."""
    store = tmp_path / "r.jsonl"
    code = (
        "import sys\n"
        "from adaptable import cli\n"
        "from adaptable.experiments import testing\n"
        "if __name__ == '__main__':\n"
        "    sys.exit(cli.main(sys.argv[1:], components=testing.COMPONENTS))\n"
    )
    argv = [sys.executable, "-c", code, "run", "--datasets", "toy", "--models", "softmax",
            "--methods", "source[delay=0.5]", "--seeds", "0", "1", "2", "3", "--results",
            str(store), "--workers", "2", "--no-progress"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(Path(testing.__file__).parents[2])}
    process = subprocess.Popen(
        argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while not (store.exists() and store.stat().st_size) and time.monotonic() < deadline:
            assert process.poll() is None, "the run ended before it could be killed"
            time.sleep(0.2)
        assert len(_group_members(process.pid)) >= 3  # the parent and its two workers
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        deadline = time.monotonic() + 15
        while _group_members(process.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _group_members(process.pid) == []
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


def _group_members(group: int) -> list[int]:
    """The live (not zombie) processes of a process group, read from ps."""
    listed = subprocess.run(
        ["ps", "-o", "pid=,stat=", "-g", str(group)], capture_output=True, text=True, check=False
    ).stdout.split("\n")
    return [int(line.split()[0]) for line in listed if line.strip() and "Z" not in line.split()[1]]


def _sleep(seconds: float, context: object) -> float:
    time.sleep(seconds)
    return seconds


def test_an_abandoned_pool_is_shut_down_before_the_caller_goes_on(monkeypatch) -> None:
    """Ctrl-C or an abandoned sweep: the pool's manager thread is gone when control returns,
    so the interpreter's exit handler finds its pipes closed, not closing (a race that printed
    a traceback after the one-line message)."""
    import threading
    from concurrent.futures import process

    from adaptable.experiments import executors

    def terminate_only(pool) -> None:  # no join: only the shutdown can wait for the manager
        for worker in list(pool._processes.values()):
            worker.terminate()

    monkeypatch.setattr(executors, "_stop_workers", terminate_only)

    calls = LocalExecutor(workers=2).map_unordered(_sleep, [0.0, 30.0, 30.0, 30.0], None)
    assert next(calls)[1] == 0.0
    started = time.monotonic()
    calls.close()  # as Ctrl-C leaves the loop
    assert time.monotonic() - started < 20  # the running calls were stopped, not waited for
    managers = [t for t in threading.enumerate() if isinstance(t, process._ExecutorManagerThread)]
    assert not managers

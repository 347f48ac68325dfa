"""Local process pool and Ray: same results, same store."""

from __future__ import annotations

from pathlib import Path

import pytest

from adaptable.experiments import testing
from adaptable.experiments.executors import LocalExecutor, make_executor
from adaptable.experiments.runner import RunContext, run_experiment, run_sweep
from adaptable.experiments.spec import grid
from adaptable.experiments.store import ResultStore

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

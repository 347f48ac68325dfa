"""Experiments: run (dataset, scenario, model, method, seed) -> metrics + per-batch traces,
keep results in a resumable JSON-lines store, sweep locally or on Ray, and compare with the paper.

>>> from adaptable.experiments import ExperimentSpec, ResultStore, run_sweep
>>> specs = [ExperimentSpec("hospital_readmission", "natural", "mlp", m, 0) for m in ("source", "adaptable")]
>>> result = run_sweep(specs, ResultStore("results.jsonl"))     # doctest: +SKIP
"""

from adaptable.experiments.components import Components, RunContext
from adaptable.experiments.executors import LocalExecutor, RayExecutor, make_executor
from adaptable.experiments.experiment import run_experiment
from adaptable.experiments.spec import BATCH_SIZE, ExperimentSpec, grid
from adaptable.experiments.store import ResultStore
from adaptable.experiments.sweep import SweepResult, run_sweep

__all__ = [
    "BATCH_SIZE",
    "Components",
    "ExperimentSpec",
    "LocalExecutor",
    "RayExecutor",
    "ResultStore",
    "RunContext",
    "SweepResult",
    "grid",
    "make_executor",
    "run_experiment",
    "run_sweep",
]

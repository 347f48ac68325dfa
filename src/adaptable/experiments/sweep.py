"""Sweeps: run the experiments of a grid that a results store does not hold yet.

Source models are trained (or loaded) first, then the experiments run through an executor
(in this process, a process pool or Ray); each finished record is appended to the store as it
arrives, so that a sweep stopped at any point resumes where it stopped.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from adaptable.experiments.components import RunContext, lookup_device, prepare_source
from adaptable.experiments.executors import LocalExecutor
from adaptable.experiments.experiment import run_experiment
from adaptable.experiments.report import progress_bar, progress_style, say, step_done
from adaptable.experiments.spec import ExperimentSpec
from adaptable.experiments.store import ResultStore, check_results_path


def _run_task(spec: ExperimentSpec, context: RunContext) -> dict[str, Any]:
    """Executor entry point: a record, or a failure description (never raises)."""
    try:
        return run_experiment(spec, context)
    except Exception as err:  # noqa: BLE001 - one failing experiment must not end a sweep
        error = f"{type(err).__name__}: {err}"
        before = getattr(err, "experiment_warnings", [])
        if before:
            error += f" (warned before: {before[0]['category']}: {before[0]['message']})"
        return {
            "failed": True,
            "key": spec.key,
            "error": error,
            "warnings": before,
            "traceback": traceback.format_exc(limit=8),
        }


@dataclass
class SweepResult:
    """What a sweep produced.

    Attributes:
        records: the finished record of every requested experiment that has one (store order
            follows the request order), including those found already in the store.
        ran: keys run in this call; reused: keys found in the store.
        failures: key -> error message for experiments that raised (not stored, so a rerun
            tries them again).
        skipped: dataset -> reason for datasets whose files are absent.
    """

    records: list[dict[str, Any]] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0


def run_sweep(
    specs: Sequence[ExperimentSpec],
    store: ResultStore,
    *,
    context: RunContext | None = None,
    executor: Any = None,
    progress: bool | str = True,
    on_record: Callable[[dict[str, Any]], None] | None = None,
) -> SweepResult:
    """Run every experiment of ``specs`` that the store does not hold yet.

    Source models come first (one progress bar that names the model, dataset and seed being
    trained, with the training's own per-epoch bar under it when it runs in this process), then
    the experiments (a second bar whose rate and ETA are the experiments' own). Nothing is shown
    when everything is reused. Finished records are appended to ``store`` one by one as they
    arrive, so a sweep killed at any point loses only the experiments that were still running.

    A stored record is reused only where it ran on the device this sweep runs on
    (:func:`lookup_device`; a record without a device is a CPU result, one whose model has no
    device counts everywhere). Only datasets with experiments left to run must have their raw
    files. An experiment whose source model failed to train is a failure with that error,
    without a second attempt.

    Args:
        specs: the experiments (duplicates are run once).
        store: the results store.
        context: components and locations shared by all experiments.
        executor: a :class:`~adaptable.experiments.executors.LocalExecutor` (default, one
            worker) or :class:`~adaptable.experiments.executors.RayExecutor`.
        progress: show tqdm progress bars on stderr (warnings of the sweep itself, e.g. while
            a source model trains, are printed above them; those of the experiments are kept
            in their records: :func:`~adaptable.experiments.report.warning_summary`);
            ``"lines"``: instead of bars, one line on stderr per source model ready and per
            experiment finished, with the time since the sweep started (for a log);
            ``False`` or ``"off"``: nothing (:func:`~adaptable.experiments.report.progress_style`).
        on_record: called with each new record (e.g. to print a line).

    Raises:
        ResultsPathError: before anything is read or run, a store path that is a folder or
            a file that is not a results store; before anything is run, where experiments are
            left to run, a store that cannot be written (see
            :func:`~adaptable.experiments.store.check_results_path`; its missing folders are
            created).
    """
    context = context or RunContext()
    progress = progress_style(progress)  # a wrong value refused before any work
    # a folder or a foreign file is refused before it is read, and a store that cannot take
    # the records before any model trains, not at the first append after the work is done
    check_results_path(store.path, write=False)
    executor = executor or LocalExecutor(workers=1)
    started = time.perf_counter()
    result = SweepResult()

    unique: dict[str, ExperimentSpec] = {}
    for spec in specs:
        unique.setdefault(spec.key, spec)
    # a result counts as done only where it ran on the device this sweep runs on
    done = store.completed(device=lookup_device(context))
    # only a dataset with experiments left to run needs its raw files
    for name in dict.fromkeys(s.dataset for s in unique.values() if s.key not in done):
        reason = context.components.dataset_status(name, context.data_dir)
        if reason is not None:
            result.skipped[name] = reason
    wanted = [s for s in unique.values() if s.dataset not in result.skipped]
    todo = [s for s in wanted if s.key not in done]
    result.reused = [s.key for s in wanted if s.key in done]
    if todo:
        check_results_path(store.path, write=True)

    sources = list(dict.fromkeys(s.source_key for s in todo))
    broken = _prepare_sources(sources, context, executor, progress, started)
    # an experiment whose source model failed fails with it, without training it again
    for spec in todo:
        if spec.source_key in broken:
            result.failures[spec.key] = f"source model failed: {broken[spec.source_key]}"
    todo = [s for s in todo if s.source_key not in broken]
    reported: set[str] = set()
    here = isinstance(executor, LocalExecutor) and (executor.workers == 1 or len(todo) <= 1)
    with progress_bar(len(todo), progress, "experiments", "exp", started) as bar:
        # each experiment's own bar only under the sweep's, and only where it runs in this
        # process: workers elsewhere would draw over each other
        shown = replace(context, show_batches=here and not bar.disable)
        for spec, outcome in executor.map_unordered(_run_task, todo, shown):
            if isinstance(outcome, BaseException):
                outcome = {"failed": True, "key": spec.key, "error": repr(outcome)}
            if outcome.get("failed"):
                result.failures[spec.key] = outcome["error"]
                # Above the bar, once per distinct error, while the sweep goes on; the
                # final report lists them all (without a bar it alone does: once each).
                if not bar.disable and outcome["error"] not in reported:
                    reported.add(outcome["error"])
                    say(bar, f"FAILED {spec.key}: {outcome['error']}")
            else:
                store.append(outcome)
                done[spec.key] = outcome
                result.ran.append(spec.key)
                if on_record is not None:
                    on_record(outcome)
            # the whole name (a cut one may read as another method)
            bar.set_postfix_str(f"{spec.dataset} {spec.model} {spec.label}", refresh=False)
            outcome_word = "failed" if spec.key in result.failures else "done"
            step_done(bar, f"experiment {outcome_word}: {_experiment_name(spec)}")
    result.records = [done[s.key] for s in wanted if s.key in done]
    result.seconds = time.perf_counter() - started
    return result


def _experiment_name(spec: ExperimentSpec) -> str:
    """``hospital_readmission natural mlp adaptable seed 0``: an experiment in a log line."""
    return f"{spec.dataset} {spec.scenario} {spec.model} {spec.label} seed {spec.seed}"


def _source_line(source: tuple[Any, ...], error: str | None) -> str:
    """``source model ready: mlp on heloc, seed 0`` (``failed`` where it did)."""
    dataset, model, seed = source[:3]
    return f"source model {'failed' if error else 'ready'}: {model} on {dataset}, seed {seed}"


def _prepare_sources(
    sources: list[tuple[Any, ...]],
    context: RunContext,
    executor: Any,
    progress: str,
    started: float,
) -> dict[tuple[Any, ...], str]:
    """Train (or load) every source model before the experiments start.

    In this process the bar names each model as it trains; with several workers they train in
    parallel, so that two workers never train the same model at once (experiments then load
    them from the cache). Returns the models that failed: source key -> error (the sweep's
    report lists them, once per distinct error, with the experiments that needed them).
    """
    broken: dict[tuple[Any, ...], str] = {}
    if not sources:
        return broken
    here = isinstance(executor, LocalExecutor) and (executor.workers == 1 or len(sources) == 1)
    # the training's own per-epoch bar under this one, where it trains in this process
    training = replace(context, show_training=progress == "bars")
    with progress_bar(len(sources), progress, "source models", "model", started) as bar:
        if not here:
            bar.set_description(
                f"training {len(sources)} source models on {executor.workers} workers"
            )
            for source, outcome in executor.map_unordered(prepare_source, sources, context):
                if isinstance(outcome, BaseException):
                    broken[source] = f"{type(outcome).__name__}: {outcome}"
                step_done(bar, _source_line(source, broken.get(source)))
            return broken
        for source in sources:
            dataset, model, seed = source[:3]
            bar.set_description(f"training or loading {model} on {dataset} (seed {seed})")
            try:
                prepare_source(source, training)
            except Exception as err:  # noqa: BLE001 - reported with the experiments it fails
                broken[source] = f"{type(err).__name__}: {err}"
            step_done(bar, _source_line(source, broken.get(source)))
    return broken


def stored_only(
    specs: Sequence[ExperimentSpec],
    store: ResultStore,
    context: RunContext | None = None,
    *,
    check_data: bool = True,
) -> SweepResult:
    """What :func:`run_sweep` would return without running anything: the stored records of
    ``specs`` (missing ones simply absent).

    Args:
        check_data: also list the datasets whose raw files are absent as skipped (and leave out
            their records), as :func:`run_sweep` does. ``False`` reads the store alone, so that
            tables can be rebuilt on a machine without the raw data.
    """
    context = context or RunContext()
    result = SweepResult()
    device = lookup_device(context, run=False)
    if check_data:
        for name in dict.fromkeys(s.dataset for s in specs):
            reason = context.components.dataset_status(name, context.data_dir)
            if reason is not None:
                result.skipped[name] = reason
    done = store.completed(device=device)
    wanted = [
        s for s in dict((s.key, s) for s in specs).values() if s.dataset not in result.skipped
    ]
    result.records = [done[s.key] for s in wanted if s.key in done]
    result.reused = [r["key"] for r in result.records]
    return result

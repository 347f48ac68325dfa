"""One experiment: fit a method on the source data, stream the shifted test split through it.

An experiment (:class:`~adaptable.experiments.spec.ExperimentSpec`) loads the dataset, gets
the source model (trained once per (dataset, model, seed) through the models' on-disk cache,
and kept in memory for the next experiment in the same process:
:func:`~adaptable.experiments.components.source_model`), fits the method on the source data,
streams the shifted test split batch by batch and records metrics, timings and per-batch
traces (:func:`run_experiment`). :func:`fit_experiment`, :func:`shifted_stream` and
:func:`predict_stream` are its steps, for callers that want the batches themselves.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import platform
import sys
import time
import warnings
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import adaptable.experiments.metrics as _metrics
from adaptable.experiments.components import RunContext, get_dataset, source_model
from adaptable.experiments.late_labels import LateLabels
from adaptable.experiments.process import limit_threads, seed_everything, seed_method
from adaptable.experiments.spec import ExperimentSpec

#: bump when the record layout or the way a metric is computed changes
RECORD_VERSION = 1


def _lookup(state: Any, names: Sequence[str]) -> Any:
    for name in names:
        if isinstance(state, Mapping) and name in state:
            return state[name]
        if not isinstance(state, Mapping) and hasattr(state, name):
            return getattr(state, name)
    return None


def method_state(method: Any) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(estimated target label distribution, per-row temperatures of the last batch) where the
    method exposes them through a ``state`` property (AdapTable, EM), else ``None``s."""
    state = getattr(method, "state", None)
    if state is None:
        return None, None
    prior = _lookup(state, ("target_prior", "estimated_target_prior", "p_t", "prior"))
    temperature = _lookup(state, ("temperatures", "temperature", "T"))
    prior = None if prior is None else np.asarray(prior, dtype=np.float64).reshape(-1)
    temperature = None if temperature is None else np.asarray(temperature, dtype=np.float64)
    return prior, temperature


def _round(values: Iterable[float], digits: int = 5) -> list[float]:
    return [round(float(v), digits) for v in values]


def _versions() -> dict[str, str]:
    import adaptable

    return {"adaptable": adaptable.__version__, "python": platform.python_version()}


def uses_test_labels(spec: ExperimentSpec) -> bool:
    """True for the oracle study only (calibrator option naming an oracle): the runner then
    passes each batch's true labels to ``predict_proba(X, oracle_labels=y)``. No other
    experiment ever gives a method the test labels (except oracle methods, see
    :func:`needs_test_labels`)."""
    return "oracle" in str(spec.option_dict.get("calibrator", ""))


def needs_test_labels(method: Any) -> bool:
    """True for oracle methods (``needs_test_labels = True``, e.g. ``oracle_prior``): the runner
    gives them the whole stream's labels once, through ``receive_test_labels(y)``, before the
    first batch."""
    return bool(getattr(method, "needs_test_labels", False))


def run_experiment(spec: ExperimentSpec, context: RunContext | None = None) -> dict[str, Any]:
    """Run one experiment and return its record (what the results store keeps).

    The record holds ``key``, ``spec``, ``metrics`` (fractions: ``macro_f1``,
    ``balanced_accuracy``, ``accuracy``, ``ece``), ``timing`` (``fit_seconds``,
    ``adapt_seconds``, ``seconds_per_row``: prediction-and-adaptation time per test row),
    ``traces`` (per batch: ``size``, ``true`` label distribution, ``predicted`` mean
    probabilities, ``pseudo`` argmax frequencies, ``estimate`` the method's estimated target
    prior or ``None``, ``temperature`` its mean temperature or ``None``), ``reliability`` bins,
    ``source_prior``, ``target_prior``, ``confusion``, ``n_classes`` and ``warnings``.

    Warnings raised while it runs are kept in the record instead of printed: one entry per
    distinct (``category``, ``message``), with ``count`` (how many times it was raised). A
    sweep of thousands of experiments would otherwise print the same few warnings from every
    worker; :func:`~adaptable.experiments.report.warning_summary` gathers them across
    records. Filters that ignore or turn a warning into an error still apply (in a worker
    process: those it was started with, e.g. from ``PYTHONWARNINGS``). An experiment that
    raises carries its warnings on the exception (``experiment_warnings``), and a sweep's
    failure report quotes them.
    """
    with warnings.catch_warnings(record=True) as caught:
        _record_every_warning()
        try:
            record = _run_experiment(spec, context)
        except Exception as err:
            # kept for the failure report: a warning often explains the error that followed
            with contextlib.suppress(Exception):  # an exception that takes no attribute
                err.experiment_warnings = _distinct_warnings(caught)  # type: ignore[attr-defined]
            raise
    record["warnings"] = _distinct_warnings(caught)
    return record


#: actions that show a warning only once (per location, module or process)
_ONCE_ACTIONS = ("default", "module", "once")


def _record_every_warning() -> None:
    """Inside ``catch_warnings``: every filter as it was, in its place, except that the actions
    that show a warning once show it every time; and "always" below them all.

    A worker runs many experiments, and "once per location" would hide a warning from all but
    its first; "ignore" and "error" filters, wherever they sit, keep their effect.
    """
    if not getattr(sys.flags, "context_aware_warnings", False):
        # Python 3.14's context-aware warnings give catch_warnings a copy of its own that this
        # list is not; there only the "always" below is added.
        warnings.filters[:] = [
            ("always" if action in _ONCE_ACTIONS else action, *rest)
            for action, *rest in warnings.filters
        ]
    warnings.simplefilter("always", append=True)  # also tells the registries the filters moved


def _distinct_warnings(caught: Sequence[warnings.WarningMessage]) -> list[dict[str, Any]]:
    """One entry per distinct (category, message), in order of first occurrence."""
    counts = Counter((item.category.__name__, str(item.message)) for item in caught)
    return [
        {"category": category, "message": message, "count": count}
        for (category, message), count in counts.items()
    ]


@dataclass
class FittedExperiment:
    """An experiment ready to stream: its data, source model, and the fitted method.

    Attributes:
        spec: the experiment.
        dataset: the loaded dataset.
        model: the source model.
        method: the method, fitted on the source data (seeded as every experiment is).
        fit_seconds: how long the fit took.
    """

    spec: ExperimentSpec
    dataset: Any
    model: Any
    method: Any
    fit_seconds: float


@dataclass(frozen=True)
class BatchOutcome:
    """One test batch and what the method predicted for it (``seconds``: the prediction and
    adaptation time of this batch)."""

    X: Any
    y: np.ndarray
    proba: np.ndarray
    seconds: float


def fit_experiment(spec: ExperimentSpec, context: RunContext | None = None) -> FittedExperiment:
    """Load the dataset and source model of ``spec`` and fit its method, as
    :func:`run_experiment` does before streaming (the same seeding, so the same fit)."""
    context = context or RunContext()
    limit_threads(context.threads)
    dataset = get_dataset(spec.dataset, context)
    model = source_model(spec.dataset, spec.model, spec.seed, context, spec.recipe)
    seed_everything(spec.seed)
    method = context.components.create_method(spec.method, **spec.option_dict)
    seed_method(method, spec.seed, spec.option_dict)
    fit_start = time.perf_counter()
    method.fit(model, dataset.train.X, dataset.train.y, dataset.valid.X, dataset.valid.y)
    return FittedExperiment(spec, dataset, model, method, time.perf_counter() - fit_start)


def shifted_stream(fitted: FittedExperiment, scenario: str, context: RunContext) -> Any:
    """The test stream of ``scenario`` on the experiment's dataset (the experiment's seed).

    Raises:
        KeyError / ValueError / NotImplementedError: as the shift registry, for a scenario it
            lacks or cannot build on this dataset.
    """
    return context.components.apply_shift(
        scenario, fitted.dataset, fitted.spec.seed, **fitted.spec.shift_option_dict
    )


def predict_stream(
    fitted: FittedExperiment, stream: Any, batch_size: int | None = None
) -> Iterator[BatchOutcome]:
    """Stream ``stream`` through the fitted method batch by batch: the one experiment loop.

    An oracle study (:func:`uses_test_labels`) passes each batch's labels to
    ``predict_proba``; an oracle method (:func:`needs_test_labels`) gets the whole stream's
    labels once, before the first batch. Stopping early (leaving the loop) is allowed.

    Raises:
        ValueError: ``predict_proba`` returned a shape other than (batch rows, classes).
    """
    spec, method = fitted.spec, fitted.method
    n_classes = int(fitted.dataset.n_classes)
    oracle = uses_test_labels(spec)
    if needs_test_labels(method):
        method.receive_test_labels(np.asarray(stream.y, dtype=np.int64))
    labels = None if spec.feedback is None else LateLabels(spec, method)
    for X_batch, y_batch in stream.batches(batch_size or spec.batch_size):
        y_batch = np.asarray(y_batch, dtype=np.int64)
        tick = time.perf_counter()
        if labels is not None:
            labels.deliver()  # the labels due before this batch is predicted
        if oracle:
            proba = method.predict_proba(X_batch, oracle_labels=y_batch)
        else:
            proba = method.predict_proba(X_batch)
        proba = np.asarray(proba, dtype=np.float64)
        seconds = time.perf_counter() - tick
        if proba.shape != (len(y_batch), n_classes):
            raise ValueError(
                f"{spec.method}.predict_proba returned shape {proba.shape}; expected "
                f"({len(y_batch)}, {n_classes}) for this batch"
            )
        if labels is not None:
            labels.reveal(X_batch, y_batch)
        yield BatchOutcome(X_batch, y_batch, proba, seconds)


def _batch_progress(batches: Iterable[BatchOutcome], stream: Any, spec: ExperimentSpec) -> Any:
    """``batches``, under a bar of their own (cleared when done)."""
    from tqdm.auto import tqdm

    try:
        total: int | None = -(-len(stream) // spec.batch_size)
    except TypeError:  # a stream without a length
        total = None
    description = f"{spec.dataset} {spec.model} {spec.label} seed {spec.seed}"
    return tqdm(batches, total=total, desc=description, unit="batch", leave=False,
                dynamic_ncols=True)  # fmt: skip


def _run_experiment(spec: ExperimentSpec, context: RunContext | None) -> dict[str, Any]:
    context = context or RunContext()
    started = time.perf_counter()
    fitted = fit_experiment(spec, context)
    dataset, model, method = fitted.dataset, fitted.model, fitted.method
    n_classes = int(dataset.n_classes)
    stream = shifted_stream(fitted, spec.scenario, context)
    labels: list[np.ndarray] = []
    probas: list[np.ndarray] = []
    traces: dict[str, list[Any]] = {
        k: [] for k in ("size", "true", "predicted", "pseudo", "estimate", "temperature")
    }
    adapt_seconds = 0.0
    batches: Iterable[BatchOutcome] = predict_stream(fitted, stream)
    if context.show_batches:
        batches = _batch_progress(batches, stream, spec)
    for batch in batches:
        y_batch, proba = batch.y, batch.proba
        adapt_seconds += batch.seconds
        labels.append(y_batch)
        probas.append(proba)
        prior, temperature = method_state(method)
        traces["size"].append(len(y_batch))
        traces["true"].append(_round(np.bincount(y_batch, minlength=n_classes) / len(y_batch)))
        traces["predicted"].append(_round(proba.mean(axis=0)))
        pseudo = np.bincount(proba.argmax(axis=1), minlength=n_classes) / len(y_batch)
        traces["pseudo"].append(_round(pseudo))
        traces["estimate"].append(None if prior is None else _round(prior))
        finite = None if temperature is None else temperature[np.isfinite(temperature)]
        traces["temperature"].append(
            None if finite is None or finite.size == 0 else round(float(finite.mean()), 5)
        )
    if not labels:
        raise ValueError(f"the {spec.scenario!r} stream of {spec.dataset!r} yielded no batches")
    y_all = np.concatenate(labels)
    proba_all = np.concatenate(probas)
    scores = _metrics.classification_metrics(y_all, proba_all)
    rows = len(y_all)
    return {
        "key": spec.key,
        "spec": spec.to_dict(),
        "metrics": {k: round(v, 6) for k, v in scores.items()},
        "timing": {
            "fit_seconds": round(fitted.fit_seconds, 4),
            "adapt_seconds": round(adapt_seconds, 4),
            "seconds_per_row": adapt_seconds / rows,
            "total_seconds": round(time.perf_counter() - started, 4),
        },
        "rows": rows,
        "uses_test_labels": uses_test_labels(spec) or needs_test_labels(method),
        "n_classes": n_classes,
        "source_prior": _round(dataset.source_prior()),
        "target_prior": _round(np.bincount(y_all, minlength=n_classes) / rows),
        "confusion": _metrics.confusion_matrix(y_all, proba_all.argmax(axis=1), n_classes).tolist(),
        "reliability": {
            k: _round(v) for k, v in _metrics.reliability_bins(y_all, proba_all).items()
        },
        "traces": traces,
        "version": RECORD_VERSION,
        "software": _versions(),
        # where the source model ran (deep models on CUDA when asked); timings depend on it
        "device": str(getattr(model, "device", "cpu")),
        # false for models without a device (GBDTs): their result is the same on any device
        "device_bound": hasattr(model, "device"),
        "finished_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "host": platform.node(),
        "pid": os.getpid(),
    }

"""Run one experiment, and sweeps of them against a results store.

One experiment (:class:`~adaptable.experiments.spec.ExperimentSpec`) loads the dataset, gets the
source model (trained once per (dataset, model, seed) through the models' on-disk cache, and kept
in memory for the next experiment in the same process), fits the method on the source data,
streams the shifted test split batch by batch and records metrics, timings and per-batch traces.

Where datasets, models, methods and shifts come from is a :class:`Components` value, so that
tests can inject small doubles (:mod:`adaptable.experiments.testing`) and the real subpackages
are imported only when an experiment runs.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import inspect
import os
import platform
import sys
import time
import traceback
import warnings
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

import adaptable.experiments.metrics as _metrics
from adaptable.experiments.executors import LocalExecutor
from adaptable.experiments.process import (
    limit_threads,
    resolved_device,
    seed_everything,
    seed_method,
)
from adaptable.experiments.report import progress_bar, say
from adaptable.experiments.spec import DEFAULT_RECIPE, ExperimentSpec
from adaptable.experiments.store import ResultStore, check_results_path
from adaptable.experiments.suggest import folded_name, unknown_name

#: bump when the record layout or the way a metric is computed changes
RECORD_VERSION = 1
#: the values of ``RunContext.device`` (and the CLI's ``--device``)
DEVICES = ("auto", "cpu", "cuda")


# --------------------------------------------------------------------------- components
def _load_dataset(name: str, data_dir: str | None) -> Any:
    from adaptable import datasets

    return datasets.load(name, data_dir=data_dir)


def _dataset_status(name: str, data_dir: str | None) -> str | None:
    from adaptable import datasets
    from adaptable.datasets.registry import canonical

    status = datasets.available(data_dir)
    info = status.get(canonical(name))
    if info is None:
        return f"unknown dataset {name!r}; known: {', '.join(status)}"
    return None if info.get("present") else str(info.get("reason", "raw file absent"))


def _train_model(
    name: str,
    dataset: Any,
    seed: int,
    cache_dir: str | None,
    device: str = "auto",
    recipe: str | None = None,
    quiet: bool = True,
) -> Any:
    from adaptable import models

    return models.train(
        name,
        dataset,
        seed,
        cache_dir=cache_dir,
        quiet=quiet,
        device=device,
        recipe=recipe,
    )


def _create_method(name: str, **options: Any) -> Any:
    from adaptable import methods

    return methods.create(name, **options)


def _apply_shift(name: str, dataset: Any, seed: int, **options: Any) -> Any:
    from adaptable import shifts

    return shifts.apply(name, dataset, seed, **options)


def _known_names(kind: str) -> list[str]:
    if kind == "dataset":
        # every task ``adaptable datasets`` lists, and the aliases
        from adaptable.datasets.registry import ALIASES, names

        return [*names(), *ALIASES]
    if kind == "model":
        from adaptable import models

        return models.names()
    if kind == "method":
        from adaptable import methods

        return methods.names()
    if kind == "scenario":
        from adaptable import shifts

        return shifts.names()
    raise ValueError(f"kind must be dataset, model, method or scenario; got {kind!r}")


def _is_torch_model(name: str) -> bool:
    from adaptable.models import BACKBONES

    return name in BACKBONES


@dataclass(frozen=True)
class Components:
    """Where the runner gets its pieces. Every field must be a module-level function (so that
    process pools and Ray can send it to workers by reference).

    Args:
        load_dataset: ``(name, data_dir) -> ShiftDataset``.
        dataset_status: ``(name, data_dir) -> None`` when loadable, else the reason it is not.
        train_model: ``(name, dataset, seed, cache_dir, device) -> source model``; ``device``
            is ``"auto"``, ``"cpu"`` or ``"cuda"`` (where deep models train and run); a spec
            with a recipe other than the default adds the keyword ``recipe``, and a context
            that shows training (``RunContext.show_training``) adds ``quiet=False`` where the
            provider has a ``quiet`` parameter.
        create_method: ``(name, **options) -> TestTimeMethod``.
        apply_shift: ``(name, dataset, seed) -> Stream`` with ``batches(batch_size)``; a spec
            with shift options adds them as keywords.
        known_names: ``(kind) -> names`` for kind ``dataset``, ``model``, ``method`` or
            ``scenario``: what the other providers accept (checked before any work starts).
        is_torch_model: ``(model name) -> bool``: whether that source model is a torch
            module, which the methods of :func:`torch_only_reason` need.
    """

    load_dataset: Callable[[str, str | None], Any] = _load_dataset
    dataset_status: Callable[[str, str | None], str | None] = _dataset_status
    train_model: Callable[[str, Any, int, str | None, str], Any] = _train_model
    create_method: Callable[..., Any] = _create_method
    apply_shift: Callable[[str, Any, int], Any] = _apply_shift
    known_names: Callable[[str], list[str]] = _known_names
    is_torch_model: Callable[[str], bool] = _is_torch_model


#: methods that read a source model's penultimate features (LAME's affinity between rows)
_FEATURE_METHODS = ("lame",)


def torch_only_reason(method: Any) -> str | None:
    """Why a built method runs on torch source models only (it updates the model's parameters,
    or reads its penultimate features), or ``None`` when it runs on any model."""
    if getattr(method, "updates_parameters", False):
        return "updates the source model's parameters"
    if getattr(method, "name", None) in _FEATURE_METHODS:
        return "reads the source model's penultimate features"
    return None


def incompatible_pairs(
    components: Components, models: Iterable[str], methods: Mapping[str, Any]
) -> list[str]:
    """One message per method that cannot run on some of ``models``, found before any work.

    Args:
        components: the providers (``is_torch_model`` says which models are torch modules).
        models: source model names.
        methods: label (``ftat[lr=0.1]``) -> the method built with its options.

    Returns:
        e.g. ``["method 'tent' cannot run on model(s) catboost: it updates the source model's
        parameters, which needs a torch model (mlp, resnet, ...)"]``.
    """
    models = list(dict.fromkeys(models))
    problems = []
    for label, method in methods.items():
        reason = torch_only_reason(method)
        if reason is None:
            continue
        other = [m for m in models if not components.is_torch_model(m)]
        if not other:
            continue
        torch_models = [m for m in components.known_names("model") if components.is_torch_model(m)]
        hint = " (or ftat[ensemble=false], which runs on any model)" if label == "ftat" else ""
        problems.append(
            f"method {label!r} cannot run on model(s) {', '.join(other)}: it {reason}, which "
            f"needs a torch model ({', '.join(torch_models) or 'none known'}){hint}"
        )
    return problems


def unknown_names(components: Components, **names: Iterable[str]) -> list[str]:
    """One message per name the providers do not know (each name reported once), with the
    closest valid names, e.g. ``unknown_names(c, model=["mlpp"])`` -> ``["unknown model 'mlpp';
    did you mean mlp?"]``. Without a close one, a short list of valid names is given whole; a
    long one (the datasets) is left to ``--help`` (:func:`.suggest.unknown_name`)."""
    problems = []
    for kind, wanted in names.items():
        known = components.known_names(kind)
        problems += [
            unknown_name(kind, name, known) for name in dict.fromkeys(wanted) if name not in known
        ]
    return problems


def fold_case(components: Components, kind: str, name: str) -> str:
    """The valid ``kind`` name that ``name`` spells in another case (``HELOC`` -> ``heloc``),
    else ``name`` unchanged (a name valid as given, or unknown in every case)."""
    return folded_name(name, components.known_names(kind))


@dataclass(frozen=True)
class RunContext:
    """What every experiment of a sweep shares: components, locations, and what is shown.

    Args:
        data_dir: raw data folder (``None``: ``$ADAPTABLE_DATA_DIR``, then the default).
        cache_dir: source-model cache folder (``None``: the models package's default).
        components: the dataset / model / method / shift providers.
        threads: torch threads per worker process (1 keeps workers from oversubscribing cores).
        device: where deep source models train and run: ``"auto"`` (CUDA where
            ``torch.cuda.is_available()``, else CPU), ``"cpu"`` or ``"cuda"``.
        show_training: a source model trained under this context shows its own per-epoch bar
            (see ``Components.train_model``). A sweep sets it while it trains in this process
            under its progress bar; elsewhere training is quiet.
        show_batches: an experiment run under this context shows a bar over its test batches
            (cleared when done). A sweep sets it while its experiments run in this process
            under its progress bar, where a slow method (TTT++, say) would otherwise leave the
            experiments' bar still for minutes.
    """

    data_dir: str | None = None
    cache_dir: str | None = None
    components: Components = field(default_factory=Components)
    threads: int = 1
    device: str = "auto"
    show_training: bool = False
    show_batches: bool = False

    def __post_init__(self) -> None:
        if self.device not in DEVICES:
            raise ValueError(f"device must be one of {', '.join(DEVICES)}; got {self.device!r}")


def lookup_device(context: RunContext, run: bool = True) -> str | None:
    """The device whose stored results count for ``context``: where a sweep would run
    (``run``; ``"auto"`` resolved here), or for reading alone, the named device, ``None``
    (any) for ``"auto"``, so that tables rebuild from a store written on any machine."""
    if run:
        return resolved_device(context.device)
    return None if context.device == "auto" else context.device


# Per-process memo: a worker that runs several methods on one source model trains/loads it once.
_DATASETS: dict[tuple[str, str | None], Any] = {}
_MODELS: OrderedDict[tuple[str, str, int, str | None, str | None, str], Any] = OrderedDict()
_MAX_MODELS = 4


def get_dataset(name: str, context: RunContext) -> Any:
    """The dataset ``name`` from the context's provider, memoised in this process."""
    key = (name, context.data_dir)
    if key not in _DATASETS:
        _DATASETS[key] = context.components.load_dataset(name, context.data_dir)
    return _DATASETS[key]


def source_model(
    dataset_name: str, model: str, seed: int, context: RunContext, recipe: str = DEFAULT_RECIPE
) -> Any:
    """The trained source model for (dataset, model, seed), trained with ``recipe``
    (``adaptable.models.train(recipe=...)``), memoised in this process."""
    key = (dataset_name, model, seed, context.data_dir, context.cache_dir, context.device, recipe)
    if key in _MODELS:
        _MODELS.move_to_end(key)
        return _MODELS[key]
    dataset = get_dataset(dataset_name, context)
    seed_everything(seed)
    # the default recipe is not passed, so that providers without recipes keep working;
    # likewise ``quiet``, passed only to a provider that takes it
    extra: dict[str, Any] = {} if recipe == DEFAULT_RECIPE else {"recipe": recipe}
    if context.show_training and _takes_keyword(context.components.train_model, "quiet"):
        extra["quiet"] = False
    trained = context.components.train_model(
        model, dataset, seed, context.cache_dir, context.device, **extra
    )
    _MODELS[key] = trained
    while len(_MODELS) > _MAX_MODELS:
        _MODELS.popitem(last=False)
    return trained


def _takes_keyword(function: Callable[..., Any], name: str) -> bool:
    """Whether ``function`` has a parameter called ``name`` (``False`` where its signature
    cannot be read)."""
    try:
        return name in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


def prepare_source(source_key: tuple[Any, ...], context: RunContext) -> str:
    """Train (or load from cache) one source model (an ``ExperimentSpec.source_key``: dataset,
    model, seed and maybe a recipe); used before parallel sweeps so that two workers never train
    the same model at once. Returns a short description."""
    limit_threads(context.threads)
    started = time.perf_counter()
    dataset, model, seed, *recipe = source_key
    source_model(dataset, model, seed, context, *recipe)
    return f"{source_key} ready in {time.perf_counter() - started:.1f} s"


def clear_memo() -> None:
    """Forget the datasets and source models held in this process."""
    _DATASETS.clear()
    _MODELS.clear()


# --------------------------------------------------------------------------- one experiment
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


# --------------------------------------------------------------------------- late labels
class LateLabels:
    """The feedback protocol of :func:`predict_stream`: after each batch is predicted, a random
    ``spec.feedback_share`` of its rows is chosen (seeded by the experiment's seed, the same
    rows for every method), and their labels go to ``method.partial_fit`` just before the batch
    ``spec.feedback_delay + 1`` batches later is predicted. Every row is therefore scored as
    predicted before its label arrived. A method whose ``partial_fit`` takes ``rows`` also gets
    the rows' positions in the stream (AdapTable's drift report matches them to its
    predictions).

    Raises:
        ValueError: the method has no ``partial_fit``.
    """

    def __init__(self, spec: ExperimentSpec, method: Any) -> None:
        learn = getattr(method, "partial_fit", None)
        if not callable(learn):
            raise ValueError(
                f"method {spec.method!r} takes no labels (no partial_fit); run it without feedback"
            )
        self.learn = learn
        self.with_rows = "rows" in inspect.signature(learn).parameters
        self.share, self.delay = spec.feedback_share, spec.feedback_delay
        self.rng = np.random.default_rng([spec.seed, 31])
        self.pending: deque[tuple[int, Any, np.ndarray, np.ndarray]] = deque()
        self.batch, self.first_row = 0, 0

    def deliver(self) -> None:
        """Pass on the labels of the batches at least ``delay + 1`` batches back."""
        while self.pending and self.pending[0][0] + self.delay < self.batch:
            _, X, y, rows = self.pending.popleft()
            if len(y) == 0:
                continue
            if self.with_rows:
                self.learn(X, y, rows=rows)
            else:
                self.learn(X, y)

    def reveal(self, X_batch: Any, y_batch: np.ndarray) -> None:
        """Choose the rows of the batch just predicted whose labels will arrive."""
        chosen = np.flatnonzero(self.rng.random(len(y_batch)) < self.share)
        self.pending.append(
            (self.batch, take_rows(X_batch, chosen), y_batch[chosen], self.first_row + chosen)
        )
        self.batch += 1
        self.first_row += len(y_batch)


def take_rows(X: Any, rows: np.ndarray) -> Any:
    """Rows ``rows`` of a frame or an array."""
    return X.iloc[rows] if hasattr(X, "iloc") else np.asarray(X)[rows]


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


# --------------------------------------------------------------------------- sweeps
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
    progress: bool = True,
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
            in their records: :func:`~adaptable.experiments.report.warning_summary`).
        on_record: called with each new record (e.g. to print a line).

    Raises:
        ResultsPathError: before anything is read or run, a store path that is a folder or
            a file that is not a results store; before anything is run, where experiments are
            left to run, a store that cannot be written (see
            :func:`~adaptable.experiments.store.check_results_path`; its missing folders are
            created).
    """
    context = context or RunContext()
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
    broken = _prepare_sources(sources, context, executor, progress)
    # an experiment whose source model failed fails with it, without training it again
    for spec in todo:
        if spec.source_key in broken:
            result.failures[spec.key] = f"source model failed: {broken[spec.source_key]}"
    todo = [s for s in todo if s.source_key not in broken]
    reported: set[str] = set()
    here = isinstance(executor, LocalExecutor) and (executor.workers == 1 or len(todo) <= 1)
    with progress_bar(len(todo), progress, "experiments", "exp") as bar:
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
            bar.update(1)
    result.records = [done[s.key] for s in wanted if s.key in done]
    result.seconds = time.perf_counter() - started
    return result


def _prepare_sources(
    sources: list[tuple[Any, ...]], context: RunContext, executor: Any, progress: bool
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
    training = replace(context, show_training=progress)
    with progress_bar(len(sources), progress, "source models", "model") as bar:
        if not here:
            bar.set_description(
                f"training {len(sources)} source models on {executor.workers} workers"
            )
            for source, outcome in executor.map_unordered(prepare_source, sources, context):
                if isinstance(outcome, BaseException):
                    broken[source] = f"{type(outcome).__name__}: {outcome}"
                bar.update(1)
            return broken
        for source in sources:
            dataset, model, seed = source[:3]
            bar.set_description(f"training or loading {model} on {dataset} (seed {seed})")
            try:
                prepare_source(source, training)
            except Exception as err:  # noqa: BLE001 - reported with the experiments it fails
                broken[source] = f"{type(err).__name__}: {err}"
            bar.update(1)
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

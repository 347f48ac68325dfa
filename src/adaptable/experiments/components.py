"""Where experiments get their pieces, and what one process keeps between experiments.

:class:`Components` names the dataset / model / method / shift providers, so that tests can
inject small doubles (:mod:`adaptable.experiments.testing`) and the real subpackages are
imported only when an experiment runs. :class:`RunContext` is what every experiment of a sweep
shares: the providers, the data and cache folders, the device, and which progress bars show.
Loaded datasets and trained source models are memoised per process (:func:`get_dataset`,
:func:`source_model`): a worker that runs several methods on one source model trains or loads
it once.
"""

from __future__ import annotations

import inspect
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from adaptable.experiments.process import limit_threads, resolved_device, seed_everything
from adaptable.experiments.spec import DEFAULT_RECIPE
from adaptable.experiments.suggest import folded_name, unknown_name

#: the values of ``RunContext.device`` (and the CLI's ``--device``)
DEVICES = ("auto", "cpu", "cuda")


# --------------------------------------------------------------------------- providers
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


# --------------------------------------------------------------------------- memo
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

"""The model registry: names, ``create`` and ``train`` (with the on-disk cache)."""

from __future__ import annotations

import shutil
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from adaptable.datasets import ShiftDataset, fit_encoder
from adaptable.encoding import Encoder
from adaptable.models.autoint import AutoInt
from adaptable.models.base import Backbone
from adaptable.models.cache import (
    WEIGHTS_FILE,
    EntryWriter,
    cache_key,
    default_cache_dir,
    read_meta,
)
from adaptable.models.ft_transformer import FTTransformer
from adaptable.models.mlp import MLP
from adaptable.models.resnet import ResNet
from adaptable.models.source_model import TorchSourceModel
from adaptable.models.supervised import (
    CATBOOST_MAX_ITERATIONS,
    EARLY_STOPPING_ROUNDS,
    SUPERVISED,
    SupervisedModel,
    random_search,
)
from adaptable.models.training import (
    TrainingConfig,
    TrainingHistory,
    fit_module,
    recipe_config,
    resolve_device,
    torch_threads,
)

BACKBONES: dict[str, type[Backbone]] = {
    "mlp": MLP,
    "resnet": ResNet,
    "autoint": AutoInt,
    "ft_transformer": FTTransformer,
}
NAMES: tuple[str, ...] = (*BACKBONES, *SUPERVISED)

SourceModel = TorchSourceModel | SupervisedModel


def names() -> list[str]:
    """Every model name: the four deep backbones, then the five supervised baselines."""
    return list(NAMES)


def create(
    name: str, encoder: Encoder, n_classes: int, **overrides: Any
) -> Backbone | SupervisedModel:
    """An untrained model.

    Args:
        name: one of :func:`names`.
        encoder: the fitted Encoder (deep models take their input width and feature blocks from
            it; supervised ones encode with it, or fit their own in ``fit`` when ``None``).
        n_classes: number of classes.
        **overrides: constructor keywords (deep models, e.g. ``d_block=128``) or
            hyper-parameters (supervised models, e.g. ``n_neighbors=5``; ``seed=`` too).

    Example:
        >>> # module = create("mlp", encoder, 2); module(torch.zeros(4, encoder.n_features_out_))
    """
    if name in BACKBONES:
        return BACKBONES[name](encoder, n_classes, **overrides)
    if name in SUPERVISED:
        seed = int(overrides.pop("seed", 0))
        return SUPERVISED[name](overrides, n_classes=n_classes, seed=seed, encoder=encoder)
    raise KeyError(f"Unknown model {name!r}; expected one of {', '.join(NAMES)}")


def train(
    name: str,
    dataset: ShiftDataset,
    seed: int = 0,
    cache_dir: str | Path | None = None,
    quiet: bool = True,
    *,
    use_cache: bool = True,
    overrides: dict[str, Any] | None = None,
    training: TrainingConfig | None = None,
    recipe: str | None = None,
    n_trials: int = 10,
    metric: str = "log_loss",
    search_space: dict[str, list[Any]] | None = None,
    code_version: str | None = None,
    device: str = "auto",
    threads: int | None = None,
    early_stopping: bool = True,
) -> SourceModel:
    """A trained source model for ``dataset``, from the cache when it holds one.

    Deep models: the authors' protocol (:mod:`adaptable.models.training`), initialisation and
    batch order seeded by ``seed``. Supervised models: the paper's 10-trial random search on the
    validation split (:func:`adaptable.models.supervised.random_search`).

    Args:
        name: one of :func:`names`.
        dataset: the task (train and valid splits are used; test never).
        seed: model seed.
        cache_dir: cache root; ``None`` means :func:`~adaptable.models.cache.default_cache_dir`.
        quiet: no per-epoch progress bar when ``True``.
        use_cache: ``False`` trains afresh and writes nothing.
        overrides: deep-model constructor keywords.
        training: deep-model training protocol (default: the authors').
        recipe: a named deep-model protocol instead of ``training``
            (:data:`~adaptable.models.training.RECIPES`: ``"default"``, or ``"authors"``, the
            authors' DataLoader batch order, which reproduces their MLP sources). ``None``
            means ``training`` (or the default). Supervised models ignore it.
        n_trials, metric, search_space: supervised search options.
        code_version: replaces the code version in the cache key (tests use it).
        device: deep models train and run on ``"cuda"`` or ``"cpu"``; ``"auto"`` picks CUDA
            where ``torch.cuda.is_available()``. A model trained on CUDA has its own cache
            entry (its weights differ from the CPU ones by rounding). Supervised models ignore it.
        threads: training threads. Deep models: torch's intra-op threads while training
            (``None``: 1, so that the weights do not depend on the caller's setting; the
            caller's setting is restored afterwards). XGBoost / CatBoost / RandomForest
            (``None``: every available CPU; their models do not depend on it).
        early_stopping: XGBoost and CatBoost searches stop on the validation loss
            (:mod:`adaptable.models.supervised`); ``False`` runs the paper's plain search.

    Returns:
        A :class:`TorchSourceModel` or a fitted supervised model. Its ``cache_info`` attribute
        says where it lives in the cache and whether it was loaded (``hit``).

    Raises:
        KeyError: unknown model or recipe name.
        ValueError: both ``training`` and ``recipe`` given.
    """
    if name not in NAMES:
        raise KeyError(f"Unknown model {name!r}; expected one of {', '.join(NAMES)}")
    if not isinstance(seed, int | np.integer):
        raise TypeError(f"seed must be an int; got {seed!r}")
    seed = int(seed)
    if recipe is not None:
        if training is not None:
            raise ValueError("give either training= or recipe=, not both")
        training = recipe_config(recipe)
    overrides = dict(overrides or {})
    deep = name in BACKBONES
    target = resolve_device(device) if deep else None
    if deep:
        training = training or TrainingConfig()
        options: dict[str, Any] = {"overrides": overrides, "training": training.to_dict()}
        if target is not None and target.type != "cpu":
            options["device"] = target.type  # CPU entries keep the keys they always had
    else:
        options = {"n_trials": n_trials, "metric": metric, "space": search_space}
        if name == "knn":
            options["shared_neighbours"] = True  # the search procedure (supervised.py)
        if early_stopping and name in EARLY_STOPPING_ROUNDS:
            # Part of what a trial is, so part of the key (entries from the plain search miss).
            options["early_stopping"] = {"rounds": EARLY_STOPPING_ROUNDS[name]}
            if name == "catboost":
                options["early_stopping"]["max_iterations"] = CATBOOST_MAX_ITERATIONS
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    key = cache_key(dataset, name, seed, options, code_version)
    directory = root / key

    if use_cache:
        meta = read_meta(directory)
        if meta is not None:
            try:
                model = _load(meta, directory, dataset, target, threads)
            except Exception as err:  # noqa: BLE001
                # A damaged entry is dropped and retrained rather than failing the sweep; the
                # readers (safetensors, XGBoost, CatBoost, json) each raise their own error types.
                warnings.warn(
                    f"Cache entry {directory} is unreadable ({err}); retraining.", stacklevel=2
                )
                shutil.rmtree(directory, ignore_errors=True)
            else:
                model.cache_info = {"key": key, "path": str(directory), "hit": True, "meta": meta}
                return model

    encoder = fit_encoder(dataset)
    start = time.perf_counter()
    if deep:
        assert target is not None
        with torch_threads(threads or 1):
            model, extra = _train_deep(
                name, dataset, encoder, seed, overrides, training, quiet, target
            )
    else:
        model, extra = _train_supervised(
            name, dataset, encoder, seed, n_trials, metric, search_space, threads, early_stopping
        )
    seconds = time.perf_counter() - start
    meta = {
        "kind": "torch" if deep else "supervised",
        "name": name,
        "dataset": dataset.name,
        "seed": seed,
        "n_classes": dataset.n_classes,
        "encoder": encoder.to_dict(),
        "options": options,
        "train_seconds": seconds,
        **extra,
    }
    if use_cache:
        writer = EntryWriter(directory)
        try:
            if deep:
                state = {k: v.cpu().contiguous() for k, v in model.module.state_dict().items()}
                save_file(state, str(writer.directory / WEIGHTS_FILE))
            else:
                meta["native"] = model.save_native(writer.directory)
            writer.commit(meta)
        except BaseException:
            writer.abort()
            raise
    model.cache_info = {"key": key, "path": str(directory), "hit": False, "meta": meta}
    return model


def _train_deep(
    name: str,
    dataset: ShiftDataset,
    encoder: Encoder,
    seed: int,
    overrides: dict[str, Any],
    training: TrainingConfig,
    quiet: bool,
    device: torch.device,
) -> tuple[TorchSourceModel, dict[str, Any]]:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)  # the initialisation (on CPU, for every device) is seeded
        module = create(name, encoder, dataset.n_classes, **overrides)
    history = fit_module(
        module,
        torch.from_numpy(encoder.transform(dataset.train.X)),
        torch.as_tensor(dataset.train.y, dtype=torch.int64),
        torch.from_numpy(encoder.transform(dataset.valid.X)),
        torch.as_tensor(dataset.valid.y, dtype=torch.int64),
        seed=seed,
        config=training,
        quiet=quiet,
        description=f"{name} on {dataset.name} (seed {seed})",
        device=device,
    )
    model = TorchSourceModel(module, encoder, dataset.n_classes, name=name, history=history)
    return model, {"config": module.config, "history": history.to_dict()}


def _train_supervised(
    name: str,
    dataset: ShiftDataset,
    encoder: Encoder,
    seed: int,
    n_trials: int,
    metric: str,
    space: dict[str, list[Any]] | None,
    threads: int | None,
    early_stopping: bool,
) -> tuple[SupervisedModel, dict[str, Any]]:
    model, trials = random_search(
        name,
        dataset.train.X,
        dataset.train.y,
        dataset.valid.X,
        dataset.valid.y,
        n_trials=n_trials,
        seed=seed,
        metric=metric,
        n_classes=dataset.n_classes,
        space=space,
        encoder=encoder,
        threads=threads,
        early_stopping=early_stopping,
    )
    model.trials = trials
    return model, {"params": model.params, "trials": trials}


def _load(
    meta: dict[str, Any],
    directory: Path,
    dataset: ShiftDataset,
    device: torch.device | None,
    threads: int | None,
) -> SourceModel:
    encoder = Encoder.from_dict(meta["encoder"])
    n_classes = int(meta["n_classes"])
    if meta["kind"] == "torch":
        module = create(meta["name"], encoder, n_classes, **meta["config"])
        module.load_state_dict(load_file(str(directory / WEIGHTS_FILE)))
        history = TrainingHistory.from_dict(meta["history"])
        return TorchSourceModel(
            module, encoder, n_classes, name=meta["name"], history=history, device=device
        )
    cls = SUPERVISED[meta["name"]]
    model = cls(
        meta["params"],
        n_classes=n_classes,
        seed=int(meta["seed"]),
        encoder=encoder,
        threads=threads,
    )
    if meta.get("native"):
        model.load_native(directory)
    else:
        # kNN / RandomForest: refit the selected configuration (deterministic for a seed).
        model.fit(dataset.train.X, dataset.train.y)
    model.trials = meta.get("trials", [])
    return model

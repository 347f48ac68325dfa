"""The one training routine of the deep source models (the authors' protocol, method.md 3).

AdamW (weight decay 0.01), lr 1e-4, batch 64, up to 50 epochs, cross-entropy, early stopping on
the validation loss with patience 10, the best-validation weights restored. Seeded: the same seed
gives bit-identical weights on CPU (same thread count). The paper states none of these; they are
the authors' code's. Named recipes (:data:`RECIPES`) differ only in how the seed's generator
draws the batch order: ``"default"`` (one permutation per epoch) or ``"authors"`` (the draws of a
shuffling ``DataLoader``, which gives the authors' own MLP source models for a seed).

Devices: :func:`resolve_device` turns ``"auto" | "cpu" | "cuda"`` into a ``torch.device``
(``auto``: CUDA where ``torch.cuda.is_available()``). On CPU the routine is exactly the one
above; on CUDA the same protocol runs with the data held on the GPU, so weights differ from the
CPU ones only by floating-point rounding (and CUDA's dropout generator).

Threads (torch has one process-wide setting): importing adaptable changes nothing. Training
runs inside :func:`torch_threads` with the count it is given (``models.train``'s default: one),
and the caller's setting comes back afterwards. Steps on batches of 64 rows are too small to
gain from more threads, and on a shared 2-core machine two threads were ~5x slower per step
than one (OpenMP workers waiting for a busy core).
"""

from __future__ import annotations

import contextlib
import copy
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np
import torch
from torch import Tensor, nn
from torch.nn import functional as F

#: rows per forward pass when a module only infers (evaluation, logits, features): enough to
#: amortise torch's per-call cost, small enough that a wide one-hot input stays a few tens of MB
INFERENCE_ROWS = 4096

BatchOrder = Literal["permutation", "dataloader"]
BATCH_ORDERS: tuple[str, ...] = ("permutation", "dataloader")


@dataclass(frozen=True)
class TrainingConfig:
    """Hyper-parameters of :func:`fit_module` (defaults: the authors' protocol)."""

    lr: float = 1e-4
    weight_decay: float = 0.01
    batch_size: int = 64
    max_epochs: int = 50
    patience: int = 10
    eval_batch_size: int = INFERENCE_ROWS
    #: AdamW's fused kernel: ``None`` uses it on CUDA only; ``True`` on CPU too (about half
    #: the CPU time per step on the MLP, but the weights then differ from the default loop's
    #: in the 7th digit, so it is opt-in there: cached CPU models stay reproducible).
    fused: bool | None = None
    #: How each epoch's batch order is drawn from the seeded generator. ``"permutation"``: one
    #: ``randperm`` per epoch. ``"dataloader"``: what a ``torch.utils.data.DataLoader(shuffle=True,
    #: generator=...)`` draws from its generator, as the authors' code trains: each epoch the
    #: loader's base seed, the permutation it uses, and the sampler's empty remainder permutation
    #: (torch 2.x). Same protocol, another random stream: with the authors' seeding it gives the
    #: authors' dropout-free models (docs/research/paper_fidelity.md).
    batch_order: BatchOrder = "permutation"

    def __post_init__(self) -> None:
        for key in ("batch_size", "max_epochs", "patience", "eval_batch_size"):
            value = getattr(self, key)
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"TrainingConfig.{key} must be a positive int; got {value!r}")
        if self.lr <= 0:
            raise ValueError(f"TrainingConfig.lr must be positive; got {self.lr}")
        if self.batch_order not in BATCH_ORDERS:
            raise ValueError(
                f"TrainingConfig.batch_order must be one of {', '.join(BATCH_ORDERS)}; "
                f"got {self.batch_order!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-compatible copy (``fused`` and ``batch_order`` only when not at their
        defaults, so that the cache keys of models trained before the options existed stay
        the same)."""
        state = asdict(self)
        if state["fused"] is None:
            del state["fused"]
        if state["batch_order"] == "permutation":
            del state["batch_order"]
        return state


#: Named training recipes for :func:`adaptable.models.train` (``recipe=``).
#: ``"default"``: the package's default (the authors' hyper-parameters, one ``randperm`` per
#: epoch). ``"authors"``: the same hyper-parameters with the authors' DataLoader batch order.
#: The paper itself states no source-training hyper-parameters, so both follow the authors' code.
RECIPES: dict[str, TrainingConfig] = {
    "default": TrainingConfig(),
    "authors": TrainingConfig(batch_order="dataloader"),
}


def recipe_config(name: str) -> TrainingConfig:
    """The :class:`TrainingConfig` of a named recipe (see :data:`RECIPES`).

    Raises:
        KeyError: for an unknown name.

    Example:
        >>> recipe_config("authors").batch_order
        'dataloader'
    """
    if name not in RECIPES:
        raise KeyError(f"Unknown training recipe {name!r}; expected one of {', '.join(RECIPES)}")
    return RECIPES[name]


@dataclass
class TrainingHistory:
    """What happened during training: per-epoch losses, the restored epoch, wall time."""

    train_loss: list[float] = field(default_factory=list)
    valid_loss: list[float] = field(default_factory=list)
    best_epoch: int = -1
    best_valid_loss: float = float("inf")
    seconds: float = 0.0
    #: wall time of each epoch (training steps plus the validation pass)
    epoch_seconds: list[float] = field(default_factory=list)
    device: str = "cpu"

    @property
    def epochs(self) -> int:
        """Epochs actually run."""
        return len(self.train_loss)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-compatible copy."""
        return asdict(self)

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> TrainingHistory:
        """Inverse of :meth:`to_dict`."""
        return cls(**state)


def fit_module(
    module: nn.Module,
    x_train: Tensor,
    y_train: Tensor,
    x_valid: Tensor,
    y_valid: Tensor,
    *,
    seed: int = 0,
    config: TrainingConfig | None = None,
    quiet: bool = True,
    description: str = "training",
    device: str | torch.device = "cpu",
) -> TrainingHistory:
    """Train ``module`` in place with the authors' protocol and restore its best weights.

    Args:
        module: maps ``[N, width]`` float32 to logits ``[N, C]``.
        x_train, x_valid: encoded features, float32 ``[N, width]``.
        y_train, y_valid: int64 class indices ``[N]``.
        seed: seeds the batch order and dropout (the caller seeds the initialisation).
        config: protocol hyper-parameters; ``None`` means the authors' ones.
        quiet: no progress bar when ``True``.
        description: progress-bar label.
        device: where to train (``"cpu"``, ``"cuda"``, ``"auto"`` or a ``torch.device``); the
            module and the data are moved there, and the module stays there.

    Returns:
        The :class:`TrainingHistory`; the module is left in eval mode with the weights of the
        epoch of lowest validation loss.
    """
    config = config or TrainingConfig()
    _check_xy(x_train, y_train, "train")
    _check_xy(x_valid, y_valid, "valid")
    device = resolve_device(device)
    module.to(device)
    x_train, y_train = x_train.to(device), y_train.to(device)
    x_valid, y_valid = x_valid.to(device), y_valid.to(device)
    fused = config.fused if config.fused is not None else device.type == "cuda"
    optimizer = torch.optim.AdamW(
        module.parameters(),
        lr=config.lr,
        weight_decay=config.weight_decay,
        **({"fused": True} if fused else {}),
    )
    history = TrainingHistory(device=str(device))
    best_state = copy.deepcopy(module.state_dict())
    stale = 0
    start = time.perf_counter()
    generator = torch.Generator().manual_seed(seed)
    progress = _progress(config.max_epochs, quiet, description)
    # fork_rng: dropout draws from the global generator(s); seed them without disturbing the
    # caller. On CUDA, dropout draws from the device's generator, forked and seeded alike.
    forked = [device.index or 0] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=forked):
        torch.manual_seed(seed)
        for epoch in range(config.max_epochs):
            epoch_start = time.perf_counter()
            module.train()
            # The batch order always comes from the CPU generator: the same on every device.
            if config.batch_order == "dataloader":
                # A DataLoader draws its workers' base seed from the generator before the
                # sampler's permutation, at every epoch; the value itself is not used here.
                torch.empty((), dtype=torch.int64).random_(generator=generator)
            order = torch.randperm(len(x_train), generator=generator).to(device)
            if config.batch_order == "dataloader":
                # torch's RandomSampler draws one more permutation for the remainder
                # (num_samples % n == 0 rows of it) when the epoch's iteration finishes.
                torch.randperm(len(x_train), generator=generator)
            batches = list(order.split(config.batch_size))
            # A trailing batch of one row breaks batch norm in train mode; it is skipped.
            if len(batches) > 1 and len(batches[-1]) == 1:
                batches.pop()
            # Summed on the device in float64 (no host sync per step); on CPU the same sums as
            # adding Python floats.
            total = torch.zeros((), dtype=torch.float64, device=device)
            seen = 0
            for index in batches:
                optimizer.zero_grad(set_to_none=True)
                loss = F.cross_entropy(module(x_train[index]), y_train[index])
                loss.backward()
                optimizer.step()
                total += loss.detach().double() * len(index)
                seen += len(index)
            valid_loss = evaluate_loss(module, x_valid, y_valid, config.eval_batch_size)
            history.train_loss.append(float(total) / max(seen, 1))
            history.valid_loss.append(valid_loss)
            if valid_loss < history.best_valid_loss:
                history.best_valid_loss = valid_loss
                history.best_epoch = epoch
                best_state = copy.deepcopy(module.state_dict())
                stale = 0
            else:
                stale += 1
            if progress is not None:
                progress.update(1)
                progress.set_postfix(
                    train=f"{history.train_loss[-1]:.4f}", valid=f"{valid_loss:.4f}"
                )
            history.epoch_seconds.append(time.perf_counter() - epoch_start)
            if stale >= config.patience:
                break
    if progress is not None:
        progress.close()
    module.load_state_dict(best_state)
    module.eval()
    history.seconds = time.perf_counter() - start
    return history


@torch.inference_mode()
def evaluate_loss(
    module: nn.Module, x: Tensor, y: Tensor, batch_size: int = INFERENCE_ROWS
) -> float:
    """Mean cross-entropy of ``module`` (in eval mode) on ``(x, y)``."""
    module.eval()
    total = 0.0
    # One host sync per chunk (a handful per epoch).
    for start in range(0, len(x), batch_size):
        logits = module(x[start : start + batch_size])
        total += float(F.cross_entropy(logits, y[start : start + batch_size], reduction="sum"))
    return total / len(x)


@torch.inference_mode()
def predict_logits(module: nn.Module, x: Tensor, batch_size: int = INFERENCE_ROWS) -> np.ndarray:
    """Logits of ``module`` in eval mode, computed in chunks; float32 ``[N, C]``."""
    module.eval()
    parts = [module(x[start : start + batch_size]) for start in range(0, len(x), batch_size)]
    if not parts:
        raise ValueError("predict_logits needs at least one row; got an empty batch.")
    return torch.cat(parts).cpu().numpy()


DEVICES = ("auto", "cpu", "cuda")


def resolve_device(device: str | torch.device | None = "auto") -> torch.device:
    """``"auto"`` (or ``None``): CUDA where available, else CPU; ``"cpu"``; ``"cuda"`` (or
    ``"cuda:N"``), which must be available; a ``torch.device`` passes through.

    Example:
        >>> resolve_device("cpu")
        device(type='cpu')
    """
    if isinstance(device, torch.device):
        resolved = device
    elif device is None or device == "auto":
        resolved = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    elif isinstance(device, str) and (device == "cpu" or device.split(":")[0] == "cuda"):
        resolved = torch.device(device)
    else:
        raise ValueError(f"device must be one of {', '.join(DEVICES)} (or cuda:N); got {device!r}")
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"device {device!r} asks for CUDA, but torch.cuda.is_available() is False here "
            f"(torch {torch.__version__}); use --device cpu or auto."
        )
    return resolved


@contextlib.contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """Run the block with torch's intra-op thread count set to ``threads`` (``None``: leave it),
    and give the caller's setting back afterwards."""
    if threads is None:
        yield
        return
    if not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive int or None; got {threads!r}")
    before = torch.get_num_threads()
    if before != threads:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


def _check_xy(x: Tensor, y: Tensor, split: str) -> None:
    if x.ndim != 2 or x.dtype != torch.float32:
        raise ValueError(
            f"{split}: expected float32 features of shape [N, width]; got {x.dtype} {tuple(x.shape)}"
        )
    if y.ndim != 1 or y.dtype != torch.int64 or len(y) != len(x):
        raise ValueError(
            f"{split}: expected int64 labels of shape [{len(x)}]; got {y.dtype} {tuple(y.shape)}"
        )
    if len(x) == 0:
        raise ValueError(f"{split}: no rows.")


def _progress(total: int, quiet: bool, description: str) -> Any:
    if quiet:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=description, unit="epoch")

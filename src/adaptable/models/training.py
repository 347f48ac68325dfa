"""The one training routine of the deep source models (the authors' protocol, method.md 3).

AdamW (weight decay 0.01), lr 1e-4, batch 64, up to 50 epochs, cross-entropy, early stopping on
the validation loss with patience 10, the best-validation weights restored. Seeded: the same seed
gives bit-identical weights on CPU (same thread count).
"""

from __future__ import annotations

import copy
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn
from torch.nn import functional as F


@dataclass(frozen=True)
class TrainingConfig:
    """Hyper-parameters of :func:`fit_module` (defaults: the authors' protocol)."""

    lr: float = 1e-4
    weight_decay: float = 0.01
    batch_size: int = 64
    max_epochs: int = 50
    patience: int = 10
    eval_batch_size: int = 4096

    def __post_init__(self) -> None:
        for key in ("batch_size", "max_epochs", "patience", "eval_batch_size"):
            value = getattr(self, key)
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"TrainingConfig.{key} must be a positive int; got {value!r}")
        if self.lr <= 0:
            raise ValueError(f"TrainingConfig.lr must be positive; got {self.lr}")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-compatible copy."""
        return asdict(self)


@dataclass
class TrainingHistory:
    """What happened during training: per-epoch losses, the restored epoch, wall time."""

    train_loss: list[float] = field(default_factory=list)
    valid_loss: list[float] = field(default_factory=list)
    best_epoch: int = -1
    best_valid_loss: float = float("inf")
    seconds: float = 0.0

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

    Returns:
        The :class:`TrainingHistory`; the module is left in eval mode with the weights of the
        epoch of lowest validation loss.
    """
    config = config or TrainingConfig()
    _check_xy(x_train, y_train, "train")
    _check_xy(x_valid, y_valid, "valid")
    optimizer = torch.optim.AdamW(
        module.parameters(), lr=config.lr, weight_decay=config.weight_decay
    )
    history = TrainingHistory()
    best_state = copy.deepcopy(module.state_dict())
    stale = 0
    start = time.perf_counter()
    generator = torch.Generator().manual_seed(seed)
    progress = _progress(config.max_epochs, quiet, description)
    # fork_rng: dropout draws from the global generator; seed it without disturbing the caller.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for epoch in range(config.max_epochs):
            module.train()
            order = torch.randperm(len(x_train), generator=generator)
            batches = list(order.split(config.batch_size))
            # A trailing batch of one row breaks batch norm in train mode; it is skipped.
            if len(batches) > 1 and len(batches[-1]) == 1:
                batches.pop()
            total, seen = 0.0, 0
            for index in batches:
                optimizer.zero_grad(set_to_none=True)
                loss = F.cross_entropy(module(x_train[index]), y_train[index])
                loss.backward()
                optimizer.step()
                total += float(loss.detach()) * len(index)
                seen += len(index)
            valid_loss = evaluate_loss(module, x_valid, y_valid, config.eval_batch_size)
            history.train_loss.append(total / max(seen, 1))
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
            if stale >= config.patience:
                break
    if progress is not None:
        progress.close()
    module.load_state_dict(best_state)
    module.eval()
    history.seconds = time.perf_counter() - start
    return history


@torch.inference_mode()
def evaluate_loss(module: nn.Module, x: Tensor, y: Tensor, batch_size: int = 4096) -> float:
    """Mean cross-entropy of ``module`` (in eval mode) on ``(x, y)``."""
    module.eval()
    total = 0.0
    for start in range(0, len(x), batch_size):
        logits = module(x[start : start + batch_size])
        total += float(F.cross_entropy(logits, y[start : start + batch_size], reduction="sum"))
    return total / len(x)


@torch.inference_mode()
def predict_logits(module: nn.Module, x: Tensor, batch_size: int = 4096) -> np.ndarray:
    """Logits of ``module`` in eval mode, computed in chunks; float32 ``[N, C]``."""
    module.eval()
    parts = [module(x[start : start + batch_size]) for start in range(0, len(x), batch_size)]
    if not parts:
        raise ValueError("predict_logits needs at least one row; got an empty batch.")
    return torch.cat(parts).numpy()


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

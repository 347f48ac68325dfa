"""A deep backbone packaged with its Encoder: raw DataFrame in, logits out."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from adaptable.encoding import EncodedBatch, Encoder
from adaptable.models.training import (
    INFERENCE_ROWS,
    TrainingHistory,
    predict_logits,
    resolve_device,
)


class TorchSourceModel:
    """A trained torch source model and the Encoder it was trained with.

    Parameter-updating TTA methods use ``.module`` and ``.prepare``; output-only methods
    (AdapTable, LAME) use ``predict_logits`` / ``features``.

    Args:
        module: the backbone; put (and kept) in eval mode.
        encoder: the fitted Encoder the module was trained on.
        n_classes: number of classes.
        name: registry name of the backbone (``"mlp"``, ...).
        history: training curves, when known.
        device: where the module runs (``"auto"``, ``"cpu"``, ``"cuda"``); ``None`` keeps it
            where its parameters are. Inputs are moved there and outputs come back as numpy.

    Example:
        >>> # model = adaptable.models.train("mlp", dataset, seed=0)
        >>> # model.predict_proba(dataset.test.X[:64]).sum(axis=1)  -> all ones
    """

    def __init__(
        self,
        module: nn.Module,
        encoder: Encoder,
        n_classes: int,
        name: str = "torch",
        history: TrainingHistory | None = None,
        device: str | torch.device | None = None,
    ) -> None:
        if not isinstance(module, nn.Module):
            raise TypeError(f"module must be a torch.nn.Module; got {type(module)!r}")
        if not isinstance(encoder, Encoder):
            raise TypeError(f"encoder must be an adaptable.datasets.Encoder; got {type(encoder)!r}")
        if device is not None:
            module.to(resolve_device(device))
        self.module = module.eval()
        self.encoder = encoder
        self.n_classes = int(n_classes)
        self.name = name
        self.history = history
        #: where the model lives in the cache, set by ``adaptable.models.train``
        self.cache_info: dict[str, Any] | None = None

    @property
    def device(self) -> torch.device:
        """Where the module's parameters (and :meth:`prepare`'s output) live."""
        parameter = next(self.module.parameters(), None)
        return parameter.device if parameter is not None else torch.device("cpu")

    def to(self, device: str | torch.device) -> TorchSourceModel:
        """Move the module to ``device`` (``"auto"``, ``"cpu"``, ``"cuda"``); returns self."""
        self.module.to(resolve_device(device))
        return self

    def prepare(self, X: pd.DataFrame | np.ndarray | torch.Tensor) -> torch.Tensor:
        """Encode raw rows into the module's input, float32 ``[N, width]`` on :attr:`device`.

        A DataFrame (or an array in the training table's column order) goes through the
        encoder; a tensor is taken as already encoded and only its width is checked.
        """
        if isinstance(X, torch.Tensor):
            width = self.encoder.n_features_out_
            if X.ndim != 2 or X.shape[1] != width:
                raise ValueError(
                    f"An encoded tensor must have shape [N, {width}]; got {tuple(X.shape)}"
                )
            return X.to(device=self.device, dtype=torch.float32)
        return torch.from_numpy(self.encoder.transform(X)).to(self.device)

    def predict_logits(self, X: pd.DataFrame | np.ndarray | torch.Tensor) -> np.ndarray:
        """Logits ``(n, C)`` as float32 numpy."""
        if isinstance(X, torch.Tensor):
            return predict_logits(self.module, self.prepare(X))
        return self.logits_from_encoded(self.encoder.encode(X))

    def logits_from_encoded(self, encoded: EncodedBatch) -> np.ndarray:
        """Logits of a batch already encoded by :attr:`encoder` (numbers + category codes).

        AdapTable encodes each batch once and hands the result here, so the model does not
        encode the same rows a second time (see ``AdapTable._shared_encoder``). The dense
        module input is built ``INFERENCE_ROWS`` rows at a time: on a wide one-hot (2,097 columns
        on Hospital Readmission) the whole matrix of a source split is hundreds of MB that
        nothing needs at once; the logits are the same. (:func:`predict_logits` puts the
        module in eval mode.)
        """
        parts = []
        for start in range(0, max(len(encoded), 1), INFERENCE_ROWS):
            piece = EncodedBatch(
                encoded.numeric[start : start + INFERENCE_ROWS],
                encoded.codes[start : start + INFERENCE_ROWS],
            )
            matrix = torch.from_numpy(self.encoder.transform_from(piece)).to(self.device)
            parts.append(predict_logits(self.module, matrix, batch_size=INFERENCE_ROWS))
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def predict_proba(self, X: pd.DataFrame | np.ndarray | torch.Tensor) -> np.ndarray:
        """Softmax probabilities ``(n, C)``; rows sum to one."""
        logits = torch.from_numpy(self.predict_logits(X))
        return torch.softmax(logits.double(), dim=1).numpy()

    def predict(self, X: pd.DataFrame | np.ndarray | torch.Tensor) -> np.ndarray:
        """Class indices ``(n,)``."""
        return self.predict_logits(X).argmax(axis=1)

    @torch.inference_mode()
    def features(self, X: pd.DataFrame | np.ndarray | torch.Tensor) -> np.ndarray:
        """Penultimate features ``(n, d_features)`` (the module's ``features``)."""
        if not hasattr(self.module, "features"):
            raise TypeError(f"{type(self.module).__name__} exposes no features(x)")
        self.module.eval()
        x = self.prepare(X)
        parts = [
            self.module.features(x[s : s + INFERENCE_ROWS])
            for s in range(0, len(x), INFERENCE_ROWS)
        ]
        return torch.cat(parts).cpu().numpy()

    def __repr__(self) -> str:
        return f"TorchSourceModel({self.name!r}, {self.encoder!r}, n_classes={self.n_classes})"

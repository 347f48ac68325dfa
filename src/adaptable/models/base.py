"""What every deep backbone shares: ``forward(x) == head(features(x))`` on the Encoder's matrix."""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn

from adaptable.encoding import Encoder
from adaptable.models.tokens import check_width


class Backbone(nn.Module):
    """Base class of the deep source models.

    Subclasses build ``self.head`` and implement :meth:`features`. ``forward`` is always
    ``head(features(x))``, so methods that work on penultimate features (LAME, TTT++) see exactly
    what the classifier sees.

    Attributes:
        width: the encoded input width the module expects.
        n_classes: number of output logits.
        d_features: size of :meth:`features`' output.
        config: the keyword arguments that rebuild the module (used by the cache).
    """

    name: str = "backbone"
    head: nn.Module

    def __init__(self, encoder: Encoder, n_classes: int) -> None:
        super().__init__()
        if not isinstance(encoder, Encoder):
            raise TypeError(f"Expected a fitted adaptable.datasets.Encoder; got {type(encoder)!r}.")
        if not isinstance(n_classes, int) or n_classes < 2:
            raise ValueError(f"n_classes must be an int >= 2; got {n_classes!r}")
        self.width = encoder.n_features_out_
        self.n_classes = n_classes
        self.config: dict[str, Any] = {}
        self.d_features = 0

    def features(self, x: Tensor) -> Tensor:
        """Penultimate representation ``[N, d_features]``."""
        raise NotImplementedError

    def forward(self, x: Tensor) -> Tensor:
        """Logits ``[N, n_classes]`` for an encoded batch ``[N, width]``."""
        return self.head(self.features(x))

    def _check(self, x: Tensor) -> None:
        check_width(x, self.width)

"""Helpers shared by the baselines (one place, not one per class).

Input checks (fitted, batch shape, labels) live in :class:`adaptable.core.TestTimeMethod`, and the
package's one softmax in :mod:`adaptable.core`; what is here is specific to the baselines.
"""

from __future__ import annotations

from collections.abc import Collection
from numbers import Real
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from adaptable.framework.parameters import Constraint, Interval, validate_parameters
from adaptable.framework.probability import softmax

#: what a flag parameter accepts (numpy's booleans come out of arrays and configuration files)
FLAG: list[Constraint] = [bool, np.bool_]


class CheckedParameters:
    """Mixin (before :class:`~adaptable.core.TestTimeMethod`): the parameters are checked
    against ``_parameter_constraints`` at construction, in ``set_params`` and in ``fit``.

    The same mechanism as AdapTable's (:mod:`adaptable.framework.parameters`), so that every method
    refuses a bad value with an :class:`~adaptable.framework.parameters.InvalidParameterError` naming
    it, whether it came through the constructor, through ``set_params`` (what ``clone`` and
    ``GridSearchCV`` use) or by assigning the attribute. A subclass extends its parent's
    constraints: ``{**Parent._parameter_constraints, "knn": [Interval(Integral, 1, None)]}``,
    and each constructor ends with ``self._check_parameters()``.

    Example:
        >>> from adaptable.baselines import LAME
        >>> LAME().set_params(knn=0)
        Traceback (most recent call last):
        ...
        adaptable.framework.parameters.InvalidParameterError: The 'knn' parameter of LAME must be an integer in [1, inf); got 0.
    """  # noqa: E501

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {}

    def set_params(self, **params: Any) -> Any:
        """scikit-learn's ``set_params``, with every value checked before any is changed."""
        self._check_parameters({**self.get_params(deep=False), **params})  # type: ignore[attr-defined]
        return super().set_params(**params)  # type: ignore[misc]

    def fit(
        self,
        model: Any,
        X_source: Any = None,
        y_source: Any = None,
        X_valid: Any = None,
        y_valid: Any = None,
    ) -> Any:
        """Check the parameters (an attribute may have been assigned since), then
        :meth:`TestTimeMethod.fit <adaptable.core.TestTimeMethod.fit>` as usual."""
        self._check_parameters()
        return super().fit(model, X_source, y_source, X_valid, y_valid)  # type: ignore[misc]

    def _check_parameters(self, params: dict[str, Any] | None = None) -> None:
        """``params`` (default: the attributes set so far) against the constraints.

        A parent's constructor runs before its subclass has set its own attributes, so the
        default takes only those already present; the most derived constructor checks them all.
        """
        if params is None:
            names = self._get_param_names()  # type: ignore[attr-defined]
            params = {name: getattr(self, name) for name in names if hasattr(self, name)}
        validate_parameters(self._parameter_constraints, params, type(self).__name__)


class NumberSequence:
    """A constraint: a non-empty sequence of numbers, each inside ``interval`` (and of
    ``length`` items when given), e.g. FTAT's learning rates or TTT++'s loss weights."""

    def __init__(self, interval: Interval, length: int | None = None) -> None:
        self.interval = interval
        self.length = length

    def accepts(self, value: Any) -> bool:
        if isinstance(value, str | bytes) or not isinstance(value, Collection) or not value:
            return False
        if self.length is not None and len(value) != self.length:
            return False
        return all(isinstance(v, Real) and self.interval.accepts(v) for v in value)

    def __str__(self) -> str:
        count = "a non-empty sequence" if self.length is None else f"a sequence of {self.length}"
        return f"{count} of numbers, each {self.interval}"


def require_torch_source_model(model: Any, method: str) -> None:
    """Raise a ``TypeError`` unless ``model`` follows the ``TorchSourceModel`` contract.

    Parameter-updating methods need the torch module (``.module``) and the encoder step that
    turns raw rows into its float32 input (``.prepare``); a GBDT or a plain callable has neither.
    """
    module = getattr(model, "module", None)
    prepare = getattr(model, "prepare", None)
    if not isinstance(module, nn.Module) or not callable(prepare):
        raise TypeError(
            f"{method!r} updates model parameters and needs a TorchSourceModel from "
            "adaptable.models (an object with a torch.nn.Module `.module` and a `.prepare(X)` "
            f"method, e.g. adaptable.models.train('mlp', ...)); got {type(model).__name__}, "
            "which has no trainable torch module. Use an output-level method "
            "('source', 'adaptable', 'em', 'bbse') for this model."
        )
    for name in ("features", "head"):
        if not hasattr(module, name):
            raise TypeError(
                f"{method!r} needs a module with `features(x)` (penultimate) and `head`; "
                f"{type(module).__name__} has no {name!r}"
            )


def softmax_entropy(logits: torch.Tensor) -> torch.Tensor:
    """Shannon entropy of ``softmax(logits)`` per row, shape (n,)."""
    return -(logits.softmax(dim=1) * logits.log_softmax(dim=1)).sum(dim=1)


def to_numpy_proba(logits: torch.Tensor) -> np.ndarray:
    """Probabilities as float64 numpy rows that sum to one."""
    return softmax(logits.detach().cpu().double().numpy())

"""LAME: Laplacian-adjusted maximum-likelihood estimation (Boudiaf et al. 2022), output-only.

Per test batch, with p_i the source model's probabilities and z_i its L2-normalised penultimate
features, LAME finds assignments Y minimising
    sum_i KL(y_i || p_i) - lambda * sum_ij w_ij y_i . y_j
by the bound-optimisation fixed point y_i <- softmax(log p_i + lambda * sum_j w_ij y_j),
started from p_i and stopped after 100 iterations or when the energy changes by < 1e-8
(relative). Affinity: RBF kernel w_ij = exp(-||z_i - z_j||^2 / (2 sigma^2)), with sigma the mean
over rows of the distance to the 5th nearest neighbour (the row itself counted, as in LAME's
code); lambda = 1. The model's parameters never change.
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import torch

from adaptable.baselines.source import SourceOnly
from adaptable.framework.method import SourceData
from adaptable.framework.parameters import Constraint, Interval
from adaptable.framework.probability import softmax


class LAME(SourceOnly):
    """Output-only adaptation by Laplacian-regularised maximum likelihood on a batch.

    Works for any source model that exposes penultimate features: a ``TorchSourceModel``
    (``.module.features`` on ``.prepare(X)``) or any object with a ``features(X)`` method.

    Args:
        knn: neighbour rank that sets the RBF bandwidth (LAME: 5).
        bound_lambda: weight of the Laplacian term (LAME: 1).
        max_steps: maximum fixed-point iterations (LAME: 100).
        tol: relative energy change that stops the iterations (LAME: 1e-8).
    """

    name = "lame"

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "knn": [Interval(Integral, 1, None)],
        "bound_lambda": [Interval(Real, 0, None)],
        "max_steps": [Interval(Integral, 1, None)],
        "tol": [Interval(Real, 0, None)],
    }

    def __init__(
        self,
        *,
        knn: int = 5,
        bound_lambda: float = 1.0,
        max_steps: int = 100,
        tol: float = 1e-8,
    ) -> None:
        self.knn = knn
        self.bound_lambda = bound_lambda
        self.max_steps = max_steps
        self.tol = tol
        self._check_parameters()

    def _fit(self, model: Any, source: SourceData) -> None:
        """Keep the model's logit and feature functions; LAME needs no source data."""
        self._features = _feature_function(model)
        super()._fit(model, source)

    def predict_proba(self, X_batch: Any) -> np.ndarray:
        """LAME assignments of the batch's rows, float64 (n, C), rows summing to one."""
        probs = self._source_proba(X_batch)
        features = np.asarray(self._features(X_batch), dtype=np.float64)
        if features.ndim != 2 or features.shape[0] != probs.shape[0]:
            raise ValueError(
                f"lame: features must be (n_rows, d) with n_rows = {probs.shape[0]}; got "
                f"{features.shape}"
            )
        norms = np.linalg.norm(features, axis=1, keepdims=True)
        features = features / np.maximum(norms, 1e-12)
        kernel = rbf_affinity(features, self.knn)
        return laplacian_optimisation(
            -np.log(probs + 1e-10), kernel, self.bound_lambda, self.max_steps, self.tol
        )


def rbf_affinity(features: np.ndarray, knn: int) -> np.ndarray:
    """Dense RBF kernel (n, n) with bandwidth = mean distance to the ``knn``-th nearest row.

    The row itself (distance 0) counts as the first neighbour, as in LAME's code.
    """
    sq = np.sum(features**2, axis=1)
    dist = np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2.0 * features @ features.T, 0.0))
    k = min(knn, features.shape[0])
    kth = np.sort(dist, axis=1)[:, k - 1]
    sigma = kth.mean()
    if sigma <= 0:  # all rows identical: every pair is maximally similar
        return np.ones_like(dist)
    return np.exp(-(dist**2) / (2.0 * sigma**2))


def laplacian_optimisation(
    unary: np.ndarray,
    kernel: np.ndarray,
    bound_lambda: float = 1.0,
    max_steps: int = 100,
    tol: float = 1e-8,
) -> np.ndarray:
    """LAME's fixed point: Y <- softmax(-unary + lambda * kernel @ Y), from softmax(-unary).

    Args:
        unary: -log p, (n, C).
        kernel: affinity, (n, n).
    Returns:
        Y, (n, C), rows summing to one.
    """
    y = softmax(-unary)
    old_energy = np.inf
    for step in range(max_steps):
        pairwise = bound_lambda * kernel @ y
        y = softmax(-unary + pairwise)
        energy = float(np.sum(unary * y - pairwise * y + y * np.log(np.clip(y, 1e-20, None))))
        # LAME's stopping rule: relative energy change, checked from the third iteration on.
        if step > 1 and abs(energy - old_energy) <= tol * abs(old_energy):
            break
        old_energy = energy
    return y


def _feature_function(model: Any) -> Callable[[Any], np.ndarray]:
    """``X -> penultimate features (n, d)`` or a TypeError naming what LAME needs."""
    module = getattr(model, "module", None)
    prepare = getattr(model, "prepare", None)
    if isinstance(module, torch.nn.Module) and callable(prepare) and hasattr(module, "features"):
        return _Features(model, "source_model")
    if isinstance(model, torch.nn.Module) and hasattr(model, "features"):
        return _Features(model, "module")
    if callable(getattr(model, "features", None)):
        return _Features(model, "method")
    raise TypeError(
        "'lame' needs penultimate features: a TorchSourceModel from adaptable.models or an "
        f"object with a `features(X)` method; got {type(model).__name__}. Use 'em' or 'bbse' "
        "for models without features (e.g. GBDTs)."
    )


class _Features:
    """A model's penultimate features, ``X -> (n, d)`` float64; a class, not a closure, so that
    a fitted LAME pickles."""

    def __init__(self, model: Any, kind: str) -> None:
        self.model = model
        self.kind = kind

    def __call__(self, X: Any) -> np.ndarray:
        if self.kind == "method":
            return np.asarray(self.model.features(X), dtype=np.float64)
        with torch.no_grad():
            if self.kind == "source_model":
                x = torch.as_tensor(self.model.prepare(X), dtype=torch.float32)
                return self.model.module.features(x).double().cpu().numpy()
            x = torch.as_tensor(np.asarray(X, dtype=np.float32))
            return self.model.features(x).double().cpu().numpy()

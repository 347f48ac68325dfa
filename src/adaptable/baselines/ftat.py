"""FTAT: fully test-time adaptation for tabular data (Zhou, Yu, Guo and Li, AAAI 2025).

Per test batch, as the authors' public code does it (``FTTA.py``):
1. Dynamic model ensembler: three copies of the source model, each with its own SGD optimiser
   and learning rate (1e-5, 5e-4, 1e-4); their probabilities are mixed with weights proportional
   to 1 - mean_i(H_i * margin_i) (entropy times top-two margin: confident models weigh more).
2. Local consistent weighter: pairwise Euclidean distances between the batch's (encoded) rows;
   row j is a neighbour of row i when their distance is at most the mean of all pairwise
   distances. Only rows whose ensemble pseudo-label is shared by at least ``consistency`` (0.7)
   of their neighbours (themselves included) enter the update.
3. Each copy takes one SGD step on the mean over those rows of its entropy times its margin.
4. Confident distribution optimiser: with p~_i = norm(p_i * pi / p_s) the ensemble prediction
   re-weighted by the current label-distribution vector pi (initialised to p_s),
   A[k] = mean of p~_i over rows predicted k, b = mean of p~_i over confident rows (entropy
   below that of a (0.7, 0.3) prediction), x = A^{-1} b, and pi <- softmax(pi - 0.1 * x).
   The update is skipped when a class is not predicted in the batch, no row is confident, or A is
   singular (the authors skip a NaN solution).
5. Output: norm(p * pi / p_s) with the updated pi.

What the update rule implies (a fact about the authors' code, kept as it is): pi is the softmax
of a probability vector shifted by 0.1 x, so it stays near uniform (measured:
docs/research/design_notes.md#baselines-ftat) and moves *away* from classes with a large x. pi
is therefore not an estimate of the target label distribution; the output behaves like the
balanced rule p / p_s, tilted toward the classes the confident rows rarely predict.

``FTAT(ensemble=False)`` (registry ``ftat[ensemble=false]``) keeps only the confident
distribution optimiser (steps 4-5) on the source model's own probabilities: no parameters are
updated, so it works with any model (trees included).

Deliberate difference: the authors' code is binary-only (one sigmoid output turned into two
probabilities). We generalise to C classes: the margin is the top-1 minus top-2 probability,
A is C x C, and the confident rows are those whose entropy is below that of the prediction
(0.7, 0.3 / (C - 1), ...); for two classes all three reduce to the authors' definitions.
Deliberate difference: the authors pass probabilities to TENT's ``softmax_entropy``, which
expects logits (a second softmax). We use the Shannon entropy of the prediction itself; the
confident-row selection is unchanged by this (both entropies order two-class rows by margin),
while the loss and the ensemble weights change. In the ensemble weights the entropy is divided
by ln C so that they stay positive for any number of classes.
Deliberate difference: as our other parameter-updating baselines (see :mod:`.episodic`), FTAT
predicts with the copies after their update (the authors return the ensemble's prediction from
before it), keeps the modules in eval mode (the authors: train mode; our MLP has neither dropout
nor batch norm), and by default restores the three copies and their optimisers before every
batch (``episodic=True``, the AdapTable protocol). The label-distribution vector pi is online
state, kept across batches and cleared by ``reset()``. ``episodic=False`` is the authors'
continual adaptation.
Deliberate difference: p_s is the train + validation label frequencies (AdapTable's); the
authors hard-code each dataset's training positive rate. The authors evaluate batches of 512
rows; the AdapTable protocol uses 64.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import torch

from adaptable.baselines.common import (
    FLAG,
    CheckedParameters,
    NumberSequence,
    require_torch_source_model,
    softmax_entropy,
)
from adaptable.core.paper.label_handler import source_prior
from adaptable.framework.method import SourceData, TestTimeMethod
from adaptable.framework.model_adapter import as_logit_function
from adaptable.framework.parameters import Constraint, Interval
from adaptable.framework.probability import normalize, softmax

__all__ = ["FTAT", "confident_distribution_step", "consistent_rows", "ensemble_weights"]


# --------------------------------------------------------------------------- the three parts
def confident_distribution_step(
    adjusted: np.ndarray, prior: np.ndarray, smooth: float = 0.1, confidence: float = 0.7
) -> np.ndarray:
    """The confident distribution optimiser's update of the label-distribution vector pi.

    Args:
        adjusted: the batch's predictions re-weighted by the current pi, norm(p * pi / p_s),
            (n, C).
        prior: the current pi, (C,).
        smooth: the step (the authors' ``smooth_factor``, 0.1).
        confidence: the top probability of the reference prediction whose entropy bounds the
            confident rows (0.7).

    Returns:
        softmax(pi - smooth * A^{-1} b), or pi unchanged when the system is undefined.

    Example:
        >>> adjusted = np.array([[0.9, 0.1], [0.8, 0.2], [0.4, 0.6], [0.2, 0.8]])
        >>> confident_distribution_step(adjusted, np.array([0.5, 0.5])).round(4)
        array([0.4879, 0.5121])
    """
    adjusted = np.asarray(adjusted, dtype=np.float64)
    n_classes = adjusted.shape[1]
    predicted = adjusted.argmax(axis=1)
    counts = np.bincount(predicted, minlength=n_classes)
    if np.any(counts == 0):
        return prior.copy()
    per_class = np.zeros((n_classes, n_classes))
    np.add.at(per_class, predicted, adjusted)
    per_class /= counts[:, None]
    confident = _entropy(adjusted) < _entropy(_reference_prediction(confidence, n_classes))
    if not np.any(confident):
        return prior.copy()
    mean_confident = adjusted[confident].mean(axis=0)
    try:
        solution = np.linalg.solve(per_class, mean_confident)
    except np.linalg.LinAlgError:
        return prior.copy()
    if not np.all(np.isfinite(solution)):
        return prior.copy()
    return softmax((prior - smooth * solution)[None, :])[0]


def consistent_rows(x: torch.Tensor, pseudo_labels: torch.Tensor, agreement: float = 0.7):
    """The local consistent weighter: rows whose neighbourhood agrees with their pseudo-label.

    Args:
        x: the batch in the model's input space, (n, d).
        pseudo_labels: the ensemble's argmax, (n,).
        agreement: the share of neighbours (the row included) that must share the row's
            pseudo-label (the authors' 1 - 0.3).

    Returns:
        a boolean mask, (n,).

    Example:
        >>> x = torch.tensor([[0.0], [0.1], [0.2], [0.3], [5.0], [5.1]])
        >>> consistent_rows(x, torch.tensor([0, 0, 0, 1, 1, 1])).tolist()
        [True, True, True, False, True, True]
    """
    # Exact pairwise distances (no matrix-product shortcut): the threshold compares them.
    distance = torch.cdist(x, x, compute_mode="donot_use_mm_for_euclid_dist")
    neighbours = distance <= distance.mean()
    same = pseudo_labels[:, None] == pseudo_labels[None, :]
    share = (neighbours & same).sum(dim=1) / neighbours.sum(dim=1)
    return share >= agreement - 1e-12


def ensemble_weights(probas: Sequence[torch.Tensor]) -> torch.Tensor:
    """The dynamic model ensembler's weights: 1 - mean(H / ln C * margin), normalised to sum 1.

    Args:
        probas: each model's probabilities on the batch, (n, C) each.

    Returns:
        (M,) non-negative weights summing to one.
    """
    scores = []
    for proba in probas:
        entropy = -(proba * proba.clamp_min(1e-12).log()).sum(dim=1) / math.log(proba.shape[1])
        scores.append(1.0 - (entropy * _margin(proba)).mean())
    score = torch.stack(scores).clamp_min(0.0)
    total = score.sum()
    if float(total) <= 0:
        return torch.full_like(score, 1.0 / len(scores))
    return score / total


def _margin(proba: torch.Tensor) -> torch.Tensor:
    top2 = proba.topk(2, dim=1).values
    return top2[:, 0] - top2[:, 1]


def _entropy(proba: np.ndarray) -> np.ndarray:
    return -np.sum(proba * np.log(np.clip(proba, 1e-300, None)), axis=-1)


def _reference_prediction(confidence: float, n_classes: int) -> np.ndarray:
    rest = (1.0 - confidence) / (n_classes - 1)
    return np.array([confidence] + [rest] * (n_classes - 1))


# --------------------------------------------------------------------------- the method
class FTAT(CheckedParameters, TestTimeMethod):
    """FTAT on a torch source model, or (``ensemble=False``) its label-distribution part alone.

    Args:
        ensemble: adapt three model copies (True, torch source models only) or only re-weight
            the source model's outputs (False, any model).
        learning_rates: one SGD learning rate per copy (the authors': 1e-5, 5e-4, 1e-4).
        steps: update steps per batch (the authors: 1).
        episodic: restore the copies and their optimisers before every batch (default True, the
            AdapTable protocol; False is the authors' continual adaptation).
        smooth: step of the confident distribution optimiser (0.1).
        confidence: top probability of the reference prediction bounding confident rows (0.7).
        consistency: neighbour agreement needed to enter the update (0.7).

    Attributes (after fit / predict_proba):
        source_prior_: p_s, (C,).
        target_prior_: the label-distribution vector pi after the last batch, (C,).
        modules_: the adapted copies (``ensemble=True``).

    Example:
        >>> from adaptable import methods
        >>> methods.create("ftat", ensemble=False).updates_parameters
        False
    """

    name = "ftat"

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "ensemble": FLAG,
        "learning_rates": [NumberSequence(Interval(Real, 0, None, closed="neither"))],
        "steps": [Interval(Integral, 0, None)],
        "episodic": FLAG,
        "smooth": [Interval(Real, 0, None)],
        "confidence": [Interval(Real, 0, 1, closed="neither")],
        "consistency": [Interval(Real, 0, 1, closed="right")],
    }

    def __init__(
        self,
        *,
        ensemble: bool = True,
        learning_rates: Sequence[float] = (1e-5, 5e-4, 1e-4),
        steps: int = 1,
        episodic: bool = True,
        smooth: float = 0.1,
        confidence: float = 0.7,
        consistency: float = 0.7,
    ) -> None:
        # Constructor arguments kept as given (scikit-learn's estimator contract; clone checks it).
        self.ensemble = ensemble
        self.learning_rates = learning_rates
        self.steps = steps
        self.episodic = episodic
        self.smooth = smooth
        self.confidence = confidence
        self.consistency = consistency
        self._check_parameters()

    @property
    def updates_parameters(self) -> bool:  # type: ignore[override]
        """Only the ensemble variant changes model parameters."""
        return bool(self.ensemble)

    # ----------------------------------------------------------------- public interface
    def _fit(self, model: Any, source: SourceData) -> None:
        """Copy the model (``ensemble=True``) or wrap its outputs, and compute p_s.

        Raises:
            TypeError: ``ensemble=True`` with a model that is not a ``TorchSourceModel``.
        """
        if self.ensemble:
            try:
                require_torch_source_model(model, self.name)
            except TypeError as err:
                raise TypeError(
                    f"{err} For any model, FTAT's label-distribution part alone is "
                    "'ftat[ensemble=false]' (FTAT(ensemble=False))."
                ) from None
            self.source_model_ = model
            self.modules_ = [copy.deepcopy(model.module).eval() for _ in self.learning_rates]
            for module in self.modules_:
                for parameter in module.parameters():
                    parameter.requires_grad_(True)
            self.optimizers_ = [
                torch.optim.SGD(module.parameters(), lr=float(lr))
                for module, lr in zip(self.modules_, self.learning_rates, strict=True)
            ]
            self._source_state = copy.deepcopy(self.modules_[0].state_dict())
            self._optimizer_states = [copy.deepcopy(o.state_dict()) for o in self.optimizers_]
            x_source = self._prepare(source.X)
            with torch.no_grad():
                n_classes = int(self.modules_[0](x_source[:1]).shape[1])
        else:
            self._logits = as_logit_function(model)
            n_classes = int(self._logits(source.X[:1]).shape[1])
        self.n_classes_ = n_classes
        self.source_prior_ = source_prior(source.y, source.y_valid, n_classes=n_classes)
        self.target_prior_ = self.source_prior_.copy()
        self.n_consistent_ = 0
        if self.ensemble:
            self._restore_source()

    def predict_proba(self, X_batch: Any) -> np.ndarray:
        """Adapt on the batch, update pi, return norm(p * pi / p_s), (n, C)."""
        self._check_fitted()
        self._check_batch(X_batch)
        proba = self._adapted_proba(X_batch) if self.ensemble else softmax(self._logits(X_batch))
        adjusted = normalize(proba * (self.target_prior_ / self.source_prior_))
        self.target_prior_ = confident_distribution_step(
            adjusted, self.target_prior_, self.smooth, self.confidence
        )
        return normalize(proba * (self.target_prior_ / self.source_prior_))

    def reset(self) -> None:
        """Source weights and fresh optimisers for the copies, pi back to p_s."""
        self._check_fitted()
        if self.ensemble:
            self._restore_source()
        self.target_prior_ = self.source_prior_.copy()
        #: rows that entered the last update (``ensemble=True``)
        self.n_consistent_ = 0

    @property
    def state(self) -> dict[str, np.ndarray]:
        """``target_prior``: the label-distribution vector pi (the runner traces it)."""
        return {"target_prior": self.target_prior_}

    # ----------------------------------------------------------------- internals
    def _adapted_proba(self, X_batch: Any) -> np.ndarray:
        x = self._prepare(X_batch)
        if self.episodic:
            self._restore_source()
        for _ in range(self.steps):
            self._adapt_step(x)
        with torch.no_grad():
            probas = [module(x).softmax(dim=1) for module in self.modules_]
            weights = ensemble_weights(probas)
            mixed = sum(w * p for w, p in zip(weights, probas, strict=True))
        return normalize(mixed.double().cpu().numpy())

    def _adapt_step(self, x: torch.Tensor) -> None:
        """Steps 1-3: ensemble pseudo-labels, the consistent rows, one SGD step per copy."""
        logits = [module(x) for module in self.modules_]
        with torch.no_grad():
            probas = [z.softmax(dim=1) for z in logits]
            weights = ensemble_weights(probas)
            mixed = sum(w * p for w, p in zip(weights, probas, strict=True))
            keep = consistent_rows(x, mixed.argmax(dim=1), self.consistency)
        self.n_consistent_ = int(keep.sum())
        if not bool(keep.any()):
            return
        for z, optimizer in zip(logits, self.optimizers_, strict=True):
            kept = z[keep]
            loss = (softmax_entropy(kept) * _margin(kept.softmax(dim=1))).mean()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

    def _restore_source(self) -> None:
        for module, optimizer, state in zip(
            self.modules_, self.optimizers_, self._optimizer_states, strict=True
        ):
            module.load_state_dict(self._source_state)
            optimizer.load_state_dict(copy.deepcopy(state))
            optimizer.zero_grad(set_to_none=True)

    def _prepare(self, X: Any) -> torch.Tensor:
        x = torch.as_tensor(self.source_model_.prepare(X), dtype=torch.float32)
        parameter = next(self.modules_[0].parameters(), None)
        return x if parameter is None else x.to(parameter.device)

"""The model updates a stream's labels can fit: the refit and the patch, each a predictor of
class posteriors from a batch's rows and the model's logits.

Both are fitted by :func:`fit_candidate` from one snapshot of the labelled rows, so a fit can
run in a background thread while the stream goes on with the candidates fitted before.

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(60, 1)); y = (x[:, 0] > 0).astype(int)
    >>> rows = LabelledSnapshot(x, y, np.zeros((60, 2)))
    >>> patch = fit_candidate("patch", rows, UpdateSource(None, None, None, None, "auto", 2), "accuracy", 0)
    >>> patch.posteriors(x[:2], np.zeros((2, 2))).shape
    (2, 2)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from adaptable.core.decision.rules import plugin_weights
from adaptable.core.updates.patch import choose_strength, clipped_log, fit_patch, patched_logits
from adaptable.core.updates.refit import refit_logits
from adaptable.core.updates.row_tables import concat_tables
from adaptable.framework.model_adapter import LogitFunction
from adaptable.framework.probability import normalize, softmax

if TYPE_CHECKING:
    from adaptable.encoding import EncodedBatch, Encoder

#: the candidates a stream's labels can fit, in the order they are compared
CANDIDATES = ("refit", "patch")


@dataclass(frozen=True)
class UpdateSource:
    """What the updates keep of ``fit``: the model, its training rows (a bounded sample), the
    Encoder the patch reads features through, and how to read a refitted copy.

    Attributes:
        model: the user's model (``None``: no refit).
        X: the kept training rows, as the model reads them (``None``: none given).
        labels: their label codes 0..C-1, (n,).
        encoder: the Encoder of the patch's features (``None``: the log-posteriors alone).
        output: how a refitted copy's outputs are read (``as_logit_function``'s ``output``).
        n_classes: C.
    """

    model: Any
    X: Any
    labels: np.ndarray | None
    encoder: Encoder | None
    output: str
    n_classes: int


@dataclass(frozen=True)
class LabelledSnapshot:
    """The labelled target rows, as a fit reads them: the rows (as the model reads them),
    their labels (n,) as codes 0..C-1 and the model's logits (n, C). The objective's class
    weights are computed over a candidate's posteriors of these rows, a sample of the stream.
    """

    X: Any
    labels: np.ndarray
    logits: np.ndarray


@dataclass
class FittedCandidate:
    """One fitted update: its posteriors for rows, and the class weights of the objective.

    Attributes:
        name: ``"refit"`` or ``"patch"``.
        n_labelled: the labelled rows it was fitted on.
        seconds: how long its fit took (wall clock).
        weights: the objective's class weights over its posteriors, (C,).
        predictor: its posteriors, ``predictor(X, logits) -> (n, C)``.
        detail: what it holds: the refitted copy (``model``) or the patch's strength.
    """

    name: str
    n_labelled: int
    seconds: float
    weights: np.ndarray
    predictor: Any = None
    detail: dict[str, Any] = field(default_factory=dict)

    def posteriors(
        self, X: Any, logits: np.ndarray, encoded: EncodedBatch | None = None
    ) -> np.ndarray:
        """Its posteriors of rows ``X`` whose model logits are ``logits``, (n, C); ``encoded``:
        the rows as the adapter's Encoder already encoded them (the patch reads them there)."""
        return self.predictor(X, logits, encoded)

    def proba(self, X: Any, logits: np.ndarray, encoded: EncodedBatch | None = None) -> np.ndarray:
        """Its decided output: the posteriors re-weighted for the objective, (n, C)."""
        return normalize(self.posteriors(X, logits, encoded) * self.weights)

    def codes(self, X: Any, logits: np.ndarray) -> np.ndarray:
        """Its predicted class codes, (n,)."""
        return (self.posteriors(X, logits) * self.weights).argmax(axis=1)


def fit_candidate(
    name: str, rows: LabelledSnapshot, source: UpdateSource, objective: str, seed: int
) -> FittedCandidate:
    """Fit the update ``name`` on the labelled rows.

    Args:
        name: one of :data:`CANDIDATES`.
        rows: the labelled rows and the stream sample.
        source: what fit kept.
        objective: the metric decided for.
        seed: seeds the patch's cross-validation folds.

    Returns:
        the fitted candidate.

    Raises:
        whatever the model's ``fit`` raises (the refit), or ``ValueError`` where a refitted
        copy gives another number of classes.
    """
    tick = time.perf_counter()
    if name == "refit":
        predict, detail = _refit(rows, source)
    else:
        predict, detail = _patch(rows, source, seed)
    weights = np.ones(source.n_classes)
    if objective != "accuracy":
        weights = plugin_weights(predict(rows.X, rows.logits), objective)
    return FittedCandidate(
        name, len(rows.labels), time.perf_counter() - tick, weights, predict, detail
    )


class RefitPredictor:
    """The posteriors of a refitted copy of the model (picklable: no closure)."""

    def __init__(self, model: Any, logits: LogitFunction) -> None:
        self.model, self.logits = model, logits

    def __call__(self, X: Any, logits: np.ndarray, encoded: Any = None) -> np.ndarray:
        return softmax(np.asarray(self.logits(X), dtype=np.float64))


class PatchPredictor:
    """The posteriors of the patch: softmax(log p + [log p, x] W + b)."""

    def __init__(self, encoder: Encoder | None, weights: np.ndarray, bias: np.ndarray) -> None:
        self.encoder, self.weights, self.bias = encoder, weights, bias

    def design(self, X: Any, log_p: np.ndarray, encoded: EncodedBatch | None = None) -> np.ndarray:
        """The patch's inputs: the log-posteriors, then the encoded features where any (from
        ``encoded`` where the adapter encoded the rows with the same Encoder)."""
        if self.encoder is None:
            return log_p
        if encoded is not None:
            features = self.encoder.transform_from(encoded)
        else:
            features = self.encoder.transform(X)
        return np.hstack([log_p, features.astype(np.float64)])

    def __call__(
        self, X: Any, logits: np.ndarray, encoded: EncodedBatch | None = None
    ) -> np.ndarray:
        log_p = clipped_log(softmax(logits))
        inputs = self.design(X, log_p, encoded)
        return softmax(patched_logits(log_p, inputs, self.weights, self.bias))


def _refit(rows: LabelledSnapshot, source: UpdateSource) -> tuple[Any, dict[str, Any]]:
    """The model refitted on its kept training rows plus the labelled rows, weight 1 each."""
    X = concat_tables([source.X, rows.X])
    codes = np.concatenate([source.labels, rows.labels])
    refitted, logits = refit_logits(
        source.model, X, codes, np.ones(len(codes)), n_classes=source.n_classes,
        output=source.output,
    )  # fmt: skip
    return RefitPredictor(refitted, logits), {"model": refitted}


def _patch(rows: LabelledSnapshot, source: UpdateSource, seed: int) -> tuple[Any, dict[str, Any]]:
    """A patch over the model's log-posteriors and the encoded features."""
    unfitted = PatchPredictor(source.encoder, np.zeros(0), np.zeros(0))
    log_p = clipped_log(softmax(rows.logits))
    inputs = unfitted.design(rows.X, log_p)
    n_classes = source.n_classes
    strength = choose_strength(log_p, inputs, rows.labels, n_classes, seed)
    weights, bias = fit_patch(log_p, inputs, rows.labels, n_classes, strength)
    return PatchPredictor(source.encoder, weights, bias), {"strength": strength}

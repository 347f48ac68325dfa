"""Small, honest stand-ins for the dataset / model / method / shift providers.

They let the experiment machinery (runner, store, executors, tables, CLI) be exercised in a few
seconds without the real source models or baselines; the tests inject them through
:class:`~adaptable.experiments.components.Components`. They live in the package (like
``numpy.testing``) so that spawned workers and Ray tasks can import them by reference.

>>> from adaptable.experiments.components import RunContext
>>> context = RunContext(components=COMPONENTS)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from adaptable.experiments.components import Components
from adaptable.framework.probability import softmax

#: how many source models each process trained, by (dataset, model, seed); tests read it
TRAIN_CALLS: dict[tuple[str, str, int], int] = {}


def load_dataset(name: str, data_dir: str | None = None) -> Any:
    """``toy`` (2 classes) or ``toy3`` (3 classes): synthetic tasks with label + covariate shift."""
    from adaptable.datasets import DataFileError, make_shift_dataset

    sizes = {"n_train": 300, "n_valid": 100, "n_test": 320}
    if name == "toy":
        return make_shift_dataset(**sizes, seed=0)
    if name == "toy3":
        return make_shift_dataset(**sizes, n_classes=3, seed=1)
    raise DataFileError(f"toy data set {name!r} is absent (only 'toy' and 'toy3' exist)")


def dataset_status(name: str, data_dir: str | None = None) -> str | None:
    """``None`` for ``toy`` / ``toy3``; a reason for anything else."""
    return None if name in ("toy", "toy3") else f"toy data set {name!r} is absent"


class SoftmaxRegression:
    """A multinomial logistic regression on the Encoder's features, fitted by gradient descent."""

    def __init__(self, dataset: Any, seed: int, steps: int = 200, lr: float = 0.5) -> None:
        from adaptable.datasets import fit_encoder

        self.encoder = fit_encoder(dataset)
        self.n_classes = dataset.n_classes
        x = self.encoder.transform(dataset.train.X).astype(np.float64)
        y = np.eye(self.n_classes)[dataset.train.y]
        rng = np.random.default_rng(seed)
        self.weight = rng.normal(0.0, 0.01, size=(x.shape[1], self.n_classes))
        self.bias = np.zeros(self.n_classes)
        for _ in range(steps):
            proba = softmax(x @ self.weight + self.bias)
            grad = (proba - y) / len(x)
            self.weight -= lr * x.T @ grad
            self.bias -= lr * grad.sum(axis=0)

    def predict_logits(self, X: pd.DataFrame) -> np.ndarray:
        """Logits, shape (n, C)."""
        return self.encoder.transform(X).astype(np.float64) @ self.weight + self.bias

    def predict_proba(self, X: pd.DataFrame) -> np.ndarray:
        """Class probabilities, shape (n, C)."""
        return softmax(self.predict_logits(X))


def train_model(
    name: str, dataset: Any, seed: int, cache_dir: str | None = None, device: str = "auto"
) -> Any:
    """``softmax``: a :class:`SoftmaxRegression`; counts calls in :data:`TRAIN_CALLS`."""
    if name != "softmax":
        raise KeyError(f"toy model {name!r} unknown; use 'softmax'")
    key = (dataset.name, name, seed)
    TRAIN_CALLS[key] = TRAIN_CALLS.get(key, 0) + 1
    return SoftmaxRegression(dataset, seed)


class ToySource:
    """No adaptation: the model's probabilities, optionally at a fixed ``temperature``.

    With ``calibrator="oracle_test_labels"`` it needs ``oracle_labels`` in ``predict_proba`` and
    mixes them into its output (like AdapTable's oracle study); otherwise passing labels raises,
    so tests can check that no other experiment ever sees them.
    """

    name = "source"

    def __init__(
        self,
        temperature: float = 1.0,
        delay: float = 0.0,
        calibrator: str = "none",
        preset: str = "paper",
    ) -> None:
        # ``calibrator`` and ``preset`` are accepted as AdapTable takes them, and do nothing.
        if temperature <= 0:
            raise ValueError(f"temperature must be positive; got {temperature}")
        self.temperature = temperature
        self.delay = delay
        self.calibrator = calibrator

    def fit(
        self, model: Any, X_source: Any, y_source: Any, X_valid: Any = None, y_valid: Any = None
    ) -> ToySource:
        """Keep the model; nothing to learn."""
        self.model = model
        return self

    def predict_proba(self, X_batch: Any, oracle_labels: np.ndarray | None = None) -> np.ndarray:
        """The model's probabilities at ``temperature`` (mixed with the labels for the oracle)."""
        if self.delay:
            import time

            time.sleep(self.delay)
        proba = softmax(self.model.predict_logits(X_batch) / self.temperature)
        if (oracle_labels is not None) != (self.calibrator == "oracle_test_labels"):
            raise ValueError("oracle_labels go with calibrator='oracle_test_labels' only")
        if oracle_labels is not None:
            proba = 0.5 * proba + 0.5 * np.eye(proba.shape[1])[oracle_labels]
        return proba

    def reset(self) -> None:
        """Nothing to forget."""
        pass


class ToyPriorShift(ToySource):
    """Online label-shift correction: re-weights by an exponential moving average of the batch
    prediction means over the source prior (a one-step EM), exposing ``state`` like AdapTable."""

    name = "prior"

    def __init__(self, alpha: float = 0.5, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must lie in [0, 1]; got {alpha}")
        self.alpha = alpha

    def fit(
        self, model: Any, X_source: Any, y_source: Any, X_valid: Any = None, y_valid: Any = None
    ) -> ToyPriorShift:
        """Record the source label frequencies."""
        super().fit(model, X_source, y_source)
        counts = np.bincount(np.asarray(y_source), minlength=model.n_classes)
        self.source_prior = counts / counts.sum()
        self.reset()
        return self

    def reset(self) -> None:
        """Back to a uniform target-prior estimate."""
        self.target_prior = np.full(len(self.source_prior), 1.0 / len(self.source_prior))
        self.last_temperatures = np.ones(0)

    @property
    def state(self) -> dict[str, np.ndarray]:
        """The estimated target prior and the last batch's per-row temperatures."""
        return {"target_prior": self.target_prior.copy(), "temperatures": self.last_temperatures}

    def predict_proba(self, X_batch: Any, oracle_labels: np.ndarray | None = None) -> np.ndarray:
        """Update the prior estimate on this batch and re-weight the probabilities."""
        proba = super().predict_proba(X_batch, oracle_labels)
        self.target_prior = (1 - self.alpha) * self.target_prior + self.alpha * proba.mean(axis=0)
        weighted = proba * self.target_prior / self.source_prior
        self.last_temperatures = 1.0 + proba.std(axis=1)
        return weighted / weighted.sum(axis=1, keepdims=True)


class ToyFailing(ToySource):
    """Raises in ``fit``, to test that a failing experiment does not end a sweep."""

    name = "fail"

    def fit(self, *args: Any, **kwargs: Any) -> ToyFailing:
        """Always raises ``RuntimeError``."""
        raise RuntimeError("this toy method always fails")


_METHODS = {"source": ToySource, "prior": ToyPriorShift, "fail": ToyFailing}


def create_method(name: str, **options: Any) -> Any:
    """``source``, ``prior`` or ``fail`` with their keyword options."""
    if name not in _METHODS:
        raise KeyError(f"toy method {name!r} unknown; use one of {sorted(_METHODS)}")
    return _METHODS[name](**options)


@dataclass
class ToyStream:
    """A test stream in a fixed order."""

    name: str
    X: pd.DataFrame
    y: np.ndarray

    def __len__(self) -> int:
        return len(self.y)

    def batches(self, batch_size: int = 64) -> Iterator[tuple[pd.DataFrame, np.ndarray]]:
        """Consecutive slices of ``batch_size`` rows (the last may be shorter)."""
        for start in range(0, len(self.y), batch_size):
            stop = start + batch_size
            yield self.X.iloc[start:stop], self.y[start:stop]


def apply_shift(name: str, dataset: Any, seed: int) -> ToyStream:
    """``natural``: the test split shuffled by ``seed``; ``sorted``: ordered by label."""
    if name == "natural":
        order = np.random.default_rng(seed).permutation(len(dataset.test.y))
    elif name == "sorted":
        order = np.argsort(dataset.test.y, kind="stable")
    else:
        raise KeyError(f"toy shift {name!r} unknown; use 'natural' or 'sorted'")
    X = dataset.test.X.iloc[order].reset_index(drop=True)
    return ToyStream(name, X, dataset.test.y[order])


def known_names(kind: str) -> list[str]:
    """What the toy providers accept; the paper's datasets are known (so that tables can name
    them) but absent."""
    from adaptable.datasets import TASKS

    return {
        "dataset": ["toy", "toy3", *TASKS],
        "model": ["softmax"],
        "method": sorted(_METHODS),
        "scenario": ["natural", "sorted"],
    }[kind]


COMPONENTS = Components(
    load_dataset=load_dataset,
    dataset_status=dataset_status,
    train_model=train_model,
    create_method=create_method,
    apply_shift=apply_shift,
    known_names=known_names,
)

"""A model whose ``predict_proba`` gives no probabilities is refused, not clipped into some."""

from __future__ import annotations

import numpy as np
import pytest

from adaptable import methods

RNG = np.random.default_rng(0)
X = RNG.normal(size=(200, 2))
Y = (X[:, 0] > 0).astype(int)
OUTPUT_METHODS = ["source", "em", "bbse", "balanced", "fth"]


class FixedOutputs:
    """A classifier whose ``predict_proba`` is ``proba_of(X)`` (any table, valid or not)."""

    classes_ = np.array([0, 1])

    def __init__(self, proba_of):
        self.proba_of = proba_of

    def predict_proba(self, X):
        return self.proba_of(np.asarray(X))


def _sigmoid_rows(X: np.ndarray) -> np.ndarray:
    p = 1.0 / (1.0 + np.exp(-3.0 * X[:, 0]))
    return np.stack([1.0 - p, p], axis=1)


def _fit_and_predict(name: str, model: FixedOutputs) -> np.ndarray:
    method = methods.create(name)
    method.fit(model, X[:100], Y[:100], X[100:150], Y[100:150])
    return method.predict_proba(X[150:])


@pytest.mark.parametrize("name", OUTPUT_METHODS)
def test_valid_probabilities_are_used_zeros_included(name: str) -> None:
    def with_zeros(X: np.ndarray) -> np.ndarray:
        proba = _sigmoid_rows(X)
        proba[::7] = [1.0, 0.0]  # a zero probability is a probability
        return proba

    proba = _fit_and_predict(name, FixedOutputs(with_zeros))
    assert proba.shape == (50, 2) and np.all(np.isfinite(proba))


@pytest.mark.parametrize("name", OUTPUT_METHODS)
@pytest.mark.parametrize(
    "broken, problem",
    [
        (lambda X: _sigmoid_rows(X) * 1.5 - 0.25, "negative"),  # rows sum to one, some < 0
        (lambda X: _sigmoid_rows(X) * 0.5, "sum to one"),  # all in [0, 1], rows sum to 0.5
        (lambda X: np.exp(_sigmoid_rows(X)), "sum to one"),  # scores, not probabilities
    ],
)
def test_a_table_that_is_not_probabilities_is_refused(name: str, broken, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        _fit_and_predict(name, FixedOutputs(broken))

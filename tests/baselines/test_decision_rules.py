"""The stateless decision rules `balanced` and `oracle_prior`: hand-computed outputs, errors, and
how the runner gives the oracle its labels (and nobody else)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError

from adaptable import methods
from adaptable.experiments import testing
from adaptable.experiments.components import Components, RunContext, _create_method, source_model
from adaptable.experiments.experiment import run_experiment
from adaptable.experiments.metrics import classification_metrics
from adaptable.experiments.spec import ExperimentSpec


class FixedLogits:
    """A 'model' whose logits are the input columns (so tests choose the logits)."""

    def predict_logits(self, X: object) -> np.ndarray:
        return np.asarray(X, dtype=np.float64)


LOGITS = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, np.log(2.0)]])
Y_SOURCE = np.array([0, 0, 0, 1])  # p_s = (0.75, 0.25)


def test_balanced_divides_by_the_source_prior() -> None:
    rule = methods.create("balanced").fit(FixedLogits(), None, Y_SOURCE)
    np.testing.assert_allclose(rule.source_prior_, [0.75, 0.25])
    proba = rule.predict_proba(LOGITS)
    # Row 0: softmax (1/2, 1/2) / p_s -> (2/3, 2) -> (0.25, 0.75).
    # Row 1: (e, 1) / p_s -> (4e/3, 4) -> e/(e + 3); row 2: (1/3, 2/3) / p_s -> (1/7, 6/7).
    e = np.e
    expected = np.array([[0.25, 0.75], [e / (e + 3), 3 / (e + 3)], [1 / 7, 6 / 7]])
    np.testing.assert_allclose(proba, expected, rtol=1e-12)
    np.testing.assert_array_equal(rule.predict(LOGITS), [1, 1, 1])
    # Stateless: the same batch twice, and after reset, gives the same answer.
    np.testing.assert_array_equal(rule.predict_proba(LOGITS), proba)
    rule.reset()
    np.testing.assert_array_equal(rule.predict_proba(LOGITS), proba)


def test_balanced_uses_train_and_valid_labels() -> None:
    rule = methods.create("balanced").fit(FixedLogits(), None, Y_SOURCE, None, np.array([1, 1]))
    np.testing.assert_allclose(rule.source_prior_, [0.5, 0.5])
    share = np.e / (np.e + 1)  # a uniform p_s changes nothing: softmax of (1, 0)
    np.testing.assert_allclose(rule.predict_proba(LOGITS)[1], [share, 1 - share])


def test_oracle_corrects_with_the_stream_prior() -> None:
    oracle = methods.create("oracle_prior").fit(FixedLogits(), None, Y_SOURCE)
    assert oracle.needs_test_labels
    oracle.receive_test_labels(np.array([1, 1, 1, 0]))  # q = (0.25, 0.75): q / p_s = (1/3, 3)
    proba = oracle.predict_proba(LOGITS)
    np.testing.assert_allclose(proba[0], [0.1, 0.9], rtol=1e-12)
    np.testing.assert_allclose(proba[2], [1 / 19, 18 / 19], rtol=1e-12)
    np.testing.assert_allclose(oracle.state["target_prior"], [0.25, 0.75])
    # q = p_s leaves the source posteriors unchanged.
    oracle.receive_test_labels(Y_SOURCE)
    np.testing.assert_allclose(oracle.predict_proba(LOGITS)[1], [np.e / (np.e + 1), 1 / (np.e + 1)])


def test_errors_are_clear() -> None:
    with pytest.raises(ValueError, match="source labels"):
        methods.create("balanced").fit(FixedLogits())
    oracle = methods.create("oracle_prior").fit(FixedLogits(), None, Y_SOURCE)
    with pytest.raises(RuntimeError, match="receive_test_labels"):
        oracle.predict_proba(LOGITS)
    with pytest.raises(ValueError, match=r"unseen at fit \[2\]"):
        oracle.receive_test_labels(np.array([0, 2]))
    rule = methods.create("balanced").fit(FixedLogits(), None, Y_SOURCE)
    with pytest.raises(ValueError, match="3 classes"):
        rule.predict_proba(np.zeros((2, 3)))
    with pytest.raises(NotFittedError, match="fit"):
        methods.create("balanced").predict_proba(LOGITS)


def test_balanced_works_for_gbdts_and_frames() -> None:
    import xgboost

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=200), "b": rng.normal(size=200)})
    y = (X["a"] + 0.5 * rng.normal(size=200) > 0.8).astype(np.int64).to_numpy()
    model = xgboost.XGBClassifier(n_estimators=10, max_depth=2).fit(X, y)
    rule = methods.create("balanced").fit(model, X, y)
    proba = rule.predict_proba(X.iloc[:64])
    margin = model.predict(X.iloc[:64], output_margin=True)
    p_s = np.bincount(y) / len(y)
    odds = np.exp(margin) * p_s[0] / p_s[1]  # the balanced rule's odds of class 1
    np.testing.assert_allclose(proba[:, 1], odds / (1 + odds), rtol=1e-5)


# --------------------------------------------------------------------------- through the runner

#: toy data and model, the package's real methods
REAL_METHODS = Components(
    load_dataset=testing.load_dataset,
    dataset_status=testing.dataset_status,
    train_model=testing.train_model,
    create_method=_create_method,
    apply_shift=testing.apply_shift,
)
CONTEXT = RunContext(components=REAL_METHODS)


def _expected_metrics(spec: ExperimentSpec, weights_from_labels: bool) -> dict[str, float]:
    dataset = testing.load_dataset(spec.dataset)
    model = source_model(spec.dataset, spec.model, spec.seed, CONTEXT)
    stream = testing.apply_shift(spec.scenario, dataset, spec.seed)
    proba = model.predict_proba(stream.X)
    prior = dataset.source_prior()
    target = np.bincount(stream.y, minlength=dataset.n_classes) / len(stream.y)
    weighted = proba * ((target if weights_from_labels else 1.0) / prior)
    return classification_metrics(stream.y, weighted / weighted.sum(axis=1, keepdims=True))


@pytest.mark.parametrize("name, oracle", [("balanced", False), ("oracle_prior", True)])
def test_runner_gives_only_the_oracle_the_stream_labels(name: str, oracle: bool) -> None:
    spec = ExperimentSpec("toy3", "sorted", "softmax", name, 0)
    record = run_experiment(spec, CONTEXT)
    assert record["uses_test_labels"] is oracle
    expected = _expected_metrics(spec, oracle)
    for metric, value in expected.items():
        assert record["metrics"][metric] == pytest.approx(value, abs=1e-6), metric
    if oracle:  # the whole stream's prior from the first batch on (the stream is label-sorted)
        assert record["traces"]["estimate"][0] == pytest.approx(record["target_prior"], abs=1e-4)
    else:
        assert record["traces"]["estimate"] == [None] * len(record["traces"]["size"])

"""as_logit_function: every supported model kind gives (n, C) logits."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.linear_model import LogisticRegression

from adaptable.core import as_logit_function, softmax


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3)).astype(np.float32)
    y = (X[:, 0] + 0.3 * rng.normal(size=80) > 0).astype(np.int64)
    return X, y


def test_torch_module_on_array_and_dataframe(data) -> None:
    X, _ = data
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Dropout(0.5), torch.nn.Linear(4, 2))
    net.train()
    f = as_logit_function(net)
    a, b = f(X), f(pd.DataFrame(X))
    assert a.shape == (80, 2)
    np.testing.assert_array_equal(a, b)  # eval mode: dropout off, so repeatable
    np.testing.assert_allclose(a, net.eval()(torch.as_tensor(X)).detach().numpy(), rtol=1e-6)


def test_torch_module_rejects_non_numeric_frame() -> None:
    net = torch.nn.Linear(1, 2)
    with pytest.raises(TypeError, match="float tensor made from X"):
        as_logit_function(net)(pd.DataFrame({"c": ["a", "b"]}))


def test_predict_logits_takes_precedence() -> None:
    class Model:
        def predict_logits(self, X):
            return np.ones((len(X), 3))

        def predict_proba(self, X):
            raise AssertionError("predict_proba must not be called")

    np.testing.assert_array_equal(as_logit_function(Model())(np.zeros((2, 1))), np.ones((2, 3)))


def test_sklearn_gives_log_probabilities(data) -> None:
    X, y = data
    model = LogisticRegression().fit(X, y)
    logits = as_logit_function(model)(X)
    np.testing.assert_allclose(softmax(logits), model.predict_proba(X), rtol=1e-6)


def test_xgboost_gives_raw_margins(data) -> None:
    xgboost = pytest.importorskip("xgboost")
    X, y = data
    model = xgboost.XGBClassifier(n_estimators=5, max_depth=2, n_jobs=1).fit(X, y)
    logits = as_logit_function(model)(X)
    margin = model.predict(X, output_margin=True)
    np.testing.assert_allclose(logits[:, 1] - logits[:, 0], margin, rtol=1e-6)
    np.testing.assert_allclose(softmax(logits), model.predict_proba(X), rtol=1e-5)
    proba_logits = as_logit_function(model, output="proba")(X)
    np.testing.assert_allclose(np.exp(proba_logits), model.predict_proba(X), rtol=1e-6)


def test_callable_needs_output_argument() -> None:
    def f(X):
        return np.full((len(X), 2), 0.5)

    with pytest.raises(ValueError, match="output='logits'"):
        as_logit_function(f)
    np.testing.assert_allclose(as_logit_function(f, output="proba")(np.zeros((2, 1))), np.log(0.5))
    np.testing.assert_allclose(as_logit_function(f, output="logits")(np.zeros((2, 1))), 0.5)


def test_bad_models_and_outputs() -> None:
    with pytest.raises(TypeError, match="predict_proba"):
        as_logit_function(object())
    with pytest.raises(ValueError, match="output"):
        as_logit_function(lambda X: X, output="scores")
    with pytest.raises(ValueError, match="C >= 2"):
        as_logit_function(lambda X: np.zeros(len(X)), output="logits")(np.zeros((3, 1)))
    with pytest.raises(ValueError, match="non-finite"):
        as_logit_function(lambda X: np.full((1, 2), np.nan), output="logits")(np.zeros((1, 1)))


def test_string_classes_keep_the_models_column_order(data) -> None:
    X, y = data
    labels = np.where(y == 1, "yes", "no")
    model = LogisticRegression().fit(X, labels)
    logits = as_logit_function(model)(X)
    np.testing.assert_allclose(softmax(logits), model.predict_proba(X), rtol=1e-6)


class _Softmax(torch.nn.Module):
    """A module that returns probabilities (and, like some, a tuple)."""

    def __init__(self, tuple_out: bool = False) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(3, 3)
        self.tuple_out = tuple_out

    def forward(self, x):
        proba = torch.softmax(self.linear(x), dim=1)
        return (proba, x) if self.tuple_out else proba


def test_torch_module_giving_probabilities_tuples_and_its_mode(data) -> None:
    X, _ = data
    torch.manual_seed(1)
    net = _Softmax().train()
    expected = net.eval()(torch.as_tensor(X)).detach().double().numpy()
    net.train()
    logits = as_logit_function(net, output="proba")(X)
    np.testing.assert_allclose(logits, np.log(expected), rtol=1e-6)
    assert net.training  # the caller's mode is given back
    raw = as_logit_function(net, output="logits")(torch.as_tensor(X, dtype=torch.float64))
    np.testing.assert_allclose(raw, expected, rtol=1e-6)  # taken as they are
    assert raw.dtype == np.float64
    tupled = _Softmax(tuple_out=True)
    tupled.load_state_dict(net.state_dict())
    np.testing.assert_allclose(as_logit_function(tupled)(X), expected, rtol=1e-6)
    with pytest.raises(ValueError, match=r"model \(torch module\) must give an \(n, C\)"):
        as_logit_function(torch.nn.Linear(3, 1).eval())(X[:, :3])  # (n, 1): one class


def test_output_proba_forces_predict_proba_over_predict_logits() -> None:
    class Model:
        def predict_logits(self, X):
            raise AssertionError("predict_logits must not be called with output='proba'")

        def predict_proba(self, X):
            return np.tile([0.25, 0.75], (len(X), 1))

    logits = as_logit_function(Model(), output="proba")(np.zeros((2, 1)))
    np.testing.assert_allclose(logits, np.log([[0.25, 0.75]] * 2))


def test_lightgbm_and_catboost_give_raw_margins(data) -> None:
    X, y = data
    lightgbm = pytest.importorskip("lightgbm")
    model = lightgbm.LGBMClassifier(n_estimators=5, verbose=-1).fit(X, y)
    logits = as_logit_function(model)(X)
    np.testing.assert_allclose(logits[:, 1] - logits[:, 0], model.predict(X, raw_score=True))
    np.testing.assert_allclose(softmax(logits), model.predict_proba(X), rtol=1e-6)
    catboost = pytest.importorskip("catboost")
    model = catboost.CatBoostClassifier(
        iterations=5, verbose=0, thread_count=1, allow_writing_files=False
    ).fit(X, y)
    logits = as_logit_function(model)(X)
    raw = model.predict(X, prediction_type="RawFormulaVal")
    np.testing.assert_allclose(logits[:, 1] - logits[:, 0], raw, rtol=1e-6)
    np.testing.assert_allclose(softmax(logits), model.predict_proba(X), rtol=1e-6)


def test_multiclass_xgboost_margins_are_per_class(data) -> None:
    xgboost = pytest.importorskip("xgboost")
    X, _ = data
    y = np.digitize(X[:, 0], [-0.5, 0.5])
    model = xgboost.XGBClassifier(n_estimators=5, max_depth=2, n_jobs=1).fit(X, y)
    logits = as_logit_function(model)(X)
    assert logits.shape == (80, 3)
    np.testing.assert_allclose(logits, model.predict(X, output_margin=True), rtol=1e-6)
    np.testing.assert_allclose(softmax(logits), model.predict_proba(X), rtol=1e-5)


def _probability_readers(table: np.ndarray) -> dict[str, object]:
    """Every reader that takes a model's output as probabilities, each giving ``table``."""

    class Proba:
        def predict_proba(self, X):
            return table[: len(X)]

    class Module(torch.nn.Module):
        def forward(self, X):
            return torch.as_tensor(table[: len(X)])

    return {
        "predict_proba": as_logit_function(Proba()),
        "torch_proba": as_logit_function(Module(), output="proba"),
        "callable_proba": as_logit_function(lambda X: table[: len(X)], output="proba"),
    }


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        (np.array([[1.2, -0.2], [0.5, 0.5]]), "negative probabilities .smallest -0.2"),
        (np.array([[0.25, 0.25], [0.5, 0.5]]), "1 of 2 rows; sums from 0.5 to 1"),
        (np.array([[2.0, 3.0], [1.0, 4.0]]), "2 of 2 rows; sums from 5 to 5"),
    ],
)
def test_a_table_that_is_not_probabilities_is_refused_not_clipped(table, problem) -> None:
    for reader, logit_function in _probability_readers(table).items():
        with pytest.raises(ValueError, match=problem) as info:
            logit_function(np.zeros((2, 1)))
        assert "output='logits'" in str(info.value), reader


def test_probabilities_with_zeros_and_float32_rounding_are_accepted() -> None:
    table = np.array([[1.0, 0.0], [0.3, 0.7]], dtype=np.float32)
    for logit_function in _probability_readers(table).values():
        logits = logit_function(np.zeros((2, 1)))
        assert np.all(np.isfinite(logits))
        np.testing.assert_allclose(softmax(logits), table, atol=1e-6)


def test_adaptable_refuses_a_model_whose_probabilities_are_not(data) -> None:
    from adaptable import AdapTable

    X, y = data

    def scores(rows):
        return np.exp(np.c_[rows[:, 0], -rows[:, 0]])  # positive scores, rows not summing to 1

    with pytest.raises(ValueError, match="do not sum to one"):
        AdapTable(preset="paper", calibrator="none", output="proba").fit(scores, X, y)

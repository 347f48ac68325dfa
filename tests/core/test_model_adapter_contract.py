"""as_logit_function's contract in detail: each path's values, dtypes, devices and messages.

Boosters are stood in for by small fakes whose class says it comes from ``lightgbm`` /
``catboost`` (the adapter detects them by module name), so these tests need neither library.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import torch

from adaptable.core import as_logit_function

X3 = np.array([[0.0, 1.0, 2.0], [3.0, -1.0, 0.5], [1.5, 2.5, -2.0], [0.0, 0.0, 0.0]])


def _exact(message: str) -> str:
    return "^" + re.escape(message) + "$"


def _shape_message(source: str, shape: tuple[int, ...]) -> str:
    return _exact(f"The model ({source}) must give an (n, C) array with C >= 2; got shape {shape}.")


def _finite_message(source: str) -> str:
    return _exact(
        f"The model ({source}) returned non-finite logits (NaN or inf); check the batch for "
        "missing or infinite values the model cannot handle."
    )


# ---------------------------------------------------------------------------- torch
class _Softmax(torch.nn.Module):
    """A linear layer followed by softmax: a module that gives probabilities."""

    def __init__(self, n_out: int = 3) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.linear = torch.nn.Linear(3, n_out)

    def forward(self, x):
        return torch.softmax(self.linear(x), dim=1)


class _Recorder(torch.nn.Module):
    """Records the input it gets; gives fixed CPU logits (works whatever the input's device)."""

    def __init__(self, device: str | None = None) -> None:
        super().__init__()
        if device is not None:
            self.weight = torch.nn.Parameter(torch.zeros(1, device=device))
        self.seen: list[tuple[str, torch.dtype]] = []

    def forward(self, x):
        self.seen.append((x.device.type, x.dtype))
        return torch.tensor([[0.0, 1.0]]).repeat(x.shape[0], 1)


def test_torch_module_giving_probabilities_with_output_proba() -> None:
    net = _Softmax()
    expected = net(torch.as_tensor(X3, dtype=torch.float32)).detach().double().numpy()
    logits = as_logit_function(net, output="proba")(X3)
    assert logits.dtype == np.float64
    np.testing.assert_allclose(logits, np.log(expected), rtol=1e-6)
    raw = as_logit_function(net, output="logits")(X3)
    np.testing.assert_allclose(raw, expected, rtol=1e-6)


def test_torch_module_one_column_is_rejected_naming_the_torch_module() -> None:
    torch.manual_seed(0)
    net = torch.nn.Linear(3, 1)
    for output in ("auto", "logits", "proba"):
        f = as_logit_function(net, output=output)
        with pytest.raises(ValueError, match=_shape_message("torch module", (4, 1))):
            f(X3)


def test_torch_module_proba_non_finite_names_the_torch_module() -> None:
    class Nan(torch.nn.Module):
        def forward(self, x):
            return torch.full((x.shape[0], 2), float("nan"))

    with pytest.raises(ValueError, match=_finite_message("torch module")):
        as_logit_function(Nan(), output="proba")(X3)


def test_parameterless_module_runs_on_cpu() -> None:
    logits = as_logit_function(torch.nn.Softmax(dim=1), output="proba")(X3)
    shifted = X3 - X3.max(axis=1, keepdims=True)
    expected = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(logits, expected, atol=1e-6)
    recorder = _Recorder()
    np.testing.assert_array_equal(as_logit_function(recorder)(X3), [[0.0, 1.0]] * 4)
    assert recorder.seen == [("cpu", torch.float32)]


def test_batch_goes_to_the_device_of_the_modules_parameters() -> None:
    recorder = _Recorder(device="meta")
    logits = as_logit_function(recorder)(X3)
    assert recorder.seen == [("meta", torch.float32)]
    np.testing.assert_array_equal(logits, [[0.0, 1.0]] * 4)


XI = X3.astype(np.int64)


@pytest.mark.parametrize(
    ("X", "values"),
    [
        (X3, X3),  # float64 array
        (XI, XI),
        (X3.tolist(), X3),
        (pd.DataFrame(X3), X3),  # float64 frame
        (pd.DataFrame(XI), XI),
        (torch.as_tensor(X3), X3),  # float64 tensor
    ],
    ids=["float64-array", "int-array", "list", "float64-frame", "int-frame", "float64-tensor"],
)
def test_torch_module_gets_float32_from_any_numeric_input(X, values) -> None:
    recorder = _Recorder()
    as_logit_function(recorder)(X)
    assert recorder.seen == [("cpu", torch.float32)]
    torch.manual_seed(0)
    net = torch.nn.Linear(3, 2)  # float32 weights: a float64 input would not multiply
    expected = net(torch.as_tensor(values, dtype=torch.float32)).detach().double().numpy()
    logits = as_logit_function(net)(X)
    assert logits.dtype == np.float64
    np.testing.assert_allclose(logits, expected, rtol=1e-6)


class _FrameLike:
    """A table that converts itself through to_numpy(dtype=...) only (no __array__)."""

    def __init__(self, values: np.ndarray) -> None:
        self.values = values
        self.dtypes: list[object] = []

    def to_numpy(self, dtype=None) -> np.ndarray:
        self.dtypes.append(dtype)
        return np.asarray(self.values, dtype=dtype)

    def __len__(self) -> int:
        return len(self.values)


def test_torch_module_converts_tables_with_to_numpy_as_float32() -> None:
    frame = _FrameLike(X3)
    recorder = _Recorder()
    as_logit_function(recorder)(frame)
    assert frame.dtypes == [np.float32]
    assert recorder.seen == [("cpu", torch.float32)]


def test_torch_module_on_unconvertible_input_says_what_to_do() -> None:
    message = (
        "^"
        + re.escape(
            "A torch module is called on a float tensor made from X, but X could not be converted ("
        )
        + r"could not convert string to float: .*'a'.*"
        + re.escape(
            "). Encode categorical columns first, or pass an object with predict_logits / "
            "predict_proba that does its own preprocessing."
        )
        + "$"
    )
    f = as_logit_function(torch.nn.Linear(1, 2))
    with pytest.raises(TypeError, match=message):
        f(pd.DataFrame({"c": ["a", "b"]}))
    with pytest.raises(TypeError, match=message):
        f(np.array([["a"], ["b"]]))


def test_torch_module_mode_is_given_back_even_when_forward_fails() -> None:
    class Broken(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(3, 2)

        def forward(self, x):
            assert not self.training
            raise RuntimeError("boom")

    net = Broken().train()
    with pytest.raises(RuntimeError, match="boom"):
        as_logit_function(net)(X3)
    assert net.training


# ----------------------------------------------------------------- predict_logits
class _Logits:
    def __init__(self, out) -> None:
        self.out = out

    def predict_logits(self, X):
        return self.out(X)


def test_predict_logits_float32_tensor_becomes_float64_array() -> None:
    values = torch.tensor([[0.1, 0.7], [0.3, -0.2]], dtype=torch.float32)
    logits = as_logit_function(_Logits(lambda X: values))(X3[:2])
    assert isinstance(logits, np.ndarray)
    assert logits.dtype == np.float64
    np.testing.assert_array_equal(logits, values.double().numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16])
def test_predict_logits_arrays_become_float64(dtype) -> None:
    values = np.array([[1, 2], [3, 4]], dtype=dtype)
    logits = as_logit_function(_Logits(lambda X: values))(X3[:2])
    assert logits.dtype == np.float64
    np.testing.assert_array_equal(logits, values.astype(np.float64))


def test_predict_logits_list_output_becomes_float64() -> None:
    logits = as_logit_function(_Logits(lambda X: [[1, 2]] * len(X)))(X3)
    assert logits.dtype == np.float64
    np.testing.assert_array_equal(logits, [[1.0, 2.0]] * 4)


def test_predict_logits_bad_shape_and_non_finite_name_predict_logits() -> None:
    with pytest.raises(ValueError, match=_shape_message("predict_logits", (4,))):
        as_logit_function(_Logits(lambda X: np.zeros(len(X))))(X3)
    with pytest.raises(ValueError, match=_finite_message("predict_logits")):
        as_logit_function(_Logits(lambda X: np.full((len(X), 2), np.inf)))(X3)


def test_output_proba_uses_predict_proba_even_with_predict_logits() -> None:
    class Both(_Logits):
        def predict_proba(self, X):
            return np.tile([0.2, 0.8], (len(X), 1))

    model = Both(lambda X: np.tile([5.0, 6.0], (len(X), 1)))
    np.testing.assert_allclose(
        as_logit_function(model, output="proba")(X3), np.log([[0.2, 0.8]] * 4)
    )
    np.testing.assert_array_equal(as_logit_function(model)(X3), [[5.0, 6.0]] * 4)
    np.testing.assert_array_equal(as_logit_function(model, output="logits")(X3), [[5.0, 6.0]] * 4)


# ------------------------------------------------------------------ predict_proba
class _Proba:
    def __init__(self, proba) -> None:
        self.proba = proba

    def predict_proba(self, X):
        return self.proba(X)


def test_predict_proba_zero_probability_gives_a_finite_floor() -> None:
    logits = as_logit_function(_Proba(lambda X: np.array([[0.0, 1.0], [0.5, 0.5]])))(X3[:2])
    assert np.all(np.isfinite(logits))
    np.testing.assert_allclose(logits, [[np.log(1e-12), 0.0], [np.log(0.5), np.log(0.5)]])


def test_predict_proba_bad_shape_and_non_finite_name_predict_proba() -> None:
    with pytest.raises(ValueError, match=_shape_message("predict_proba", (4, 1))):
        as_logit_function(_Proba(lambda X: np.ones((len(X), 1))))(X3)
    with pytest.raises(ValueError, match=_finite_message("predict_proba")):
        as_logit_function(_Proba(lambda X: np.full((len(X), 2), np.nan)))(X3)


# ---------------------------------------------------------- boosters' raw margins
def _margin(X) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    return X[:, 0] - X[:, 1]


class _BoosterBase:
    """predict_proba is the sigmoid of the margin, so log-probabilities differ from margins."""

    def __init__(self, margin=_margin) -> None:
        self.margin = margin
        self.calls: list[dict] = []

    def predict_proba(self, X):
        p = 1.0 / (1.0 + np.exp(-self.margin(X)))
        return np.stack([1.0 - p, p], axis=1)


class LGBMClassifier(_BoosterBase):
    """Stands in for lightgbm.LGBMClassifier: predict(X, raw_score=True) gives the margin."""

    __module__ = "lightgbm.sklearn"

    def predict(self, X, raw_score=False):
        self.calls.append({"raw_score": raw_score})
        margin = self.margin(X)
        return margin if raw_score else (margin > 0).astype(np.int64)


class CatBoostClassifier(_BoosterBase):
    """Stands in for catboost: predict(X, prediction_type="RawFormulaVal") gives the margin."""

    __module__ = "catboost.core"

    def predict(self, X, prediction_type="Class"):
        self.calls.append({"prediction_type": prediction_type})
        margin = self.margin(X)
        if prediction_type == "RawFormulaVal":
            return margin
        if prediction_type == "Class":
            return (margin > 0).astype(np.int64)
        raise ValueError(f"unknown prediction_type {prediction_type!r}")


@pytest.mark.parametrize(
    ("booster", "call"),
    [
        (LGBMClassifier, {"raw_score": True}),
        (CatBoostClassifier, {"prediction_type": "RawFormulaVal"}),
    ],
)
def test_boosters_give_their_raw_margin_as_binary_logits(booster, call) -> None:
    model = booster()
    logits = as_logit_function(model)(X3)
    assert model.calls == [call]
    margin = _margin(X3)
    np.testing.assert_array_equal(logits, np.stack([np.zeros(4), margin], axis=1))
    # the same probabilities as the model's own
    proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(proba, model.predict_proba(X3), rtol=1e-12)


@pytest.mark.parametrize("booster", [LGBMClassifier, CatBoostClassifier])
def test_boosters_multiclass_margins_are_taken_as_they_are(booster) -> None:
    margins = np.array([[0.5, -1.0, 2.0], [1.0, 1.0, 0.0]])
    model = booster(margin=lambda X: margins)
    np.testing.assert_array_equal(as_logit_function(model)(X3[:2]), margins)


@pytest.mark.parametrize("booster", [LGBMClassifier, CatBoostClassifier])
def test_boosters_with_output_proba_give_log_probabilities(booster) -> None:
    model = booster()
    logits = as_logit_function(model, output="proba")(X3)
    assert model.calls == []
    np.testing.assert_allclose(logits, np.log(model.predict_proba(X3)))


@pytest.mark.parametrize("booster", [LGBMClassifier, CatBoostClassifier])
def test_boosters_non_finite_margin_names_the_model_class(booster) -> None:
    model = booster(margin=lambda X: np.full(len(X), np.nan))
    with pytest.raises(ValueError, match=_finite_message(f"{booster.__name__} raw margin")):
        as_logit_function(model)(X3)


def test_other_libraries_predict_proba_is_used_not_predict() -> None:
    class Other(_BoosterBase):
        __module__ = "somelib.models"

        def predict(self, X, **kwargs):
            raise AssertionError("predict must not be called")

    model = Other()
    np.testing.assert_allclose(as_logit_function(model)(X3), np.log(model.predict_proba(X3)))


# ----------------------------------------------------------------- plain callables
def test_plain_callable_without_output_says_what_to_pass() -> None:
    message = "A plain callable needs output='logits' or output='proba' to say what it returns."
    with pytest.raises(ValueError, match=_exact(message)):
        as_logit_function(lambda X: X)


@pytest.mark.parametrize("output", ["logits", "proba"])
def test_plain_callable_errors_name_the_callable(output) -> None:
    with pytest.raises(ValueError, match=_shape_message("callable", (4, 1))):
        as_logit_function(lambda X: np.ones((len(X), 1)), output=output)(X3)
    with pytest.raises(ValueError, match=_finite_message("callable")):
        as_logit_function(lambda X: np.full((len(X), 2), np.nan), output=output)(X3)


def test_plain_callable_values() -> None:
    def f(X):
        return np.tile([0.0, 0.25, 0.75], (len(X), 1)).astype(np.float32)

    logits = as_logit_function(f, output="logits")(X3)
    assert logits.dtype == np.float64
    np.testing.assert_array_equal(logits, [[0.0, 0.25, 0.75]] * 4)
    np.testing.assert_allclose(
        as_logit_function(f, output="proba")(X3), np.log([[1e-12, 0.25, 0.75]] * 4)
    )


def test_unknown_model_and_output_messages() -> None:
    class NotAModel:
        pass

    message = (
        "model must be a torch.nn.Module, an object with predict_logits or predict_proba, or a "
        "callable; got NotAModel."
    )
    with pytest.raises(TypeError, match=_exact(message)):
        as_logit_function(NotAModel())
    with pytest.raises(TypeError, match=re.escape("got int.")):
        as_logit_function(3, output="logits")
    with pytest.raises(
        ValueError, match=_exact("output must be one of ('auto', 'logits', 'proba'); got 'scores'.")
    ):
        as_logit_function(lambda X: X, output="scores")


# ------------------------------------------------------------------ CUDA (GPU only)
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@cuda
def test_cuda_module_gives_a_cpu_float64_array() -> None:
    net = _Softmax().to("cuda")
    logits = as_logit_function(net)(X3)
    assert isinstance(logits, np.ndarray) and logits.dtype == np.float64
    expected = net.cpu()(torch.as_tensor(X3, dtype=torch.float32)).detach().double().numpy()
    np.testing.assert_allclose(logits, expected, rtol=1e-5)


@cuda
def test_cuda_input_to_a_parameterless_module_runs_on_cpu() -> None:
    recorder = _Recorder()
    as_logit_function(recorder)(torch.as_tensor(X3, device="cuda"))
    assert recorder.seen == [("cpu", torch.float32)]


@cuda
def test_predict_logits_cuda_tensor_becomes_a_cpu_float64_array() -> None:
    values = torch.tensor([[0.1, 0.7]], dtype=torch.float32, device="cuda")
    logits = as_logit_function(_Logits(lambda X: values))(X3[:1])
    assert isinstance(logits, np.ndarray) and logits.dtype == np.float64
    np.testing.assert_allclose(logits, [[0.1, 0.7]], rtol=1e-6)

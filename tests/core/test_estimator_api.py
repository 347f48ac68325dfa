"""AdapTable as a scikit-learn estimator: parameters, clone, repr, labels of any kind."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression

from adaptable import AdapTable, datasets
from adaptable.core import InvalidParameterError

FAST = {"epochs": 2, "patience": 1, "random_state": 0, "preset": "paper"}


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"alpha": "abc"}, "alpha"),
        ({"alpha": 1.5}, "alpha"),
        ({"alpha": True}, "alpha"),
        ({"batch_size": 2.5}, "batch_size"),
        ({"batch_size": 0}, "batch_size"),
        ({"max_temperature": math.nan}, "max_temperature"),
        ({"temperature": -1.0}, "temperature"),
        ({"temperature": math.inf}, "temperature"),
        ({"lr": 0.0}, "lr"),
        ({"epochs": "10"}, "epochs"),
        ({"graphs_per_step": 0}, "graphs_per_step"),
        ({"calibrator": "magic"}, "calibrator"),
        ({"adjacency": "star"}, "adjacency"),
        ({"output": "scores"}, "output"),
        ({"numerical": "num_0"}, "numerical"),
        ({"random_state": -1}, "random_state"),
        ({"verbose": "yes"}, "verbose"),
        ({"progress": 3}, "progress"),
        ({"q_low": 0.8, "q_high": 0.2}, "q_low"),
    ],
)
def test_bad_parameters_are_refused_naming_them(params, name) -> None:
    with pytest.raises(InvalidParameterError, match=name) as info:
        AdapTable(**params)
    # Both kinds of caller catch it: a wrong value and a wrong type.
    assert isinstance(info.value, ValueError) and isinstance(info.value, TypeError)
    method = AdapTable()
    with pytest.raises(InvalidParameterError, match=name):
        method.set_params(**params)
    assert method.get_params() == AdapTable().get_params()  # nothing changed on refusal


def test_constructor_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        AdapTable(0.2)  # type: ignore[misc]


def test_fit_checks_parameters_set_behind_its_back(synthetic) -> None:
    method = AdapTable(preset="paper", calibrator="none")
    method.alpha = "abc"
    with pytest.raises(InvalidParameterError, match="alpha"):
        method.fit(LogisticRegression(), synthetic.train.X, synthetic.train.y)


def test_clone_get_params_set_params_and_repr() -> None:
    method = AdapTable(
        preset="paper", alpha=0.2, calibrator="none", numerical=["a"], progress=print
    )
    copy = clone(method)
    assert copy is not method and copy.get_params() == method.get_params()
    assert set(method.get_params(deep=True)) == set(method.get_params(deep=False))
    assert method.set_params(alpha=0.3, q_high=0.9) is method
    assert (method.alpha, method.q_high) == (0.3, 0.9)
    assert repr(AdapTable()) == "AdapTable()"
    assert repr(AdapTable(alpha=0.3)) == "AdapTable(alpha=0.3)"
    with pytest.raises(ValueError, match="Invalid parameter"):
        method.set_params(not_a_parameter=1)


def test_clone_of_a_fitted_method_is_unfitted_and_refits_identically(synthetic) -> None:
    X = synthetic.train.X[synthetic.numerical].to_numpy()
    model = LogisticRegression().fit(X, synthetic.train.y)
    fitted = AdapTable(**FAST).fit(model, X, synthetic.train.y)
    copy = clone(fitted)
    assert not hasattr(copy, "classes_")
    batch = synthetic.test.X[synthetic.numerical].to_numpy()[:64]
    copy.fit(model, X, synthetic.train.y)
    fitted.reset()
    np.testing.assert_array_equal(copy.predict_proba(batch), fitted.predict_proba(batch))


def test_predict_proba_advances_the_online_state(synthetic) -> None:
    X = synthetic.train.X[synthetic.numerical].to_numpy()
    model = LogisticRegression().fit(X, synthetic.train.y)
    method = AdapTable(preset="paper", calibrator="none").fit(model, X, synthetic.train.y)
    batch = synthetic.test.X[synthetic.numerical].to_numpy()[:64]
    first, second = method.predict_proba(batch), method.predict_proba(batch)
    assert np.abs(first - second).max() > 1e-6  # stateful, by design (documented)
    method.reset()
    np.testing.assert_array_equal(method.predict_proba(batch), first)


@pytest.mark.parametrize("calibrator", ["gnn", "none", "oracle_test_labels"])
def test_string_labels_like_scikit_learn(synthetic, calibrator, tmp_path) -> None:
    names = np.array(["yes", "no"])  # class 0 is "yes": sorting puts "no" first
    y_train, y_valid = names[synthetic.train.y], names[synthetic.valid.y]
    y_test = names[synthetic.test.y]
    X = {s: getattr(synthetic, s).X[synthetic.numerical].to_numpy() for s in ("train", "valid")}
    X_test = synthetic.test.X[synthetic.numerical].to_numpy()[:64]
    model = LogisticRegression().fit(X["train"], y_train)
    assert model.classes_.tolist() == ["no", "yes"]
    method = AdapTable(calibrator=calibrator, **FAST).fit(
        model, X["train"], y_train, X["valid"], y_valid
    )
    assert method.classes_.tolist() == ["no", "yes"]
    extra = {"oracle_labels": y_test[:64]} if calibrator.startswith("oracle") else {}
    proba = method.predict_proba(X_test, **extra)
    method.reset()
    labels = method.predict(X_test, **extra)
    np.testing.assert_array_equal(labels, method.classes_[proba.argmax(axis=1)])
    # The same numbers as with integer labels in the model's column order (no=0, yes=1).
    codes = {s: (y == "yes").astype(int) for s, y in (("train", y_train), ("valid", y_valid))}
    numeric = AdapTable(calibrator=calibrator, **FAST).fit(
        LogisticRegression().fit(X["train"], codes["train"]),
        X["train"],
        codes["train"],
        X["valid"],
        codes["valid"],
    )
    extra = {"oracle_labels": (y_test[:64] == "yes").astype(int)} if extra else {}
    np.testing.assert_allclose(numeric.predict_proba(X_test, **extra), proba, rtol=1e-6)
    # Saved and loaded with its labels.
    method.save(tmp_path / "labels.safetensors")
    loaded = AdapTable.load(tmp_path / "labels.safetensors", model=model)
    assert loaded.classes_.tolist() == ["no", "yes"]


def test_labels_the_model_does_not_know_are_refused(synthetic) -> None:
    X = synthetic.train.X[synthetic.numerical].to_numpy()
    model = LogisticRegression().fit(X, np.array(["a", "b"])[synthetic.train.y])
    with pytest.raises(ValueError, match="classes_"):
        AdapTable(preset="paper", calibrator="none").fit(
            model, X, np.array(["no", "yes"])[synthetic.train.y]
        )
    fitted = AdapTable(preset="paper", calibrator="oracle_test_labels").fit(
        model, X, np.array(["a", "b"])[synthetic.train.y]
    )
    with pytest.raises(ValueError, match="unseen"):
        fitted.predict_proba(X[:4], oracle_labels=np.array(["a", "b", "c", "a"]))


@pytest.mark.parametrize(
    ("y", "match"),
    [
        (np.linspace(0.0, 1.0, 600), "continuous"),
        (np.zeros((600, 2), dtype=int), "y_source"),
        (np.zeros(599, dtype=int), "inconsistent"),
    ],
)
def test_bad_labels_are_refused(synthetic, y, match) -> None:
    X = synthetic.train.X[synthetic.numerical].to_numpy()
    model = LogisticRegression().fit(X, synthetic.train.y)
    with pytest.raises(ValueError, match=match):
        AdapTable(preset="paper", calibrator="none").fit(model, X, y)


def test_three_string_classes(tmp_path) -> None:
    ds = datasets.make_shift_dataset(n_train=300, n_valid=60, n_test=64, n_classes=3, seed=1)
    names = np.array(["low", "mid", "high"])
    X = ds.train.X[ds.numerical].to_numpy()
    model = LogisticRegression().fit(X, names[ds.train.y])
    method = AdapTable(**FAST).fit(model, X, names[ds.train.y])
    assert method.classes_.tolist() == ["high", "low", "mid"]
    assert set(method.predict(ds.test.X[ds.numerical].to_numpy())) <= set(names)


@pytest.mark.parametrize(
    "labels", [np.array([False, True]), np.array([0.0, 1.0]), np.array([0, 1])], ids=str
)
def test_labels_equal_to_the_column_indices_keep_their_type_through_save_and_load(
    labels, tmp_path
) -> None:
    # False / True (and 0.0 / 1.0) compare equal to 0 / 1, but predict must give them back
    rng = np.random.default_rng(0)
    x = rng.normal(size=(600, 2))
    y = labels[(x[:, 0] + rng.normal(size=600) > 0).astype(int)]
    model = LogisticRegression().fit(x[:400], y[:400])
    method = AdapTable(random_state=0).fit(model, x[:400], y[:400], x[400:], y[400:])
    method.save(tmp_path / "typed.safetensors")
    loaded = AdapTable.load(tmp_path / "typed.safetensors", model=model)
    assert loaded.classes_.dtype.kind == method.classes_.dtype.kind == labels.dtype.kind
    np.testing.assert_array_equal(loaded.predict(x[:64]), method.predict(x[:64]))
    assert loaded.predict(x[:64]).dtype.kind == labels.dtype.kind

"""What a user's own model, labels and columns can get wrong, and what AdapTable then says:
models returning the wrong number of rows, parameters changed after fit, held-out rows without
a class, names and labels a file cannot hold, torch modules in other precisions, one column
kind declared, and the drift summary's and partial_fit's argument checks."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from adaptable import AdapTable
from adaptable.encoding import Encoder


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(
        2400, 6, n_informative=4, n_redundant=0, n_classes=3, n_clusters_per_class=1,
        random_state=0,
    )  # fmt: skip
    return X[:1200], y[:1200], X[1200:1600], y[1200:1600], X[1600:], y[1600:]


@pytest.fixture(scope="module")
def model(data):
    X_train, y_train, *_ = data
    return LogisticRegression(max_iter=500).fit(X_train, y_train)


def _fitted(model, data, **options) -> AdapTable:
    X_train, y_train, X_valid, y_valid, *_ = data
    return AdapTable(random_state=0, **options).fit(model, X_train, y_train, X_valid, y_valid)


def test_a_model_returning_another_number_of_rows_is_refused_everywhere(model, data) -> None:
    X_train, y_train, X_valid, y_valid, X_test, y_test = data
    drop = {"on": False}

    def proba(X):
        p = model.predict_proba(np.asarray(X))
        return p[:-1] if drop["on"] else p

    method = AdapTable(random_state=0, output="proba").fit(
        proba, X_train, y_train, X_valid, y_valid
    )
    method.predict_proba(X_test[:64])
    drop["on"] = True
    for call in (
        lambda: method.predict_proba(X_test[64:128]),
        lambda: method.predict_proba(X_test[64:65]),  # not "an empty batch"
        lambda: method.partial_fit(X_test[:10], y_test[:10]),
    ):
        with pytest.raises(ValueError, match=r"the model returned \d+ rows of scores for \d+"):
            call()
    assert method.state.n_batches == 1  # nothing counted from the refused calls
    with pytest.raises(ValueError, match="1199 rows of scores for the 1200 rows of X_source"):
        AdapTable(output="proba").fit(proba, X_train, y_train, X_valid, y_valid)


def test_held_out_rows_given_as_an_array_beside_a_frame_are_refused(model, data) -> None:
    X_train, y_train, X_valid, y_valid, *_ = data
    names = [f"f{i}" for i in range(6)]
    frame = pd.DataFrame(X_train, columns=names)
    with pytest.raises(ValueError, match="X_source is a DataFrame but X_valid is not"):
        AdapTable().fit(lambda X: model.predict_proba(np.asarray(X)), frame, y_train,
                        X_valid, y_valid)  # fmt: skip


def test_a_saved_adapter_keeps_the_parameters_it_was_fitted_with(model, data, tmp_path) -> None:
    *_, X_test, _ = data
    for change in ({"objective": "accuracy"}, {"prior_strength": 1.0}):
        live = _fitted(model, data)
        for start in range(0, 320, 64):
            live.predict_proba(X_test[start : start + 64])
        live.set_params(**change)  # takes effect at the next fit, in the file as here
        live.save(tmp_path / "a.safetensors")
        loaded = AdapTable.load(tmp_path / "a.safetensors", model)
        for start in range(320, 800, 64):
            batch = X_test[start : start + 64]
            np.testing.assert_array_equal(live.predict_proba(batch), loaded.predict_proba(batch))
        # refitted, the new value is used and saved
        live.fit(model, *data[:4]).save(tmp_path / "b.safetensors")
        name, value = next(iter(change.items()))
        assert getattr(AdapTable.load(tmp_path / "b.safetensors", model), name) == value


def test_held_out_rows_without_a_class_warn_and_give_no_reference(model, data) -> None:
    X_train, y_train, X_valid, y_valid, X_test, y_test = data
    keep = y_valid != 2
    with pytest.warns(UserWarning, match=r"y_valid holds no row of class\(es\) \[2\]"):
        method = AdapTable(random_state=0).fit(model, X_train, y_train, X_valid[keep],
                                               y_valid[keep])  # fmt: skip
    for start in range(0, 640, 64):
        method.predict_proba(X_test[start : start + 64])
    method.partial_fit(None, y_test[:640], rows=np.arange(640))
    summary = method.drift_summary()
    assert np.isnan(summary.reference) and summary.verdict == "unverified"
    assert "none of some class" in str(summary)
    assert np.isnan(method.report()["heldout_source"]).all()
    # with every class held out: no warning, a reference
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        full = _fitted(model, data)
    full.predict_proba(X_test[:64])
    assert np.isfinite(full.drift_summary().reference)


def test_what_a_file_cannot_hold_is_refused_before_writing(model, data, tmp_path) -> None:
    X_train, y_train, X_valid, y_valid, X_test, _ = data
    columns = pd.MultiIndex.from_tuples([("g", i) for i in range(6)])

    def proba(X):
        return model.predict_proba(np.asarray(X))

    method = AdapTable(output="proba").fit(
        proba, pd.DataFrame(X_train, columns=columns), y_train,
        pd.DataFrame(X_valid, columns=columns), y_valid,
    )  # fmt: skip
    with pytest.raises(ValueError, match=r"column names such as \('g', 0\) cannot be written"):
        method.save(tmp_path / "multi.safetensors")
    assert not (tmp_path / "multi.safetensors").exists()
    dates = pd.to_datetime(y_train, unit="D").to_numpy()
    dated = LogisticRegression(max_iter=500).fit(X_train, dates)
    method = AdapTable().fit(dated, X_train, dates, X_valid, pd.to_datetime(y_valid, unit="D"))
    with pytest.raises(ValueError, match="labels of type datetime .* cannot be written"):
        method.save(tmp_path / "dates.safetensors")
    assert not (tmp_path / "dates.safetensors").exists()


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.uint64, np.float32, np.int64])
def test_labels_come_back_from_a_file_in_their_own_dtype(model, data, tmp_path, dtype) -> None:
    X_train, y_train, X_valid, y_valid, X_test, _ = data
    labels = (np.asarray(y_train) + 3).astype(dtype)
    typed = LogisticRegression(max_iter=500).fit(X_train, labels)
    method = AdapTable(random_state=0).fit(typed, X_train, labels, X_valid,
                                           (y_valid + 3).astype(dtype))  # fmt: skip
    method.save(tmp_path / "typed.safetensors")
    loaded = AdapTable.load(tmp_path / "typed.safetensors", typed)
    assert loaded.classes_.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(loaded.classes_, method.classes_)
    assert loaded.predict(X_test[:64]).dtype == np.dtype(dtype)


def test_torch_modules_get_rows_in_their_own_precision(data) -> None:
    X_train, y_train, X_valid, y_valid, X_test, _ = data
    torch.manual_seed(0)
    single = torch.nn.Linear(6, 3)
    double = torch.nn.Linear(6, 3).double()
    double.load_state_dict({k: v.double() for k, v in single.state_dict().items()})
    outputs = []
    for module in (single, double):
        method = AdapTable(random_state=0).fit(module, X_train, y_train, X_valid, y_valid)
        outputs.append(method.predict_proba(X_test[:64]))
    # the double module is the single one's weights: the same decisions, close probabilities
    np.testing.assert_allclose(outputs[0], outputs[1], atol=1e-5)

    class Named(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(6, 3)

        def forward(self, x):
            return {"logits": self.layer(x)}

    with pytest.raises(TypeError, match="returned a dict; AdapTable needs its logits"):
        AdapTable().fit(Named(), X_train, y_train, X_valid, y_valid)


def test_one_declared_kind_leaves_the_other_columns_to_their_dtypes() -> None:
    frame = pd.DataFrame(
        {"a": [1.0, 2.0, 3.0], "zip": [10, 20, 30], "c": ["x", "y", "x"],
         "d": pd.Categorical(["u", "v", "u"])}
    )  # fmt: skip
    cases = {
        "numerical": (["a"], ["a", "zip"], ["c", "d"]),
        "categorical": (["zip"], ["a"], ["zip", "c", "d"]),
    }
    for kind, (declared, numerical, categorical) in cases.items():
        encoder = Encoder(**{kind: declared}).fit(frame)
        assert (encoder.numerical_, encoder.categorical_) == (numerical, categorical), kind
    # a column declared against its dtype takes the declared kind only
    flags = frame.assign(flag=[True, False, True])
    encoder = Encoder(numerical=["a", "flag"]).fit(flags)
    assert (encoder.numerical_, encoder.categorical_) == (["a", "zip", "flag"], ["c", "d"])
    # an all-float array with a few columns declared numerical stays all numerical
    encoder = Encoder(numerical=[0, 1]).fit(np.random.default_rng(0).normal(size=(20, 6)))
    assert encoder.categorical_ == [] and encoder.n_features_out_ == 6


def test_argument_mistakes_get_one_clear_message(model, data) -> None:
    *_, X_test, y_test = data
    method = _fitted(model, data)
    method.predict_proba(X_test[:64])
    for bad, match in (
        ({"reference": "0.5"}, "reference must be a finite number >= 0; got '0.5'"),
        ({"tolerance": 5}, "tolerance is a fraction of the objective"),
        ({"reference": 1.5}, "reference is a fraction of the objective"),
        ({"deviations": True}, "deviations must be a finite number"),
    ):
        with pytest.raises(ValueError, match=match):
            method.drift_summary(**bad)
    assert method.drift_summary(deviations=3).deviations == 3.0  # not a fraction
    with pytest.raises(ValueError, match="X has 5 rows but y has no labels"):
        method.partial_fit(X_test[:5], [])
    method.partial_fit(X_test[:0], [])  # nothing came: nothing to say
    with pytest.raises(ValueError, match=r"labels unseen at fit \['a', 'b'\] \(of another type\)"):
        method.partial_fit(None, pd.Categorical(["a", "b"]), rows=[0, 1])


def test_the_report_of_no_batch_has_every_column(model, data) -> None:
    *_, X_test, _ = data
    method = _fitted(model, data)
    method.predict_proba(X_test[:64])
    full = method.report()
    method.reset()
    empty = method.report()
    assert len(empty) == 0 and empty.columns.tolist() == full.columns.tolist()
    assert empty.dtypes.equals(full.dtypes)


def test_mixed_precision_modules_get_float32_and_double_ones_exact_rows(data) -> None:
    X_train, y_train, X_valid, y_valid, X_test, _ = data

    class Scaled(torch.nn.Module):
        """A float64 temperature registered before a float32 body (worked before; must still)."""

        def __init__(self) -> None:
            super().__init__()
            self.temperature = torch.nn.Parameter(torch.tensor(2.0, dtype=torch.float64))
            self.body = torch.nn.Linear(6, 3)

        def forward(self, x):
            return self.body(x) / self.temperature.float()

    torch.manual_seed(0)
    AdapTable(random_state=0).fit(Scaled(), X_train, y_train, X_valid, y_valid)
    double = torch.nn.Linear(6, 3).double()
    method = AdapTable(random_state=0, preset="paper", calibrator="none").fit(
        double, X_train, y_train, X_valid, y_valid
    )
    rows = X_test[:64] * 1e3  # float32 would round these
    with torch.no_grad():
        direct = double(torch.from_numpy(rows)).numpy()
    np.testing.assert_array_equal(method._logit_function(rows), direct)


def test_an_array_of_held_out_rows_beside_a_frame_is_fine_where_no_part_reads_them(
    model, data
) -> None:
    X_train, y_train, X_valid, y_valid, X_test, _ = data
    frame = pd.DataFrame(X_train, columns=[f"f{i}" for i in range(6)])
    method = AdapTable(preset="paper", calibrator="none", output="proba").fit(
        lambda X: model.predict_proba(np.asarray(X)), frame, y_train, X_valid, y_valid
    )
    assert method.predict_proba(frame.iloc[:64]).shape == (64, 3)


def test_a_column_named_none_saves_and_loads(model, data, tmp_path) -> None:
    X_train, y_train, X_valid, y_valid, X_test, _ = data
    names = [None, "b", "c", "d", "e", "f"]
    frames = [pd.DataFrame(X, columns=names) for X in (X_train, X_valid, X_test[:64])]

    def proba(X):
        return model.predict_proba(np.asarray(X))

    method = AdapTable(random_state=0, output="proba").fit(
        proba, frames[0], y_train, frames[1], y_valid
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the fit's column order cannot be saved)
        method.save(tmp_path / "none.safetensors")
    loaded = AdapTable.load(tmp_path / "none.safetensors", proba, output="proba")
    np.testing.assert_array_equal(loaded.predict_proba(frames[2]), method.predict_proba(frames[2]))


def test_small_integer_labels_0_to_c_keep_their_dtype_and_a_bad_dtype_is_named(
    model, data, tmp_path
) -> None:
    import json

    from safetensors.numpy import load_file, save_file

    X_train, y_train, X_valid, y_valid, X_test, _ = data
    small = LogisticRegression(max_iter=500).fit(X_train, y_train.astype(np.int8))
    method = AdapTable(random_state=0).fit(small, X_train, y_train.astype(np.int8), X_valid,
                                           y_valid.astype(np.int8))  # fmt: skip
    path = tmp_path / "int8.safetensors"
    method.save(path)
    loaded = AdapTable.load(path, small)
    assert loaded.classes_.dtype == np.int8 and loaded.predict(X_test[:64]).dtype == np.int8
    from safetensors import safe_open

    with safe_open(str(path), framework="numpy") as handle:
        meta = json.loads(handle.metadata()["adaptable"])
    for bad in ("foo", "<U3"):
        meta["classes_dtype"] = bad
        save_file(load_file(str(path)), str(path), metadata={"adaptable": json.dumps(meta)})
        with pytest.raises(ValueError, match="field 'classes_dtype'"):
            AdapTable.load(path, small)


def test_the_paper_preset_does_not_warn_of_held_out_classes_it_never_reads(model, data) -> None:
    X_train, y_train, X_valid, y_valid, *_ = data
    keep = y_valid != 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        AdapTable(preset="paper", calibrator="none").fit(
            model, X_train, y_train, X_valid[keep], y_valid[keep]
        )


def test_drift_summary_takes_numbers_of_any_kind(model, data) -> None:
    from decimal import Decimal

    *_, X_test, _ = data
    method = _fitted(model, data)
    method.predict_proba(X_test[:64])
    for reference in (np.array(0.8), Decimal("0.8"), np.float32(0.8)):
        assert method.drift_summary(reference=reference).reference == pytest.approx(0.8)

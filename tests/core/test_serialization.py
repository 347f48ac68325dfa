"""AdapTable.load refuses a damaged or edited file, naming the field (issue 11, defect 3)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file
from sklearn.linear_model import LogisticRegression

from adaptable import AdapTable

FAST = {"epochs": 1, "random_state": 0, "preset": "paper"}


@pytest.fixture(scope="module")
def saved(synthetic, tmp_path_factory) -> dict[str, Path]:
    """Files of a fitted AdapTable per calibrator (raw frame, numerical and categorical)."""
    X = synthetic.train.X[synthetic.numerical].to_numpy()
    model = LogisticRegression().fit(X, synthetic.train.y)
    folder = tmp_path_factory.mktemp("saved")
    paths = {}
    for calibrator in ("gnn", "platt", "isotonic", "none"):
        method = AdapTable(calibrator=calibrator, **FAST).fit(
            _FrameModel(model, synthetic.numerical), synthetic.train.X, synthetic.train.y
        )
        paths[calibrator] = folder / f"{calibrator}.safetensors"
        method.save(paths[calibrator])
    return paths


class _FrameModel:
    """A scikit-learn model on the numerical columns of a frame."""

    def __init__(self, model, columns) -> None:
        self.model, self.columns = model, columns

    def predict_proba(self, X):
        return self.model.predict_proba(X[self.columns].to_numpy())


def test_the_unedited_files_load(saved) -> None:
    for path in saved.values():
        AdapTable.load(path)


def _drop(key: str) -> Callable[[dict, dict], None]:
    return lambda tensors, meta: tensors.pop(key)


def _set_tensor(key: str, value) -> Callable[[dict, dict], None]:
    def edit(tensors: dict, meta: dict) -> None:
        tensors[key] = np.asarray(value, dtype=tensors[key].dtype)

    return edit


def _set_meta(key: str, value) -> Callable[[dict, dict], None]:
    def edit(tensors: dict, meta: dict) -> None:
        meta[key] = value

    return edit


def _retype(key: str, dtype, descending: bool = False) -> Callable[[dict, dict], None]:
    def edit(tensors: dict, meta: dict) -> None:
        value = tensors[key].astype(dtype)
        tensors[key] = np.sort(value)[::-1].copy() if descending else value

    return edit


def _swap_first_two(key: str) -> Callable[[dict, dict], None]:
    def edit(tensors: dict, meta: dict) -> None:
        tensors[key] = tensors[key].copy()
        tensors[key][[0, 1]] = tensors[key][[1, 0]]

    return edit


def _set_param(key: str, value) -> Callable[[dict, dict], None]:
    return lambda tensors, meta: meta["params"].__setitem__(key, value)


@pytest.mark.parametrize(
    ("calibrator", "edit", "field"),
    [
        # missing calibrator tensors (used to give random weights)
        ("gnn", _drop("calibrator.gcn.weight"), "calibrator.gcn.weight"),
        ("gnn", _drop("calibrator.category_projection"), "calibrator.category_projection"),
        ("gnn", _set_tensor("calibrator.head.bias", [np.nan]), "calibrator.head.bias"),
        # missing or wrong-shape numeric_mean (used to become zeros)
        ("gnn", _drop("numeric_mean"), "numeric_mean"),
        ("gnn", _set_tensor("numeric_mean", [0.0, 0.0]), "numeric_mean"),
        ("gnn", _set_tensor("category_mean", np.zeros(7) + 0.5), "category_mean"),
        ("gnn", _swap_first_two("category_mean"), "calibrator.category_mean"),  # not g_phi's
        # metadata that disagrees with params
        ("gnn", _set_meta("calibrator", "none"), "calibrator"),
        ("gnn", _set_param("batch_size", 32), "calibrator.gcn.weight"),
        ("gnn", _set_param("alpha", "abc"), "params"),
        ("gnn", _set_param("no_such_parameter", 1), "params"),
        ("none", _set_meta("n_classes", 3), "source_prior"),
        ("none", _set_param("max_temperature", 2.0), "temperature"),
        ("gnn", lambda t, m: m["layout"].__setitem__("block_sizes", [3, 3]), "layout"),
        ("gnn", lambda t, m: m.pop("encoder"), "encoder"),
        # NaN or negative temperature
        ("none", _set_meta("temperature", float("nan")), "temperature"),
        ("none", _set_meta("temperature", -2.0), "temperature"),
        ("none", _set_meta("temperature", "2"), "temperature"),
        # a source prior with a zero, or not summing to one
        ("none", _set_tensor("source_prior", [1.0, 0.0]), "source_prior"),
        ("none", _set_tensor("source_prior", [0.5, 0.6]), "source_prior"),
        ("none", _drop("source_prior"), "source_prior"),
        # an online prior that is no distribution
        ("none", _set_tensor("online_prior", [2.0, -1.0]), "online_prior"),
        ("none", _set_tensor("online_prior", [0.5, 0.5, 0.0]), "online_prior"),
        # the classical calibrators' parameters
        ("platt", _drop("calibrator.coef"), "calibrator"),
        ("platt", _set_tensor("calibrator.coef", [[1.0, 2.0]]), "calibrator"),
        ("isotonic", _set_tensor("calibrator.knots_y.0", np.full(2, 7.0)), "calibrator"),
        ("none", lambda t, m: t.__setitem__("calibrator.coef", np.ones((1, 1))), "calibrator"),
        # anything else
        ("none", lambda t, m: t.__setitem__("extra", np.zeros(2)), "extra"),
        # dtypes as written: the network's float32, the priors' float64
        ("gnn", _retype("calibrator.gcn.weight", np.float64), "calibrator.gcn.weight"),
        ("gnn", _retype("calibrator.block_of_column", np.float32), "calibrator.block_of_column"),
        ("none", _retype("online_prior", np.float32), "online_prior"),
        ("platt", _retype("calibrator.coef", np.float32), "calibrator"),
        # an isotonic fit is non-decreasing; the encoder g_phi reads has a mean per column
        ("isotonic", _retype("calibrator.knots_y.0", np.float64, descending=True), "calibrator"),
        ("gnn", lambda t, m: m["encoder"]["mean"].pop(), "encoder"),
        ("none", _set_meta("classes", ["b", "a"]), "classes"),
        # the fit's DataFrame columns: distinct names
        ("none", _set_meta("columns", ["a", "a"]), "columns"),
        ("none", _set_meta("columns", "a"), "columns"),
        # the stream so far: a count of batches and the last batch's fields
        ("none", _set_meta("stream", {"n_batches": -1}), "stream"),
        ("none", _set_meta("stream", {"n_batches": 2, "target_prior": [0.5]}), "stream"),
    ],
)
def test_load_refuses_naming_the_field(
    saved, tmp_path, edited_copy, calibrator, edit, field
) -> None:
    path = edited_copy(saved[calibrator], tmp_path, edit)
    with pytest.raises(ValueError, match=f"'{field}'"):
        AdapTable.load(path)


def test_unknown_format_and_foreign_file(saved, tmp_path, edited_copy) -> None:
    path = edited_copy(saved["none"], tmp_path, _set_meta("format", "adaptable.AdapTable/99"))
    with pytest.raises(ValueError, match="unknown AdapTable file format"):
        AdapTable.load(path)
    other = tmp_path / "other.safetensors"
    save_file({"x": np.zeros(2)}, str(other))
    with pytest.raises(ValueError, match="not a file written by AdapTable.save"):
        AdapTable.load(other)


def test_load_refuses_a_model_of_other_classes(synthetic, tmp_path) -> None:
    """The check of fit: the model's class j must be the file's class j."""
    X = synthetic.train.X[synthetic.numerical].to_numpy()
    names = np.where(synthetic.train.y == 1, "yes", "no")
    AdapTable(calibrator="none", **{**FAST, "epochs": 1}).fit(
        LogisticRegression().fit(X, names), X, names
    ).save(tmp_path / "named.safetensors")
    other = LogisticRegression().fit(X, np.where(names == "yes", "up", "down"))
    with pytest.raises(ValueError, match="AdapTable.load: the model's classes_"):
        AdapTable.load(tmp_path / "named.safetensors", model=other)
    loaded = AdapTable.load(
        tmp_path / "named.safetensors", model=LogisticRegression().fit(X, names)
    )
    assert (
        loaded.predict(X[:4]).tolist()
        == loaded.classes_[loaded.predict_proba(X[:4]).argmax(1)].tolist()
    )


@pytest.mark.parametrize("preset", ["default", "paper"])
def test_the_state_goes_on_from_where_it_was_saved(synthetic, tmp_path, preset) -> None:
    """A loaded adapter's state counts the batches it was saved with and shows the saved last
    batch's rule, prior and statistic (its per-row arrays are not kept) until the next one."""
    X = synthetic.train.X[synthetic.numerical].to_numpy()
    model = LogisticRegression().fit(X, synthetic.train.y)
    options = {"calibrator": "none", "random_state": 0, "preset": preset}
    method = AdapTable(**options).fit(model, X, synthetic.train.y, X[:200], synthetic.train.y[:200])
    for start in range(0, 192, 64):
        method.predict(X[start : start + 64])
    method.save(tmp_path / "s.safetensors")
    loaded = AdapTable.load(tmp_path / "s.safetensors", model=model)
    before, after = method.state, loaded.state
    assert after.n_batches == before.n_batches == 3
    assert after.decision_rule == before.decision_rule
    assert after.prior_shift_statistic == before.prior_shift_statistic
    np.testing.assert_array_equal(after.target_prior, before.target_prior)
    assert after.temperatures is None and after.uncertainty is None
    for adapter in (method, loaded):
        adapter.predict(X[192:256])
    assert loaded.state.n_batches == method.state.n_batches == 4
    np.testing.assert_array_equal(loaded.state.uncertainty, method.state.uncertainty)
    loaded.reset()
    assert loaded.state.n_batches == 0 and loaded.state.decision_rule is None


def test_numpy_scalar_parameters_are_saved_as_numbers(tmp_path) -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(600, 3))
    y = (x[:, 0] > 0).astype(int)
    model = LogisticRegression().fit(x, y)
    method = AdapTable(
        random_state=np.int64(0), report_batches=np.int32(5), prior_strength=np.float32(32.0)
    ).fit(model, x[:400], y[:400], x[400:], y[400:])
    method.predict(x[:30])
    method.save(tmp_path / "a.safetensors")
    loaded = AdapTable.load(tmp_path / "a.safetensors", model=model)
    assert (loaded.random_state, loaded.report_batches, loaded.prior_strength) == (0, 5, 32.0)
    assert type(loaded.report_batches) is int

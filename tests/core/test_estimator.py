"""The public estimator: any model, probabilities, determinism, persistence, bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.exceptions import NotFittedError

from adaptable import AdapTable, datasets
from adaptable.core import TestTimeMethod

FAST = {"epochs": 2, "patience": 1, "preset": "paper"}


@pytest.fixture(scope="module")
def encoded(synthetic: datasets.ShiftDataset):
    encoder = datasets.fit_encoder(synthetic)
    return {
        split: encoder.transform(getattr(synthetic, split).X)
        for split in ("train", "valid", "test")
    }


@pytest.fixture(scope="module")
def torch_mlp(encoded) -> torch.nn.Module:
    torch.manual_seed(0)
    width = encoded["train"].shape[1]
    return torch.nn.Sequential(torch.nn.Linear(width, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))


@pytest.fixture(scope="module")
def lr_pipeline(synthetic: datasets.ShiftDataset, frame_logreg):
    return frame_logreg(synthetic)


@pytest.fixture(scope="module")
def fitted_raw(synthetic: datasets.ShiftDataset, lr_pipeline) -> AdapTable:
    return AdapTable(random_state=0, **FAST).fit(
        lr_pipeline, synthetic.train.X, synthetic.train.y, synthetic.valid.X, synthetic.valid.y
    )


def _stream(X, size: int = 64):
    return [X[i : i + size] for i in range(0, 256, size)]


def _check_proba(proba: np.ndarray, n: int, n_classes: int = 2) -> None:
    assert proba.shape == (n, n_classes)
    assert np.all(np.isfinite(proba)) and np.all(proba >= 0)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-10)


def test_is_a_test_time_method() -> None:
    assert isinstance(AdapTable(), TestTimeMethod)
    assert AdapTable.name == "adaptable"


def test_torch_mlp_on_encoded_arrays(synthetic, encoded, torch_mlp) -> None:
    method = AdapTable(random_state=0, **FAST).fit(
        torch_mlp, encoded["train"], synthetic.train.y, encoded["valid"], synthetic.valid.y
    )
    for batch in _stream(encoded["test"]):
        _check_proba(method.predict_proba(batch), len(batch))
    assert torch_mlp.training  # the caller's mode is restored


def test_sklearn_pipeline_on_raw_dataframe(synthetic, fitted_raw) -> None:
    fitted_raw.reset()
    for batch in _stream(synthetic.test.X):
        _check_proba(fitted_raw.predict_proba(batch), len(batch))
    preds = fitted_raw.predict(synthetic.test.X.iloc[:64])
    assert preds.shape == (64,) and set(np.unique(preds)) <= {0, 1}


def test_xgboost_classifier(synthetic, encoded) -> None:
    xgboost = pytest.importorskip("xgboost")
    model = xgboost.XGBClassifier(n_estimators=10, max_depth=2, n_jobs=1)
    model.fit(encoded["train"], synthetic.train.y)
    method = AdapTable(random_state=0, **FAST).fit(model, encoded["train"], synthetic.train.y)
    _check_proba(method.predict_proba(encoded["test"][:64]), 64)


def test_adapt_logits_equals_predict_proba(synthetic, lr_pipeline, fitted_raw) -> None:
    batch = synthetic.test.X.iloc[:64]
    fitted_raw.reset()
    via_model = fitted_raw.predict_proba(batch)
    fitted_raw.reset()
    logits = np.log(lr_pipeline.predict_proba(batch))
    np.testing.assert_allclose(fitted_raw.adapt_logits(logits, batch), via_model, rtol=1e-10)


def test_deterministic_under_random_state(synthetic, lr_pipeline) -> None:
    def run(seed: int) -> tuple[np.ndarray, np.ndarray]:
        method = AdapTable(random_state=seed, **FAST).fit(
            lr_pipeline, synthetic.train.X, synthetic.train.y, synthetic.valid.X, synthetic.valid.y
        )
        proba = np.concatenate([method.predict_proba(b) for b in _stream(synthetic.test.X)])
        return proba, method.state.temperatures

    first, second, other = run(0), run(0), run(1)
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])
    assert not np.array_equal(first[1], other[1])


def test_state_exposes_priors_and_temperatures(synthetic, fitted_raw) -> None:
    fitted_raw.reset()
    state = fitted_raw.state
    np.testing.assert_allclose(state.online_prior, [0.5, 0.5])
    assert state.temperatures is None and state.n_batches == 0
    y = np.concatenate([synthetic.train.y, synthetic.valid.y])
    np.testing.assert_allclose(state.source_prior, np.bincount(y) / len(y))
    fitted_raw.predict_proba(synthetic.test.X.iloc[:40])
    state = fitted_raw.state
    assert state.n_batches == 1
    assert state.temperatures.shape == (40,) and np.all(state.temperatures > 0)
    assert set(np.round(np.unique(state.recalibration_temperatures), 8)) <= set(
        np.round([state.temperature, 1.0, 1 / state.temperature], 8)
    )
    np.testing.assert_allclose(state.online_prior.sum(), 1.0)
    assert not np.allclose(state.online_prior, [0.5, 0.5])
    fitted_raw.reset()
    np.testing.assert_allclose(fitted_raw.state.online_prior, [0.5, 0.5])


@pytest.mark.parametrize("calibrator", ["gnn", "none", "platt", "isotonic"])
def test_save_load_gives_identical_outputs(tmp_path, synthetic, lr_pipeline, calibrator) -> None:
    method = AdapTable(random_state=0, calibrator=calibrator, adjacency="correlation", **FAST)
    method.fit(
        lr_pipeline, synthetic.train.X, synthetic.train.y, synthetic.valid.X, synthetic.valid.y
    )
    path = tmp_path / "adaptable.safetensors"
    method.save(path)
    loaded = AdapTable.load(path, model=lr_pipeline)
    assert loaded.get_params() == method.get_params()
    for batch in _stream(synthetic.test.X):
        np.testing.assert_array_equal(loaded.predict_proba(batch), method.predict_proba(batch))
    without_model = AdapTable.load(path)
    with pytest.raises(RuntimeError, match="without a model"):
        without_model.predict_proba(synthetic.test.X.iloc[:4])


def test_calibrator_none_ignores_features(synthetic, lr_pipeline) -> None:
    method = AdapTable(preset="paper", calibrator="none").fit(
        lr_pipeline, synthetic.train.X, synthetic.train.y
    )
    logits = np.log(lr_pipeline.predict_proba(synthetic.test.X.iloc[:64]))
    _check_proba(method.adapt_logits(logits), 64)
    np.testing.assert_array_equal(method.state.temperatures, np.ones(64))


def test_oracle_calibrator_needs_labels_and_only_there(synthetic, lr_pipeline, fitted_raw) -> None:
    oracle = AdapTable(preset="paper", calibrator="oracle_test_labels").fit(
        lr_pipeline, synthetic.train.X, synthetic.train.y
    )
    X, y = synthetic.test.X.iloc[:64], synthetic.test.y[:64]
    with pytest.raises(ValueError, match="true labels"):
        oracle.predict_proba(X)
    _check_proba(oracle.predict_proba(X, oracle_labels=y), 64)
    with pytest.raises(ValueError, match="oracle_labels are only accepted"):
        fitted_raw.predict_proba(X, oracle_labels=y)


def test_three_classes(frame_logreg) -> None:
    ds = datasets.make_shift_dataset(n_train=300, n_valid=60, n_test=100, n_classes=3, seed=1)
    model = frame_logreg(ds)
    method = AdapTable(random_state=0, **FAST).fit(
        model, ds.train.X, ds.train.y, ds.valid.X, ds.valid.y
    )
    _check_proba(method.predict_proba(ds.test.X.iloc[:50]), 50, n_classes=3)


def test_one_class_source_rejected(synthetic, lr_pipeline) -> None:
    y = np.zeros(len(synthetic.train.y), dtype=np.int64)
    with pytest.raises(ValueError, match="single class"):
        AdapTable(**FAST).fit(lr_pipeline, synthetic.train.X, y)


def test_balanced_source_warns(synthetic, lr_pipeline) -> None:
    y = np.arange(len(synthetic.train.y)) % 2
    with pytest.warns(RuntimeWarning, match="nearly balanced"):
        AdapTable(preset="paper", calibrator="none").fit(lr_pipeline, synthetic.train.X, y)
    capped = AdapTable(preset="paper", calibrator="none", max_temperature=5.0).fit(
        lr_pipeline, synthetic.train.X, y
    )
    assert capped.state.temperature == 5.0


def test_single_row_batch_is_softened(synthetic, fitted_raw) -> None:
    fitted_raw.reset()
    proba = fitted_raw.predict_proba(synthetic.test.X.iloc[:1])
    _check_proba(proba, 1)
    assert fitted_raw.state.recalibration_temperatures[0] == fitted_raw.state.temperature


def test_batch_larger_than_node_width(synthetic, fitted_raw) -> None:
    fitted_raw.reset()
    _check_proba(fitted_raw.predict_proba(synthetic.test.X.iloc[:150]), 150)
    assert fitted_raw.state.temperatures.shape == (150,)


def test_unseen_category_is_handled(synthetic, fitted_raw) -> None:
    batch = synthetic.test.X.iloc[:8].copy()
    batch["cat_0"] = "never seen"
    fitted_raw.reset()
    _check_proba(fitted_raw.predict_proba(batch), 8)


def test_empty_batch_rejected(synthetic, fitted_raw) -> None:
    with pytest.raises(ValueError, match="Empty batch"):
        fitted_raw.predict_proba(synthetic.test.X.iloc[:0])
    with pytest.raises(ValueError, match="Empty batch"):
        fitted_raw.adapt_logits(np.zeros((0, 2)), synthetic.test.X.iloc[:0])


def test_wrong_columns_rejected(synthetic, encoded, torch_mlp) -> None:
    method = AdapTable(calibrator="gnn", **FAST).fit(torch_mlp, encoded["train"], synthetic.train.y)
    with pytest.raises(ValueError, match="Expected 11 columns"):
        method.predict_proba(encoded["test"][:8, :-1])
    with pytest.raises(ValueError, match="columns"):
        method.adapt_logits(np.zeros((8, 2)), encoded["test"][:8, :-1])


def test_missing_dataframe_column_rejected(synthetic, fitted_raw) -> None:
    with pytest.raises(ValueError, match="missing"):
        fitted_raw.adapt_logits(np.zeros((4, 2)), synthetic.test.X.iloc[:4].drop(columns="num_0"))


def test_nan_and_inf_batches(synthetic, encoded, torch_mlp) -> None:
    method = AdapTable(calibrator="gnn", **FAST).fit(torch_mlp, encoded["train"], synthetic.train.y)
    batch = encoded["test"][:8].copy()
    batch[0, 0] = np.nan  # the Encoder maps NaN to 0 (authors' rule); the model gives NaN
    with pytest.raises(ValueError, match="non-finite"):
        method.predict_proba(batch)
    batch[0, 0] = np.inf  # caught by the calibrator's Encoder before the model runs
    with pytest.raises(ValueError, match="infinite"):
        method.predict_proba(batch)
    with pytest.raises(ValueError, match="NaN or inf"):
        method.adapt_logits(np.full((8, 2), np.nan), encoded["test"][:8])
    for bad in (-np.inf, np.inf, np.nan):
        one_bad = np.zeros((8, 2))
        one_bad[3, 1] = bad
        with pytest.raises(ValueError, match="NaN or inf"):
            method.adapt_logits(one_bad, encoded["test"][:8])


def test_huge_finite_logits_are_not_mistaken_for_inf(synthetic, lr_pipeline) -> None:
    # Their sum overflows to inf: a finiteness test by summing would refuse them.
    method = AdapTable(random_state=0).fit(
        lr_pipeline, synthetic.train.X, synthetic.train.y, synthetic.valid.X, synthetic.valid.y
    )
    logits = np.full((4, 2), 1e308)
    logits[:, 1] = 0.0
    proba = method.adapt_logits(logits, synthetic.test.X.iloc[:4])
    assert np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


def test_logit_shape_mismatch_and_unfitted(synthetic, fitted_raw) -> None:
    with pytest.raises(ValueError, match=r"\(n, 2\)"):
        fitted_raw.adapt_logits(np.zeros((4, 3)), synthetic.test.X.iloc[:4])
    with pytest.raises(NotFittedError, match="not fitted"):
        AdapTable().predict_proba(synthetic.test.X.iloc[:4])


def test_invalid_hyperparameters() -> None:
    with pytest.raises(ValueError, match="calibrator"):
        AdapTable(calibrator="magic")
    with pytest.raises(ValueError, match="q_low"):
        AdapTable(q_low=0.8, q_high=0.2)
    with pytest.raises(ValueError, match="adjacency"):
        AdapTable(adjacency="star")


def test_progress_callback_and_quiet_default(synthetic, lr_pipeline, capsys) -> None:
    seen = []
    AdapTable(preset="paper", epochs=2, patience=5, progress=lambda *a: seen.append(a)).fit(
        lr_pipeline, synthetic.train.X, synthetic.train.y, synthetic.valid.X, synthetic.valid.y
    )
    assert [a[0] for a in seen] == [0, 1]
    assert capsys.readouterr().out == ""


def test_dataframe_passes_to_model_unchanged(synthetic) -> None:
    seen: list[object] = []

    def model(X):
        seen.append(X)
        return np.column_stack([np.zeros(len(X)), X["num_0"].to_numpy()])

    method = AdapTable(output="logits", **FAST).fit(model, synthetic.train.X, synthetic.train.y)
    batch = synthetic.test.X.iloc[:16]
    method.predict_proba(batch)
    assert seen[-1] is batch and isinstance(seen[-1], pd.DataFrame)


def test_save_load_with_positional_arrays(tmp_path, synthetic, encoded, torch_mlp) -> None:
    method = AdapTable(random_state=0, **FAST).fit(
        torch_mlp, encoded["train"], synthetic.train.y, encoded["valid"], synthetic.valid.y
    )
    method.predict_proba(encoded["test"][:64])  # the online state is saved as it is
    path = tmp_path / "arrays.safetensors"
    method.save(path)
    loaded = AdapTable.load(path, model=torch_mlp)
    np.testing.assert_array_equal(loaded.state.online_prior, method.state.online_prior)
    for batch in _stream(encoded["test"][64:]):
        np.testing.assert_array_equal(loaded.predict_proba(batch), method.predict_proba(batch))


def test_load_rejects_foreign_file(tmp_path) -> None:
    from safetensors.numpy import save_file

    path = tmp_path / "other.safetensors"
    save_file({"x": np.zeros(2)}, str(path))
    with pytest.raises(ValueError, match="not a file written by AdapTable.save"):
        AdapTable.load(path)


def test_correlation_adjacency_on_wide_batch(synthetic, lr_pipeline) -> None:
    method = AdapTable(adjacency="correlation", random_state=0, **FAST).fit(
        lr_pipeline, synthetic.train.X, synthetic.train.y, synthetic.valid.X, synthetic.valid.y
    )
    _check_proba(method.predict_proba(synthetic.test.X.iloc[:130]), 130)
    assert np.all(method.state.temperatures > 0)

"""Every baseline on a tiny stream: shapes, probabilities, episodic resets, determinism, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import xgboost
from sklearn.exceptions import NotFittedError

from adaptable import methods
from adaptable.baselines import EATA, SAR, EpisodicTorchMethod, Tent

BASELINES = [name for name in methods.names() if name != "adaptable"]
PARAMETER_UPDATING = list(methods.PARAMETER_UPDATING)


def stream(task, sizes=(64, 64, 7, 1)) -> list:
    """Consecutive test batches of the given sizes (a one-row batch included)."""
    out, start = [], 0
    for size in sizes:
        out.append(task.test.X.iloc[start : start + size])
        start += size
    return out


def snapshot(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def assert_same_state(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key


def fitted(name, torch_source, task, **options):
    method = methods.create(name, **options).fit(
        torch_source, task.train.X, task.train.y, task.valid.X, task.valid.y
    )
    if getattr(method, "needs_test_labels", False):  # oracle rows get the stream's labels
        method.receive_test_labels(task.test.y)
    return method


@pytest.mark.parametrize("name", BASELINES)
def test_every_method_gives_probabilities(name, torch_source, tiny_task):
    method = fitted(name, torch_source, tiny_task)
    for batch in stream(tiny_task):
        proba = method.predict_proba(batch)
        assert proba.shape == (len(batch), tiny_task.n_classes)
        assert np.all(np.isfinite(proba)) and np.all(proba >= 0)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-9)
    assert method.predict(stream(tiny_task)[0]).shape == (64,)


@pytest.mark.parametrize("name", BASELINES)
def test_deterministic_under_a_seed(name, torch_source, tiny_task):
    runs = []
    for _ in range(2):
        method = fitted(name, torch_source, tiny_task)
        runs.append(np.concatenate([method.predict_proba(b) for b in stream(tiny_task)]))
    np.testing.assert_array_equal(runs[0], runs[1])


@pytest.mark.parametrize("name", PARAMETER_UPDATING)
def test_reset_restores_exact_source_weights(name, torch_source, tiny_task):
    user_state = snapshot(torch_source.module)
    # Large steps so that adaptation visibly moves the weights; SAR's collapse guard would
    # restore the source model at once on this easy task (its loss EMA starts below 0.2).
    extra = {"reset_threshold": 0.0} if name == "sar" else {}
    method = fitted(name, torch_source, tiny_task, lr=1e-2, steps=3, episodic=False, **extra)
    first = [method.predict_proba(b) for b in stream(tiny_task)]
    moved = any(not torch.equal(v, user_state[k]) for k, v in method.module_.state_dict().items())
    if name != "eata":  # EATA's redundancy filter may reject every row of a binary batch
        assert moved, f"{name} did not change any weight"
    # The user's module is never touched.
    assert_same_state(snapshot(torch_source.module), user_state)
    method.reset()
    assert_same_state(snapshot(method.module_), user_state)
    assert len(method.optimizer_.state) == 0  # a fresh AdamW: no moments
    # After reset the stream replays exactly.
    again = [method.predict_proba(b) for b in stream(tiny_task)]
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", ["pl", "tent"])
def test_episodic_restores_before_every_batch(name, torch_source, tiny_task):
    method = fitted(name, torch_source, tiny_task, lr=1e-2)
    batch, other = stream(tiny_task)[:2]
    first = method.predict_proba(batch)
    method.predict_proba(other)
    np.testing.assert_array_equal(method.predict_proba(batch), first)
    source = torch_source.predict_proba(batch)
    assert np.abs(first - source).max() > 1e-6  # it did adapt


def test_tent_step_matches_hand_computed_adamw(torch_source, tiny_task):
    batch = stream(tiny_task)[0]
    method = fitted("tent", torch_source, tiny_task, lr=1e-3)
    x = torch_source.prepare(batch)
    module = snapshot(torch_source.module)
    reference = type(torch_source.module)(torch_source.encoder, 2, d_block=32)
    reference.load_state_dict(module)
    optimiser = torch.optim.AdamW(reference.parameters(), lr=1e-3, weight_decay=0.01)
    logits = reference(x)
    loss = -(logits.softmax(1) * logits.log_softmax(1)).sum(1).mean()
    loss.backward()
    optimiser.step()
    with torch.no_grad():
        expected = reference(x).double().softmax(1).numpy()
    np.testing.assert_allclose(method.predict_proba(batch), expected, atol=1e-6)


@pytest.mark.parametrize("cls", [SAR, EATA])
def test_entropy_filter_that_rejects_everything_leaves_the_model(cls, torch_source, tiny_task):
    method = cls(entropy_margin=1e-9).fit(torch_source, tiny_task.train.X, tiny_task.train.y)
    batch = stream(tiny_task)[0]
    np.testing.assert_allclose(
        method.predict_proba(batch), torch_source.predict_proba(batch), atol=1e-6
    )


def test_sar_resets_when_loss_ema_is_low(torch_source, tiny_task):
    method = SAR(entropy_margin=1.0, reset_threshold=10.0, episodic=False).fit(
        torch_source, tiny_task.train.X, tiny_task.train.y
    )
    batch = stream(tiny_task)[0]
    proba = method.predict_proba(batch)
    assert method.n_model_resets_ == 1
    np.testing.assert_allclose(proba, torch_source.predict_proba(batch), atol=1e-6)


def test_eata_fisher_and_margin(torch_source, tiny_task):
    method = EATA().fit(
        torch_source, tiny_task.train.X, tiny_task.train.y, tiny_task.valid.X, tiny_task.valid.y
    )
    names = {n for n, _ in method.module_.named_parameters()}
    assert set(method.fisher_) == names
    assert all(bool((f >= 0).all()) for f in method.fisher_.values())
    assert sum(float(f.sum()) for f in method.fisher_.values()) > 0
    assert method.margin == pytest.approx(0.4 * np.log(2))


def test_ttt_head_learns_something(torch_source, tiny_task):
    method = fitted("ttt++", torch_source, tiny_task)
    x = torch_source.prepare(tiny_task.valid.X)
    baseline = float(((x - x.mean(0)) ** 2).mean())  # predicting the column means
    assert method.head_reconstruction_error_ < baseline


@pytest.mark.parametrize("name", PARAMETER_UPDATING + ["lame"])
def test_gbdt_with_a_method_that_needs_torch_is_a_clear_error(name, tiny_task):
    from adaptable import datasets

    encoder = datasets.fit_encoder(tiny_task)
    x = encoder.transform(tiny_task.train.X)
    gbdt = xgboost.XGBClassifier(n_estimators=3, max_depth=2).fit(x, tiny_task.train.y)
    with pytest.raises(TypeError, match=name.replace("+", r"\+")):
        methods.create(name).fit(gbdt, x, tiny_task.train.y)


@pytest.mark.parametrize("name", ["source", "em", "bbse"])
def test_output_methods_work_with_a_gbdt(name, tiny_task):
    from adaptable import datasets

    encoder = datasets.fit_encoder(tiny_task)
    x = encoder.transform(tiny_task.train.X)
    gbdt = xgboost.XGBClassifier(n_estimators=5, max_depth=2).fit(x, tiny_task.train.y)
    method = methods.create(name).fit(
        gbdt, x, tiny_task.train.y, encoder.transform(tiny_task.valid.X), tiny_task.valid.y
    )
    proba = method.predict_proba(encoder.transform(tiny_task.test.X.iloc[:64]))
    assert proba.shape == (64, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


def test_bad_input_errors(torch_source, tiny_task):
    with pytest.raises(NotFittedError, match="fit"):
        Tent().predict_proba(tiny_task.test.X.iloc[:4])
    method = Tent().fit(torch_source, tiny_task.train.X, tiny_task.train.y)
    with pytest.raises(ValueError, match="no rows"):
        method.predict_proba(tiny_task.test.X.iloc[:0])
    with pytest.raises(ValueError, match="y_source"):
        Tent().fit(torch_source, tiny_task.train.X, tiny_task.train.y[:-1])
    with pytest.raises(ValueError, match="lr"):
        Tent(lr=0.0)
    with pytest.raises(ValueError, match="validation split"):
        methods.create("em").fit(torch_source, tiny_task.train.X, tiny_task.train.y)


def test_registry_names_and_unknown_name():
    assert methods.names() == [
        "source", "adaptable", "pl", "tent", "ttt++", "eata", "sar", "lame", "em", "bbse",
        "ftat", "fth", "ogd", "flh_ftl", "balanced", "oracle_prior", "labelled_recalibration",
        "labelled_prior", "labelled_online", "labelled_patch", "labelled_refit",
    ]  # fmt: skip
    with pytest.raises(ValueError, match="unknown method 'tentt'.*'tent'"):
        methods.create("tentt")
    with pytest.raises(TypeError, match="tent"):
        methods.create("tent", learning_rate=1.0)
    for name in PARAMETER_UPDATING:
        method = methods.create(name)
        assert isinstance(method, EpisodicTorchMethod) and method.updates_parameters
        assert method.name == name and method.episodic
    paper = {"pl": (1e-4, 1), "tent": (1e-4, 1), "sar": (1e-3, 1), "eata": (1e-5, 10)}
    paper["ttt++"] = (1e-5, 10)
    for name, (lr, steps) in paper.items():
        method = methods.create(name)
        assert (method.lr, method.steps) == (lr, steps)


def test_registry_maps_adaptable_to_the_method():
    from adaptable import AdapTable

    assert methods.method_class("adaptable") is AdapTable


@pytest.mark.parametrize("name", BASELINES)
def test_string_labels_give_the_same_numbers_and_label_predictions(name, torch_source, tiny_task):
    names = np.array(["no", "yes"])  # sorted, so code j is the model's column j
    by_code = fitted(name, torch_source, tiny_task)
    by_name = methods.create(name).fit(
        torch_source,
        tiny_task.train.X,
        names[tiny_task.train.y],
        tiny_task.valid.X,
        names[tiny_task.valid.y],
    )
    if getattr(by_name, "needs_test_labels", False):  # the oracle reads labels in their names
        by_name.receive_test_labels(names[tiny_task.test.y])
    assert by_name.classes_.tolist() == ["no", "yes"] and by_code.classes_.tolist() == [0, 1]
    batch = stream(tiny_task)[0]
    proba = by_name.predict_proba(batch)
    np.testing.assert_array_equal(proba, by_code.predict_proba(batch))
    by_name.reset()
    np.testing.assert_array_equal(by_name.predict(batch), names[proba.argmax(axis=1)])


@pytest.mark.parametrize("name", methods.names())
def test_every_method_is_a_scikit_learn_estimator(name):
    from sklearn.base import clone

    method = methods.create(name)
    assert repr(method).startswith(type(method).__name__)
    assert clone(method).get_params() == method.get_params()

"""The label-only anchors (``adaptable.baselines.labelled``): before labels, after labels, the
label set of fit, and ``partial_fit`` in any number of calls."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression

from adaptable.baselines.labelled import LabelledOnline, LabelledPrior, LabelledRecalibration
from adaptable.core import softmax

ANCHORS = (LabelledRecalibration, LabelledPrior, LabelledOnline)


@pytest.fixture(scope="module")
def task():
    rng = np.random.default_rng(0)
    y = (rng.random(1200) < 0.3).astype(int)
    X = rng.normal(size=(1200, 2)) + 1.5 * y[:, None]
    labels = np.where(y == 1, "yes", "no")
    model = LogisticRegression().fit(X[:800], labels[:800])
    # the target: both classes moved by +1 along the first feature (p(y|x) moved)
    yt = (rng.random(2000) < 0.3).astype(int)
    Xt = rng.normal(size=(2000, 2)) + 1.5 * yt[:, None] + np.array([1.0, 0.0])
    return model, X, labels, Xt, np.where(yt == 1, "yes", "no")


def _fitted(cls, task, **params):
    model, X, labels, _, _ = task
    return cls(**params).fit(model, X[:800], labels[:800], X[800:], labels[800:])


def test_before_any_label_recalibration_and_online_are_the_model(task) -> None:
    model, _, _, Xt, _ = task
    for cls in (LabelledRecalibration, LabelledOnline):
        method = _fitted(cls, task, objective="accuracy")
        np.testing.assert_allclose(method.predict_proba(Xt[:64]), model.predict_proba(Xt[:64]))
        assert method.n_labelled_ == 0


def test_labelled_prior_counts_with_laplace(task) -> None:
    model, X, labels, Xt, yt = task
    method = _fitted(LabelledPrior, task, objective="accuracy")
    np.testing.assert_allclose(method.target_prior_, [0.5, 0.5])  # no label: uniform
    method.partial_fit(Xt[:10], ["yes"] * 3 + ["no"] * 7)
    np.testing.assert_allclose(method.target_prior_, [8 / 12, 4 / 12])
    p_s = np.bincount(np.where(labels == "yes", 1, 0)) / len(labels)
    p = model.predict_proba(Xt[:5])
    expected = p * (np.array([8 / 12, 4 / 12]) / p_s)
    np.testing.assert_allclose(
        method.predict_proba(Xt[:5]), expected / expected.sum(axis=1, keepdims=True)
    )
    method.reset()
    assert method.n_labelled_ == 0 and method.target_prior_.tolist() == [0.5, 0.5]


@pytest.mark.parametrize("cls", ANCHORS)
def test_labels_in_one_call_or_many_give_the_same_method(cls, task) -> None:
    _, _, _, Xt, yt = task
    whole, pieces = _fitted(cls, task), _fitted(cls, task)
    whole.partial_fit(Xt[:300], yt[:300])
    for start, stop in [(0, 1), (1, 120), (120, 120), (120, 300)]:
        pieces.partial_fit(Xt[start:stop], yt[start:stop])
    assert pieces.n_labelled_ == 300
    np.testing.assert_allclose(
        pieces.predict_proba(Xt[300:400]), whole.predict_proba(Xt[300:400]), rtol=1e-10
    )


@pytest.mark.parametrize("cls", (LabelledRecalibration, LabelledOnline))
def test_labels_where_p_y_given_x_moved_improve_accuracy(cls, task) -> None:
    model, _, _, Xt, yt = task
    method = _fitted(cls, task, objective="accuracy")
    method.partial_fit(Xt[:1000], yt[:1000])
    adapted = np.mean(method.predict(Xt[1000:]) == yt[1000:])
    unadapted = np.mean(model.predict(Xt[1000:]) == yt[1000:])
    assert adapted > unadapted + 0.03


def test_recalibration_fits_the_moved_offset(task) -> None:
    _, _, _, Xt, yt = task
    method = _fitted(LabelledRecalibration, task, objective="accuracy")
    method.partial_fit(Xt[:4], yt[:4])  # below min_labelled (5): no fit yet
    assert method.scale_ == 1.0 and method.offset_.tolist() == [0.0, 0.0]
    method.partial_fit(Xt[4:1500], yt[4:1500])
    # the classes moved by +1 along a feature the model weights by about 1.5: class 1's
    # offset falls by about 1.5 against class 0's
    assert method.offset_[1] - method.offset_[0] < -1.0


def test_anchors_refuse_bad_labels_and_parameters(task) -> None:
    _, _, _, Xt, _ = task
    method = _fitted(LabelledOnline, task)
    with pytest.raises(ValueError, match="unseen"):
        method.partial_fit(Xt[:2], ["yes", "maybe"])
    with pytest.raises(ValueError, match="rows"):
        method.partial_fit(Xt[:3], ["yes", "no"])
    with pytest.raises(ValueError, match="objective"):
        _fitted(LabelledPrior, task, objective="f2")
    with pytest.raises(ValueError, match="learning_rate"):
        _fitted(LabelledOnline, task, learning_rate=0.0)
    with pytest.raises(ValueError, match="strength"):
        _fitted(LabelledRecalibration, task, strength=-1.0)


@pytest.mark.parametrize("cls", ANCHORS)
def test_anchors_are_estimators_that_decide_for_the_objective(cls, task) -> None:
    _, _, _, Xt, yt = task
    method = _fitted(cls, task, seed=3)
    assert clone(method).get_params()["seed"] == 3
    method.partial_fit(Xt[:200], yt[:200])
    proba = method.predict_proba(Xt[200:264])
    assert proba.shape == (64, 2) and np.allclose(proba.sum(axis=1), 1.0)
    assert set(method.predict(Xt[200:264])) <= {"no", "yes"}


def test_online_learner_takes_one_step_per_row_from_the_identity(task) -> None:
    model, _, _, Xt, yt = task
    method = _fitted(LabelledOnline, task, learning_rate=0.5, objective="accuracy")
    method.partial_fit(Xt[:1], yt[:1])
    p = model.predict_proba(Xt[:1])[0]
    features = np.log(p)
    residual = p.copy()
    residual[int(yt[0] == "yes")] -= 1.0
    np.testing.assert_allclose(method.weights_, np.eye(2) - 0.5 * np.outer(residual, features))
    np.testing.assert_allclose(method.bias_, -0.5 * residual)
    expected = softmax((np.log(model.predict_proba(Xt[1:3])) @ method.weights_.T) + method.bias_)
    np.testing.assert_allclose(method.predict_proba(Xt[1:3]), expected)

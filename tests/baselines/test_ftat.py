"""FTAT: its three parts against hand-computed cases, episodic resets, 3 classes, any model."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
import xgboost
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression

from adaptable import datasets, methods
from adaptable.baselines import FTAT
from adaptable.baselines.ftat import (
    confident_distribution_step,
    consistent_rows,
    ensemble_weights,
)
from adaptable.models.mlp import MLP
from adaptable.models.source_model import TorchSourceModel


def softmax(values) -> np.ndarray:
    e = np.exp(np.asarray(values) - np.max(values))
    return e / e.sum()


def batches(task, sizes=(64, 64, 7, 1)) -> list:
    out, start = [], 0
    for size in sizes:
        out.append(task.test.X.iloc[start : start + size])
        start += size
    return out


def snapshot(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def same_state(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def fitted(task, model, **options) -> FTAT:
    return FTAT(**options).fit(model, task.train.X, task.train.y, task.valid.X, task.valid.y)


# --------------------------------------------------------------------------- the three parts
def test_confident_distribution_step_by_hand():
    adjusted = np.array([[0.9, 0.1], [0.8, 0.2], [0.4, 0.6], [0.2, 0.8]])
    # Predicted 0: rows 0, 1; predicted 1: rows 2, 3 -> A = [[.85, .15], [.3, .7]].
    # Confident (entropy below H(.7, .3)): rows 0, 1, 3 -> b = (1.9 / 3, 1.1 / 3).
    # A x = b: det = .55, x = ((.7 b0 - .15 b1) / .55, (.85 b1 - .3 b0) / .55).
    b0, b1 = 1.9 / 3, 1.1 / 3
    x = np.array([(0.7 * b0 - 0.15 * b1) / 0.55, (0.85 * b1 - 0.3 * b0) / 0.55])
    expected = softmax(np.array([0.5, 0.5]) - 0.1 * x)
    result = confident_distribution_step(adjusted, np.array([0.5, 0.5]))
    np.testing.assert_allclose(result, expected)
    np.testing.assert_allclose(result, [0.4879, 0.5121], atol=1e-4)
    # smooth scales the step; confidence moves the threshold (0.85: only row 0 is confident).
    np.testing.assert_allclose(
        confident_distribution_step(adjusted, np.array([0.5, 0.5]), smooth=0.3),
        softmax(np.array([0.5, 0.5]) - 0.3 * x),
    )
    b = np.array([0.9, 0.1])
    x = np.array([(0.7 * b[0] - 0.15 * b[1]) / 0.55, (0.85 * b[1] - 0.3 * b[0]) / 0.55])
    np.testing.assert_allclose(
        confident_distribution_step(adjusted, np.array([0.6, 0.4]), confidence=0.85),
        softmax(np.array([0.6, 0.4]) - 0.1 * x),
    )


def test_confident_distribution_step_three_classes():
    adjusted = np.array(
        [[0.8, 0.1, 0.1], [0.6, 0.3, 0.1], [0.2, 0.7, 0.1], [0.1, 0.2, 0.7], [0.2, 0.2, 0.6]]
    )
    a = np.array([[0.7, 0.2, 0.1], [0.2, 0.7, 0.1], [0.15, 0.2, 0.65]])  # per-predicted-class
    # Reference (.7, .15, .15) has entropy 0.8188; rows 0 (0.6390), 2 (0.8018), 3 (0.8018) are
    # below it, rows 1 (0.8979) and 4 (0.9503) are not.
    b = (adjusted[0] + adjusted[2] + adjusted[3]) / 3
    prior = np.array([0.5, 0.3, 0.2])
    expected = softmax(prior - 0.1 * np.linalg.solve(a, b))
    np.testing.assert_allclose(confident_distribution_step(adjusted, prior), expected)


def test_confident_distribution_step_leaves_pi_when_undefined():
    prior = np.array([0.3, 0.7])
    one_class = np.array([[0.9, 0.1], [0.8, 0.2]])  # class 1 never predicted: A has no row 1
    np.testing.assert_array_equal(confident_distribution_step(one_class, prior), prior)
    unsure = np.array([[0.6, 0.4], [0.4, 0.6]])  # no row below the entropy of (.7, .3)
    np.testing.assert_array_equal(confident_distribution_step(unsure, prior), prior)


def test_neighbour_filter_by_hand():
    # Mean pairwise distance is about 2.6: each cluster's rows are each other's neighbours only.
    x = torch.tensor([[0.0], [0.1], [0.2], [0.3], [5.0], [5.1]])
    labels = torch.tensor([0, 0, 0, 1, 1, 1])
    # Left cluster: rows 0-2 agree with 3 of 4 neighbours (0.75 >= 0.7), row 3 with 1 of 4.
    assert consistent_rows(x, labels).tolist() == [True, True, True, False, True, True]
    assert consistent_rows(x, labels, agreement=0.8).tolist() == [
        False, False, False, False, True, True,
    ]  # fmt: skip
    # Three classes: row 2's neighbourhood is split three ways.
    three = torch.tensor([0, 0, 2, 1, 1, 1])
    assert consistent_rows(x, three).tolist() == [False, False, False, False, True, True]
    # Exactly 7 of 10 neighbours agree: kept ("at least 0.7").
    x = torch.cat([torch.arange(10.0), 100 + torch.arange(10.0)])[:, None] / 10
    labels = torch.tensor([0] * 7 + [1] * 3 + [1] * 10)
    assert consistent_rows(x, labels).tolist() == [True] * 7 + [False] * 3 + [True] * 10


def test_neighbour_filter_is_the_authors_binary_rule():
    """Their rule: keep i when |mean of pseudo-labels over N_i - pseudo-label_i| <= 0.3."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 5))
    labels = (x[:, 0] + 0.7 * rng.normal(size=64) > 0).astype(np.int64)
    distance = np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))
    neighbours = distance <= distance.mean()
    share = (neighbours * labels[None]).sum(1) / neighbours.sum(1)
    authors = np.abs(share - labels) <= 0.3
    ours = consistent_rows(torch.tensor(x), torch.tensor(labels)).numpy()
    np.testing.assert_array_equal(ours, authors)
    assert 0 < authors.sum() < 64


def test_ensemble_weights_by_hand():
    sure_or_even = torch.tensor([[1.0, 0.0], [0.5, 0.5]])  # H * margin = 0 on both rows
    three_to_one = torch.tensor([[0.75, 0.25], [0.25, 0.75]])
    h = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25)) / math.log(2)
    scores = torch.tensor([1.0, 1.0 - h * 0.5])
    torch.testing.assert_close(
        ensemble_weights([sure_or_even, three_to_one]), scores / scores.sum()
    )


# --------------------------------------------------------------------------- the method
def test_one_update_by_hand(torch_source, tiny_task):
    batch = batches(tiny_task)[0]
    method = fitted(tiny_task, torch_source, learning_rates=(1e-2, 3e-2))
    method.predict_proba(batch)
    x = torch_source.prepare(batch)
    copies = [copy.deepcopy(torch_source.module) for _ in range(2)]
    with torch.no_grad():
        probas = [m(x).softmax(1) for m in copies]
        weights = ensemble_weights(probas)
        keep = consistent_rows(x, (weights[0] * probas[0] + weights[1] * probas[1]).argmax(1))
    assert method.n_consistent_ == int(keep.sum()) > 0
    for module, lr, reference in zip(method.modules_, (1e-2, 3e-2), copies, strict=True):
        logits = reference(x)[keep]
        p = logits.softmax(1)
        top2 = p.topk(2, dim=1).values
        entropy = -(p * F.log_softmax(logits, 1)).sum(1)
        loss = (entropy * (top2[:, 0] - top2[:, 1])).mean()
        loss.backward()
        with torch.no_grad():
            for parameter in reference.parameters():
                parameter -= lr * parameter.grad
        for key, value in reference.state_dict().items():
            torch.testing.assert_close(module.state_dict()[key], value, rtol=1e-5, atol=1e-7)


def test_reset_restores_every_tensor(torch_source, tiny_task):
    user = snapshot(torch_source.module)
    method = fitted(
        tiny_task, torch_source, learning_rates=(1e-2, 5e-2, 2e-2), steps=3, episodic=False
    )
    optimiser_states = [copy.deepcopy(o.state_dict()) for o in method.optimizers_]
    first = [method.predict_proba(b) for b in batches(tiny_task)]
    assert all(not same_state(snapshot(m), user) for m in method.modules_)
    assert not np.array_equal(method.target_prior_, method.source_prior_)
    assert same_state(snapshot(torch_source.module), user)  # the user's module is never touched
    method.reset()
    for module, optimiser, state in zip(
        method.modules_, method.optimizers_, optimiser_states, strict=True
    ):
        assert same_state(snapshot(module), user)
        assert optimiser.state_dict() == state
    np.testing.assert_array_equal(method.target_prior_, method.source_prior_)
    again = [method.predict_proba(b) for b in batches(tiny_task)]
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)


def test_episodic_copies_start_from_the_source_on_every_batch(torch_source, tiny_task):
    first, second = batches(tiny_task)[:2]
    streamed = fitted(tiny_task, torch_source, learning_rates=(1e-2, 5e-2, 2e-2))
    streamed.predict_proba(first)
    streamed.predict_proba(second)
    alone = fitted(tiny_task, torch_source, learning_rates=(1e-2, 5e-2, 2e-2))
    alone.predict_proba(second)
    for a, b in zip(streamed.modules_, alone.modules_, strict=True):
        assert same_state(snapshot(a), snapshot(b))
    assert not same_state(snapshot(alone.modules_[1]), snapshot(torch_source.module))


@pytest.fixture(scope="module")
def three_class():
    task = datasets.make_shift_dataset(n_train=300, n_valid=150, n_test=200, n_classes=3, seed=5)
    encoder = datasets.fit_encoder(task)
    torch.manual_seed(0)
    module = MLP(encoder, 3, d_block=16)
    x = torch.from_numpy(encoder.transform(task.train.X))
    y = torch.from_numpy(task.train.y)
    optimiser = torch.optim.Adam(module.parameters(), lr=1e-2)
    for _ in range(100):
        optimiser.zero_grad()
        F.cross_entropy(module(x), y).backward()
        optimiser.step()
    return task, TorchSourceModel(module.eval(), encoder, 3, name="mlp")


@pytest.mark.parametrize("ensemble", [True, False])
def test_three_classes(ensemble, three_class):
    task, model = three_class
    runs = []
    for _ in range(2):
        method = fitted(task, model, ensemble=ensemble, learning_rates=(1e-3, 1e-2, 5e-3))
        probas = [method.predict_proba(b) for b in batches(task)]
        for proba, b in zip(probas, batches(task), strict=True):
            assert proba.shape == (len(b), 3) and np.all(proba >= 0)
            np.testing.assert_allclose(proba.sum(axis=1), 1.0)
        assert method.target_prior_.shape == (3,)
        runs.append(np.concatenate(probas))
    np.testing.assert_array_equal(runs[0], runs[1])


def test_gbdt_needs_the_label_distribution_variant(tiny_task):
    encoder = datasets.fit_encoder(tiny_task)
    x = encoder.transform(tiny_task.train.X)
    gbdt = xgboost.XGBClassifier(n_estimators=3, max_depth=2).fit(x, tiny_task.train.y)
    with pytest.raises(TypeError, match=r"'ftat'.*ftat\[ensemble=false\]"):
        methods.create("ftat").fit(gbdt, x, tiny_task.train.y)
    method = methods.create("ftat", ensemble=False).fit(gbdt, x, tiny_task.train.y)
    assert not method.updates_parameters and methods.create("ftat").updates_parameters
    proba = method.predict_proba(encoder.transform(tiny_task.test.X.iloc[:64]))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


def test_label_distribution_vector_is_not_a_prior_estimate():
    """The authors' rule pi <- softmax(pi - 0.1 x) keeps pi near uniform and moves it away from
    the classes the confident rows predict: on a pure label shift towards class 1 it ends below
    one half for class 1 (see the module docstring)."""
    rng = np.random.default_rng(0)

    def draw(n, prior):
        y = rng.choice(2, size=n, p=prior)
        return np.where(y[:, None] == 1, 1.0, -1.0) + rng.normal(size=(n, 2)), y

    x_source, y_source = draw(4000, [0.7, 0.3])
    x_target, y_target = draw(64 * 50, [0.25, 0.75])
    model = LogisticRegression().fit(x_source, y_source)
    method = FTAT(ensemble=False).fit(model, x_source, y_source)
    for b in range(50):
        method.predict_proba(x_target[64 * b : 64 * b + 64])
    assert y_target.mean() > 0.7
    assert 0.4 < method.target_prior_[1] < 0.5


def test_bad_options():
    with pytest.raises(ValueError, match="learning_rates"):
        FTAT(learning_rates=(1e-3, 0.0))
    with pytest.raises(ValueError, match="confidence"):
        FTAT(confidence=1.0)
    with pytest.raises(ValueError, match="consistency"):
        FTAT(consistency=0.0)
    with pytest.raises(NotFittedError, match="fit"):
        FTAT().reset()

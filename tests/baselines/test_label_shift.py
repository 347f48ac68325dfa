"""EM (Saerens) on BCTS outputs, BBSE, BCTS itself and LAME's pieces, against known answers."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from adaptable.baselines import (
    BBSE,
    EMPriorAdjustment,
    bbse_prior,
    em_prior,
    fit_bcts,
    laplacian_optimisation,
    rbf_affinity,
)
from adaptable.core import softmax

SOURCE_PRIOR = [0.6, 0.3, 0.1]
TARGET_PRIOR = np.array([0.15, 0.35, 0.5])


def gaussian_rows(n: int, prior, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Class-conditional Gaussians N(mu_y, I) in 2-D, means on a circle of radius 2."""
    prior = np.asarray(prior, dtype=float)
    y = rng.choice(len(prior), size=n, p=prior / prior.sum())
    angles = 2 * np.pi * np.arange(len(prior)) / len(prior)
    means = 2.0 * np.stack([np.cos(angles), np.sin(angles)], axis=1)
    return means[y] + rng.normal(size=(n, 2)), y.astype(np.int64)


@pytest.fixture(scope="module")
def label_shift_task():
    """A well-specified logistic model (equal-covariance Gaussians) and a shifted target."""
    rng = np.random.default_rng(0)
    x_source, y_source = gaussian_rows(6000, SOURCE_PRIOR, rng)
    x_valid, y_valid = gaussian_rows(6000, SOURCE_PRIOR, rng)
    x_target, y_target = gaussian_rows(30000, TARGET_PRIOR, rng)
    model = LogisticRegression(C=100.0).fit(x_source, y_source)
    return model, (x_source, y_source), (x_valid, y_valid), (x_target, y_target)


@pytest.mark.parametrize(
    "make",
    [
        lambda: EMPriorAdjustment(alpha=0.0),
        lambda: BBSE(alpha=0.0),
        lambda: BBSE(alpha=0.0, soft=True),
    ],
    ids=["em", "bbse", "bbse-soft"],
)
def test_recovers_a_known_target_prior(make, label_shift_task):
    model, source, valid, (x_target, y_target) = label_shift_task
    method = make().fit(model, *source, *valid)
    proba = method.predict_proba(x_target)
    true_prior = np.bincount(y_target, minlength=3) / len(y_target)
    np.testing.assert_allclose(method.batch_prior_, true_prior, atol=0.02)
    # Re-weighting towards the right prior must beat the unadapted model's accuracy.
    source_acc = (model.predict(x_target) == y_target).mean()
    assert (proba.argmax(1) == y_target).mean() > source_acc + 0.02


@pytest.mark.parametrize("cls", [EMPriorAdjustment, BBSE])
def test_online_smoothing_is_adaptables(cls, label_shift_task):
    model, source, valid, (x_target, _) = label_shift_task
    method = cls(alpha=0.1).fit(model, *source, *valid)
    method.predict_proba(x_target[:64])
    first = method.batch_prior_
    np.testing.assert_allclose(method.target_prior_, 0.9 * first + 0.1 / 3)
    method.predict_proba(x_target[64:128])
    np.testing.assert_allclose(
        method.target_prior_, 0.9 * method.batch_prior_ + 0.1 * (0.9 * first + 0.1 / 3)
    )
    method.reset()
    assert method.target_prior_ is None
    method.predict_proba(x_target[:64])
    np.testing.assert_allclose(method.batch_prior_, first)


def test_em_prior_fixed_point_by_hand():
    proba = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7]])
    prior = em_prior(proba, np.array([0.5, 0.5]), tol=1e-12, max_iter=10_000)
    # At the fixed point pi = mean_i norm(p_i * pi / p_s).
    np.testing.assert_allclose(
        (proba * prior / (proba * prior).sum(1, keepdims=True)).mean(0), prior, atol=1e-9
    )
    # No shift in the posteriors' mean -> the source prior comes back.
    balanced = np.array([[0.7, 0.3], [0.3, 0.7]])
    np.testing.assert_allclose(em_prior(balanced, np.array([0.5, 0.5])), [0.5, 0.5])


def test_bbse_by_hand():
    confusion = np.array([[0.4, 0.1], [0.1, 0.4]])
    predicted = np.array([0] * 7 + [1] * 3)
    np.testing.assert_allclose(
        bbse_prior(predicted, confusion, np.array([0.5, 0.5])), [5 / 6, 1 / 6]
    )
    # An impossible prediction mix clips the negative weight to 0.
    np.testing.assert_allclose(
        bbse_prior(np.zeros(10, dtype=int), confusion, np.array([0.5, 0.5])), [1.0, 0.0]
    )


def test_bbse_singular_confusion_warns_and_soft_recovers():
    rng = np.random.default_rng(2)
    x, y = gaussian_rows(4000, [0.8, 0.2], rng)

    class MajorityLeaning:
        """Always predicts class 0, yet its probabilities still carry information."""

        def predict_proba(self, X):
            p1 = 0.45 / (1.0 + np.exp(2.0 * X[:, 0]))  # < 0.5 everywhere
            return np.stack([1.0 - p1, p1], axis=1)

    with pytest.warns(RuntimeWarning, match="singular"):
        BBSE().fit(MajorityLeaning(), x, y, x, y)
    soft = BBSE(soft=True, alpha=0.0).fit(MajorityLeaning(), x, y, x, y)
    proba = soft.predict_proba(x[:500])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.all(np.isfinite(soft.batch_prior_))


def test_bcts_recovers_temperature_and_bias():
    rng = np.random.default_rng(1)
    logits = rng.normal(scale=3.0, size=(20000, 3))
    bias = np.array([0.5, -0.2, -0.3])
    proba = softmax(logits / 2.0 + bias)
    y = (rng.random((20000, 1)) > proba.cumsum(1)).sum(1)
    fitted = fit_bcts(logits, y)
    assert fitted.temperature == pytest.approx(2.0, rel=0.05)
    np.testing.assert_allclose(fitted.bias, bias - bias.mean(), atol=0.05)


def test_lame_pieces_by_hand():
    features = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 4.0]])
    kernel = rbf_affinity(features, knn=2)
    # 2nd nearest (self first): distances 3, 3, 4 -> sigma = 10/3.
    sigma = 10.0 / 3.0
    assert kernel[0, 2] == pytest.approx(np.exp(-16.0 / (2 * sigma**2)))
    assert kernel[1, 2] == pytest.approx(np.exp(-25.0 / (2 * sigma**2)))
    np.testing.assert_allclose(np.diag(kernel), 1.0)
    proba = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]])
    unary = -np.log(proba)
    # Without the Laplacian term LAME returns the model's probabilities.
    np.testing.assert_allclose(laplacian_optimisation(unary, kernel, bound_lambda=0.0), proba)
    # One iteration by hand: softmax(log p + K p).
    one = laplacian_optimisation(unary, kernel, max_steps=1)
    np.testing.assert_allclose(one, softmax(np.log(proba) + kernel @ proba))

"""The isotonic ablation calibrator against scikit-learn's IsotonicRegression, binary and
multi-class, and its saved state."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.isotonic import IsotonicRegression

from adaptable.core.paper.calibrators import IsotonicCalibrator
from adaptable.framework.probability import softmax


def _data(n_classes: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, n_classes, 400)
    logits = rng.normal(size=(400, n_classes))
    logits[np.arange(400), labels] += 1.0
    return logits, labels


def _sklearn(proba_fit, target, proba_new) -> np.ndarray:
    iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(proba_fit, target)
    return iso.predict(proba_new)


def test_binary_equals_scikit_learn_on_class_one() -> None:
    logits, labels = _data(2)
    cal = IsotonicCalibrator().fit(logits[:300], labels[:300])
    q, temperatures = cal.calibrate(logits[300:])
    p_fit, p_new = softmax(logits[:300]), softmax(logits[300:])
    expected = _sklearn(p_fit[:, 1], labels[:300] == 1, p_new[:, 1])
    np.testing.assert_allclose(q[:, 1], expected)
    np.testing.assert_allclose(q[:, 0], 1.0 - expected)
    assert np.isnan(temperatures).all() and temperatures.shape == (100,)
    # beyond the fitted range the end values are kept (clipped)
    extreme = cal.calibrate(np.array([[0.0, 50.0], [50.0, 0.0]]))[0]
    np.testing.assert_allclose(extreme[:, 1], [cal.knots_y[0][-1], cal.knots_y[0][0]])


def test_multiclass_is_one_vs_rest_renormalised() -> None:
    logits, labels = _data(3, seed=1)
    cal = IsotonicCalibrator().fit(logits[:300], labels[:300])
    q, _ = cal.calibrate(logits[300:])
    p_fit, p_new = softmax(logits[:300]), softmax(logits[300:])
    columns = np.stack(
        [_sklearn(p_fit[:, j], labels[:300] == j, p_new[:, j]) for j in range(3)], axis=1
    )
    total = columns.sum(axis=1, keepdims=True)
    expected = np.where(total > 0, columns / np.where(total > 0, total, 1.0), 1.0 / 3)
    np.testing.assert_allclose(q, expected)
    np.testing.assert_allclose(q.sum(axis=1), 1.0)


def test_a_row_every_class_model_scores_zero_becomes_uniform() -> None:
    zero = [np.array([0.0, 1.0]), np.array([0.0, 1.0]), np.array([0.0, 1.0])]
    flat = [np.array([0.0, 0.0]), np.array([0.0, 0.0]), np.array([0.0, 0.0])]
    q, _ = IsotonicCalibrator(zero, flat).calibrate(np.array([[1.0, 2.0, 3.0]]))
    np.testing.assert_allclose(q, [[1 / 3, 1 / 3, 1 / 3]])


def test_saved_state_round_trips_and_is_checked() -> None:
    logits, labels = _data(3, seed=2)
    cal = IsotonicCalibrator().fit(logits, labels)
    arrays = cal.arrays()
    assert sorted(arrays) == [f"knots_{a}.{j}" for a in "xy" for j in range(3)]
    again = IsotonicCalibrator.from_arrays(arrays, 3)
    np.testing.assert_array_equal(again.calibrate(logits)[0], cal.calibrate(logits)[0])
    bad = dict(arrays)
    bad["knots_x.1"] = bad["knots_x.1"][::-1].copy()
    with pytest.raises(ValueError, match="knots 1 must be increasing"):
        IsotonicCalibrator.from_arrays(bad, 3)
    bad = dict(arrays)
    bad["knots_y.0"] = bad["knots_y.0"] + 2.0
    with pytest.raises(ValueError, match="knots 0"):
        IsotonicCalibrator.from_arrays(bad, 3)
    with pytest.raises(ValueError):
        IsotonicCalibrator.from_arrays({k: v for k, v in arrays.items() if k != "knots_y.2"}, 3)
    binary = IsotonicCalibrator().fit(*_data(2))
    assert sorted(binary.arrays()) == ["knots_x.0", "knots_y.0"]

"""Temperature scaling, the calibrator the recommended preset can plug in: its fit is the
negative-log-likelihood minimiser, and its saved state is checked on load."""

from __future__ import annotations

import numpy as np
import pytest

from adaptable.core.paper.calibrators import TemperatureCalibrator


def _nll(logits: np.ndarray, labels: np.ndarray, t: float) -> float:
    scaled = logits / t
    log_p = scaled - np.log(np.exp(scaled).sum(axis=1, keepdims=True))
    return float(-log_p[np.arange(len(labels)), labels].mean())


@pytest.mark.parametrize("sharpness", [0.3, 1.0, 3.0])
def test_fit_minimises_the_validation_nll(sharpness) -> None:
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, 500)
    logits = rng.normal(size=(500, 3))
    logits[np.arange(500), labels] += 1.5
    logits *= sharpness  # over- or under-confident versions of the same model
    t = TemperatureCalibrator().fit(logits, labels).temperature
    grid = np.exp(np.linspace(-3, 3, 2001))
    best = grid[np.argmin([_nll(logits, labels, g) for g in grid])]
    assert t == pytest.approx(best, rel=0.01)
    assert _nll(logits, labels, t) <= _nll(logits, labels, 1.0) + 1e-12
    if sharpness != 1.0:  # over-confident logits are softened (T > 1), timid ones sharpened
        assert (t > 1.0) == (sharpness > 1.0)


def test_calibrate_divides_every_logit_by_t() -> None:
    cal = TemperatureCalibrator(2.0)
    z = np.array([[0.0, 2.0, 4.0], [1.0, 1.0, 1.0]])
    q, temperatures = cal.calibrate(z)
    expected = np.exp(z / 2.0) / np.exp(z / 2.0).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(q, expected)
    np.testing.assert_array_equal(temperatures, [2.0, 2.0])
    assert (q.argmax(1) == z.argmax(1)).all()


def test_saved_state_round_trips_and_is_checked() -> None:
    cal = TemperatureCalibrator(1.7)
    arrays = cal.arrays()
    np.testing.assert_array_equal(arrays["temperature"], [1.7])
    assert TemperatureCalibrator.from_arrays(arrays, 2).temperature == pytest.approx(1.7)
    for bad in ({"temperature": np.array([0.0])}, {"temperature": np.array([-1.0])}):
        with pytest.raises(ValueError, match="temperature must be > 0"):
            TemperatureCalibrator.from_arrays(bad, 2)
    with pytest.raises(ValueError, match="temperature"):
        TemperatureCalibrator.from_arrays({"temperature": np.array([1.0, 2.0])}, 2)
    with pytest.raises(ValueError):
        TemperatureCalibrator.from_arrays({"temperature": np.array([np.nan])}, 2)
    with pytest.raises(ValueError):
        TemperatureCalibrator.from_arrays({"temperature": np.array([1.0]), "extra": np.zeros(1)}, 2)

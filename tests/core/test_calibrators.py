"""The calibrator registry: every name fits, saves its own arrays and loads to the same q."""

from __future__ import annotations

import numpy as np
import pytest

from adaptable.core import CALIBRATORS, GraphCalibrator, SourceData
from adaptable.core.paper.calibrators import (
    ABLATION_CALIBRATORS,
    calibrator_state,
    fit_calibrator,
    load_calibrator,
)
from adaptable.core.parts.contexts import FitContext

from .conftest import load_context


def _context() -> FitContext:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 300)
    logits = rng.normal(size=(300, 3)) + 2.0 * np.eye(3)[y]
    prior = np.bincount(y, minlength=3) / 300
    return FitContext(SourceData(None, y), logits, None, prior)


def test_the_registry_holds_g_phi_and_the_ablations() -> None:
    assert CALIBRATORS["gnn"] is GraphCalibrator
    assert set(CALIBRATORS) == {"gnn", *ABLATION_CALIBRATORS}
    assert {c.is_softmax for c in CALIBRATORS.values()} == {True, False}
    assert [n for n, c in CALIBRATORS.items() if c.is_softmax] == ["none"]


@pytest.mark.parametrize("name", ["none", "temperature", "platt", "isotonic"])
def test_each_ablation_round_trips_through_its_state(name) -> None:
    context = _context()
    calibrator = fit_calibrator(name, context, {})
    state = calibrator_state(calibrator)
    assert all(key.startswith("calibrator.") for key in state.arrays)
    twin = load_calibrator(name, load_context(state, {}, context.source_prior))
    logits = np.random.default_rng(1).normal(size=(20, 3))
    np.testing.assert_array_equal(twin.calibrate(logits)[0], calibrator.calibrate(logits)[0])


def test_a_malformed_ablation_state_names_the_calibrator() -> None:
    context = _context()
    state = calibrator_state(fit_calibrator("temperature", context, {}))
    state.arrays["calibrator.temperature"] = np.array([-1.0])
    with pytest.raises(ValueError, match="'calibrator'"):
        load_calibrator("temperature", load_context(state, {}, context.source_prior))

"""The paper's decider through its public interface: fit, decide, reset, state, from_state."""

from __future__ import annotations

import numpy as np
import pytest

from adaptable.core import (
    CalibratedBatch,
    InvalidParameterError,
    OnlinePrior,
    PaperDecider,
    adjust_batch,
    softmax,
)
from adaptable.core.parts.contexts import FitContext

from .conftest import load_context

PRIOR = np.array([0.75, 0.25])
PARAMS = {"alpha": 0.2, "q_low": 0.25, "q_high": 0.75, "temperature": None, "max_temperature": None}


def _batch(seed: int, n: int = 16) -> CalibratedBatch:
    logits = np.random.default_rng(seed).normal(size=(n, 2)) * 2
    return CalibratedBatch(logits, softmax(logits, 1.5))


def _fitted(**params) -> PaperDecider:
    return PaperDecider.from_params({**PARAMS, **params}).fit(FitContext(None, None, None, PRIOR))


def test_fit_sets_the_papers_temperature_and_a_uniform_online_prior() -> None:
    decider = _fitted()
    # T = 1.5 rho / (rho - 1 + 1e-6), rho = 3
    assert decider.temperature_ == pytest.approx(1.5 * 3 / (2 + 1e-6), rel=1e-12)
    assert decider.online_prior.tolist() == [0.5, 0.5]
    assert _fitted(temperature=4.0).temperature_ == 4.0
    assert _fitted(max_temperature=2.0).temperature_ == 2.0


def test_decide_is_the_label_handler_and_advances_the_online_prior() -> None:
    decider = _fitted()
    online = OnlinePrior(2, 0.2)
    for seed in range(3):
        batch = _batch(seed)
        decision = decider.decide(batch)
        expected = adjust_batch(
            batch.logits, batch.calibrated, PRIOR, online, decider.temperature_, 0.25, 0.75
        )
        np.testing.assert_array_equal(decision.proba, expected.proba)
        np.testing.assert_array_equal(decision.online_prior, online.value)
        np.testing.assert_array_equal(decider.online_prior, online.value)
        assert decision.rule is None and decision.shift_statistic is None
    assert not np.allclose(decider.online_prior, 0.5)
    decider.reset()
    assert decider.online_prior.tolist() == [0.5, 0.5]


def test_state_restores_mid_stream_and_continues_identically() -> None:
    decider = _fitted()
    decider.decide(_batch(0))
    twin = PaperDecider.from_state(load_context(decider.state(), PARAMS, PRIOR))
    assert twin.temperature_ == decider.temperature_
    for seed in (1, 2):
        batch = _batch(seed)
        np.testing.assert_array_equal(twin.decide(batch).proba, decider.decide(batch).proba)


def test_from_state_refuses_a_temperature_the_prior_does_not_give() -> None:
    decider = _fitted()
    context = load_context(decider.state(), PARAMS, PRIOR, temperature=5.0)
    with pytest.raises(ValueError, match="'temperature'"):
        PaperDecider.from_state(context)


def test_quantiles_must_be_ordered() -> None:
    with pytest.raises(InvalidParameterError, match="q_low <= q_high"):
        PaperDecider.check_parameters({**PARAMS, "q_low": 0.8, "q_high": 0.2})

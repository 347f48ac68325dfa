"""The covariate-weighted estimate: the held-out rows weighted towards the stream's features
recover a known performance under covariate shift, and drift_summary's verdict reads it
(degraded, holding, or why not), across save / load and pickling."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

from adaptable import AdapTable
from adaptable.core.decision.rules import confusion, score
from adaptable.core.report.covariate_estimate import (
    combined,
    domain_weights,
    effective_rows,
    weighted_estimates,
)
from adaptable.core.report.covariate_reading import MIN_EFFECTIVE_ROWS
from adaptable.core.report.drift_log import DriftLog
from adaptable.core.report.feature_sample import FeatureSample

BATCH = 64


def _rows(n: int, centre: float, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    """Two features; the label follows x1 (P(y = 1) = sigmoid(4 x1)) below x1 = 1 and is a
    coin flip above it: p(y | x) is the same wherever the rows come from (a covariate shift
    moves only ``centre``, the mean of x1)."""
    rng = np.random.default_rng(seed)
    x1, x2 = rng.normal(centre, 1.0, n), rng.normal(0.0, 1.0, n)
    chance = np.where(x1 < 1.0, 1.0 / (1.0 + np.exp(-4.0 * x1)), 0.5)
    return pd.DataFrame({"x1": x1, "x2": x2}), (rng.random(n) < chance).astype(np.int64)


@pytest.fixture(scope="module")
def source():
    """A logistic model fitted where x1 is centred at 0, and 3,000 held-out rows."""
    X, y = _rows(4000, 0.0, seed=1)
    X_valid, y_valid = _rows(3000, 0.0, seed=2)
    return LogisticRegression().fit(X, y), X, y, X_valid, y_valid


def _adapted(source, centre: float, batches: int = 60, seed: int = 3) -> AdapTable:
    model, X, y, X_valid, y_valid = source
    method = AdapTable(random_state=0).fit(model, X, y, X_valid, y_valid)
    stream, _ = _rows(batches * BATCH, centre, seed=seed)
    for t in range(batches):
        method.predict(stream.iloc[t * BATCH : (t + 1) * BATCH])
    return method


def test_the_weighted_estimate_recovers_a_known_covariate_shift(source) -> None:
    """x1 moved from 0 to 1.2: most of the stream lies where the labels are coin flips, and
    the model, confident there, falls. The weighted held-out rows see it, within their
    deviation of the truth (the objective on 200,000 rows of the shifted distribution); the
    unweighted held-out level misses it by far more."""
    model, _, _, X_valid, y_valid = source
    stream, _ = _rows(4000, 1.2, seed=4)
    big, y_big = _rows(200_000, 1.2, seed=5)
    weights = domain_weights(X_valid.to_numpy(), stream.to_numpy(), seed=0)
    log_posteriors = np.log(model.predict_proba(X_valid))
    for objective in ("accuracy", "macro_f1"):
        truth = float(score(confusion(y_big, model.predict(big), 2), objective))
        values, deviations, _ = weighted_estimates(
            log_posteriors, y_valid, weights, np.zeros((1, 2)), np.array([200_000.0]), objective
        )
        level = float(score(confusion(y_valid, model.predict(X_valid), 2), objective))
        assert abs(values[0] - truth) <= 2 * deviations[0], objective
        assert abs(level - truth) > 4 * deviations[0], objective
        # the adapter's rule here is argmax too (zero offsets): the same estimate
        assert values[1] == pytest.approx(values[0])


def test_equal_weights_keep_every_row_and_one_weight_keeps_one() -> None:
    assert effective_rows(np.ones(50)) == pytest.approx(50.0)
    assert effective_rows(np.r_[1.0, np.zeros(9)]) == pytest.approx(1.0)


def test_no_shift_leaves_the_weights_nearly_even() -> None:
    rng = np.random.default_rng(0)
    weights = domain_weights(rng.normal(size=(1000, 3)), rng.normal(size=(1000, 3)), seed=0)
    assert effective_rows(weights) > 0.9 * len(weights)


def test_the_precision_weighted_combination() -> None:
    assert combined(0.7, 0.05, 0.8, bias=0.05) == pytest.approx((0.75, 0.05 / np.sqrt(2), 0.5))
    value, sd, share = combined(np.nan, np.nan, 0.8, bias=0.05)
    assert (value, sd, share) == (0.8, 0.05, 0.0)


def test_a_shift_into_a_region_where_the_model_fails_is_degraded(source) -> None:
    method = _adapted(source, centre=1.2)
    summary = method.drift_summary()
    assert summary.shift_detected and summary.estimate_kind == "covariate-weighted"
    assert summary.effective_rows >= MIN_EFFECTIVE_ROWS and summary.covariate_note == ""
    # the weighted part sees the fall the model's own posteriors cannot
    assert summary.weighted_estimate < summary.reference - 0.1
    assert summary.verdict == "degraded"
    assert "weighted towards the stream's features" in str(summary)
    fields = summary.as_dict()
    assert fields["estimate_kind"] == "covariate-weighted" and fields["covariate_note"] == ""


def test_a_shift_where_the_model_still_does_well_is_holding(source) -> None:
    """x1 moved to -0.7: fewer rows near the boundary, the model does at least as well."""
    method = _adapted(source, centre=-0.7)
    summary = method.drift_summary()
    assert summary.shift_detected and summary.estimate_kind == "covariate-weighted"
    assert summary.verdict == "holding"


def test_no_shift_is_holding(source) -> None:
    summary = _adapted(source, centre=0.0).drift_summary()
    assert summary.verdict == "holding"


def test_a_stream_beyond_the_heldout_rows_says_why_it_has_no_verdict(source) -> None:
    """x1 centred at 6: no held-out row lies there, the weights collapse onto a few."""
    summary = _adapted(source, centre=6.0, batches=20).drift_summary()
    assert summary.estimate_kind == "posteriors" and summary.verdict == "unverified"
    assert summary.effective_rows < MIN_EFFECTIVE_ROWS
    assert "effective rows" in summary.covariate_note
    assert "effective rows" in str(summary) and "partial_fit" in str(summary)


def test_a_window_and_a_short_stream_say_why(source) -> None:
    method = _adapted(source, centre=1.2)
    window = method.drift_summary(last_batches=5)
    assert window.estimate_kind == "posteriors" and "last_batches" in window.covariate_note
    short = _adapted(source, centre=3.0, batches=1).drift_summary()
    assert short.verdict == "unverified" and "stream rows sampled" in short.covariate_note


def test_the_reservoir_keeps_a_uniform_sample_of_bounded_size() -> None:
    sample = FeatureSample(capacity=500, seed=0)
    sample.use_heldout(np.zeros((10, 1), np.float32), np.zeros((10, 0), np.int64), rows=10)
    for first in range(0, 20_000, 100):
        values = np.arange(first, first + 100, dtype=np.float32)[:, None]
        sample.add(values, np.zeros((100, 0), np.int64))
    kept = sample.stream_numeric[:, 0]
    assert sample.seen == 20_000 and len(kept) == 500 and len(np.unique(kept)) == 500
    # each row kept with the same chance: the kept row ids spread evenly over the stream
    assert abs(kept.mean() - 10_000) < 4 * 20_000 / np.sqrt(12 * 500)


def test_save_load_and_pickle_keep_the_sample_and_the_weights(source, tmp_path) -> None:
    model = source[0]
    method = _adapted(source, centre=1.2, batches=30)
    before = method.drift_summary()  # fits the weights
    path = tmp_path / "adapter.safetensors"
    method.save(path)
    loaded = AdapTable.load(path, model)
    copied = pickle.loads(pickle.dumps(method))
    for other in (loaded, copied):
        again = other.drift_summary()
        assert again.weighted_estimate == before.weighted_estimate
        assert again.effective_rows == before.effective_rows
        assert again.estimate == before.estimate and again.verdict == before.verdict
    # going on alike: the reservoir's draws and the refits follow the rows, not the object
    more, _ = _rows(40 * BATCH, 1.2, seed=9)
    for t in range(40):
        batch = more.iloc[t * BATCH : (t + 1) * BATCH]
        for adapter in (method, loaded, copied):
            adapter.predict(batch)
    after = [a.drift_summary() for a in (method, loaded, copied)]
    assert after[0].weighted_estimate != before.weighted_estimate  # refitted: the stream doubled
    for other in after[1:]:
        assert other.weighted_estimate == after[0].weighted_estimate
        assert other.effective_rows == after[0].effective_rows


def test_a_log_pickled_before_the_sample_existed_says_why() -> None:
    """An earlier pickle's DriftLog has no feature sample: it gets an empty one, and the
    covariate estimate says the features are not kept."""
    log = DriftLog(n_classes=2, objective="accuracy")
    log.use_heldout(np.log(np.full((8, 2), 0.5)), np.r_[np.zeros(4), np.ones(4)])
    state = {k: v for k, v in log.__dict__.items() if k != "_sample"}
    earlier = DriftLog.__new__(DriftLog)
    earlier.__setstate__(state)
    reading = earlier.covariate_estimate()
    assert "features are not kept" in reading.reason and np.isnan(reading.values).all()

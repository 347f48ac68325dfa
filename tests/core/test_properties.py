"""Property-based tests (hypothesis) of the estimator on hostile batches.

Whatever a batch holds (NaN, +-inf, huge numbers, None, unseen categories, categories given as
numbers, one row, hundreds of rows, duplicated rows), ``predict_proba`` either returns finite
probabilities whose rows sum to one, or raises a ``ValueError`` whose message names the problem;
never NaN, and never a numpy ``RuntimeWarning`` (overflow, invalid value) as the only signal.
Both presets, and the shift-aware calibrator with a tiny network.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from adaptable import AdapTable
from adaptable.encoding import Encoder

NUMERIC = ["u", "v", "w"]
CATEGORIES = ["a", "b", "c"]
HOSTILE_NUMBERS = [np.nan, np.inf, -np.inf, 1e300, -1e300, 1.7e308, 3.5e38, -3.5e38, 0.0]
HOSTILE_CATEGORIES = [None, np.nan, "zz", "", 6, 6.0, True, "A"]

PROPERTY = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def source_rows(n: int, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(int)
    frame = pd.DataFrame(rng.normal(size=(n, 3)) + y[:, None], columns=NUMERIC)
    frame["k"] = np.where(y == 1, "a", rng.choice(CATEGORIES, n))
    return frame, y


class _QuietModel:
    """The user's model: its own float overflow on huge inputs is not the adapter's warning to
    give, so it is silenced here; whatever logits come out (inf included) reach the adapter."""

    def __init__(self, pipeline) -> None:
        self.pipeline = pipeline

    def predict_logits(self, X):
        with np.errstate(over="ignore", invalid="ignore"):
            margin = self.pipeline.decision_function(X)
        return np.stack([np.zeros_like(margin), margin], axis=1)


@pytest.fixture(scope="module")
def fitted() -> dict[str, AdapTable]:
    X, y = source_rows(600, seed=0)
    model = _QuietModel(make_pipeline(Encoder(), LogisticRegression(max_iter=300)))
    model.pipeline.fit(X[:400], y[:400])
    tiny_gnn = {"epochs": 2, "batch_size": 16, "hidden": 8}
    methods = {
        "default": AdapTable(random_state=0),
        "paper-none": AdapTable(preset="paper", calibrator="none"),
        "paper-gnn": AdapTable(preset="paper", random_state=0, **tiny_gnn),
    }
    return {k: m.fit(model, X[:400], y[:400], X[400:], y[400:]) for k, m in methods.items()}


@st.composite
def batches(draw: st.DrawFn) -> pd.DataFrame:
    """A batch of 1 to 300 rows: ordinary values with hostile cells sprinkled in, possibly
    with its rows duplicated."""
    n = draw(st.one_of(st.just(1), st.integers(2, 70), st.integers(200, 300)))
    seed = draw(st.integers(0, 2**16))
    frame, _ = source_rows(n, seed)
    frame = frame.astype({"k": object})
    n_hostile = draw(st.integers(0, min(n * 4, 12)))
    for _ in range(n_hostile):
        row = draw(st.integers(0, n - 1))
        column = draw(st.sampled_from([*NUMERIC, "k"]))
        pool = HOSTILE_CATEGORIES if column == "k" else HOSTILE_NUMBERS
        frame.loc[row, column] = draw(st.sampled_from(pool))
    if draw(st.booleans()):
        frame = pd.concat([frame, frame.iloc[: max(1, n // 2)]], ignore_index=True)
    return frame


def check_outcome(method: AdapTable, batch: pd.DataFrame) -> None:
    """Finite rows summing to one, or a ValueError naming the problem; no RuntimeWarning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            proba = method.predict_proba(batch)
        except ValueError as err:
            message = str(err)
            named = [c for c in NUMERIC if c in message]
            assert named or "inf" in message.lower() or "nan" in message.lower(), message
            # Only a batch that really holds a problem value may be refused.
            numbers = batch[NUMERIC].to_numpy(dtype=np.float64)
            assert (~np.isfinite(numbers) | (np.abs(numbers) > 1e30)).any(), message
            return
    assert proba.shape == (len(batch), 2)
    assert np.all(np.isfinite(proba)), proba
    assert np.all(proba >= 0)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-9)


@pytest.mark.parametrize("name", ["default", "paper-none", "paper-gnn"])
def test_any_batch_gives_probabilities_or_a_clear_error(fitted, name):
    method = fitted[name]

    @PROPERTY
    @given(batch=batches())
    def check(batch: pd.DataFrame) -> None:
        method.reset()
        check_outcome(method, batch)
        # A second batch continues the stream from whatever the first one left.
        check_outcome(method, batch.iloc[::-1])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # unseen categories are reported, by design
        check()


@pytest.mark.parametrize("name", ["default", "paper-none"])
def test_infinite_and_huge_values_are_refused_naming_the_column(fitted, name):
    X, _ = source_rows(8, seed=1)
    for value in (np.inf, -np.inf, 1e300):
        batch = X.copy()
        batch.loc[3, "v"] = value
        with pytest.raises(ValueError, match="'?v'?"):
            with warnings.catch_warnings():
                warnings.simplefilter("error", RuntimeWarning)
                fitted[name].predict_proba(batch)


def test_nan_cells_and_unseen_categories_still_give_probabilities(fitted):
    X, _ = source_rows(5, seed=2)
    X = X.astype({"k": object})
    X.loc[0, "u"] = np.nan
    X.loc[1, "k"] = "never seen"
    X.loc[2, "k"] = None
    for method in fitted.values():
        method.reset()
        proba = method.predict_proba(X)
        assert np.all(np.isfinite(proba)) and np.allclose(proba.sum(axis=1), 1.0)

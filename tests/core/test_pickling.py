"""A fitted AdapTable pickles and joblib-dumps mid-stream, and the copy continues the stream
exactly as the original does (both presets, the graph calibrator, a torch model sharing the
Encoder, a scikit-learn pipeline)."""

from __future__ import annotations

import pickle

import joblib
import numpy as np
import pandas as pd
import pytest

from adaptable import AdapTable

#: case -> AdapTable options (post-training kept short)
CASES = {
    "default": {},
    "default_fallback_between": {"fallback": "between"},
    "default_gnn": {"calibrator": "gnn", "epochs": 2},
    "paper": {"preset": "paper", "epochs": 2},
    "paper_correlation": {"preset": "paper", "epochs": 2, "adjacency": "correlation"},
    "paper_platt": {"preset": "paper", "calibrator": "platt"},
}


def _stream(synthetic, count: int = 5, size: int = 64) -> list:
    return [synthetic.test.X.iloc[i * size : (i + 1) * size] for i in range(count)]


def _fitted(synthetic, frame_logreg, **options) -> AdapTable:
    """AdapTable(**options) fitted on the synthetic task's pipeline, with its validation rows."""
    return AdapTable(random_state=0, **options).fit(
        frame_logreg(synthetic),
        synthetic.train.X,
        synthetic.train.y,
        synthetic.valid.X,
        synthetic.valid.y,
    )


def _continues_identically(method: AdapTable, stream: list, tmp_path) -> None:
    for batch in stream[:2]:  # mid-stream: the online state has moved
        method.predict_proba(batch)
    path = tmp_path / "adaptable.joblib"
    joblib.dump(method, path)
    twins = {"pickle": pickle.loads(pickle.dumps(method)), "joblib": joblib.load(path)}
    expected = [method.predict_proba(batch) for batch in stream[2:]]
    state = method.state
    for how, twin in twins.items():
        got = [twin.predict_proba(batch) for batch in stream[2:]]
        for a, b in zip(got, expected, strict=True):
            assert np.array_equal(a, b), f"the {how} copy drifted"
        assert twin.state.n_batches == state.n_batches
        assert np.array_equal(twin.state.online_prior, state.online_prior)
        assert twin.state.decision_rule == state.decision_rule


@pytest.mark.parametrize("case", CASES)
def test_a_pipeline_adapter_continues_after_pickling(case, synthetic, frame_logreg, tmp_path):
    method = _fitted(synthetic, frame_logreg, **CASES[case])
    _continues_identically(method, _stream(synthetic), tmp_path)


@pytest.mark.parametrize("case", ["default", "paper"])
def test_an_adapter_sharing_a_torch_models_encoder_continues_after_pickling(
    case, synthetic, torch_source, tmp_path
):
    method = AdapTable(random_state=0, **CASES[case]).fit(
        torch_source, synthetic.train.X, synthetic.train.y, synthetic.valid.X, synthetic.valid.y
    )
    assert method.encoder_ is torch_source.encoder
    _continues_identically(method, _stream(synthetic), tmp_path)


def test_the_copy_and_the_original_are_independent(synthetic, frame_logreg) -> None:
    method = _fitted(synthetic, frame_logreg)
    twin = pickle.loads(pickle.dumps(method))
    batch = synthetic.test.X.iloc[:64]
    twin.predict_proba(batch)
    assert twin.state.n_batches == 1 and method.state.n_batches == 0


def test_an_adapter_pickled_before_prior_reference_reads_label_shift_against_p_s(
    synthetic, frame_logreg
) -> None:
    method = _fitted(synthetic, frame_logreg)
    stream = _stream(synthetic, count=4)
    method.predict_proba(stream[0])
    old = pickle.loads(pickle.dumps(method))
    # what an object pickled before the option lacks
    del old.__dict__["prior_reference"]
    del old.decider_.__dict__["prior_reference"], old.decider_.__dict__["_reference"]
    old = pickle.loads(pickle.dumps(old))
    assert old.get_params()["prior_reference"] == "labels"
    np.testing.assert_array_equal(old.decider_.reference_prior_, method.source_prior_)
    for batch in stream[1:]:
        np.testing.assert_array_equal(old.predict_proba(batch), method.predict_proba(batch))


def test_a_decider_pickled_with_the_labelled_rows_as_its_own_fields_continues_identically(
    synthetic, frame_logreg
) -> None:
    # the layout before the labelled-rows path was a part of its own (a mixin): the decider
    # held the labelled rows, the report and the worth cache itself
    from adaptable.core.recommended.labelled_rows import LabelledRows

    method = _fitted(synthetic, frame_logreg)
    stream = _stream(synthetic, count=6)
    for batch in stream[:2]:
        method.predict_proba(batch)
    ids = np.arange(0, 128, 3)  # enough labels for the labelled rows to choose the rule
    method.partial_fit(None, np.asarray(synthetic.test.y)[ids], rows=ids)
    method.predict_proba(stream[2])
    old = pickle.loads(pickle.dumps(method))
    fields = old.decider_.__dict__
    labelled = fields.pop("labelled")
    fields |= {
        "feedback": labelled.feedback,
        "drift_log": labelled.drift_log,
        "_worth_cache": labelled._worth_cache,
    }
    old = pickle.loads(pickle.dumps(old))
    decider = old.decider_
    assert isinstance(decider.labelled, LabelledRows)
    assert not {"feedback", "drift_log", "_worth_cache"} & set(decider.__dict__)
    assert decider.labelled.source_prior is decider.source_prior_
    for batch in stream[3:]:
        np.testing.assert_array_equal(old.predict_proba(batch), method.predict_proba(batch))
    assert old.report()["rule"].iloc[-1].startswith("feedback:")
    assert old.report().equals(method.report())
    # and it pickles again in the layout of today
    assert pickle.loads(pickle.dumps(old)).decider_.labelled.feedback.n_labelled == len(ids)


def test_labelled_feedback_pickled_before_the_likelihood_incumbent_decides_as_before() -> None:
    from adaptable.core.labels import LabelledFeedback, ScoreRule

    rng = np.random.default_rng(3)
    z = rng.normal(size=300) * 1.5
    log_p = -np.logaddexp(0, -np.stack([-z, z], axis=1))
    labels = (rng.random(300) < 1 / (1 + np.exp(-(2.5 * z - 1.5)))).astype(np.int64)
    rules = [ScoreRule("argmax", np.zeros(2))]
    old = LabelledFeedback(np.array([0.5, 0.5]), heldout_worth=0.0, correction_rows=20, seed=0)
    del old.__dict__["likelihood_incumbent"]  # what an object pickled before the option lacks
    old = pickle.loads(pickle.dumps(old))
    plain = LabelledFeedback(np.array([0.5, 0.5]), heldout_worth=0.0, correction_rows=20, seed=0)
    for start in range(0, 60, 6):
        for feedback in (old, plain):
            feedback.add(log_p[start : start + 6], labels[start : start + 6])
        assert old.decide(rules, 0).rule.name == plain.decide(rules, 0).rule.name
    assert old.likelihood_incumbent is False


#: what AdapTable builds on its own fields (the batch input, the label intake): never pickled
WIRED = {"_input", "_intake"}


def test_an_adapter_pickled_with_the_earlier_field_layout_takes_labels_and_continues(
    synthetic, frame_logreg
) -> None:
    """Earlier versions pickled AdapTable's fields alone (partial_fit came from a mixin with no
    field of its own). Such a state unpickles with its batch input and label intake built on
    those fields, goes on exactly as the original, and a pickle made now holds the same
    fields."""
    method = _fitted(synthetic, frame_logreg)
    stream = _stream(synthetic, count=4)
    y = synthetic.test.y
    method.predict_proba(stream[0])
    method.partial_fit(None, y[:20], rows=np.arange(20))
    earlier = {k: v for k, v in vars(method).items() if k not in WIRED}
    assert set(method.__getstate__()) == set(earlier)  # the pickle's layout is the earlier one
    old = AdapTable.__new__(AdapTable)
    old.__setstate__(pickle.loads(pickle.dumps(earlier)))  # what unpickling an earlier file does
    assert WIRED <= set(vars(old))
    assert old._intake.decider is old.decider_ and old._input.encoder is old.encoder_
    for t, batch in enumerate(stream[1:], start=1):
        np.testing.assert_array_equal(old.predict_proba(batch), method.predict_proba(batch))
        rows = np.arange(64 * t, 64 * t + 30)
        for adapter in (old, method):
            adapter.partial_fit(batch.iloc[:30], y[rows], rows=rows)
    pd.testing.assert_frame_equal(old.report(), method.report())
    assert str(old.drift_summary()) == str(method.drift_summary())


def test_an_unfitted_adapter_pickles_without_wired_objects() -> None:
    twin = pickle.loads(pickle.dumps(AdapTable(preset="paper")))
    assert not WIRED & set(vars(twin))
    assert twin.get_params() == AdapTable(preset="paper").get_params()

"""Model updates from labels that come back (``AdapTable(update=...)``, ``adaptable.core.updates``).

- On a concept shift (p(y|x) moves along a feature) the updates recover most of the gap to a
  model trained on the target; on a pure label shift the output stays the adapted decision's.
- The choice is honest: a candidate's record holds only predictions made before it saw the row's
  label (a refit that memorises its rows still scores at chance on labels that are noise).
- Without labels the outputs are the adapter's of ``update="none"``, bit for bit.
- Pickle mid-stream with an update in use continues identically (the background fit too); save
  refuses once the updates have learnt, and load with the training rows continues as the
  original does.
- The prequential record and the choice against hand-computed values.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.neighbors import KNeighborsClassifier

from adaptable import AdapTable
from adaptable.core.updates import ModelUpdates, PrequentialRecord
from adaptable.framework.parameters import InvalidParameterError

BATCH = 64


def _source(seed: int = 0, n: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y


def _concept_target(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """p(y|x) moved: the label now follows x0 - 1.5 x2 (the source's followed x0)."""
    rng = np.random.default_rng([seed, 1])
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] - 1.5 * X[:, 2] + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y


def _stream(adapter, X, y, share, seed, *, first_row=0, by_id=False):
    """Batches of 64, a ``share`` of each batch's labels given right after it, with the rows'
    ids (``first_row``: the id of the first row), and with the rows unless ``by_id``; the
    outputs."""
    rng = np.random.default_rng([seed, 2])
    outputs = []
    for start in range(0, len(y), BATCH):
        stop = min(start + BATCH, len(y))
        outputs.append(adapter.predict_proba(X[start:stop]))
        chosen = start + np.flatnonzero(rng.random(stop - start) < share)
        if len(chosen):
            rows = None if by_id else X[chosen]
            adapter.partial_fit(rows, y[chosen], rows=first_row + chosen)
    return np.concatenate(outputs)


def _fitted(update="auto", seed=0, **options):
    X, y = _source(seed)
    model = LogisticRegression().fit(X[:1500], y[:1500])
    adapter = AdapTable(random_state=0, update=update, **options)
    return adapter.fit(model, X[:1500], y[:1500], X[1500:], y[1500:]), model


def test_concept_shift_recovers_most_of_the_gap_to_a_target_model():
    X, y = _concept_target(0, 6400)
    adapter, model = _fitted()
    out = _stream(adapter, X, y, share=0.2, seed=0)
    late = slice(3200, None)  # after the updates had a few hundred labels
    target_model = LogisticRegression().fit(*_concept_target(1, 1000))
    oracle = f1_score(y[late], target_model.predict(X[late]), average="macro")
    source = f1_score(y[late], model.predict(X[late]), average="macro")
    adapted = f1_score(y[late], out[late].argmax(axis=1), average="macro")
    assert oracle - source > 0.15  # the shift is a real one
    assert adapted - source >= 0.8 * (oracle - source)
    assert adapter.updates_.in_use in ("refit", "patch")
    assert adapter.report()["rule"].iloc[-1] == f"update:{adapter.updates_.in_use}"


@pytest.mark.parametrize("seed", [0, 1])
def test_pure_label_shift_keeps_the_adapted_decision(seed):
    X, y = _source(seed + 10, 40_000)
    rng = np.random.default_rng(seed)
    keep = np.concatenate([  # positives kept with 0.2 the chance of negatives
        np.flatnonzero(y == 0), rng.choice(np.flatnonzero(y == 1), (y == 1).sum() // 5, False)
    ])  # fmt: skip
    keep = rng.permutation(keep)[:4800]
    adapter, _ = _fitted(seed=seed)
    _stream(adapter, X[keep], y[keep], share=0.1, seed=seed)
    assert adapter.updates_.fitted  # the updates were fitted, and lost to the adapted decision
    assert adapter.updates_.in_use == "adapted"
    assert not any(r.startswith("update:") for r in adapter.report()["rule"])


def test_a_candidate_is_scored_only_on_rows_it_was_not_fitted_on():
    # a 1-nearest-neighbour model refitted on its rows predicts those rows perfectly; labels
    # that are noise must leave its record at chance
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 2))
    y = (X[:, 0] > 0).astype(int)
    model = KNeighborsClassifier(n_neighbors=1).fit(X[:800], y[:800])
    adapter = AdapTable(random_state=0, update="refit", objective="accuracy")
    adapter.fit(model, X[:800], y[:800], X[800:], y[800:])
    Xt = rng.normal(size=(3200, 2))
    noise = rng.integers(0, 2, size=3200)
    _stream(adapter, Xt, noise, share=0.5, seed=0)
    summary = adapter.updates_.summary().set_index("candidate")
    assert summary.loc["refit", "scored_rows"] > 500
    assert summary.loc["refit", "prequential_accuracy"] < 0.6
    # and each recorded prediction is the one the candidate fitted before the label made
    adapter.reset()
    checked = 0
    for start in range(0, 1280, BATCH):
        adapter.predict_proba(Xt[start : start + BATCH])
        ids = np.arange(start, start + 32)
        fitted = adapter.updates_.fitted.get("refit")
        expected = np.full(32, -1) if fitted is None else fitted.codes(Xt[ids], None)
        adapter.partial_fit(Xt[ids], noise[ids], rows=ids)
        np.testing.assert_array_equal(adapter.updates_.record.predictions[1, -32:], expected)
        checked += fitted is not None
    assert checked > 10


def test_without_labels_the_output_is_the_adapters_without_updates():
    X, y = _concept_target(3, 1280)
    auto, _ = _fitted("auto")
    none, _ = _fitted("none")
    np.testing.assert_array_equal(
        _stream(auto, X, y, share=0.0, seed=0), _stream(none, X, y, share=0.0, seed=0)
    )
    assert none.updates_ is None
    assert auto.report().equals(none.report())


def test_pickle_mid_stream_with_an_update_in_use_continues_identically():
    X, y = _concept_target(4, 6400)
    adapter, _ = _fitted()
    _stream(adapter, X[:3200], y[:3200], share=0.2, seed=0)
    assert adapter.updates_.in_use != "adapted"
    copy = pickle.loads(pickle.dumps(adapter))
    rest = (X[3200:], y[3200:])
    np.testing.assert_array_equal(
        _stream(adapter, *rest, share=0.2, seed=1, first_row=3200, by_id=True),
        _stream(copy, *rest, share=0.2, seed=1, first_row=3200, by_id=True),
    )
    assert adapter.updates_.switches == copy.updates_.switches


def test_background_fits_are_swapped_in_and_pickled_after_they_end():
    X, y = _concept_target(5, 6400)
    adapter, _ = _fitted(update_in_background=True)
    _stream(adapter, X[:3200], y[:3200], share=0.2, seed=0)
    copy = pickle.loads(pickle.dumps(adapter))  # waits for a fit under way
    assert copy.updates_.fitted
    assert copy.updates_._pending is None
    out = _stream(copy, X[3200:], y[3200:], share=0.2, seed=1, first_row=3200)
    assert np.allclose(out.sum(axis=1), 1.0)
    assert copy.updates_.in_use in ("refit", "patch")


def test_save_refuses_learnt_updates_and_load_with_training_rows_continues_identically(
    tmp_path,
):
    X, y = _concept_target(6, 3200)
    adapter, model = _fitted()
    Xs, ys = _source(0)
    _stream(adapter, X[:640], y[:640], share=0.0, seed=0)
    adapter.save(tmp_path / "a.safetensors")
    loaded = AdapTable.load(tmp_path / "a.safetensors", model, training_rows=(Xs[:1500], ys[:1500]))
    rest = (X[640:], y[640:])
    np.testing.assert_array_equal(
        _stream(adapter, *rest, share=0.2, seed=1, first_row=640),
        _stream(loaded, *rest, share=0.2, seed=1, first_row=640),
    )
    # labels of rows predicted before the save, with their rows: learnt and scored alike
    early = np.arange(0, 600, 3)
    for method in (adapter, loaded):
        method.partial_fit(X[early], y[early], rows=early)
    assert adapter.updates_.summary().equals(
        loaded.updates_.summary().assign(fit_seconds=adapter.updates_.summary()["fit_seconds"])
    )
    with pytest.raises(ValueError, match="Pickle or joblib"):
        adapter.save(tmp_path / "b.safetensors")
    adapter.save(tmp_path / "c.safetensors", drop_updates=True)
    dropped = AdapTable.load(tmp_path / "c.safetensors", model)
    assert dropped.update == "none" and dropped.updates_ is None
    assert dropped.report().equals(adapter.report())
    without_rows = AdapTable.load(tmp_path / "a.safetensors", model)
    assert without_rows.updates_.names == ["adapted", "patch"]
    assert "training rows" in without_rows.updates_.refusal


def test_a_model_that_cannot_be_refitted_gets_the_patch():
    X, y = _source(0)
    weights = np.array([[-1.0, 1.0], [0.0, 0.0], [0.0, 0.0]])
    model = lambda rows: np.asarray(rows) @ weights  # noqa: E731 - a plain callable
    adapter = AdapTable(random_state=0, output="logits")
    adapter.fit(model, X[:1500], y[:1500], X[1500:], y[1500:])
    assert adapter.updates_.names == ["adapted", "patch"]
    with pytest.warns(UserWarning, match="cannot refit"):
        AdapTable(random_state=0, output="logits", update="refit").fit(
            model, X[:1500], y[:1500], X[1500:], y[1500:]
        )


def test_a_refit_that_fails_is_left_out_with_a_warning():
    class Fragile(LogisticRegression):
        def fit(self, X, y, sample_weight=None):
            if len(y) > 1500:
                raise RuntimeError("out of memory")
            return super().fit(X, y, sample_weight=sample_weight)

    X, y = _source(0)
    adapter = AdapTable(random_state=0).fit(
        Fragile().fit(X[:1500], y[:1500]), X[:1500], y[:1500], X[1500:], y[1500:]
    )
    Xt, yt = _concept_target(7, 1280)
    with pytest.warns(UserWarning, match="'refit' failed"):
        _stream(adapter, Xt, yt, share=0.3, seed=0)
    assert "refit" not in adapter.updates_.fitted
    assert "patch" in adapter.updates_.fitted


def test_update_is_checked():
    with pytest.raises(InvalidParameterError, match="update"):
        AdapTable(update="always")
    with pytest.raises(ValueError, match="update"):
        ModelUpdates("none", objective="accuracy", n_classes=2, seed=0)


# --------------------------------------------------------------------------- the record
def test_record_scores_each_candidate_on_the_rows_it_predicted():
    record = PrequentialRecord(["adapted", "patch"], n_classes=2, window=5)
    record.add(np.array([0, 1, 1]), np.array([[0, 0, 1], [-1, -1, 1]]))
    record.add(np.array([0, 0, 1]), np.array([[0, 1, 1], [0, 0, 0]]))
    # the window keeps the last five rows: labels 1 1 0 0 1
    scores = record.scores("accuracy")
    assert scores["adapted"] == (pytest.approx(3 / 5), 5)  # 0 1 0 1 1 against 1 1 0 0 1
    assert scores["patch"] == (pytest.approx(3 / 4), 4)  # -1 1 0 0 0 against . 1 0 0 1


def test_record_switches_only_on_strong_evidence():
    labels = np.array([0, 1] * 50)
    right, wrong = labels.copy(), 1 - labels
    record = PrequentialRecord(["adapted", "refit"], n_classes=2, window=1000)
    # a challenger right on 55 % of the rows where the incumbent is right on 50 %: no switch
    slight = np.where(np.arange(100) < 55, right, wrong)
    half = np.where(np.arange(100) % 2 == 0, right, wrong)
    record.add(labels, np.stack([half, slight]))
    assert record.choose("adapted", "accuracy", min_rows=30, evidence=0.9, seed=0) == "adapted"
    # right everywhere: a switch, but not on fewer rows than min_rows
    record = PrequentialRecord(["adapted", "refit"], n_classes=2, window=1000)
    record.add(labels[:20], np.stack([half[:20], right[:20]]))
    assert record.choose("adapted", "accuracy", min_rows=30, evidence=0.9, seed=0) == "adapted"
    record.add(labels[20:], np.stack([half[20:], right[20:]]))
    assert record.choose("adapted", "accuracy", min_rows=30, evidence=0.9, seed=0) == "refit"
    # rows a challenger did not predict (-1) are left out of its comparison
    record = PrequentialRecord(["adapted", "refit"], n_classes=2, window=1000)
    record.add(labels, np.stack([half, np.where(np.arange(100) < 80, -1, right)]))
    assert record.choose("adapted", "accuracy", min_rows=30, evidence=0.9, seed=0) == "adapted"


def test_updates_warn_nothing_on_an_ordinary_stream():
    X, y = _concept_target(8, 1280)
    adapter, _ = _fitted()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _stream(adapter, X, y, share=0.2, seed=0)


def test_a_background_fit_never_makes_the_stream_wait():
    # the refit blocks until released: the stream (predictions and labels, past two points of
    # the schedule) goes on meanwhile, and the waiting fit starts once the first one ends
    import threading

    release = threading.Event()

    class Slow(LogisticRegression):
        def fit(self, X, y, sample_weight=None):
            if len(y) > 1500 and not release.wait(timeout=30):
                raise RuntimeError("never released")
            return super().fit(X, y, sample_weight=sample_weight)

    X, y = _source(0)
    adapter = AdapTable(random_state=0, update="refit", update_in_background=True).fit(
        Slow().fit(X[:1500], y[:1500]), X[:1500], y[:1500], X[1500:], y[1500:]
    )
    Xt, yt = _concept_target(9, 1280)
    _stream(adapter, Xt, yt, share=0.5, seed=0)  # ~640 labels: fits due at 20, 40, 80, ...
    updates = adapter.updates_
    assert updates.fitting and not updates.fitted
    release.set()
    for first_row in (1280, 1344):  # each batch swaps in a fit that ended; the first batch
        while updates.fitting:  # starts the fit that waited
            threading.Event().wait(0.01)
        _stream(adapter, Xt[:64], yt[:64], share=0.0, seed=0, first_row=first_row)
    # the first fit (past 20 labels), then the one that waited for it, on all the labels by then
    fitted_on = [c.n_labelled for c in updates.history]
    assert len(fitted_on) == 2 and 20 <= fitted_on[0] < 100
    assert fitted_on[1] == updates.n_labelled > 600


def test_a_late_label_is_scored_by_the_version_in_use_when_its_row_was_adapted():
    # labels 5 batches late, refits in between: the record holds what each row's prediction
    # was, not what a later version (fitted on labels that came after it) says
    X, y = _source(0)
    adapter = AdapTable(random_state=0, update="refit", objective="accuracy").fit(
        LogisticRegression().fit(X[:1500], y[:1500]), X[:1500], y[:1500], X[1500:], y[1500:]
    )
    Xt, yt = _concept_target(10, 64 * 40)
    in_use_then, pending = {}, []
    changed = 0
    for t in range(40):
        rows = np.arange(t * BATCH, (t + 1) * BATCH)
        in_use_then[t] = adapter.updates_.fitted.get("refit")
        adapter.predict_proba(Xt[rows])
        pending.append(rows[:32])
        if t >= 5:
            ids = pending.pop(0)
            then = in_use_then[t - 5]
            expected = np.full(32, -1) if then is None else then.codes(Xt[ids], None)
            now = adapter.updates_.fitted.get("refit")
            changed += then is not None and now is not then
            adapter.partial_fit(Xt[ids], yt[ids], rows=ids)
            np.testing.assert_array_equal(adapter.updates_.record.predictions[1, -32:], expected)
    assert changed > 3  # the version had moved on for several of those labels

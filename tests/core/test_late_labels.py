"""AdapTable.partial_fit (late labels) and AdapTable.report (the drift report), end to end on
synthetic two-class streams (``benchmarks/research/feedback_synthetic.py``'s shifts)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from adaptable import AdapTable
from adaptable.core.decision.rules import confusion, plugin_weights, score
from adaptable.core.recommended.labelled_rows import LabelledRows
from adaptable.core.report.drift_log import DriftLog

from .conftest import earlier_drift_log_state, unpickled_from_state

BATCH = 64


@pytest.fixture(scope="module")
def shifts(benchmark_script):
    return benchmark_script("feedback_synthetic")


def _fitted(stream, **options) -> tuple[AdapTable, LogisticRegression]:
    model = LogisticRegression().fit(stream.x_train, stream.y_train)
    method = AdapTable(random_state=0, **options)
    method.fit(model, stream.x_train, stream.y_train, stream.x_valid, stream.y_valid)
    return method, model


def _run(method, stream, share: float, delay: int, batches: int, seed: int = 0) -> np.ndarray:
    """The stream with ``share`` of each batch's labels revealed ``delay`` batches later (with
    row ids); returns the predictions, each made before its row's label arrived."""
    rng = np.random.default_rng([seed, 1])
    pending: list[tuple[int, np.ndarray]] = []
    out = []
    for t in range(batches):
        while pending and pending[0][0] + delay < t:
            _, rows = pending.pop(0)
            method.partial_fit(stream.x_stream[rows], stream.y_stream[rows], rows=rows)
        rows = np.arange(t * BATCH, (t + 1) * BATCH)
        out.append(method.predict(stream.x_stream[rows]))
        pending.append((t, rows[rng.random(BATCH) < share]))
    return np.concatenate(out)


def _macro_f1(y: np.ndarray, pred: np.ndarray) -> float:
    return float(score(confusion(y, pred, 2), "macro_f1"))


def test_concept_shift_feedback_recovers_half_the_gap_to_a_refitted_model(shifts) -> None:
    """p(y|x) moves (invisible to the unlabelled stream): 5 % of labels 10 batches late.

    This shift moves the feature means along the class direction, which the moment test reads
    as a label shift: without labels the default's label-shift correction is far below the
    model's argmax. The gap is measured on the rows predicted once labels can have arrived
    (from batch 20: 10 batches' delay, then the 10 labelled rows labels need before they
    act); over the whole stream feedback must still beat both the model and the unlabelled
    default."""
    stream = shifts.make_stream("concept", 150 * BATCH, seed=0)
    method, model = _fitted(stream)
    with_labels = _run(method, stream, share=0.05, delay=10, batches=150)
    unlabelled = _run(_fitted(stream)[0], stream, share=0.0, delay=10, batches=150)
    y = stream.y_stream
    source = model.predict(stream.x_stream)
    refit = LogisticRegression().fit(stream.x_refit, stream.y_refit)
    refit_proba = refit.predict_proba(stream.x_stream)
    refitted = (refit_proba * plugin_weights(refit_proba, "macro_f1")).argmax(axis=1)
    late = slice(20 * BATCH, None)
    gap = _macro_f1(y[late], refitted[late]) - _macro_f1(y[late], source[late])
    gained = _macro_f1(y[late], with_labels[late]) - _macro_f1(y[late], source[late])
    assert gap > 0.02  # a gap worth closing
    assert gained >= 0.5 * gap, (gained, gap)
    whole = _macro_f1(y, with_labels)
    assert whole > _macro_f1(y, source) and whole > _macro_f1(y, unlabelled) + 0.2
    # the labels' decision, or a model update they fitted (p(y|x) moved: the patch follows it)
    assert method.report()["rule"].iloc[-1].startswith(("feedback:", "update:"))


def test_the_first_labels_act_with_the_streams_evidence(shifts, monkeypatch) -> None:
    """No shift, a 3:1 source, macro-F1: a lower class-1 threshold beats argmax, which the
    stream's posteriors say and a dozen labels alone cannot. Labels arrive from batch 11
    (10 batches late, 5 %): by batch 16 the adapter has left argmax; without the stream's
    evidence (worth 0) the same labels keep it."""
    stream = shifts.make_stream("none", 20 * BATCH, seed=0)
    default = dict(LabelledRows.FEEDBACK_SETTINGS)
    assert default["stream_worth"] > 0
    rules = {}
    for worth in (default["stream_worth"], 0.0):
        settings = dict(default, stream_worth=worth)
        monkeypatch.setattr(LabelledRows, "FEEDBACK_SETTINGS", settings)
        method, _ = _fitted(stream)
        _run(method, stream, share=0.05, delay=10, batches=20)
        rules[worth] = method.report()["rule"].iloc[16]
    assert rules[0.0] == "feedback:argmax"
    assert rules[default["stream_worth"]] != "feedback:argmax"


def test_label_shift_labels_bring_the_prior_estimate_within_003(shifts) -> None:
    """A miscalibrated model (its class-1 logit raised) misleads the unlabelled estimate."""
    stream = shifts.make_stream("label_biased", 100 * BATCH, seed=1)
    model = LogisticRegression().fit(stream.x_train, stream.y_train)
    biased = shifts.BiasedModel(model, stream.logit_bias)
    method = AdapTable(random_state=0, output="logits")
    method.fit(
        biased.predict_logits, stream.x_train, stream.y_train, stream.x_valid, stream.y_valid
    )
    _run(method, stream, share=0.05, delay=10, batches=100)
    last = method.report().iloc[-1]
    estimate = np.array([last["prior_0"], last["prior_1"]])
    assert np.abs(estimate - stream.target_prior).max() <= 0.03, estimate
    assert last["prior_1_low"] <= stream.target_prior[1] <= last["prior_1_high"]


def test_without_labels_the_outputs_are_the_unlabelled_default(shifts) -> None:
    """Calls with no labels, and labels below the minimum, change no output."""
    stream = shifts.make_stream("label", 12 * BATCH, seed=2)
    plain, _ = _fitted(stream)
    fed, _ = _fitted(stream)
    for t in range(12):
        rows = np.arange(t * BATCH, (t + 1) * BATCH)
        fed.partial_fit(stream.x_stream[:0], stream.y_stream[:0])
        if t == 3:  # fewer labels than the decider's minimum: no decision changes yet
            fed.partial_fit(stream.x_stream[:5], stream.y_stream[:5], rows=np.arange(5))
        a = plain.predict_proba(stream.x_stream[rows])
        b = fed.predict_proba(stream.x_stream[rows])
        assert np.array_equal(a, b)
    assert plain.report()["rule"].tolist() == fed.report()["rule"].tolist()


def test_a_label_is_scored_against_its_rows_prediction_and_never_re_scores_it(shifts) -> None:
    stream = shifts.make_stream("concept", 40 * BATCH, seed=3)
    method, _ = _fitted(stream)
    predictions = _run(method, stream, share=0.2, delay=0, batches=40)
    twin, _ = _fitted(stream)
    # the same stream where batch 20's labels never arrive: batches up to 20 are identical
    rng = np.random.default_rng([0, 1])
    reveal = [np.arange(t * BATCH, (t + 1) * BATCH)[rng.random(BATCH) < 0.2] for t in range(40)]
    for t in range(21):
        if t > 0 and t - 1 != 20:
            rows = reveal[t - 1]
            twin.partial_fit(stream.x_stream[rows], stream.y_stream[rows], rows=rows)
        got = twin.predict(stream.x_stream[t * BATCH : (t + 1) * BATCH])
        assert np.array_equal(got, predictions[t * BATCH : (t + 1) * BATCH])
    report = method.report()
    assert report["first_row"].tolist() == [t * BATCH for t in range(40)]
    # realised columns: the revealed labels against the predictions returned for those rows
    labelled = np.concatenate(reveal[:-1])  # the last batch's labels are still pending
    realised = confusion(stream.y_stream[labelled], predictions[labelled], 2)
    assert report["realised_rows"].sum() == len(labelled)
    assert report["realised_adapter_so_far"].iloc[-1] == pytest.approx(score(realised, "macro_f1"))
    b = 7
    mine = reveal[b]
    expected = score(confusion(stream.y_stream[mine], predictions[mine], 2), "macro_f1")
    assert report["realised_adapter"].iloc[b] == pytest.approx(expected)


def test_save_load_and_pickle_with_labels_pending_continue_identically(shifts, tmp_path) -> None:
    """With update="none" (a save file holds no refitted model; the model updates' own
    save and pickle: test_model_updates.py)."""
    stream = shifts.make_stream("concept", 30 * BATCH, seed=4)
    # (the decision's labelled path through a save file: model updates would refuse the save)
    method, model = _fitted(stream, update="none")
    _run(method, stream, share=0.3, delay=0, batches=12)  # past the correction's minimum rows
    assert method.decider_.feedback.n_labelled >= 30
    method.save(tmp_path / "mid.safetensors")
    twins = [
        AdapTable.load(tmp_path / "mid.safetensors", model=model),
        pickle.loads(pickle.dumps(method)),
    ]
    pending = np.arange(11 * BATCH, 12 * BATCH)[::3]  # labels of batch 11, not yet given
    outputs = []
    for adapter in [method, *twins]:
        adapter.partial_fit(stream.x_stream[pending], stream.y_stream[pending], rows=pending)
        outputs.append(
            [
                adapter.predict_proba(stream.x_stream[t * BATCH : (t + 1) * BATCH])
                for t in range(12, 18)
            ]
        )
    for twin_outputs in outputs[1:]:
        for a, b in zip(outputs[0], twin_outputs, strict=True):
            np.testing.assert_array_equal(a, b)
    frames = [adapter.report() for adapter in [method, *twins]]
    for frame in frames[1:]:
        assert frame.drop(columns="rule").equals(frames[0].drop(columns="rule"))
        assert frame["rule"].tolist() == frames[0]["rule"].tolist()


def test_reset_forgets_the_labels_and_the_report(shifts) -> None:
    stream = shifts.make_stream("concept", 15 * BATCH, seed=5)
    method, _ = _fitted(stream)
    fresh, _ = _fitted(stream)
    _run(method, stream, share=0.5, delay=0, batches=15)
    method.reset()
    assert len(method.report()) == 0 and method.decider_.feedback.n_labelled == 0
    batch = stream.x_stream[:BATCH]
    assert np.array_equal(method.predict_proba(batch), fresh.predict_proba(batch))


def test_bad_labels_and_the_paper_preset_are_refused(shifts) -> None:
    stream = shifts.make_stream("none", 2 * BATCH, seed=6)
    method, model = _fitted(stream)
    x, y = stream.x_stream[:BATCH], stream.y_stream[:BATCH]
    with pytest.raises(ValueError, match="no row has been predicted since fit / reset yet"):
        method.partial_fit(x[:3], y[:3], rows=[0, 1, 2])
    method.predict(x)
    method.partial_fit(None, [], rows=[])  # no labels arrived: nothing to do
    for missing in ([0, None, 1], np.array([0.0, np.nan, 1.0])):
        with pytest.raises(ValueError, match="1 missing label\\(s\\) .* first at position 1"):
            method.partial_fit(None, missing, rows=[0, 1, 2])
    # ids past the rows predicted: refused before anything is learnt, so a retry with the
    # right ids does not count the labels twice
    with pytest.raises(ValueError, match="row ids must name rows already predicted"):
        method.partial_fit(x[:3], y[:3], rows=[BATCH - 1, BATCH, BATCH + 1])
    assert method.decider_.feedback.n_labelled == 0
    # an unsigned id past int64 is named as given, not wrapped round to -1
    with pytest.raises(ValueError, match="got 18446744073709551615, beyond any stream's rows"):
        method.partial_fit(None, y[:1], rows=np.array([2**64 - 1], dtype=np.uint64))
    method.partial_fit(None, y[:1], rows=np.array([0], dtype=np.uint64))  # an unsigned id is fine
    with pytest.raises(ValueError, match="rows must be 3 integer row ids"):
        method.partial_fit(x[:3], y[:3], rows=[0, 1])
    with pytest.raises(ValueError, match="X has 4 rows but y has 3"):
        method.partial_fit(x[:4], y[:3])
    with pytest.raises(ValueError):
        method.partial_fit(x[:3], np.array([0, 1, 7]))
    paper = AdapTable(preset="paper", calibrator="none", random_state=0)
    paper.fit(model, stream.x_train, stream.y_train, stream.x_valid, stream.y_valid)
    with pytest.raises(ValueError, match="partial_fit needs preset='default'"):
        paper.partial_fit(x[:3], y[:3])
    with pytest.raises(ValueError, match="report\\(\\) needs preset='default'"):
        paper.report()


def test_report_columns_name_the_classes_and_the_tests(shifts) -> None:
    stream = shifts.make_stream("label", 5 * BATCH, seed=7)
    model = LogisticRegression().fit(stream.x_train, stream.y_train)
    names = np.array(["no", "yes"])
    method = AdapTable(random_state=0).fit(
        model, stream.x_train, names[stream.y_train], stream.x_valid, names[stream.y_valid]
    )
    for t in range(5):
        method.predict(stream.x_stream[t * BATCH : (t + 1) * BATCH])
    report = method.report()
    assert len(report) == 5 and report["rows"].tolist() == [BATCH] * 5
    for column in ("prior_yes", "prior_no_low", "labelled_share_yes", "estimated_adapter"):
        assert column in report
    assert report["realised_adapter"].isna().all()  # no labels yet
    assert (report["shift_rejects"] == (report["shift_statistic"] > 3.0)).all()
    assert np.allclose(report["prior_no"] + report["prior_yes"], 1.0)


def test_drift_log_scores_late_labels_by_batch_and_forgets_old_predictions() -> None:
    log = DriftLog(n_classes=2, objective="accuracy", prediction_rows=4)
    eye = np.eye(2)
    for codes in ([0, 1, 1], [1, 1, 0], [0, 0, 0]):
        log.record(
            rows=3,
            predictions=np.array(codes),
            expected=np.stack([eye, eye]),
            rule="source",
            target_prior=np.array([0.5, 0.5]),
        )
    # rows 0-2 dropped (only the last 4 rows' predictions kept: batches 1 and 2)
    log.learn(np.array([1, 4, 5, 6]), np.array([1, 1, 1, 0]), np.array([0, 0, 0, 0]))
    assert log.unscored == 1
    frame = log.frame()
    assert frame["realised_rows"].tolist() == [0.0, 2.0, 1.0]
    assert frame["realised_adapter"].tolist()[1:] == [0.5, 1.0]  # row 4: 1 right, row 5: 0 wrong
    assert frame["realised_source"].tolist()[1:] == [0.0, 1.0]
    restored = DriftLog(n_classes=2, objective="accuracy", prediction_rows=4)
    restored.restore({k: v for k, v in log.arrays().items() if v.size})
    assert restored.frame().equals(frame)


def test_a_file_without_the_labelled_state_loads_and_predicts(shifts, tmp_path, edited_copy):
    """Files written before late labels existed hold no feedback, report or worth tensors."""
    stream = shifts.make_stream("label", 6 * BATCH, seed=8)
    method, model = _fitted(stream)
    for t in range(3):
        method.predict(stream.x_stream[t * BATCH : (t + 1) * BATCH])
    method.save(tmp_path / "new.safetensors")

    def drop(tensors: dict, meta: dict) -> None:
        for key in [k for k in tensors if k.startswith(("feedback.", "report.", "worth_cache"))]:
            del tensors[key]
        del meta["stream"], meta["digest"]  # both came after late labels

    old = AdapTable.load(edited_copy(tmp_path / "new.safetensors", tmp_path, drop), model=model)
    batch = stream.x_stream[3 * BATCH : 4 * BATCH]
    np.testing.assert_array_equal(old.predict_proba(batch), method.predict_proba(batch))
    assert len(old.report()) == 1  # the records before the save are not in the file
    old.partial_fit(batch[:5], stream.y_stream[3 * BATCH : 3 * BATCH + 5], rows=np.arange(3, 8))


def test_drift_log_computes_expected_confusions_from_posteriors_in_bulk(monkeypatch) -> None:
    """Records given posteriors get the same expected matrices as computed batch by batch,
    whether they are settled when the pending rows fill up or when the report is read."""
    from adaptable.core.decision.rules import expected_confusion
    from adaptable.core.report import drift_log as drift_report

    monkeypatch.setattr(drift_report, "PENDING_ROWS", 10)
    rng = np.random.default_rng(3)
    log = DriftLog(n_classes=3, objective="macro_f1")
    wanted = []
    for rows in (4, 7, 1, 5, 3):  # settled after the second batch, the rest when read
        posteriors = rng.dirichlet(np.ones(3), size=rows)
        source = rng.dirichlet(np.ones(3), size=rows)
        predictions = rng.integers(0, 3, rows)
        log.record(
            rows=rows,
            predictions=predictions,
            posteriors=posteriors,
            source_proba=source,
            rule="source",
            target_prior=np.full(3, 1 / 3),
        )
        wanted.append(expected_confusion(posteriors, np.stack([source.argmax(1), predictions])))
    settled = log.arrays()["matrices"][:, :2]
    np.testing.assert_allclose(settled, np.stack(wanted), rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="expected, or posteriors"):
        log.record(rows=1, predictions=np.zeros(1), rule="x", target_prior=np.ones(3) / 3)


def test_labels_by_row_id_alone_use_the_scores_kept_at_prediction(shifts, tmp_path) -> None:
    """partial_fit(None, y, rows=...) learns exactly what partial_fit_logits learns from the
    logits the model gave when the rows were predicted, without calling the model; the kept
    scores survive save / load; rows without kept scores are refused with a clear message."""
    stream = shifts.make_stream("concept", 20 * BATCH, seed=6)
    by_id, model = _fitted(stream, update="none")
    by_logits, _ = _fitted(stream, update="none")
    logits = []
    for t in range(8):
        batch = stream.x_stream[t * BATCH : (t + 1) * BATCH]
        by_id.predict(batch)
        by_logits.predict(batch)
        logits.append(np.log(model.predict_proba(batch)))
    logits = np.concatenate(logits)
    rows = np.arange(0, 8 * BATCH, 2)
    by_id.partial_fit(None, stream.y_stream[rows], rows=rows)
    by_logits.partial_fit_logits(logits[rows], stream.y_stream[rows], rows=rows)
    by_id.save(tmp_path / "kept.safetensors")
    loaded = AdapTable.load(tmp_path / "kept.safetensors", model=model)
    more = np.arange(1, 8 * BATCH, 2)[:40]
    for adapter in (by_id, loaded):
        adapter.partial_fit(None, stream.y_stream[more], rows=more)
    by_logits.partial_fit_logits(logits[more], stream.y_stream[more], rows=more)
    for t in range(8, 14):
        batch = stream.x_stream[t * BATCH : (t + 1) * BATCH]
        expected = by_logits.predict_proba(batch)
        np.testing.assert_array_equal(by_id.predict_proba(batch), expected)
        np.testing.assert_array_equal(loaded.predict_proba(batch), expected)
    assert by_id.report()["rule"].tolist() == by_logits.report()["rule"].tolist()
    with pytest.raises(ValueError, match="needs rows="):
        by_id.partial_fit(None, stream.y_stream[:3])
    with pytest.raises(ValueError, match="already predicted"):
        by_id.partial_fit(None, stream.y_stream[:1], rows=[14 * BATCH])


def test_a_label_sent_again_counts_once_and_a_changed_label_is_refused(shifts, tmp_path) -> None:
    """A feed that re-sends labels (a retry, or every label known so far at each tick) gives
    exactly what sending each label once gives, through save / load too; a row given two
    different labels, in one call or two, is refused before anything is learnt."""
    stream = shifts.make_stream("concept", 20 * BATCH, seed=7)
    once, model = _fitted(stream, update="none")
    again, _ = _fitted(stream, update="none")
    for adapter in (once, again):
        for t in range(6):
            adapter.predict(stream.x_stream[t * BATCH : (t + 1) * BATCH])
    rows = np.arange(0, 6 * BATCH, 3)
    y = stream.y_stream
    once.partial_fit(None, y[rows], rows=rows)
    for _ in range(3):  # the whole feed again, each time
        again.partial_fit(None, y[rows], rows=rows)
    doubled = np.concatenate([rows[:10], rows[:10]])
    again.partial_fit(stream.x_stream[doubled], y[doubled], rows=doubled)  # repeats in one call
    again.save(tmp_path / "again.safetensors")
    loaded = AdapTable.load(tmp_path / "again.safetensors", model=model)
    loaded.partial_fit(None, y[rows], rows=rows)  # still recognised after load
    for t in range(6, 12):
        batch = stream.x_stream[t * BATCH : (t + 1) * BATCH]
        expected = once.predict_proba(batch)
        np.testing.assert_array_equal(again.predict_proba(batch), expected)
        np.testing.assert_array_equal(loaded.predict_proba(batch), expected)
    for adapter in (once, again, loaded):
        report = adapter.report()
        assert report["n_labelled"].iloc[-1] == len(rows)
        assert report["realised_rows"].sum() == len(rows)
    row = int(rows[0])
    with pytest.raises(ValueError, match=f"row {row} was given two different labels"):
        once.partial_fit(None, [1 - y[row]], rows=[row])
    fresh = [row + 1, row + 1]  # not labelled yet: two labels for it in one call
    with pytest.raises(ValueError, match=f"row {row + 1} was given two different labels, 0 and 1"):
        once.partial_fit(None, [0, 1], rows=fresh)
    once.partial_fit(None, [y[row + 2]], rows=[row + 2])  # a new row still counts
    assert once.decider_.feedback.n_labelled == len(rows) + 1
    assert once.report()["realised_rows"].sum() == len(rows) + 1


def test_kept_scores_follow_the_kept_predictions_and_the_file() -> None:
    log = DriftLog(n_classes=2, objective="accuracy", prediction_rows=4)
    eye = np.eye(2)
    for t in range(3):  # three batches of 3 rows; the first one's scores are dropped
        log.record(
            rows=3,
            predictions=np.zeros(3),
            expected=np.stack([eye, eye]),
            rule="source",
            target_prior=np.array([0.5, 0.5]),
            logits=np.arange(6.0).reshape(3, 2) + 10 * t,
        )
    np.testing.assert_array_equal(log.kept_logits(np.array([4, 6])), [[12.0, 13.0], [20.0, 21.0]])
    with pytest.raises(ValueError, match="no longer kept"):
        log.kept_logits(np.array([1]))
    restored = DriftLog(n_classes=2, objective="accuracy", prediction_rows=4)
    restored.restore(log.arrays())
    np.testing.assert_array_equal(
        restored.kept_logits(np.array([3, 8])), [[10.0, 11.0], [24.0, 25.0]]
    )
    without = {k: v for k, v in log.arrays().items() if k != "logits"}  # an older file
    restored.restore(without)
    with pytest.raises(ValueError, match="no longer kept"):
        restored.kept_logits(np.array([4]))


def test_row_ids_in_any_order_over_a_long_stream_find_their_batches() -> None:
    """Labels by id, shuffled across 150 batches (past the first growth of the batches'
    start buffer), score and fetch exactly what the same ids in order do."""
    rng = np.random.default_rng(0)
    log = DriftLog(n_classes=3, objective="macro_f1")
    sizes = rng.integers(1, 6, size=150)
    for size in sizes.tolist():
        log.record(
            rows=size,
            predictions=rng.integers(0, 3, size),
            expected=np.zeros((2, 3, 3)),
            rule="source",
            target_prior=np.full(3, 1 / 3),
            logits=rng.normal(size=(size, 3)),
        )
    ids = rng.permutation(int(sizes.sum()))[:200]
    labels, source = rng.integers(0, 3, 200), rng.integers(0, 3, 200)
    ordered = DriftLog(n_classes=3, objective="macro_f1")
    ordered.restore(log.arrays())
    sort = np.argsort(ids)
    np.testing.assert_array_equal(log.kept_logits(ids)[sort], ordered.kept_logits(ids[sort]))
    log.learn(ids, labels, source)
    ordered.learn(ids[sort], labels[sort], source[sort])
    assert log.frame().equals(ordered.frame())
    # each batch's realised rows: its ids' count
    first_rows = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    batch_of = np.searchsorted(first_rows, ids, side="right") - 1
    np.testing.assert_array_equal(
        log.frame()["realised_rows"], np.bincount(batch_of, minlength=150)
    )


@pytest.mark.parametrize("trial", range(4))
def test_random_streams_give_a_report_in_range_without_warnings(trial: int) -> None:
    """2-4 string classes, any objective, batches of 1-80 rows, labels by id (repeated ids
    too) given with and without the rows: no warning, every estimate in [0, 1], every
    deviation in [0, 0.5], and pickling keeps the report."""
    import pickle
    import warnings

    import pandas as pd

    from adaptable.encoding import UnseenCategoryWarning

    rng = np.random.default_rng(100 + trial)
    n_classes = int(rng.integers(2, 5))
    objective = ("macro_f1", "balanced_accuracy", "accuracy")[trial % 3]
    x = rng.normal(size=(1300, 2))
    y = np.array([f"c{k}" for k in rng.integers(0, n_classes, 1300)])
    y[:n_classes] = [f"c{k}" for k in range(n_classes)]
    frame = pd.DataFrame(x, columns=["a", "b"])
    model = LogisticRegression(max_iter=500).fit(frame[:1000], y[:1000])
    method = AdapTable(random_state=trial, objective=objective)
    method.fit(model, frame[:1000], y[:1000], frame[1000:], y[1000:])
    stream = pd.DataFrame(rng.normal(0.8, 1.0, size=(1200, 2)), columns=["a", "b"])
    truth = np.array([f"c{k}" for k in rng.integers(0, n_classes, 1200)])
    first = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", UnseenCategoryWarning)
        for t, size in enumerate(rng.integers(1, 80, 30).tolist()):
            if first + size > len(stream):
                break
            method.predict_proba(stream.iloc[first : first + size])
            first += size
            if t > 2:
                ids = rng.integers(0, first, int(rng.integers(1, 10)))
                rows = None if t % 2 else stream.iloc[ids]
                method.partial_fit(rows, truth[ids], rows=ids)
        report = method.report()
    for column in report.columns:
        if column.startswith(("label_corrected", "calibration_free", "estimated", "realised_")):
            if column == "realised_rows":
                continue
            values = report[column].to_numpy(dtype=float)
            top = 0.5 if column.endswith("_sd") else 1.0
            assert np.all(np.isnan(values) | ((values >= 0) & (values <= top + 1e-9))), column
    assert np.isfinite(report["label_corrected_adapter_so_far"].iloc[-1])
    assert pickle.loads(pickle.dumps(method)).report().equals(report)


def test_a_log_pickled_before_it_kept_the_given_labels_still_learns() -> None:
    log = DriftLog(2, "accuracy")
    log.record(rows=4, predictions=np.array([0, 1, 1, 0]), expected=np.zeros((2, 2, 2)),
               rule="source", target_prior=np.array([0.5, 0.5]))  # fmt: skip
    state = earlier_drift_log_state(log)
    del state["_given"]  # as written by an earlier version
    old = unpickled_from_state(state)
    old.learn(np.array([0, 1]), np.array([0, 1]), np.array([0, 1]))
    assert old.new_labels(np.array([0, 1, 2]), np.array([0, 1, 1])).tolist() == [False, False, True]


def test_an_adapter_whose_report_forgot_batches_saves_loads_and_goes_on(shifts, tmp_path) -> None:
    stream = shifts.make_stream("concept", 40 * BATCH, seed=5)
    method, model = _fitted(stream, report_batches=6, update="none")
    _run(method, stream, share=0.3, delay=0, batches=20)
    frame = method.report()
    assert 6 <= len(frame) <= 7 and frame["batch"].iloc[-1] == 19
    method.save(tmp_path / "long.safetensors")
    loaded = AdapTable.load(tmp_path / "long.safetensors", model=model)
    assert loaded.report_batches == 6
    assert loaded.report().drop(columns="rule").equals(frame.drop(columns="rule"))
    for adapter in (method, loaded):
        for t in range(20, 30):
            adapter.predict_proba(stream.x_stream[t * BATCH : (t + 1) * BATCH])
    after = [adapter.report() for adapter in (method, loaded)]
    assert after[0].drop(columns="rule").equals(after[1].drop(columns="rule"))
    assert after[0]["batch"].iloc[-1] == 29 and len(after[0]) <= 7
    # a window changed by set_params takes effect at the next fit; a file keeps the live one
    method.set_params(report_batches=100)
    method.save(tmp_path / "set.safetensors")
    again = AdapTable.load(tmp_path / "set.safetensors", model=model)
    assert again.decider_.drift_log.max_batches == method.decider_.drift_log.max_batches == 6
    # None keeps every batch
    everything, _ = _fitted(stream, report_batches=None)
    _run(everything, stream, share=0.0, delay=0, batches=20)
    assert len(everything.report()) == 20

"""The drift report on a long stream: the oldest records are forgotten past ``max_batches``
(never one whose predicted rows are still kept), the kept ones read as a stream that began at
the first of them, batch numbers go on counting, and save / restore / pickle keep all that."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

from adaptable.core.report.drift_log import REPORT_BATCHES, DriftLog

from .conftest import earlier_drift_log_state, unadapted_record, unpickled_from_state

HELDOUT = (np.log(np.array([[0.8, 0.2], [0.3, 0.7], [0.6, 0.4], [0.1, 0.9]] * 5)),
           np.array([0, 1, 0, 1] * 5))  # fmt: skip


def _batches(n: int, seed: int = 0) -> list[dict]:
    """Record arguments of ``n`` batches of 2 to 5 rows, posteriors and all."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        rows = int(rng.integers(2, 6))
        proba = rng.dirichlet(np.ones(2), size=rows)
        out.append(
            unadapted_record(
                proba,
                prior_total=50.0,
                shift_statistic=float(rng.normal()),
                logits=np.log(proba),
            )
        )
    return out


def _log(**options) -> DriftLog:
    log = DriftLog(n_classes=2, objective="macro_f1", **options)
    log.use_heldout(*HELDOUT)
    return log


def _feed(log: DriftLog, batches: list[dict], labels_every: int = 3, seed: int = 1) -> None:
    """Record the batches; after each, labels for some rows of the batch two back."""
    rng = np.random.default_rng(seed)
    starts = []
    for t, batch in enumerate(batches):
        starts.append(log.n_rows)
        log.record(**batch)
        if t >= 2 and t % labels_every == 0:
            first, rows = starts[t - 2], batches[t - 2]["rows"]
            ids = first + np.arange(rows)
            log.learn(ids, rng.integers(0, 2, rows), np.zeros(rows, dtype=np.int64))


def test_the_log_keeps_at_most_a_quarter_more_than_its_batches_and_counts_on() -> None:
    log = _log(max_batches=8, prediction_rows=10)
    batches = _batches(200)
    _feed(log, batches)
    assert 8 <= len(log) <= 10 and log.dropped == 200 - len(log)
    frame = log.frame()
    assert frame["batch"].tolist() == list(range(log.dropped, 200))
    first_row = sum(b["rows"] for b in batches[: log.dropped])
    assert frame["first_row"].iloc[0] == first_row
    assert log.n_rows == sum(b["rows"] for b in batches)
    # the forgotten batches' label sums go with them: the saved state is the kept batches'
    saved = log.arrays()
    assert len(saved["scalars"]) == len(log)
    assert saved["residual_batches"].min() >= log.dropped


def test_the_kept_batches_read_as_a_stream_that_began_at_the_first_of_them() -> None:
    batches = _batches(120, seed=2)
    long = _log(max_batches=16, prediction_rows=12)
    _feed(long, batches)
    # the same records from the first kept batch on, into a log that never forgets; the labels
    # each kept batch received arrive there too, by the same offsets
    fresh = _log()
    start = long.dropped
    offset = sum(b["rows"] for b in batches[:start])
    rng = np.random.default_rng(1)
    starts = []
    for t, batch in enumerate(batches):
        starts.append(sum(b["rows"] for b in batches[:t]))
        if t >= start:
            fresh.record(**batch)
        if t >= 2 and t % 3 == 0:
            rows = batches[t - 2]["rows"]
            labels = rng.integers(0, 2, rows)
            if t - 2 >= start:
                ids = starts[t - 2] - offset + np.arange(rows)
                fresh.learn(ids, labels, np.zeros(rows, dtype=np.int64))
    got, want = long.frame(), fresh.frame()
    assert len(got) == len(want)
    assert got["rule"].tolist() == want["rule"].tolist()
    numbers = [c for c in want.columns if c not in ("batch", "first_row", "rule")]
    for column in numbers:
        np.testing.assert_allclose(
            got[column].to_numpy(float), want[column].to_numpy(float), rtol=1e-9, atol=1e-12,
            err_msg=column,
        )  # fmt: skip
    assert np.isfinite(got["realised_adapter_so_far"]).any()
    assert np.isfinite(got["label_corrected_adapter_so_far"]).any()
    assert np.isfinite(got["calibration_free_adapter_so_far"]).any()


def test_labels_of_forgotten_batches_teach_nothing_there_and_are_counted() -> None:
    log = _log(max_batches=4, prediction_rows=6)
    _feed(log, _batches(40, seed=3), labels_every=1000)
    assert log.dropped > 0
    old = np.array([0, 1])
    assert log.new_labels(old, np.array([1, 0])).all()
    log.learn(old, np.array([1, 0]), np.zeros(2, dtype=np.int64))
    assert log.unscored == 2
    assert log.frame()["realised_rows"].sum() == 0
    with pytest.raises(ValueError, match="no longer kept"):
        log.kept_logits(old)
    last = np.array([log.n_rows - 1])
    assert log.kept_logits(last).shape == (1, 2)


def test_rows_of_forgotten_batches_still_take_labels_while_their_scores_are_kept() -> None:
    # one-row batches: the log keeps 4 to 5 records, but the last 50 rows' scores and labels
    log = _log(max_batches=4, prediction_rows=50)
    for batch in _batches(300, seed=4):
        one = {**batch, "rows": 1, "predictions": batch["predictions"][:1]}
        for key in ("posteriors", "source_proba", "output", "logits"):
            one[key] = batch[key][:1]
        log.record(**one)
    assert 4 <= len(log) <= 5 and log.dropped >= 295
    assert log.kept_logits(np.arange(250, 300)).shape == (50, 2)
    with pytest.raises(ValueError, match="no longer kept"):
        log.kept_logits(np.array([249]))
    # row 260's record is forgotten: its label is learnt, not scored; row 299's is scored
    log.learn(np.array([260, 299]), np.array([1, 1]), np.zeros(2, dtype=np.int64))
    assert log.unscored == 1 and log.frame()["realised_rows"].sum() == 1
    # a label sent again for it is still a repeat, and a different one is refused
    assert not log.new_labels(np.array([260]), np.array([1])).any()
    with pytest.raises(ValueError, match="two different labels"):
        log.new_labels(np.array([260]), np.array([0]))
    restored = _log(max_batches=4, prediction_rows=50)
    restored.restore(log.arrays())
    assert restored.frame().equals(log.frame())
    np.testing.assert_array_equal(
        restored.kept_logits(np.arange(250, 300)), log.kept_logits(np.arange(250, 300))
    )
    with pytest.raises(ValueError, match="two different labels"):
        restored.new_labels(np.array([260]), np.array([0]))
    # and it goes on as the original does
    for other in (log, restored):
        for batch in _batches(30, seed=9):
            one = {**batch, "rows": 1, "predictions": batch["predictions"][:1]}
            for key in ("posteriors", "source_proba", "output", "logits"):
                one[key] = batch[key][:1]
            other.record(**one)
    assert restored.frame().equals(log.frame())
    np.testing.assert_array_equal(
        restored.kept_logits(np.arange(280, 330)), log.kept_logits(np.arange(280, 330))
    )


def test_save_restore_and_pickle_after_forgetting_go_on_identically() -> None:
    batches = _batches(90, seed=5)
    log = _log(max_batches=8, prediction_rows=10)
    _feed(log, batches[:60])
    restored = _log(max_batches=8, prediction_rows=10)
    restored.restore(log.arrays())
    copied = pickle.loads(pickle.dumps(log))
    assert restored.dropped == copied.dropped == log.dropped > 0
    assert restored.frame().equals(log.frame())
    for other in (log, restored, copied):
        _feed(other, batches[60:], seed=7)
    assert restored.frame().equals(log.frame()) and copied.frame().equals(log.frame())
    # a file written before records were forgotten: three counters, none dropped
    older = _log()
    _feed(older, batches[:5])
    arrays = older.arrays()
    arrays["counters"] = arrays["counters"][:3]
    reread = _log()
    reread.restore(arrays)
    assert reread.dropped == 0 and reread.frame().equals(older.frame())
    # a log pickled before it could forget has no count of forgotten records: none
    state = earlier_drift_log_state(older)
    state = {k: v for k, v in state.items() if k not in ("dropped", "max_batches", "_start_base")}
    revived = unpickled_from_state(state)
    assert revived.dropped == 0 and revived.max_batches == REPORT_BATCHES
    assert revived.frame().equals(older.frame())


@pytest.mark.parametrize(
    "classes",
    [["a", "a_low"], ["total", "b"], ["x_high", "x"], ["c", "c_low_low", "c_low_high"]],
)
def test_class_names_that_would_share_a_column_are_replaced_by_positions(classes) -> None:
    log = DriftLog(n_classes=len(classes), objective="macro_f1")
    for _ in range(3):
        log.record(
            rows=2,
            predictions=np.array([0, 1]),
            expected=np.zeros((2, len(classes), len(classes))),
            rule="source",
            target_prior=np.full(len(classes), 1 / len(classes)),
        )
    with pytest.warns(UserWarning, match="by position"):
        frame = log.frame(classes)
    assert frame.columns.is_unique
    assert {"prior_0", "prior_1_high", "labelled_share_1"} <= set(frame.columns)
    # a reader finds exactly the classes again (the drift figure's reading)
    found = [c for c in frame.columns if c.startswith("prior_") and f"{c}_low" in frame.columns
             and f"{c}_high" in frame.columns]  # fmt: skip
    assert found == [f"prior_{k}" for k in range(len(classes))]


def test_class_names_that_only_look_like_column_parts_are_kept() -> None:
    log = _log()
    _feed(log, _batches(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        frame = log.frame(["low", "high"])
    assert frame.columns.is_unique and "prior_low_high" in frame.columns


def test_the_summary_numbers_its_batches_as_the_report_does() -> None:
    from adaptable.core.report.drift_summary import summarise

    log = _log(max_batches=8, prediction_rows=10)
    _feed(log, _batches(100))
    kept = log.frame()["batch"]
    last = summarise(log, last_batches=3)
    assert (last.first_batch, last.batches) == (97, 3) and "Batches 97-99" in str(last)
    whole = summarise(log)
    assert whole.first_batch == kept.iloc[0] == log.dropped and whole.forgotten == log.dropped
    assert f"Batches {log.dropped}-99" in str(whole) and "no longer kept" in str(whole)
    assert "no longer kept" not in str(last)

"""AdapTable.drift_summary: the reference, the estimate it picks, the verdict's thresholds, the
window of the last batches, and its refusals."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from adaptable import AdapTable
from adaptable.core.decision.rules import confusion, score
from adaptable.core.report.drift_log import DriftLog
from adaptable.core.report.drift_summary import MIN_LABELLED, VERDICTS, summarise

BATCH = 64


def test_the_reference_is_the_models_heldout_objective_with_its_binomial_deviation() -> None:
    """Accuracy 3/4 on four held-out rows: deviation sqrt(0.75 * 0.25 / 4)."""
    log = DriftLog(n_classes=2, objective="accuracy")
    posteriors = np.array([[0.9, 0.1], [0.4, 0.6], [0.2, 0.8], [0.3, 0.7]])
    log.use_heldout(np.log(posteriors), np.array([0, 0, 1, 1]))
    value, sd = log.heldout_reference()
    assert value == pytest.approx(0.75)
    assert sd == pytest.approx(math.sqrt(0.75 * 0.25 / 4))


@pytest.mark.parametrize("objective", ["macro_f1", "balanced_accuracy"])
def test_the_references_deviation_matches_a_bootstrap(objective: str) -> None:
    rng = np.random.default_rng(3)
    n = 400
    labels = rng.integers(0, 3, n)
    posteriors = rng.dirichlet(np.ones(3), n)
    posteriors[np.arange(n), labels] += 0.6
    posteriors /= posteriors.sum(axis=1, keepdims=True)
    log = DriftLog(n_classes=3, objective=objective)
    log.use_heldout(np.log(posteriors), labels)
    value, sd = log.heldout_reference()
    predicted = posteriors.argmax(axis=1)
    assert value == pytest.approx(float(score(confusion(labels, predicted, 3), objective)))
    draws = [rng.integers(0, n, n) for _ in range(2000)]
    boot = [float(score(confusion(labels[i], predicted[i], 3), objective)) for i in draws]
    assert sd == pytest.approx(np.std(boot), rel=0.1)


def _log_with_labels(accuracy_of_labels: float, n_labelled: int, batches: int = 10) -> DriftLog:
    """Accuracy; 10,000 held-out rows at 0.9 (a reference deviation of 0.003); batches of 64
    rows whose believed posteriors say 0.9 for the predicted class; ``n_labelled`` labels over
    the first batches, a share ``accuracy_of_labels`` of them equal to the prediction."""
    log = DriftLog(n_classes=2, objective="accuracy")
    heldout = np.tile([[0.9, 0.1]], (10_000, 1))
    labels = np.zeros(10_000, dtype=int)
    labels[:1000] = 1
    log.use_heldout(np.log(heldout), labels)
    believed = np.tile([[0.9, 0.1]], (BATCH, 1))
    for _ in range(batches):
        log.record(
            rows=BATCH, predictions=np.zeros(BATCH, int), rule="source",
            target_prior=np.array([0.9, 0.1]), posteriors=believed, source_proba=believed,
            shift_statistic=10.0, shift_threshold=3.0,
        )  # fmt: skip
    ids = np.arange(n_labelled)
    right = int(round(accuracy_of_labels * n_labelled))
    truth = np.r_[np.zeros(right, int), np.ones(n_labelled - right, int)]
    log.learn(ids, truth, np.zeros(n_labelled, int))
    return log


def test_many_labels_below_the_reference_say_degraded_and_at_it_say_holding() -> None:
    degraded = summarise(_log_with_labels(0.6, 400), tolerance=0.05)
    assert degraded.estimate_kind == "label-corrected" and degraded.labelled_rows == 400
    # the label-corrected accuracy: the posteriors' 0.9 corrected by the labels' mean error
    assert degraded.estimate == pytest.approx(0.6, abs=1e-9)
    assert degraded.drop == pytest.approx(0.3, abs=1e-9)
    assert degraded.verdict == "degraded"
    holding = summarise(_log_with_labels(0.9, 400), tolerance=0.05)
    assert holding.verdict == "holding" and holding.drop == pytest.approx(0.0, abs=1e-9)


def test_the_verdict_follows_the_interval_against_the_tolerance() -> None:
    summary = summarise(_log_with_labels(0.8, 100), tolerance=0.05)
    d, s = summary.drop, summary.drop_sd
    assert d == pytest.approx(0.1, abs=1e-9) and 0 < s < 0.1
    assert s == pytest.approx(math.hypot(summary.estimate_sd, summary.reference_sd))
    assert summary.reference_sd == pytest.approx(math.sqrt(0.9 * 0.1 / 10_000))
    expected = [
        "degraded" if d - k * s > 0.05 else "holding" if d + k * s <= 0.05 else "undetermined"
        for k in (0.0, 1.0, 2.0, 4.0)
    ]
    got = [summarise(_log_with_labels(0.8, 100), deviations=k).verdict for k in (0, 1, 2, 4)]
    assert got == expected and "degraded" in got and "undetermined" in got
    assert summarise(_log_with_labels(0.8, 100), tolerance=0.2).verdict == "holding"
    given = summarise(_log_with_labels(0.8, 100), reference=0.95)
    assert (given.reference, given.reference_sd) == (0.95, 0.0)
    assert given.drop == pytest.approx(0.15) and given.drop_sd == pytest.approx(given.estimate_sd)
    assert "required" in str(given) and given.reference_given
    assert not summary.reference_given and "held-out source rows" in str(summary)


@pytest.mark.parametrize("labelled_accuracy", [0.8, 0.9, 0.95])
def test_the_printout_shows_the_interval_the_verdict_used(labelled_accuracy: float) -> None:
    summary = summarise(_log_with_labels(labelled_accuracy, 100), tolerance=0.05)
    low = 100 * (summary.drop - 2 * summary.drop_sd)
    high = 100 * (summary.drop + 2 * summary.drop_sd)
    text = str(summary)
    assert f"{low:.1f} to {high:.1f} within 2 deviations" in text
    assert ("negative: above it" in text) == (low < 0)
    if summary.verdict == "undetermined":
        assert low <= 5.0 < high


def test_a_perfect_heldout_reference_is_not_called_given_and_no_reference_is_unverified():
    log = DriftLog(n_classes=2, objective="accuracy")
    log.use_heldout(np.log(np.array([[0.9, 0.1], [0.2, 0.8]])), np.array([0, 1]))
    log.record(rows=4, predictions=np.zeros(4, int), expected=np.stack([np.eye(2)] * 2),
               rule="source", target_prior=np.array([0.5, 0.5]))  # fmt: skip
    perfect = summarise(log)
    assert (perfect.reference, perfect.reference_sd, perfect.reference_given) == (1.0, 0.0, False)
    assert "held-out source rows" in str(perfect)
    bare = DriftLog(n_classes=2, objective="accuracy")
    bare.record(rows=4, predictions=np.zeros(4, int), expected=np.stack([np.eye(2)] * 2),
                rule="source", target_prior=np.array([0.5, 0.5]))  # fmt: skip
    missing = summarise(bare)
    assert missing.verdict == "unverified" and "pass reference=" in str(missing)
    assert summarise(bare, reference=0.9).reference == 0.9


def test_labels_count_from_min_labelled_and_none_leave_it_unverified_under_a_shift() -> None:
    """Below MIN_LABELLED labelled rows the labels' own spread cannot give a deviation."""
    few = summarise(_log_with_labels(0.6, MIN_LABELLED - 1), tolerance=0.05)
    assert few.estimate_kind == "posteriors" and few.verdict == "unverified"
    assert f"only {MIN_LABELLED - 1} labelled rows here" in str(few)
    enough = summarise(_log_with_labels(0.6, MIN_LABELLED), tolerance=0.05)
    assert enough.estimate_kind == "label-corrected"
    none = summarise(_log_with_labels(0.6, 0), tolerance=0.05)
    assert none.estimate_kind == "posteriors" and none.shift_detected
    assert none.verdict == "unverified" and math.isnan(none.estimate_sd)
    assert none.estimate == pytest.approx(0.9)
    assert "partial_fit" in str(none)
    fields = none.as_dict()
    assert fields["estimate_sd"] is None and fields["verdict"] == "unverified"
    assert fields["target_prior"] == [0.9, 0.1] and json.loads(json.dumps(fields)) == fields


def test_the_window_reads_only_the_last_batches() -> None:
    """Labels for the first two batches' rows only: the last five batches hold none."""
    log = _log_with_labels(0.6, 128, batches=10)
    whole = summarise(log)
    assert whole.labelled_rows == 128 and whole.rows == 640
    late = summarise(log, last_batches=5)
    assert (late.first_batch, late.batches, late.rows) == (5, 5, 320)
    assert late.labelled_rows == 0 and late.estimate_kind == "posteriors"
    early_window = summarise(log, last_batches=100)
    assert early_window.first_batch == 0 and early_window.estimate == whole.estimate


def test_the_windows_label_corrected_estimate_reads_only_its_own_labels() -> None:
    """Rows of the first two batches labelled at accuracy 0.6, of the last two at 0.9: the
    last four batches' window reads their 115 / 128, the whole stream (77 + 115) / 256."""
    log = _log_with_labels(0.6, 128, batches=10)
    late_ids = np.arange(8 * BATCH, 10 * BATCH)
    late_truth = np.zeros(len(late_ids), int)
    late_truth[::10] = 1  # 0.9 right: the prediction is class 0 everywhere
    log.learn(late_ids, late_truth, np.zeros(len(late_ids), int))
    late = summarise(log, last_batches=4)
    assert late.labelled_rows == 128 and late.estimate_kind == "label-corrected"
    assert late.estimate == pytest.approx(115 / 128, abs=1e-9)
    assert summarise(log).estimate == pytest.approx((77 + 115) / 256, abs=1e-9)


def test_the_whole_windows_estimates_are_the_reports_last_row() -> None:
    log = _log_with_labels(0.7, 200)
    window, last = log.window(0), log.frame().iloc[-1]
    for r, who in enumerate(("source", "adapter")):
        assert window.corrected[r] == pytest.approx(last[f"label_corrected_{who}_so_far"])
        assert window.corrected_sd[r] == pytest.approx(last[f"label_corrected_{who}_sd"])
        assert window.posteriors[r] == pytest.approx(last[f"estimated_{who}_so_far"])
    assert last["heldout_source"] == pytest.approx(log.heldout_reference()[0])


def test_refusals() -> None:
    log = DriftLog(n_classes=2, objective="accuracy")
    with pytest.raises(ValueError, match="no batch"):
        summarise(log)
    log = _log_with_labels(0.9, 10)
    for bad in (
        {"last_batches": 0},
        {"tolerance": -0.1},
        {"deviations": float("nan")},
        {"reference": 72.0},
        {"last_batches": 2.7},
        {"last_batches": True},
        {"deviations": float("inf")},
    ):
        with pytest.raises(ValueError):
            summarise(log, **bad)
    with pytest.raises(ValueError, match=">= 0"):
        log.window(-1)


@pytest.fixture(scope="module")
def shifts(benchmark_script):
    return benchmark_script("feedback_synthetic")


def _adapted(stream, share: float, batches: int = 40, delay: int = 10, **options) -> AdapTable:
    model = LogisticRegression().fit(stream.x_train, stream.y_train)
    method = AdapTable(random_state=0, **options)
    method.fit(model, stream.x_train, stream.y_train, stream.x_valid, stream.y_valid)
    rng = np.random.default_rng([0, 1])
    pending: list[tuple[int, np.ndarray]] = []
    for t in range(batches):
        while pending and pending[0][0] + delay < t:
            _, rows = pending.pop(0)
            method.partial_fit(None, stream.y_stream[rows], rows=rows)
        rows = np.arange(t * BATCH, (t + 1) * BATCH)
        method.predict(stream.x_stream[rows])
        pending.append((t, rows[rng.random(BATCH) < share]))
    return method


def test_an_unshifted_stream_without_labels_holds_by_the_calibration_free_estimate(shifts):
    stream = shifts.make_stream("none", 40 * BATCH, seed=0)
    method = _adapted(stream, share=0.0)
    summary = method.drift_summary()
    assert summary.estimate_kind == "calibration-free" and not summary.shift_detected
    # a window of 5 batches reads 320 rows: its own estimate, wider
    late = method.drift_summary(last_batches=5)
    assert late.estimate_kind == "calibration-free" and late.rows == 5 * BATCH
    assert late.estimate != summary.estimate and late.estimate_sd > 1.5 * summary.estimate_sd
    # its deviation already holds the held-out rows' noise, which the reference shares
    assert summary.drop_sd == summary.estimate_sd
    assert summary.verdict == "holding"
    assert abs(summary.drop) < 2 * summary.drop_sd
    assert summary.verdict in VERDICTS and "label mix" in str(summary)


def test_a_stream_of_one_class_with_labels_is_not_called_holding(shifts):
    """95 % of one class: macro-F1 falls well below the held-out reference."""
    stream = shifts.make_stream("majority", 60 * BATCH, seed=0)
    method = _adapted(stream, share=0.2, batches=60)
    summary = method.drift_summary()
    assert summary.estimate_kind == "label-corrected" and summary.labelled_rows > 300
    assert summary.drop > 0.05 and summary.verdict in ("degraded", "undetermined")
    assert summary.source_prior.tolist() == pytest.approx(method.source_prior_.tolist())


def test_the_paper_preset_and_an_unused_adapter_are_refused(shifts) -> None:
    stream = shifts.make_stream("none", 2 * BATCH, seed=0)
    model = LogisticRegression().fit(stream.x_train, stream.y_train)
    fresh = AdapTable(random_state=0)
    fresh.fit(model, stream.x_train, stream.y_train, stream.x_valid, stream.y_valid)
    with pytest.raises(ValueError, match="no batch"):
        fresh.drift_summary()
    paper = AdapTable(preset="paper", calibrator="none", random_state=0)
    paper.fit(model, stream.x_train, stream.y_train, stream.x_valid, stream.y_valid)
    with pytest.raises(ValueError, match="preset='default'"):
        paper.drift_summary()


def test_the_label_distribution_is_named_by_the_classes() -> None:
    log = _log_with_labels(0.8, 100)
    named = summarise(log, source_prior=np.array([0.5, 0.5]), classes=np.array(["no", "yes"]))
    assert "[no: 0.50, yes: 0.50]" in str(named)
    assert named.as_dict()["classes"] == ["no", "yes"]
    plain = summarise(log, source_prior=np.array([0.5, 0.5]))
    assert "(source [0.50, 0.50]" in str(plain) and plain.as_dict()["classes"] is None


@pytest.mark.parametrize(
    ("statistic", "detected"), [(None, None), (1.0, False), (5.0, True)],
    ids=["not-run", "not-rejected", "rejected"],
)  # fmt: skip
def test_label_shift_detected_is_none_where_the_test_did_not_run(statistic, detected) -> None:
    """A script reading ``label_shift_detected`` must not take "not tested" for "no label
    shift": where the likelihood-ratio test did not run (its statistic NaN), the field is None
    (JSON null), and the printout says so."""
    log = DriftLog(n_classes=2, objective="accuracy")
    believed = np.tile([[0.7, 0.3]], (BATCH, 1))
    for _ in range(3):
        log.record(
            rows=BATCH, predictions=np.zeros(BATCH, int), rule="source",
            target_prior=np.array([0.5, 0.5]), posteriors=believed, source_proba=believed,
            shift_statistic=10.0 if statistic is None else 1.0, shift_threshold=3.0,
            prior_statistic=statistic, prior_critical=3.84,
        )  # fmt: skip
    summary = summarise(log, source_prior=np.array([0.7, 0.3]))
    assert summary.label_shift_detected is detected
    assert json.loads(json.dumps(summary.as_dict()))["label_shift_detected"] is detected
    assert ("not tested for a significant difference" in str(summary)) == (detected is None)

"""The drift report's label-corrected estimate: the posteriors of every row corrected by the
labelled rows' residuals (the difference estimator), and its deviation."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import f1_score

from adaptable.core.report.drift_log import DriftLog
from adaptable.core.report.label_corrected_estimate import ResidualSums

COLUMNS = [f"label_corrected_{w}_{k}" for w in ("source", "adapter") for k in ("so_far", "sd")]


def _two_rows() -> ResidualSums:
    # two labelled rows of class 1, predicted 0 and 1 by both rules
    sums = ResidualSums(n_classes=2)
    sums.add(
        0, np.array([1, 1]), np.array([[0.6, 0.4], [0.2, 0.8]]), np.array([0, 1]), np.array([0, 1])
    )
    return sums


def test_the_estimate_and_its_deviation_by_hand() -> None:
    # 10 rows whose posteriors give the shares [[.5, .1], [.1, .3]] (accuracy 0.8); the
    # residuals e_y - p: column 0 gets (-0.6, 0.6), column 1 (-0.2, 0.2), each over 2 rows:
    # cells [[.5 - .3, .1 - .1], [.1 + .3, .3 + .1]] = [[.2, 0], [.4, .4]], accuracy 0.6
    expected = np.array([[[[5.0, 1.0], [1.0, 3.0]]] * 2])
    scores, sd = _two_rows().estimates(expected, np.array([10.0]), "accuracy")
    np.testing.assert_allclose(scores, [[0.6, 0.6]])
    # accuracy's gradient there: 0.4 on the diagonal, -0.6 off it; z = g[y, pred] - g[:, pred].p
    # is -0.6 - (0.4 * 0.6 - 0.6 * 0.4) = -0.6 and 0.4 - (-0.6 * 0.2 + 0.4 * 0.8) = 0.2: sample
    # variance 0.32, times (1/2 - 1/10) for 2 rows drawn from 10
    np.testing.assert_allclose(sd, np.sqrt(0.32 * 0.4) * np.ones((1, 2)), rtol=1e-6)


def test_no_estimate_before_a_label_and_no_deviation_before_the_second() -> None:
    expected = np.array([[[[5.0, 1.0], [1.0, 3.0]]] * 2] * 2)
    sums = ResidualSums(n_classes=2)
    scores, sd = sums.estimates(expected, np.array([10.0, 10.0]), "macro_f1")
    assert np.isnan(scores).all() and np.isnan(sd).all()
    sums.add(1, np.array([0]), np.array([[0.7, 0.3]]), np.array([0]), np.array([1]))
    scores, sd = sums.estimates(expected, np.array([10.0, 10.0]), "macro_f1")
    assert np.isnan(scores[0]).all() and np.isfinite(scores[1]).all()
    assert np.isnan(sd).all()


def _stream(rng: np.random.Generator, n_batches: int = 40, size: int = 100, share: float = 0.05):
    """A stream whose believed posteriors are over-confident and biased towards class 0; a
    random ``share`` of its rows labelled. Returns the log and the realised macro-F1 of the
    model's argmax and of the adapter's predictions (here: the believed posteriors with class
    1 weighted 1.5)."""
    log = DriftLog(n_classes=2, objective="macro_f1")
    truths, source, adapter = [], [], []
    for _ in range(n_batches):
        score = rng.normal(size=size)
        p1 = 1 / (1 + np.exp(-(score + 0.8)))  # the truth
        y = (rng.random(size) < p1).astype(np.int64)
        b1 = 1 / (1 + np.exp(-(2.0 * score - 0.5)))  # believed: sharper, shifted
        believed = np.stack([1 - b1, b1], axis=1)
        output = believed * np.array([1.0, 1.5])
        predictions = output.argmax(axis=1)
        first = log.n_rows
        log.record(
            rows=size,
            predictions=predictions,
            rule="source",
            target_prior=np.array([0.5, 0.5]),
            posteriors=believed,
            source_proba=believed,
        )
        chosen = np.flatnonzero(rng.random(size) < share)
        if len(chosen):
            log.learn(first + chosen, y[chosen], believed[chosen].argmax(axis=1))
        truths.append(y)
        source.append(believed.argmax(axis=1))
        adapter.append(predictions)
    y = np.concatenate(truths)
    real = [f1_score(y, np.concatenate(p), average="macro") for p in (source, adapter)]
    return log, np.array(real)


def test_the_estimate_is_unbiased_and_its_deviation_covers_the_realised_value() -> None:
    rng = np.random.default_rng(0)
    corrected, posteriors, covered, deviations = [], [], [], []
    for _ in range(120):
        log, real = _stream(rng)
        last = log.frame().iloc[-1]
        got = np.array([last[f"label_corrected_{w}_so_far"] for w in ("source", "adapter")])
        sd = np.array([last[f"label_corrected_{w}_sd"] for w in ("source", "adapter")])
        corrected.append(got - real)
        posteriors.append(
            [
                last[f"estimated_{w}_so_far"] - r
                for w, r in zip(("source", "adapter"), real, strict=True)
            ]
        )
        covered.append(np.abs(got - real) <= 2 * sd)
        deviations.append(sd)
    corrected, posteriors = np.array(corrected), np.array(posteriors)
    # the posteriors' estimate is far off; the corrected one is centred on the realised value
    assert (np.abs(posteriors.mean(axis=0)) > 0.05).all()
    assert (np.abs(corrected.mean(axis=0)) < 0.01).all()
    # the deviation is the spread of the miss, and two of them cover about 95 %
    np.testing.assert_allclose(np.array(deviations).mean(axis=0), corrected.std(axis=0), rtol=0.25)
    assert 0.88 <= np.array(covered).mean() <= 1.0


def test_rows_without_their_believed_posteriors_are_not_counted() -> None:
    log = DriftLog(n_classes=2, objective="accuracy")
    eye = np.eye(2) * 2.0
    log.record(rows=4, predictions=np.array([0, 1, 1, 0]), expected=np.stack([eye, eye]),
               rule="source", target_prior=np.array([0.5, 0.5]))  # fmt: skip
    log.learn(np.array([0, 1]), labels=np.array([0, 0]), source_predictions=np.array([0, 0]))
    frame = log.frame()
    assert frame["realised_rows"].iloc[0] == 2
    assert frame[COLUMNS].isna().all().all()


def test_the_sums_survive_save_and_load_and_old_files_load() -> None:
    log, _ = _stream(np.random.default_rng(3), n_batches=12, share=0.2)
    arrays = log.arrays()
    restored = DriftLog(n_classes=2, objective="macro_f1")
    restored.restore(arrays)
    frame = log.frame()
    assert frame[COLUMNS].iloc[-1].notna().all()
    assert restored.frame().equals(frame)
    # labels for earlier rows after the load count as they would have without it
    for target in (log, restored):
        target.learn(np.array([5, 7, 150]), np.array([1, 0, 1]), np.array([0, 0, 1]))
    assert restored.frame().equals(log.frame())
    # a file written before the columns existed: NaN there, the rest as it was
    old = DriftLog(n_classes=2, objective="macro_f1")
    old.restore({k: v for k, v in arrays.items() if not k.startswith(("residual", "believed"))})
    old_frame = old.frame()
    assert old_frame[COLUMNS].isna().all().all()
    kept = [c for c in frame if not c.startswith("label_corrected")]
    assert old_frame[kept].equals(frame[kept])
    with pytest.raises(ValueError, match="residual"):
        broken = dict(arrays, residual_rows=-arrays["residual_rows"])
        DriftLog(n_classes=2, objective="macro_f1").restore(broken)


def test_adaptable_reports_the_label_corrected_columns_with_late_labels() -> None:
    import pandas as pd
    from sklearn.linear_model import LogisticRegression

    from adaptable import AdapTable

    rng = np.random.default_rng(8)

    def rows(n: int, shift: float) -> tuple[pd.DataFrame, np.ndarray]:
        x = rng.normal(size=(n, 2)) + shift
        y = (rng.random(n) < 1 / (1 + np.exp(-(x[:, 0] - 2.0 * shift)))).astype(np.int64)
        return pd.DataFrame(x, columns=["a", "b"]), y

    (X_train, y_train), (X_valid, y_valid) = rows(2000, 0.0), rows(1000, 0.0)
    model = LogisticRegression().fit(X_train, y_train)
    method = AdapTable(random_state=0).fit(model, X_train, y_train, X_valid, y_valid)
    X_test, y_test = rows(64 * 30, 0.7)  # p(y|x) moved: the posteriors are off
    predicted = []
    for t in range(30):
        if t >= 2:  # a quarter of the rows of the batch two back
            start = (t - 2) * 64
            ids = np.arange(start, start + 64)[::4]
            method.partial_fit(X_test.iloc[ids], y_test[ids], rows=ids)
        assert method.report().shape[0] == t
        predicted.append(method.predict(X_test[t * 64 : (t + 1) * 64]))
    last = method.report().iloc[-1]
    real = f1_score(y_test, np.concatenate(predicted), average="macro")
    assert np.isfinite(last["label_corrected_adapter_sd"])
    assert (
        abs(last["label_corrected_adapter_so_far"] - real) <= 3 * last["label_corrected_adapter_sd"]
    )


def test_the_drift_figure_draws_the_label_corrected_lines() -> None:
    from adaptable.experiments.drift_figure import plot_drift_report

    log, _ = _stream(np.random.default_rng(5), n_batches=10, share=0.2)
    figure = plot_drift_report(log.frame())
    labels = [line.get_label() for line in figure.axes[0].lines]
    assert "adapter, label-corrected" in labels and "unadapted model, label-corrected" in labels


def test_the_deviation_from_the_gradients_parts_matches_the_full_form() -> None:
    # z_i = g[:, pred_i] . u_i summed in full, on three classes and every objective
    from adaptable.core.report.heldout_estimate import cell_gradient

    rng = np.random.default_rng(12)
    n, c = 40, 3
    believed = rng.dirichlet(np.ones(c), size=n)
    labels = rng.integers(0, c, n)
    source, adapter = believed.argmax(axis=1), rng.integers(0, c, n)
    expected = rng.uniform(1, 30, size=(1, 2, c, c))
    rows = np.array([expected[0, 0].sum()])
    sums = ResidualSums(n_classes=c)
    sums.add(0, labels, believed, source, adapter)
    u = np.eye(c)[labels] - believed
    for objective in ("accuracy", "balanced_accuracy", "macro_f1"):
        _, sd = sums.estimates(expected, rows, objective)
        for r, predicted in enumerate((source, adapter)):
            residual = u.T @ np.eye(c)[predicted]
            cells = np.maximum(expected[0, r] / rows[0] + residual / n, 0.0)
            g = cell_gradient(cells[None], objective)[0]
            z = (g[:, predicted].T * u).sum(axis=1)
            want = np.sqrt(z.var(ddof=1) * (1 / n - 1 / rows[0]))
            np.testing.assert_allclose(sd[0, r], want, rtol=1e-9)


def test_saved_residuals_are_only_the_labelled_batches_and_are_checked() -> None:
    log, _ = _stream(np.random.default_rng(9), n_batches=12, share=0.01)
    arrays = log.arrays()
    batches = arrays["residual_batches"]
    assert 1 < len(batches) < 12 and len(arrays["residual_cross"]) == len(batches)
    restored = DriftLog(n_classes=2, objective="macro_f1")
    restored.restore(arrays)
    assert restored.frame().equals(log.frame())
    for broken in (
        dict(arrays, residual_batches=batches[::-1].copy()),  # out of order
        dict(arrays, residual_batches=batches + 12),  # past the last batch
    ):
        with pytest.raises(ValueError, match="residual"):
            DriftLog(n_classes=2, objective="macro_f1").restore(broken)


def test_each_batch_reads_the_labels_of_its_own_past_only() -> None:
    # a log of 6 batches equals the first 6 rows of the report of the same 12-batch stream
    # (each batch's labels arrive right after it)
    longer, _ = _stream(np.random.default_rng(11), n_batches=12, share=0.1)
    shorter, _ = _stream(np.random.default_rng(11), n_batches=6, share=0.1)
    np.testing.assert_allclose(
        longer.frame()[COLUMNS].to_numpy()[:6], shorter.frame()[COLUMNS].to_numpy(), rtol=1e-12
    )


def test_more_labels_than_rows_give_no_warning_and_no_deviation() -> None:
    import warnings

    sums = ResidualSums(n_classes=2)
    believed = np.array([[0.6, 0.4], [0.2, 0.8], [0.7, 0.3]])
    for _ in range(2):  # the same three rows again: 6 labels for a 4-row stream
        sums.add(0, np.array([1, 1, 0]), believed, np.array([0, 1, 0]), np.array([0, 1, 0]))
    expected = np.array([[[[2.0, 1.0], [0.5, 0.5]]] * 2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scores, sd = sums.estimates(expected, np.array([4.0]), "macro_f1")
    assert np.isfinite(scores).all()
    assert np.isnan(sd).all()  # repeated labels: no honest deviation
    # as many labels as rows, each once: the whole stream is known, no deviation left
    exact = ResidualSums(n_classes=2)
    exact.add(0, np.array([1, 1, 0, 0]), np.vstack([believed, [[0.5, 0.5]]]),
              np.array([0, 1, 0, 1]), np.array([0, 1, 0, 1]))  # fmt: skip
    _, sd = exact.estimates(expected, np.array([4.0]), "macro_f1")
    np.testing.assert_array_equal(sd, np.zeros((1, 2)))


def test_the_gradient_of_an_empty_matrix_is_zero_without_a_warning() -> None:
    import warnings

    from adaptable.core.report.heldout_estimate import cell_gradient

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for objective in ("accuracy", "balanced_accuracy", "macro_f1"):
            assert (cell_gradient(np.zeros((1, 3, 3)), objective) == 0).all()


def test_the_unadapted_models_argmax_comes_from_the_kept_scores() -> None:
    # labels given with a wrong argmax for the model: the correction still reads the argmax
    # of the logits the record kept, as its expected term does
    def logged(wrong: bool) -> DriftLog:
        log = DriftLog(n_classes=2, objective="accuracy")
        logits = np.log(np.array([[0.7, 0.3], [0.2, 0.8], [0.6, 0.4], [0.1, 0.9]]))
        proba = np.exp(logits)
        log.record(rows=4, predictions=np.array([0, 1, 1, 1]), rule="source",
                   target_prior=np.array([0.5, 0.5]), posteriors=proba, source_proba=proba,
                   logits=logits)  # fmt: skip
        argmax = logits.argmax(axis=1)[:3]
        log.learn(np.arange(3), np.array([0, 1, 1]), 1 - argmax if wrong else argmax)
        return log

    right, wrong = logged(False).frame(), logged(True).frame()
    column = "label_corrected_source_so_far"
    assert right[column].iloc[0] == wrong[column].iloc[0]
    assert right["realised_source"].iloc[0] != wrong["realised_source"].iloc[0]


def test_posteriors_kept_after_loading_an_older_file_are_saved_again() -> None:
    # a file without believed posteriors, then new batches: their posteriors and labels
    # survive the next save and load
    rng = np.random.default_rng(13)
    log, _ = _stream(rng, n_batches=4, share=0.1)
    older = {k: v for k, v in log.arrays().items() if not k.startswith(("believed", "residual"))}
    first = DriftLog(n_classes=2, objective="macro_f1")
    first.restore(older)
    old_rows = np.arange(0, first.n_rows, 7)
    for _ in range(4):
        p1 = rng.random(50)
        believed = np.stack([1 - p1, p1], axis=1)
        start = first.n_rows
        first.record(rows=50, predictions=believed.argmax(1), rule="source",
                     target_prior=np.array([0.5, 0.5]), posteriors=believed,
                     source_proba=believed)  # fmt: skip
        first.learn(start + np.arange(10), rng.integers(0, 2, 10), believed[:10].argmax(1))
    second = DriftLog(n_classes=2, objective="macro_f1")
    arrays = first.arrays()
    assert arrays["believed_batches"].tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    second.restore(arrays)
    # the batches without them stay without: their rows' scores are not made up
    with pytest.raises(ValueError, match="no longer kept"):
        second.kept_logits(old_rows[:2])
    for target in (first, second):
        target.learn(old_rows, np.ones(len(old_rows), dtype=np.int64), np.zeros(len(old_rows)))
    assert second.frame().equals(first.frame())
    assert second.frame()[COLUMNS].iloc[-1].notna().all()
    more = np.arange(first.n_rows - 50, first.n_rows - 40)
    for target in (first, second):
        target.learn(more, np.ones(10, dtype=np.int64), np.zeros(10, dtype=np.int64))
    assert second.frame().equals(first.frame())


def test_the_deviation_stops_at_the_largest_a_value_in_zero_one_can_have() -> None:
    # four labelled rows of a 28-row stream, balanced accuracy on three classes: the
    # corrected cells leave class 1 a row of about 0.05, whose gradient (one over it) gives the
    # delta method a deviation of about 1.0
    sums = ResidualSums(n_classes=3)
    believed = np.array(
        [[0.33, 0.5, 0.17], [0.37, 0.25, 0.38], [0.23, 0.63, 0.14], [0.65, 0.22, 0.13]]
    )
    predicted = np.array([0, 1, 0, 0])
    sums.add(0, np.array([2, 0, 0, 0]), believed, predicted, predicted)
    expected = np.array([[[[1.0, 4.0, 1.0], [5.0, 3.0, 0.0], [5.0, 5.0, 4.0]]] * 2])
    _, sd = sums.estimates(expected, np.array([28.0]), "balanced_accuracy")
    np.testing.assert_array_equal(sd, np.full((1, 2), 0.5))


def test_the_drift_figure_keeps_its_bands_between_0_and_100_and_skips_a_test_never_run() -> None:
    from adaptable.experiments.drift_figure import plot_drift_report

    log, _ = _stream(np.random.default_rng(5), n_batches=10, share=0.2)
    frame = log.frame()
    frame["label_corrected_adapter_sd"] = 0.5  # a band far wider than [0, 1]
    frame["prior_statistic"] = np.nan
    figure = plot_drift_report(frame)
    performance, tests = figure.axes[0], figure.axes[2]
    bands = [c for c in performance.collections if len(c.get_paths())]
    assert bands
    for band in bands:
        heights = np.concatenate([path.vertices[:, 1] for path in band.get_paths()])
        assert heights.min() >= 0.0 and heights.max() <= 100.0
    assert [line.get_label() for line in tests.lines if "prior" in line.get_label()] == []
    # one legend entry for the bands, however many are drawn
    assert performance.get_legend_handles_labels()[1].count("band: 2 deviations") == 1


def test_the_drift_figure_draws_what_rests_on_labels_only_from_the_summarys_minimum() -> None:
    from adaptable.core.report.drift_summary import MIN_LABELLED
    from adaptable.experiments.drift_figure import plot_drift_report

    log, _ = _stream(np.random.default_rng(5), n_batches=10, share=0.2)
    frame = log.frame()
    labelled = np.cumsum(frame["realised_rows"].to_numpy())
    assert labelled[0] < MIN_LABELLED <= labelled[-1]  # the stream crosses the minimum
    performance = plot_drift_report(frame).axes[0]
    for line in performance.lines:
        label = line.get_label()
        if "realised" in label or "label-corrected" in label:
            drawn = np.isfinite(np.asarray(line.get_ydata(), dtype=float))
            np.testing.assert_array_equal(drawn, labelled >= MIN_LABELLED, err_msg=label)

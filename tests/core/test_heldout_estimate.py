"""The drift report's calibration-free estimate: BBSE-soft's label distribution, the rule's
class offsets, the held-out confusion rates, and the report's columns built from them."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import f1_score

from adaptable.core.report.drift_log import DriftLog
from adaptable.core.report.heldout_estimate import (
    bbse_priors,
    class_offsets,
    offset_rates,
    soft_confusion,
)
from adaptable.framework.probability import normalize

from .conftest import unadapted_record


def test_soft_confusion_is_the_mean_predicted_probability_per_true_class() -> None:
    proba = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8], [0.3, 0.7]])
    labels = np.array([0, 0, 1, 1])
    # column y: the held-out mean of p(yhat = i | x) [y = j], over all 4 rows
    expected = np.array([[1.5, 0.5], [0.5, 1.5]]) / 4
    np.testing.assert_allclose(soft_confusion(proba, labels), expected)


def test_bbse_solves_the_confusion_system_and_clips_negative_weights() -> None:
    soft = np.array([[0.4, 0.1], [0.1, 0.4]])  # 80 % right on each class, source (0.5, 0.5)
    # mu = C w with w = (5/3, 1/3): p_t = w * p_s = (5/6, 1/6)
    np.testing.assert_allclose(
        bbse_priors(np.array([[0.7, 0.3]]), soft, np.array([0.5, 0.5])), [[5 / 6, 1 / 6]]
    )
    # a stream more extreme than the rates allow: the weight of class 1 clips at zero
    np.testing.assert_allclose(
        bbse_priors(np.array([[0.95, 0.05]]), soft, np.array([0.5, 0.5])), [[1.0, 0.0]]
    )
    # several streams at once, each its own solution
    many = bbse_priors(np.array([[0.5, 0.5], [0.7, 0.3]]), soft, np.array([0.5, 0.5]))
    np.testing.assert_allclose(many, [[0.5, 0.5], [5 / 6, 1 / 6]])


def test_class_offsets_recover_the_weights_of_a_reweighting_rule() -> None:
    rng = np.random.default_rng(0)
    model = rng.dirichlet(np.ones(3), size=10)
    weights = [np.array([1.0, 2.0, 4.0]), np.array([1.0, 1.0, 1.0])]
    output = np.concatenate([normalize(model[:6] * weights[0]), normalize(model[6:] * weights[1])])
    offsets = class_offsets(output, model, output.argmax(axis=1), np.array([0, 6]))
    for got, w in zip(offsets, weights, strict=True):
        np.testing.assert_allclose(got, np.log(w) - np.log(w).mean(), atol=1e-12)


def test_class_offsets_refuse_a_rule_whose_decisions_no_offset_gives() -> None:
    # a temperature (squared posteriors): the first row (0.2, 0.8) -> (0.06, 0.94) looks like
    # class weights (0.29, 1.18), under which the second row (0.7, 0.3) would go to class 1;
    # squared it stays class 0
    model = np.array([[0.2, 0.8], [0.7, 0.3]])
    scaled = normalize(model**2)
    assert np.isnan(class_offsets(scaled, model, scaled.argmax(axis=1), np.array([0]))).all()
    # and a first row with a zero probability says nothing
    zero = np.array([[1.0, 0.0], [0.3, 0.7]])
    assert np.isnan(class_offsets(zero, zero, np.array([0, 1]), np.array([0]))).all()


def test_offset_rates_on_two_classes_match_the_argmax_and_break_ties_to_class_zero() -> None:
    proba = np.array([[0.9, 0.1], [0.6, 0.4], [0.5, 0.5], [0.3, 0.7], [0.2, 0.8]])
    labels = np.array([0, 0, 1, 1, 1])
    log = np.log(proba)
    offsets = np.array([[0.0, 0.0], [0.0, np.log(2.0)], [np.nan, np.nan]])
    rates = offset_rates(log, labels, offsets)
    # no offset: argmax; the tied row (0.5, 0.5) goes to class 0
    np.testing.assert_allclose(rates[0], [[1.0, 0.0], [1 / 3, 2 / 3]])
    # class 1 doubled: 0.4 -> 0.8 / 1.4 wins, the tie too
    np.testing.assert_allclose(rates[1], [[0.5, 0.5], [0.0, 1.0]])
    assert np.isnan(rates[2]).all()
    rng = np.random.default_rng(1)
    big = np.log(rng.dirichlet(np.ones(2), size=200))
    big_labels = rng.integers(0, 2, 200)
    random_offsets = rng.normal(size=(5, 2))
    fast_rates = offset_rates(big, big_labels, random_offsets)
    for offset, fast in zip(random_offsets, fast_rates, strict=True):
        predicted = (big + offset).argmax(axis=1)
        slow = np.array([np.bincount(predicted[big_labels == y], minlength=2) for y in (0, 1)])
        np.testing.assert_allclose(fast, slow / slow.sum(axis=1, keepdims=True))


def test_offset_rates_on_three_classes() -> None:
    proba = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.2, 0.7], [0.4, 0.45, 0.15]])
    labels = np.array([0, 1, 2, 0])
    rates = offset_rates(np.log(proba), labels, np.array([[0.0, 0.0, 0.0]]))[0]
    np.testing.assert_allclose(rates, [[0.5, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])


def _gaussian_classes(rng, prior_1: float, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows of two unit Gaussians at -1 and +1 with the given share of class 1, and an
    over-confident model's posteriors of them (the log-odds are 4 x, the truth's 2 x)."""
    y = (rng.random(rows) < prior_1).astype(np.int64)
    x = rng.normal(2.0 * y - 1.0, 1.0)
    p1 = 1.0 / (1.0 + np.exp(-4.0 * x))
    return np.column_stack([1.0 - p1, p1]), y


def _streamed_log(rng, prior_1: float, batches: int, batch: int = 400) -> tuple:
    heldout, heldout_y = _gaussian_classes(rng, 0.5, 20000)
    log = DriftLog(n_classes=2, objective="macro_f1")
    log.use_heldout(np.log(heldout), heldout_y)
    ys, predictions = [], []
    for _ in range(batches):
        proba, y = _gaussian_classes(rng, prior_1, batch)
        log.record(**unadapted_record(proba, shift_statistic=0.0))
        ys.append(y)
        predictions.append(proba.argmax(axis=1))
    return log, np.concatenate(ys), np.concatenate(predictions)


def test_the_report_estimates_a_label_shift_whatever_the_models_calibration() -> None:
    """An over-confident model under pure label shift (class 1 from 50 % to 90 %): the
    calibration-free columns find the label distribution and the realised macro-F1, where
    the posteriors' expected metric is several points off."""
    log, y, predicted = _streamed_log(np.random.default_rng(2), 0.9, batches=100)
    frame = log.frame()
    last = frame.iloc[-1]
    realised = f1_score(y, predicted, average="macro")
    # (40,000 rows, 20,000 held out: on other seeds the prior is within 0.011 and the metric
    # within 0.023, the macro-F1 moving about 2 points per point of prior at 0.9)
    assert last["calibration_free_prior_1"] == pytest.approx(y.mean(), abs=0.015)
    assert last["calibration_free_source_so_far"] == pytest.approx(realised, abs=0.03)
    # the adapter output the model's posteriors here: the same estimate
    assert last["calibration_free_adapter_so_far"] == pytest.approx(
        last["calibration_free_source_so_far"], abs=1e-12
    )
    assert abs(last["estimated_source_so_far"] - realised) > 0.1  # the posteriors' 17 points
    np.testing.assert_allclose(
        frame["calibration_free_prior_0"] + frame["calibration_free_prior_1"], 1.0
    )


def test_the_calibration_free_columns_are_nan_where_they_cannot_hold() -> None:
    rng = np.random.default_rng(3)
    log, _, _ = _streamed_log(rng, 0.9, batches=3)
    proba, _ = _gaussian_classes(rng, 0.9, 50)
    # a batch on which the moment test rejects pure label shift: no estimate there
    log.record(rows=50, predictions=proba.argmax(axis=1), posteriors=proba, source_proba=proba,
               output=normalize(proba**2), rule="x", target_prior=np.array([0.5, 0.5]),
               shift_statistic=5.0, shift_threshold=3.0)  # fmt: skip
    proba, _ = _gaussian_classes(rng, 0.9, 50)
    log.record(rows=50, predictions=proba.argmax(axis=1), posteriors=proba, source_proba=proba,
               output=proba, rule="source", target_prior=np.array([0.5, 0.5]),
               shift_statistic=0.0, shift_threshold=3.0)  # fmt: skip
    frame = log.frame()
    assert frame["calibration_free_source_so_far"].notna().tolist() == [1, 1, 1, 0, 1]
    # the adapter's from the batch whose rule scaled the scores on: unknown
    assert frame["calibration_free_adapter_so_far"].notna().tolist() == [1, 1, 1, 0, 0]
    # without held-out rows: nothing
    bare = DriftLog(n_classes=2, objective="macro_f1")
    bare.restore(log.arrays())
    assert bare.frame()["calibration_free_source_so_far"].isna().all()


def test_the_calibration_free_inputs_survive_save_and_load_and_old_files_load() -> None:
    log, _, _ = _streamed_log(np.random.default_rng(4), 0.2, batches=5)
    arrays = log.arrays()
    restored = DriftLog(n_classes=2, objective="macro_f1")
    restored.restore(arrays)
    restored.use_heldout(*log._heldout)
    frame = log.frame()
    assert frame["calibration_free_source_so_far"].notna().all()
    assert restored.frame().equals(frame)
    # a file written before the columns existed: they are NaN, the rest as it was
    old = DriftLog(n_classes=2, objective="macro_f1")
    old.restore({k: v for k, v in arrays.items() if not k.startswith("inputs")})
    old.use_heldout(*log._heldout)
    old_frame = old.frame()
    assert old_frame["calibration_free_source_so_far"].isna().all()
    kept = [c for c in frame if not c.startswith("calibration_free")]
    assert old_frame[kept].equals(frame[kept])


def test_adaptable_reports_the_columns_and_keeps_them_through_save_and_load(tmp_path) -> None:
    import pandas as pd
    from sklearn.linear_model import LogisticRegression

    from adaptable import AdapTable

    rng = np.random.default_rng(6)  # a stream the moment test accepts throughout

    def rows(n: int, prior_1: float) -> tuple[pd.DataFrame, np.ndarray]:
        y = (rng.random(n) < prior_1).astype(np.int64)
        return pd.DataFrame({"a": rng.normal(2.0 * y - 1.0), "b": rng.normal(size=n)}), y

    (X_train, y_train), (X_valid, y_valid) = rows(2000, 0.5), rows(1000, 0.5)
    model = LogisticRegression().fit(X_train, y_train)
    method = AdapTable(random_state=0).fit(model, X_train, y_train, X_valid, y_valid)
    X_test, y_test = rows(64 * 12, 0.85)
    for t in range(12):
        method.predict(X_test[t * 64 : (t + 1) * 64])
    frame = method.report()
    last = frame.iloc[-1]
    assert not last["shift_rejects"]
    assert last["calibration_free_prior_1"] == pytest.approx(y_test.mean(), abs=0.06)
    assert np.isfinite(last["calibration_free_adapter_so_far"])
    method.save(tmp_path / "adapter.safetensors")
    loaded = AdapTable.load(tmp_path / "adapter.safetensors", model=model)
    got = loaded.report()
    assert got.drop(columns="rule").equals(frame.drop(columns="rule"))
    from adaptable.experiments.drift_figure import plot_drift_report

    figure = plot_drift_report(got)
    performance, prior = figure.axes[:2]
    assert "adapter, calibration-free" in [line.get_label() for line in performance.lines]
    assert "calibration-free estimate" in [text.get_text() for text in prior.get_legend().texts]


def test_three_classes_and_every_objective_end_to_end() -> None:
    import pandas as pd
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import accuracy_score, balanced_accuracy_score

    from adaptable import AdapTable

    rng = np.random.default_rng(1)

    def rows(n: int, prior: list[float]) -> tuple[pd.DataFrame, np.ndarray]:
        y = rng.choice(3, size=n, p=prior)
        return pd.DataFrame({"a": rng.normal(1.5 * y), "b": rng.normal(size=n)}), y

    (X_train, y_train), (X_valid, y_valid) = rows(3000, [1 / 3] * 3), rows(1500, [1 / 3] * 3)
    model = LogisticRegression().fit(X_train, y_train)
    metrics = {
        "macro_f1": lambda y, p: f1_score(y, p, average="macro"),
        "accuracy": accuracy_score,
        "balanced_accuracy": balanced_accuracy_score,
    }
    for objective, metric in metrics.items():
        method = AdapTable(random_state=0, objective=objective)
        method.fit(model, X_train, y_train, X_valid, y_valid)
        X_test, y_test = rows(64 * 30, [0.7, 0.2, 0.1])
        predicted = np.concatenate([method.predict(X_test[t * 64 : (t + 1) * 64])
                                    for t in range(30)])  # fmt: skip
        last = method.report().iloc[-1]
        shares = [last[f"calibration_free_prior_{k}"] for k in range(3)]
        np.testing.assert_allclose(shares, np.bincount(y_test, minlength=3) / len(y_test),
                                   atol=0.05)  # fmt: skip
        assert last["calibration_free_adapter_so_far"] == pytest.approx(
            metric(y_test, predicted), abs=0.03
        )


def test_the_stream_part_matches_the_spread_of_the_estimate_over_repeated_streams() -> None:
    """The delta-method deviation of the label distribution and of the metric from the
    stream's own noise against their spread over 300 streams of 500 rows (held-out fixed)."""
    from adaptable.core.report.heldout_estimate import bbse_covariances, metric_deviation

    rng = np.random.default_rng(7)
    heldout, heldout_y = _gaussian_classes(rng, 0.5, 20000)
    soft = soft_confusion(heldout, heldout_y)
    shares = np.bincount(heldout_y) / len(heldout_y)
    rates = offset_rates(np.log(heldout), heldout_y, np.zeros((1, 2)))[0]
    priors, scores, prior_sd, metric_sd = [], [], [], []
    for _ in range(300):
        proba, _ = _gaussian_classes(rng, 0.8, 500)
        mean = proba.mean(axis=0)[None]
        moment = (np.einsum("ni,nj->ij", proba, proba) / 500)[None]
        prior = bbse_priors(mean, soft, shares)
        covariance = bbse_covariances(mean, moment, np.array([500.0]), soft, shares)
        priors.append(prior[0, 1])
        scores.append(f1_from_counts(prior[0][:, None] * rates))
        prior_sd.append(np.sqrt(covariance[0, 1, 1]))
        metric_sd.append(metric_deviation(prior, covariance, (500 * rates)[None], "macro_f1")[0])
    # each stream's own deviation, averaged, against the spread over the streams
    assert np.std(priors) == pytest.approx(np.mean(prior_sd), rel=0.2)
    assert np.std(scores) == pytest.approx(np.mean(metric_sd), rel=0.2)
    assert abs(np.mean(priors) - 0.8) < 0.01  # unbiased


def f1_from_counts(matrix: np.ndarray) -> float:
    from adaptable.core.decision.rules import score

    return float(score(matrix, "macro_f1"))


def test_the_realised_variance_of_accuracy_is_binomial() -> None:
    from adaptable.core.report.heldout_estimate import realised_variance

    matrices = 1000 * np.array([[[0.4, 0.1], [0.2, 0.3]]])  # accuracy 0.7 over 1,000 rows
    assert realised_variance(matrices, "accuracy")[0] == pytest.approx(0.7 * 0.3 / 1000, rel=1e-4)


def test_the_realised_variance_of_macro_f1_matches_multinomial_draws() -> None:
    from adaptable.core.report.heldout_estimate import realised_variance

    shares = np.array([0.55, 0.15, 0.1, 0.2])  # cells (0, 0), (0, 1), (1, 0), (1, 1)
    draws = np.random.default_rng(3).multinomial(500, shares, size=4000).reshape(-1, 2, 2)
    spread = np.std([f1_from_counts(m.astype(float)) for m in draws])
    predicted = np.sqrt(realised_variance(500 * shares.reshape(1, 2, 2), "macro_f1")[0])
    assert spread == pytest.approx(predicted, rel=0.05)


def test_the_deviation_covers_the_realised_value_over_held_out_sets_and_streams() -> None:
    """Both held-out set (400 rows) and stream (300 rows) drawn anew 150 times under a pure
    label shift: the realised macro-F1 lies within two deviations of the estimate about as
    often as a normal error would (95 %)."""
    from adaptable.core.report.heldout_estimate import stream_estimates

    rng = np.random.default_rng(11)
    covered = []
    for _ in range(150):
        heldout, heldout_y = _gaussian_classes(rng, 0.5, 400)
        proba, y = _gaussian_classes(rng, 0.8, 300)
        _, scores, sd = stream_estimates(
            np.array([300.0]), np.zeros((1, 2)), np.einsum("ni,nj->ij", proba, proba)[None],
            np.log(heldout), heldout_y, "macro_f1",
        )  # fmt: skip
        realised = f1_score(y, proba.argmax(axis=1), average="macro")
        covered.append(abs(scores[0, 0] - realised) <= 2 * sd[0, 0])
    assert 0.88 <= np.mean(covered) <= 1.0


def test_no_deviation_where_the_estimate_clips_to_the_edge_of_the_simplex() -> None:
    from adaptable.core.report.heldout_estimate import bbse_covariances

    soft = np.array([[0.4, 0.1], [0.1, 0.4]])
    shares = np.array([0.5, 0.5])
    mean = np.array([[0.95, 0.05], [0.7, 0.3]])  # the first clips class 1 to zero
    moment = np.stack([np.diag(m) for m in mean])  # certain posteriors
    covariance = bbse_covariances(mean, moment, np.array([100.0, 100.0]), soft, shares)
    assert np.isnan(covariance[0]).all()
    # the second by hand: w = C^-1 mu, Cov(w) = C^-1 (diag(mu) - mu mu^T) C^-T / n, carried
    # through p = w a / (a . w) by its Jacobian
    inverse = np.linalg.inv(soft)
    spread = np.diag(mean[1]) - np.outer(mean[1], mean[1])
    w = inverse @ mean[1]
    total = shares @ w
    prior = w * shares / total
    jacobian = (np.eye(2) - prior[:, None]) * shares / total
    expected = jacobian @ (inverse @ spread @ inverse.T / 100) @ jacobian.T
    np.testing.assert_allclose(covariance[1], expected)


@pytest.mark.parametrize("objective", ["accuracy", "balanced_accuracy", "macro_f1"])
@pytest.mark.parametrize("n_classes", [2, 3, 5])
def test_the_cell_gradient_matches_central_differences(objective: str, n_classes: int) -> None:
    from adaptable.core.decision.rules import score
    from adaptable.core.report.heldout_estimate import cell_gradient

    rng = np.random.default_rng(n_classes)
    matrices = rng.uniform(0.5, 20.0, size=(6, n_classes, n_classes))
    matrices[0, -1, :] = 0.0  # a class absent from the truth, still predicted
    got = cell_gradient(matrices, objective)
    step = 1e-6
    for i in range(n_classes):
        for j in range(n_classes):
            move = np.zeros_like(matrices)
            move[:, i, j] = step
            if i == n_classes - 1:  # the absent row: only the classes present move
                move[0] = 0.0
            difference = score(matrices + move, objective) - score(matrices - move, objective)
            expected = difference / (2 * step)
            rows = slice(1, None) if i == n_classes - 1 else slice(None)
            np.testing.assert_allclose(got[rows, i, j], expected[rows], rtol=1e-5, atol=1e-9)
    assert np.isnan(cell_gradient(np.full((1, 2, 2), np.nan), objective)).all()


def test_offset_rates_are_those_of_numpys_row_wise_unique(monkeypatch) -> None:
    from adaptable.core.report import heldout_estimate as heldout_estimate

    rng = np.random.default_rng(0)
    for n_classes in (2, 3):
        offsets = np.round(rng.normal(size=(400, n_classes)), 1)
        offsets[::7] = offsets[3]  # repeats
        offsets[5, 0] = -0.0  # a signed zero among zeros
        offsets[6, 0] = 0.0
        offsets[::11] = np.nan  # rows without an offset rule
        logits = rng.normal(size=(300, n_classes))
        log_posteriors = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
        labels = rng.integers(0, n_classes, 300)
        rates = heldout_estimate.offset_rates(log_posteriors, labels, offsets)
        monkeypatch.setattr(
            heldout_estimate,
            "unique_rows",
            lambda v: tuple(np.unique(v, axis=0, return_inverse=True)),
        )
        np.testing.assert_array_equal(
            heldout_estimate.offset_rates(log_posteriors, labels, offsets), rates
        )
        monkeypatch.undo()

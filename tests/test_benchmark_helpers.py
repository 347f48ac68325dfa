"""Helpers of the benchmark scripts whose figures go into the docs: the late-labels table's
variants and row names, and the report-estimate check's metric from confusion rates."""

from __future__ import annotations

import numpy as np
import pytest

from adaptable.core.decision.rules import score


@pytest.fixture(scope="module")
def feedback(benchmark_script):
    return benchmark_script("feedback_benchmark")


@pytest.fixture(scope="module")
def estimate(benchmark_script):
    return benchmark_script("report_estimate")


def test_a_variant_reads_its_options_as_json_where_they_parse(feedback) -> None:
    assert feedback.parse_variant("fallback=plugin,label_shift_level=1.0") == {
        "fallback": "plugin",
        "label_shift_level": 1.0,
    }
    assert feedback.parse_variant("min_labelled=10") == {"min_labelled": 10}


def test_a_variant_runs_without_labels_and_beside_the_default_at_every_share(feedback) -> None:
    variant = {"fallback": "plugin"}
    specs = feedback.specs_for(("development", "heloc", "natural"), "logreg", 0, [0.01, 0.05],
                               [10], [variant])  # fmt: skip
    plain = [s for s in specs if s.method == "adaptable" and not s.option_dict]
    varied = [s for s in specs if s.method == "adaptable" and s.option_dict == variant]
    assert [s.feedback for s in plain] == [None, *[s.feedback for s in varied[1:]]]
    assert [s.feedback and s.feedback["share"] for s in varied] == [None, 0.01, 0.05]
    assert len({s.key for s in specs}) == len(specs)  # every experiment its own record


def test_anchors_are_named_with_options_and_run_at_every_share(feedback) -> None:
    assert feedback.parse_anchor("labelled_refit") == ("labelled_refit", {})
    assert feedback.parse_anchor("labelled_refit[target_weight=plain,ramp_labels=250]") == (
        "labelled_refit",
        {"target_weight": "plain", "ramp_labels": 250},
    )
    anchors = [("labelled_prior", {}), ("labelled_refit", {"target_weight": "ramp"})]
    specs = feedback.specs_for(("development", "heloc", "natural"), "logreg", 0, [0.01, 0.05],
                               [10], anchors=anchors)  # fmt: skip
    labelled = [(s.method, s.option_dict) for s in specs if s.feedback is not None]
    assert labelled == 2 * [("adaptable", {}), *anchors]
    default = feedback.specs_for(("development", "heloc", "natural"), "logreg", 0, [0.05], [10])
    assert [s.method for s in default if s.feedback] == ["adaptable", *feedback.ANCHORS]


def test_the_better_of_row_takes_the_larger_gain_per_case(feedback) -> None:
    table = {
        "a": ({"adaptable 5% d10": 1.0, "labelled_refit 5% d10": 3.0}, 640),
        "b": ({"adaptable 5% d10": 2.0, "labelled_refit 5% d10": -1.0}, 640),
    }
    name = feedback.add_better_of(table, "labelled_refit", [0.05], [10])
    assert [row[f"{name} 5% d10"] for row, _ in table.values()] == [3.0, 2.0]


def test_rows_are_named_by_method_options_and_feedback(feedback) -> None:
    spec = {"method": "adaptable", "options": {"fallback": "plugin"}, "feedback": None}
    assert feedback.row_name({"spec": spec}) == "adaptable[fallback=plugin]"
    labelled = {**spec, "feedback": {"share": 0.05, "delay": 10}}
    assert feedback.row_name({"spec": labelled}) == "adaptable[fallback=plugin] 5% d10"
    assert feedback.row_name({"spec": {"method": "source", "feedback": None}}) == "source"


def test_confusion_rates_are_per_true_class(estimate) -> None:
    predicted = np.array([0, 0, 1, 1, 1, 0])
    labels = np.array([0, 0, 0, 1, 1, 1])
    rates = estimate.confusion_rates(predicted, labels, 2)
    np.testing.assert_allclose(rates, [[2 / 3, 1 / 3], [1 / 3, 2 / 3]])
    # unequal classes: each row divided by its own class's count
    rates = estimate.confusion_rates(np.array([0, 0, 0, 1]), np.array([0, 0, 1, 1]), 2)
    np.testing.assert_allclose(rates, [[1.0, 0.0], [0.5, 0.5]])


def test_macro_f1_of_rates_weighted_by_a_prior(estimate) -> None:
    # class 0: 90 % of rows, 80 % of them right; class 1: 10 %, half right
    expected = np.array([0.9, 0.1])[:, None] * np.array([[0.8, 0.2], [0.5, 0.5]])
    f1_0 = 2 * 0.72 / (0.72 + 0.05 + 0.9)
    f1_1 = 2 * 0.05 / (0.18 + 0.05 + 0.1)
    assert estimate.macro_f1(expected) == pytest.approx(100 * (f1_0 + f1_1) / 2)
    # a class never predicted and never present is left out, as the report scores it
    assert estimate.macro_f1(np.array([[1.0, 0.0], [0.0, 0.0]])) == pytest.approx(100.0)
    assert estimate.macro_f1(np.array([[1.0, 0.0], [0.0, 0.0]])) == pytest.approx(
        100 * score(np.array([[1.0, 0.0], [0.0, 0.0]]), "macro_f1")
    )


def _two_class_scores(predicted_0: list[int], predicted_1: list[int]) -> tuple:
    """Held-out rows of classes 0 and 1 with the given argmax classes (one score bin each)."""
    rows = {0: [0.9, 0.1], 1: [0.2, 0.8]}
    proba = np.array([rows[k] for k in predicted_0 + predicted_1])
    labels = np.array([0] * len(predicted_0) + [1] * len(predicted_1))
    return proba, labels


def test_prior_information_of_separating_useless_and_partial_scores(estimate) -> None:
    # scores that separate the classes: the information of a labelled row, 1 / (q_0 q_1)
    proba, labels = _two_class_scores([0, 0, 0], [1, 1])
    info = estimate.prior_information(proba, labels, np.array([0.3, 0.7]), bins=1)
    np.testing.assert_allclose(info, [[1 / 0.21]])
    # scores that say nothing (every row alike): none
    same = np.tile([0.6, 0.4], (6, 1))
    info = estimate.prior_information(same, np.array([0, 0, 0, 1, 1, 1]), np.array([0.5, 0.5]))
    np.testing.assert_allclose(info, [[0.0]], atol=1e-12)
    # 75 % right on each class, q = (0.8, 0.2): bins' mixture (0.65, 0.35)
    proba, labels = _two_class_scores([0, 0, 0, 1], [0, 1, 1, 1])
    info = estimate.prior_information(proba, labels, np.array([0.8, 0.2]), bins=1)
    np.testing.assert_allclose(info, [[0.25 / 0.65 + 0.25 / 0.35]])


def test_estimate_floor_is_the_cramer_rao_deviation_carried_to_the_macro_f1(estimate) -> None:
    proba, labels = _two_class_scores([0, 0, 0, 1], [0, 1, 1, 1])
    prior, rows = np.array([0.8, 0.2]), 400

    def f1(q0: float) -> float:  # macro-F1 (points) of rates [[.75, .25], [.25, .75]]
        q1 = 1 - q0
        f1_0 = 1.5 * q0 / (1.5 * q0 + 0.25 * q1 + 0.25 * q0)
        f1_1 = 1.5 * q1 / (1.5 * q1 + 0.25 * q0 + 0.25 * q1)
        return 50 * (f1_0 + f1_1)

    gradient = (f1(0.8 + 1e-6) - f1(0.8 - 1e-6)) / 2e-6
    sd = abs(gradient) / np.sqrt(rows * (0.25 / 0.65 + 0.25 / 0.35))
    got_sd, chance = estimate.estimate_floor(proba, labels, rows, prior, bins=1)
    assert got_sd == pytest.approx(sd, rel=1e-5)
    assert chance == pytest.approx(2 * scipy_norm_cdf(2 / sd) - 1, rel=1e-5)
    # four times the rows, half the deviation
    assert estimate.estimate_floor(proba, labels, 4 * rows, prior, bins=1)[0] == pytest.approx(
        sd / 2, rel=1e-5
    )
    # scores that say nothing of the label distribution: no estimate can be trusted
    same = np.tile([0.6, 0.4], (6, 1))
    assert estimate.estimate_floor(same, np.array([0, 0, 0, 1, 1, 1]), rows, prior) == (
        float("inf"),
        0.0,
    )


def scipy_norm_cdf(x: float) -> float:
    from scipy.stats import norm

    return float(norm.cdf(x))


@pytest.fixture(scope="module")
def trial(benchmark_script):
    return benchmark_script("multiclass_trial")


def test_the_multiclass_trial_streams_hold_what_each_shift_says(trial) -> None:
    X, y = trial.load("digits")
    classes = np.unique(y)
    for shift in trial.SHIFTS:
        X_train, y_train, X_valid, y_valid, X_target, y_target = trial.splits(X, y, shift, 0)
        assert len(X_target) == len(y_target) > 64
        assert set(np.unique(y_train)) == set(classes)  # the source knows every class
        if shift == "absent":
            assert len(np.unique(y_target)) == len(classes) // 2
        if shift == "covariate":
            feature = trial.most_informative_split(X, y)
            assert X_train[:, feature].max() <= X_target[:, feature].min()
    # the label shift draws rows without replacement: no row twice
    *_, X_target, _ = trial.splits(X, y, "label_shift", 0)
    assert len(np.unique(X_target, axis=0)) == len(X_target)


def test_the_multiclass_trial_hands_back_labels_only_of_rows_already_predicted(trial) -> None:
    class Recorder:
        """An adapter stand-in that records what the stream hands it."""

        def __init__(self) -> None:
            self.predicted, self.labelled = 0, []

        def reset(self) -> None:
            self.predicted, self.labelled = 0, []

        def predict(self, X):
            self.predicted += len(X)
            return np.zeros(len(X), dtype=int)

        def partial_fit(self, X, y, rows):
            assert rows.max() < self.predicted - 10 * trial.BATCH  # rows 10 batches back
            self.labelled.extend(rows.tolist())

    recorder = Recorder()
    y = np.arange(64 * 30) % 3
    X = np.zeros((len(y), 2))
    predictions = trial.stream(recorder, X, y, (0.2, 10), seed=0)
    assert len(predictions) == len(y)
    assert recorder.labelled and max(recorder.labelled) < 64 * 20  # 10 batches late
    assert 0.1 < len(recorder.labelled) / (64 * 20) < 0.3


def test_the_multiclass_trial_confirmation_sets_are_outside_its_default_run(trial) -> None:
    assert not set(trial.CONFIRMATION) & set(trial.DATASETS)
    classes = {"wine": 3, "synth4_skewed": 4, "synth8": 8}
    for name in trial.CONFIRMATION:
        X, y = trial.load(name)
        assert len(X) == len(y) and len(np.unique(y)) == classes[name]
    _, y = trial.load("synth4_skewed")
    shares = np.bincount(y) / len(y)
    assert shares[0] > 0.5 and shares[3] < 0.08  # skewed as its weights ask (flip_y aside)


@pytest.fixture(scope="module")
def ceiling(benchmark_script):
    return benchmark_script("feedback_ceiling")


def test_the_ceiling_counts_the_labels_the_runner_delivers(ceiling) -> None:
    from adaptable.experiments.late_labels import LateLabels
    from adaptable.experiments.spec import ExperimentSpec

    class Learner:
        def __init__(self) -> None:
            self.received = 0

        def partial_fit(self, X, y) -> None:
            self.received += len(y)

    sizes = np.array([64] * 30 + [17])
    for share, delay, seed in [(0.05, 10, 0), (0.2, 3, 2), (0.01, 0, 1)]:
        spec = ExperimentSpec("heloc", "natural", "logreg", "adaptable", seed,
                              feedback_share=share, feedback_delay=delay)  # fmt: skip
        learner = Learner()
        labels = LateLabels(spec, learner)
        delivered = []
        for n in sizes:
            labels.deliver()
            delivered.append(learner.received)
            labels.reveal(np.zeros((n, 1)), np.zeros(n, dtype=np.int64))
        assert ceiling.arrivals(sizes, share, delay, seed).tolist() == delivered


def test_the_ceiling_switches_rule_at_the_first_row_of_a_batch(ceiling) -> None:
    cell = {
        "sizes": np.array([2, 3, 1]),
        "adaptable": np.zeros(6, int),
        "balanced": np.ones(6, int),
    }
    assert ceiling.switched(cell, "balanced", 1).tolist() == [0, 0, 1, 1, 1, 1]
    assert ceiling.switched(cell, "balanced", 3).tolist() == [0] * 6
    assert ceiling.switched(cell, "balanced", 0).tolist() == [1] * 6


def test_the_first_label_batch_is_the_first_with_a_label_delivered(ceiling) -> None:
    import argparse

    sizes = np.array([64] * 40)
    args = argparse.Namespace(share=0.05, delay=10)
    first = ceiling.first_label({"sizes": sizes}, args, seed=0)
    delivered = ceiling.arrivals(sizes, 0.05, 10, 0)
    assert first >= 11 and delivered[first] >= 1 and delivered[first - 1] == 0
    none = argparse.Namespace(share=0.0, delay=10)
    assert ceiling.first_label({"sizes": sizes}, none, seed=0) == len(sizes)

"""Helpers of the benchmark scripts whose figures go into the docs: the late-labels table's
variants and row names, and the report-estimate check's metric from confusion rates."""

from __future__ import annotations

import numpy as np
import pytest

from adaptable.core.decision import score


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

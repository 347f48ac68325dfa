"""The feedback protocol (late labels) of the experiment key and the runner, and the drift
report figure, on the toy providers."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from adaptable.experiments import testing
from adaptable.experiments.components import RunContext
from adaptable.experiments.drift_figure import draw_experiment, experiment_report, with_feedback
from adaptable.experiments.experiment import (
    fit_experiment,
    predict_stream,
    run_experiment,
    shifted_stream,
)
from adaptable.experiments.spec import ExperimentSpec


class Recorder(testing.ToySource):
    """The toy source method that records when each label reaches it."""

    def __init__(self, with_rows: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.with_rows = with_rows
        self.predicted = 0  # batches predicted so far
        self.calls: list[tuple[int, np.ndarray, np.ndarray]] = []

    def predict_proba(self, X_batch: Any, oracle_labels: np.ndarray | None = None) -> np.ndarray:
        self.predicted += 1
        return super().predict_proba(X_batch)

    def partial_fit(self, X: Any, y: np.ndarray, rows: np.ndarray | None = None) -> Recorder:
        assert len(X) == len(y) == len(rows)
        self.calls.append((self.predicted, np.asarray(rows), np.asarray(y)))
        return self


def _create(name: str, **options: Any) -> Any:
    if name == "recorder":
        return Recorder(**options)
    if name == "adaptable":
        from adaptable import AdapTable

        return AdapTable(**options)
    return testing.create_method(name, **options)


CONTEXT = RunContext(components=dataclasses.replace(testing.COMPONENTS, create_method=_create))


def _stream(spec: ExperimentSpec) -> tuple[Recorder, list]:
    fitted = fit_experiment(spec, CONTEXT)
    batches = list(predict_stream(fitted, shifted_stream(fitted, spec.scenario, CONTEXT)))
    return fitted.method, batches


def test_the_key_and_record_name_feedback_only_when_labels_arrive() -> None:
    plain = ExperimentSpec("toy", "natural", "softmax", "adaptable", 0)
    assert plain.key == "toy|natural|softmax|adaptable|seed=0"
    assert ExperimentSpec("toy", "natural", "softmax", "adaptable", 0, feedback_delay=5) == plain
    fed = ExperimentSpec("toy", "natural", "softmax", "adaptable", 0, feedback_share=0.05,
                         feedback_delay=10)  # fmt: skip
    assert fed.key == "toy|natural|softmax|adaptable|seed=0|feedback=0.05@10"
    assert "feedback" not in plain.to_dict()
    assert fed.to_dict()["feedback"] == {"share": 0.05, "delay": 10}
    assert ExperimentSpec.from_dict(fed.to_dict()) == fed
    assert ExperimentSpec.from_dict(plain.to_dict()) == plain
    for bad in ({"feedback_share": 1.5}, {"feedback_share": -0.1}, {"feedback_delay": -1},
                {"feedback_share": 0.1, "feedback_delay": 1.5}):  # fmt: skip
        with pytest.raises(ValueError, match="feedback"):
            ExperimentSpec("toy", "natural", "softmax", "adaptable", 0, **bad)
    assert with_feedback([plain], 0.05, 10) == [fed]
    with pytest.raises(ValueError, match="whole number"):
        with_feedback([plain], 0.05, 1.5)


@pytest.mark.parametrize("delay", [0, 3])
def test_labels_arrive_delay_batches_after_their_rows_were_predicted(delay: int) -> None:
    spec = ExperimentSpec("toy", "natural", "softmax", "recorder", 0, feedback_share=0.3,
                          feedback_delay=delay)  # fmt: skip
    method, batches = _stream(spec)
    sizes = np.cumsum([0] + [len(b.y) for b in batches])
    y = np.concatenate([b.y for b in batches])
    assert method.calls, "no labels arrived"
    seen = []
    for predicted, rows, labels in method.calls:
        origin = np.searchsorted(sizes, rows, side="right") - 1
        # batch b's labels arrive just before batch b + delay + 1 is predicted
        assert np.all(origin + delay + 1 == predicted)
        np.testing.assert_array_equal(labels, y[rows])
        seen.append(rows)
    seen = np.concatenate(seen)
    assert len(np.unique(seen)) == len(seen)
    # the last delay + 1 batches' labels are still pending when the stream ends
    assert seen.max() < sizes[len(batches) - delay - 1]
    assert 0.15 < len(seen) / sizes[len(batches) - delay - 1] < 0.45
    # the same rows for every method of the experiment (seeded by the spec's seed)
    again, _ = _stream(spec)
    np.testing.assert_array_equal(np.concatenate([r for _, r, _ in again.calls]), seen)


def test_a_method_without_partial_fit_is_refused_and_one_without_rows_gets_none() -> None:
    spec = ExperimentSpec("toy", "natural", "softmax", "source", 0, feedback_share=0.1)
    with pytest.raises(ValueError, match="takes no labels"):
        _stream(spec)

    class NoRows(Recorder):
        def partial_fit(self, X: Any, y: np.ndarray) -> NoRows:  # type: ignore[override]
            self.calls.append((self.predicted, np.zeros(len(y)), np.asarray(y)))
            return self

    spec = ExperimentSpec("toy", "natural", "softmax", "norows", 0, feedback_share=0.5)
    context = RunContext(
        components=dataclasses.replace(
            testing.COMPONENTS, create_method=lambda name, **o: NoRows(**o)
        )
    )
    fitted = fit_experiment(spec, context)
    list(predict_stream(fitted, shifted_stream(fitted, spec.scenario, context)))
    assert fitted.method.calls


def test_adaptable_with_feedback_scores_every_row_and_reports_realised_performance(
    tmp_path,
) -> None:
    spec = ExperimentSpec("toy", "natural", "softmax", "adaptable", 0, {"random_state": 0},
                          feedback_share=0.5, feedback_delay=0)  # fmt: skip
    record = run_experiment(spec, CONTEXT)
    assert record["rows"] == 320 and record["key"].endswith("feedback=0.5@0")
    assert record["spec"]["feedback"] == {"share": 0.5, "delay": 0}
    fitted = fit_experiment(spec, CONTEXT)
    list(predict_stream(fitted, shifted_stream(fitted, spec.scenario, CONTEXT)))
    report = fitted.method.report()
    assert len(report) == 5 and report["realised_rows"].iloc[:-1].min() > 0
    path, drift = draw_experiment(spec, tmp_path / "drift.png", CONTEXT)
    assert path.exists() and path.stat().st_size > 10_000
    assert drift.batches == 5 and drift.labelled_rows > 0


def test_the_drift_figure_of_a_report_that_forgot_its_first_batches(tmp_path) -> None:
    spec = ExperimentSpec("toy", "natural", "softmax", "adaptable", 0,
                          {"random_state": 0, "report_batches": 2},
                          feedback_share=0.5, feedback_delay=0)  # fmt: skip
    run = experiment_report(spec, CONTEXT)
    kept = run.report["batch"].tolist()
    assert kept[0] > 0 and kept[-1] == 4  # the 5-batch stream's first batches forgotten
    assert run.true_shares.shape == (len(kept), 2)
    assert run.summary.first_batch == kept[0]
    path, _ = draw_experiment(spec, tmp_path / "drift.png", CONTEXT)
    assert path.exists() and path.stat().st_size > 10_000

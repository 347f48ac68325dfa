"""``benchmarks/research/witnesses.py``: its helpers by hand, and one report on the toy
components (the script is run by hand, so this is what keeps it working)."""

from __future__ import annotations

import numpy as np
import pytest

from adaptable.experiments import testing
from adaptable.experiments.components import RunContext


@pytest.fixture(scope="module")
def witnesses(benchmark_script):
    return benchmark_script("witnesses")


def test_disagreement_counts_the_rows_each_rule_gets_right(witnesses) -> None:
    # p_s = (0.8, 0.2): rows 1 to 3 flip to class 1 under the balanced rule.
    posteriors = np.array([[0.9, 0.1], [0.7, 0.3], [0.6, 0.4], [0.65, 0.35], [0.2, 0.8]])
    rules = witnesses.rules_of(posteriors, np.array([0.8, 0.2]))
    assert rules.tolist() == [[0, 0, 0, 0, 1], [0, 1, 1, 1, 1]]
    # row 1 is truly 0 (argmax right), rows 2 and 3 truly 1 (balanced right)
    assert witnesses.disagreement(rules, np.array([0, 0, 1, 1, 1])) == "3 (1 / 2)"
    assert witnesses.pair([0.5, 0.625]) == "50.0/62.5 [bal]"
    assert witnesses.pair([0.5, 0.5]) == "50.0/50.0 [arg]"


def test_estimate_is_plain_em_without_a_prior_and_p_s_under_a_strong_one(witnesses) -> None:
    certain = np.array([[1.0, 0.0]] * 30 + [[0.0, 1.0]] * 70)
    prior = np.array([0.5, 0.5])
    assert witnesses.estimate(certain, prior, 0.0) == pytest.approx([0.3, 0.7])
    # 100 pseudo-rows at p_s: (30 + 50) / 200
    assert witnesses.estimate(certain, prior, 100.0) == pytest.approx([0.4, 0.6])


def test_report_reads_a_stream_end_to_end(witnesses, capsys: pytest.CaptureFixture[str]) -> None:
    from sklearn.metrics import f1_score

    from adaptable.experiments.components import get_dataset, source_model

    context = RunContext(components=testing.COMPONENTS)
    witnesses.report(context, "toy:natural:softmax", [0], 64.0)
    line = capsys.readouterr().out.strip()
    assert line.startswith("toy:natural:softmax seed 0: n=")
    for field in ("disagree", "held-out", "covariate reading", "label-shift reading", "MAP"):
        assert field in line
    # The truth column against scikit-learn on the same stream, computed here independently.
    dataset = get_dataset("toy", context)
    model = source_model("toy", "softmax", 0, context)
    stream = context.components.apply_shift("natural", dataset, 0)
    proba = np.asarray(model.predict_proba(stream.X))
    labels = np.asarray(stream.y)
    prior = dataset.source_prior()
    truth = [100 * f1_score(labels, p.argmax(axis=1), average="macro")
             for p in (proba, proba / prior)]  # fmt: skip
    assert f"n={len(labels)}," in line
    assert f"truth {truth[0]:.1f}/{truth[1]:.1f}" in line
    true_prior = np.bincount(labels, minlength=len(prior)) / len(labels)
    assert f"p_t true {np.round(true_prior, 2)}" in line

"""The figures module: the experiments each figure reads, the calibration pass (through the
runner), and the two figures of a benchmark table."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest

from adaptable.experiments import benchmark, figures, paper, plots, testing
from adaptable.experiments.components import RunContext
from adaptable.experiments.store import ResultStore
from adaptable.experiments.tables import compare, summarize

CONTEXT = RunContext(components=testing.COMPONENTS)

TABLE = benchmark.TABLES["generality"]


def _legend(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


@dataclass
class _RepeatingStream(testing.ToyStream):
    """A stream that says it carries about one distinct row, as a degenerate resample does."""

    @property
    def info(self) -> dict[str, float]:
        return {"effective_rows": 1.0}


def _repeating_shift(name: str, dataset, seed: int):
    if name == "repeat":
        X = dataset.test.X.iloc[[0] * len(dataset.test.y)].reset_index(drop=True)
        return _RepeatingStream(name, X, dataset.test.y[[0] * len(dataset.test.y)])
    return testing.apply_shift(name, dataset, seed)


def _randomly_configured(name: str, **options):
    """A method whose construction draws from the global generator (as torch inits do)."""
    return testing.ToyPriorShift(temperature=float(np.random.uniform(0.5, 3.0)), **options)


def test_make_figures_from_the_toy_providers(tmp_path: Path) -> None:
    written = figures.make_figures(
        ["reliability", "label_distribution", "js_divergence", "temperature_mmd"],
        dataset="toy", model="softmax", seed=0, out_dir=tmp_path,
        store=ResultStore(tmp_path / "r.jsonl"), context=CONTEXT, progress=False, method="prior",
    )  # fmt: skip
    for name, path in written.items():
        assert path.endswith(f"{name}_toy_softmax_prior_s0.png"), (name, path)
        assert Path(path).read_bytes()[:4] == b"\x89PNG"
    skipped = figures.make_figures(
        ["reliability"], dataset="nowhere", model="softmax", seed=0, out_dir=tmp_path,
        store=ResultStore(tmp_path / "r.jsonl"), context=CONTEXT, progress=False,
    )  # fmt: skip
    assert skipped["reliability"].startswith("skipped: toy data set 'nowhere' is absent")


def test_calibration_analysis_flags_a_degenerate_scenario() -> None:
    context = RunContext(components=replace(testing.COMPONENTS, apply_shift=_repeating_shift))
    analysis = figures.calibration_analysis(
        "toy", "softmax", 0, context, method="prior", scenarios=("natural", "repeat", "absent")
    )
    assert analysis["degenerate"] == {"repeat": "stream repeats ~1 test row"}
    assert set(analysis["skipped_scenarios"]) == {"absent"}
    assert {p["scenario"] for p in analysis["points"]} == {"natural", "repeat"}
    assert sum(analysis["before"]["count"]) == 320  # the whole natural stream
    # the temperatures change the probabilities, so the two diagrams differ
    assert analysis["before"]["confidence"] != analysis["after"]["confidence"]


def test_calibration_analysis_depends_on_the_seed_not_on_what_ran_before() -> None:
    context = RunContext(components=replace(testing.COMPONENTS, create_method=_randomly_configured))
    first = figures.calibration_analysis("toy", "softmax", 0, context, scenarios=("natural",))
    np.random.seed(12345)  # whatever ran before in this process
    np.random.uniform(size=7)
    second = figures.calibration_analysis("toy", "softmax", 0, context, scenarios=("natural",))
    assert first["points"] == second["points"]


def test_gains_figure_sorts_each_method_and_reads_its_summary(
    tmp_path: Path, generality_records: list[dict]
) -> None:
    from adaptable.experiments.figures import case_gains_figure
    from adaptable.experiments.plots import plot_case_gains

    frame = compare(TABLE, generality_records, [0, 1], ["heloc"])
    path = case_gains_figure(frame, TABLE, tmp_path)
    assert path == tmp_path / "generality_gains.png" and path.stat().st_size > 0
    # EM gains +5 and -5, AdapTable +8 and +1 (VALUES); a line is sorted worst first and
    # stops at the floor, with the true worst case in its legend.
    fig = plot_case_gains({"EM": [5.0, -5.0], "AdapTable": [8.0, 1.0], "bad": [-40.0, 2.0]})
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[0] == "EM (won 1, lost 1, mean +0.0, worst -5.0)"
    assert labels[1] == "AdapTable (won 2, lost 0, mean +4.5, worst +1.0)"
    assert labels[2].endswith("worst -40.0)")
    lines = ax.get_lines()
    assert list(lines[0].get_ydata()) == [-5.0, 5.0]
    assert list(lines[2].get_ydata()) == [-20.0, 2.0]
    # A table without summary lines gets no figure.
    oracle = compare(paper.TABLES["oracle"], [], [0], ["heloc"])
    assert case_gains_figure(oracle, paper.TABLES["oracle"], tmp_path) is None


def test_risk_and_reach_figure_places_each_method_from_its_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, generality_records: list[dict]
) -> None:
    from adaptable.experiments.figures import risk_and_reach_figure
    from adaptable.experiments.plots import plot_risk_and_reach

    drawn: dict = {}

    def spy(points: dict, **kwargs: object) -> object:
        drawn.update(points=points, **kwargs)
        return plot_risk_and_reach(points, **kwargs)

    monkeypatch.setattr(plots, "plot_risk_and_reach", spy)
    frame = compare(TABLE, generality_records, [0, 1], ["heloc"])
    path = risk_and_reach_figure(summarize(frame, TABLE), TABLE, tmp_path)
    assert path == tmp_path / "generality_risk.png" and path.stat().st_size > 0
    # From the per-case means of test_summary_compares_per_case_means: EM 0 of 2 cases within
    # 1.5 of the bar, worst -5; AdapTable 2 of 2, worst +1; Balanced 1 of 2 (60 vs bar 60, 67
    # vs bar 70), worst -3. Source (the reference) and methods without a case are left out.
    assert drawn["points"] == {
        "Balanced": (0.5, pytest.approx(-3.0)),
        "EM": (0.0, pytest.approx(-5.0)),
        "AdapTable (default)": (1.0, pytest.approx(1.0)),
    }
    assert drawn["goal"] == benchmark.GOAL == (0.9, -1.0)
    fig = plot_risk_and_reach(
        {"EM": (0.0, -5.0), "AdapTable": (1.0, 1.0), "bad": (0.5, -40.0)},
        goal=(0.9, -1.0),
        style_order=("AdapTable", "EM"),
    )
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[0].startswith("goal: within 1.5 of the bar in >= 90 %")
    assert labels[1:] == [
        "EM: 0 %, worst -5.00",
        "AdapTable: 100 %, worst +1.00",
        "bad: 50 %, worst -40.00 (below the axis)",
    ]
    offsets = [tuple(c.get_offsets()[0]) for c in ax.collections[1:]]
    assert offsets == [(0.0, -5.0), (100.0, 1.0), (50.0, -20.0)]  # clipped at the floor
    # style_order fixes a method's colour whatever the other methods are
    colours = [tuple(c.get_facecolor()[0]) for c in ax.collections[1:]]
    alone = plot_risk_and_reach({"AdapTable": (1.0, 1.0)}, style_order=("AdapTable", "EM"))
    assert tuple(alone.axes[0].collections[0].get_facecolor()[0]) == colours[1] != colours[0]
    # A method that never loses stays in view, and the goal's corner reaches the top.
    bottom, top = (
        plot_risk_and_reach({"never loses": (0.9, 3.0)}, goal=(0.9, -1.0)).axes[0].get_ylim()
    )
    assert bottom < 0.0 < 3.0 < top
    summary = summarize(frame, TABLE)
    # A table without summary lines, or a summary with no case, gets no figure.
    assert risk_and_reach_figure(summary, paper.TABLES["oracle"], tmp_path) is None
    assert risk_and_reach_figure(summary.iloc[:0], TABLE, tmp_path) is None


def test_latent_figures_separate_domains_and_normalise_entropy(tmp_path: Path) -> None:
    written = figures.make_figures(
        ["tsne", "entropy"], dataset="toy", model="softmax", seed=0, out_dir=tmp_path,
        store=ResultStore(tmp_path / "r.jsonl"), context=CONTEXT, progress=False,
    )  # fmt: skip
    assert written["tsne"].endswith("tsne_toy_softmax_s0.png")
    assert Path(written["entropy"]).read_bytes()[:4] == b"\x89PNG"
    out = figures.latent_analysis("toy", "softmax", 0, CONTEXT, rows=30)
    assert out["points"].shape == (60, 2)
    assert out["domains"].count("source") == out["domains"].count("target") == 30
    for values in out["entropy"].values():
        assert 0.0 <= min(values) and max(values) <= 1.0 + 1e-9


def test_paper_table_figure_averages_each_column_over_datasets(tmp_path: Path) -> None:
    import pandas as pd

    from adaptable.experiments import paper

    frame = pd.DataFrame(
        {
            "dataset": ["heloc", "childhood_lead", "heloc", "heloc"],
            "scenario": ["gaussian", "gaussian", "gaussian", "uniform"],
            "model": ["mlp"] * 4,
            "method": ["Source", "Source", "PL", "Source"],
            "metric": ["macro_f1"] * 4,
            "ours_mean": [40.0, 60.0, 30.0, 10.0],
        }
    )
    drawn: dict = {}
    original = figures.plots.plot_method_bars

    def spy(values, title=""):
        drawn.update(values)
        return original(values, title)

    figures.plots.plot_method_bars = spy
    try:
        path = figures.paper_table_figure(frame, paper.TABLES["corruptions"], tmp_path)
    finally:
        figures.plots.plot_method_bars = original
    assert path is not None and path.name == "corruptions_bars.png"
    assert drawn == {"Gaussian": {"Source": 50.0, "PL": 30.0}, "Uniform": {"Source": 10.0}}
    assert figures.paper_table_figure(frame, paper.TABLES["oracle"], tmp_path) is None


def test_a_method_without_an_estimate_skips_the_figures_that_would_lack_it(
    tmp_path: Path,
) -> None:
    # the toy source method records no label-distribution estimate: the figures would show the
    # source model alone, and are reported as skipped rather than drawn without the method
    written = figures.make_figures(
        ["label_distribution", "js_divergence"],
        dataset="toy", model="softmax", seed=0, out_dir=tmp_path,
        store=ResultStore(tmp_path / "r.jsonl"), context=CONTEXT, progress=False, method="source",
    )  # fmt: skip
    assert written == dict.fromkeys(
        ["label_distribution", "js_divergence"],
        "skipped: source records no label-distribution estimate",
    )
    assert not list(tmp_path.glob("*.png"))

"""The generality role's table: its definition, its experiments, and the summary lines and
figures every benchmark role's table shares."""

from __future__ import annotations

import csv
import itertools
from pathlib import Path

import pytest

from adaptable import datasets, models, shifts
from adaptable.cli import parse_method
from adaptable.experiments import benchmark, paper
from adaptable.experiments.spec import ExperimentSpec
from adaptable.experiments.tables import compare, summarize, table_specs, to_markdown, write_table

TABLE = benchmark.TABLES["generality"]


def test_cases_are_registered_datasets_and_scenarios() -> None:
    assert len(TABLE.cells()) == 17 + 9 + 3
    natural = [d for d, s in TABLE.cells() if s == "natural"]
    assert set(natural) == {"heloc", "hospital_readmission"} | set(datasets.GENERALITY_TASKS)
    for dataset, scenario in TABLE.cells():
        assert dataset in datasets.TASKS or dataset in datasets.GENERALITY_TASKS
        assert scenario in shifts.SCENARIOS
    label_shift = [c for c in TABLE.cells() if c[1] != "natural"]
    assert {d for d, _ in label_shift} == {
        "heloc", "hospital_readmission", "adult_education", "cmc_education",
    }  # fmt: skip
    # cmc (3 classes) gets the Dirichlet draws, the binary tasks the positive rates
    for dataset, scenario in label_shift:
        assert scenario.startswith("prior_dirichlet") == (dataset == "cmc_education")


def test_columns_are_the_issue_method_specs_for_each_model() -> None:
    assert list(dict.fromkeys(r.model for r in TABLE.rows)) == ["logreg", "xgboost", "mlp"]
    assert set(benchmark.MODELS) <= set(models.names())
    for model in benchmark.MODELS:
        specs = [
            ExperimentSpec("heloc", "natural", r.model, r.method, 0, r.option_dict).label
            for r in TABLE.rows
            if r.model == model
        ]
        assert specs == [
            "source", "balanced", "em", "adaptable[preset=paper]", "adaptable",
            "adaptable[calibrator=temperature]", "adaptable[fallback=plugin]",
            "adaptable[fallback=between]", "adaptable[stream_check=model]", "oracle_prior",
        ]  # fmt: skip
        # The CLI's spelling of each column parses to the same (method, options).
        for text, row in zip(specs, (r for r in TABLE.rows if r.model == model), strict=True):
            assert parse_method(text) == (row.method, row.option_dict)
    assert TABLE.metrics == ("macro_f1", "balanced_accuracy", "accuracy")
    assert all(r.paper_method is None for r in TABLE.rows)  # no paper values


def test_table_specs_cover_cases_models_seeds_and_group_by_source() -> None:
    specs = table_specs(TABLE, [0, 1, 2])
    assert len(specs) == 29 * 3 * 3 * 10
    assert {(s.dataset, s.scenario) for s in specs} == set(TABLE.cells())
    # Experiments sharing a source model are adjacent (one training / cache load each).
    sources = [s.source_key for s in specs]
    assert len([k for k, _ in itertools.groupby(sources)]) == len(set(sources)) == 17 * 3 * 3
    only = table_specs(TABLE, [0], ["cmc_education"], ["mlp"])
    assert {s.scenario for s in only} == {"natural", *benchmark.DIRICHLET_PRIORS}
    assert len(only) == 4 * 10


def test_product_tables_keep_their_cells() -> None:
    table = paper.TABLES["corruptions"]
    assert table.cells() == [(d, s) for d in table.datasets for s in table.scenarios]
    assert table.cells(["heloc"]) == [("heloc", s) for s in table.scenarios]


def _record(spec: ExperimentSpec, f1: float) -> dict:
    return {
        "key": spec.key,
        "spec": spec.to_dict(),
        "metrics": {"macro_f1": f1, "balanced_accuracy": f1, "accuracy": f1, "ece": 0.1},
        "timing": {"seconds_per_row": 1e-4, "adapt_seconds": 1.0},
    }


# Per-case F1 (two seeds each, mean in the comment) for two cases of the logreg source.
VALUES = {
    ("heloc", "natural"): {
        "Source": (0.50, 0.52),  # 51
        "Balanced": (0.60, 0.60),  # 60
        "EM": (0.55, 0.57),  # 56
        "AdapTable (default)": (0.58, 0.60),  # 59
    },
    ("heloc", "prior_0.1"): {
        "Source": (0.70, 0.70),  # 70
        "Balanced": (0.66, 0.68),  # 67
        "EM": (0.64, 0.66),  # 65
        "AdapTable (default)": (0.71, 0.71),  # 71
    },
}


def _records() -> list[dict]:
    rows = {r.label: r for r in TABLE.rows if r.model == "logreg"}
    out = []
    for (dataset, scenario), by_method in VALUES.items():
        for label, values in by_method.items():
            row = rows[label]
            for seed, value in enumerate(values):
                spec = ExperimentSpec(
                    dataset, scenario, "logreg", row.method, seed, row.option_dict
                )
                out.append(_record(spec, value))
    return out


def test_summary_compares_per_case_means() -> None:
    frame = compare(TABLE, _records(), [0, 1], ["heloc"])
    lines = summarize(frame, TABLE)
    f1 = lines[(lines["metric"] == "macro_f1") & (lines["group"] == "all")].set_index("method")
    em, default = f1.loc["EM"], f1.loc["AdapTable (default)"]
    # EM: +5 and -5 vs Source; vs max(Source, Balanced) = 60 and 70: -4 and -5.
    assert (em["cases"], em["won"], em["lost"]) == (2, 1, 1)
    assert em["mean_difference"] == pytest.approx(0.0)
    assert em["worst_difference"] == pytest.approx(-5.0)
    assert em["worst_difference_vs_bar"] == pytest.approx(-5.0)
    assert em["within_tolerance_of_bar"] == 0
    # AdapTable: +8 and +1; vs the bar -1 and +1: both within 1.5.
    assert (default["won"], default["lost"]) == (2, 0)
    assert default["mean_difference"] == pytest.approx(4.5)
    assert default["worst_difference_vs_bar"] == pytest.approx(-1.0)
    assert default["within_tolerance_of_bar"] == 2
    # Methods that never ran have no case; the groups split the cases by scenario.
    assert f1.loc["Oracle prior", "cases"] == 0
    groups = lines[(lines["metric"] == "macro_f1") & (lines["method"] == "EM")]
    by_group = groups.set_index("group")["mean_difference"]
    assert by_group["domain splits"] == pytest.approx(5.0)
    assert by_group["pure label shift"] == pytest.approx(-5.0)


def test_markdown_and_files(tmp_path: Path) -> None:
    frame = compare(TABLE, _records(), [0, 1, 2], ["heloc"])
    text = to_markdown(frame, TABLE, seeds=[0, 1, 2])
    assert "### Summary, F1, all" in text and "### Summary, bAcc, pure label shift" in text
    assert "### Per case, Acc" in text
    assert "| heloc | prior 0.1 | logreg | 70.0 (2 of 3 seeds) |" in text
    assert "not run" in text  # the AdapTable (paper) column, for example
    paths = write_table(frame, TABLE, tmp_path, seeds=[0, 1, 2])
    assert [p.name for p in paths] == ["generality.md", "generality.csv", "generality_summary.csv"]
    with paths[2].open() as handle:
        rows = list(csv.DictReader(handle))
    assert {r["group"] for r in rows} == {"all", "domain splits", "pure label shift"}
    em = next(r for r in rows if r["method"] == "EM" and r["group"] == "all")
    assert float(em["worst_difference"]) == pytest.approx(-5.0)


def test_summary_needs_a_summary_definition() -> None:
    frame = compare(paper.TABLES["oracle"], [], [0], ["heloc"])
    with pytest.raises(ValueError, match="no summary"):
        summarize(frame, paper.TABLES["oracle"])


def test_repeated_failures_are_written_once() -> None:
    frame = compare(TABLE, _records(), [0, 1], ["heloc"])
    error = "TypeError: method 'adaptable' (AdapTable): bad options {'preset': 'paper'}"
    failures = {f"heloc|natural|mlp|adaptable|seed={s}|preset": error for s in range(5)}
    failures["heloc|natural|mlp|em|seed=0"] = "ValueError: something else"
    text = to_markdown(frame, TABLE, failures=failures, seeds=[0, 1])
    assert f"- 5 experiments, e.g. `heloc|natural|mlp|adaptable|seed=0|preset`: {error}" in text
    assert "- `heloc|natural|mlp|em|seed=0`: ValueError: something else" in text
    assert text.count("bad options") == 1


def test_gains_figure_sorts_each_method_and_reads_its_summary(tmp_path: Path) -> None:
    from adaptable.experiments.figures import case_gains_figure
    from adaptable.experiments.plots import plot_case_gains

    frame = compare(TABLE, _records(), [0, 1], ["heloc"])
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
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from adaptable.experiments import plots
    from adaptable.experiments.figures import risk_and_reach_figure
    from adaptable.experiments.plots import plot_risk_and_reach

    drawn: dict = {}

    def spy(points: dict, **kwargs: object) -> object:
        drawn.update(points=points, **kwargs)
        return plot_risk_and_reach(points, **kwargs)

    monkeypatch.setattr(plots, "plot_risk_and_reach", spy)
    frame = compare(TABLE, _records(), [0, 1], ["heloc"])
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


def test_a_benchmark_rejects_datasets_it_does_not_cut() -> None:
    with pytest.raises(ValueError, match=r"no cases for dataset\(s\) \['heloc_trades'\]"):
        table_specs(TABLE, [0], ["heloc", "heloc_trades"])
    only = table_specs(TABLE, [0], ["heloc_delinquency"], ["logreg"])
    assert {(s.dataset, s.scenario) for s in only} == {("heloc_delinquency", "natural")}
    # a table of every dataset x scenario keeps running any dataset it is given
    main = paper.TABLES["main"]
    assert {s.dataset for s in table_specs(main, [0], ["heloc_delinquency"], ["mlp"])} == {
        "heloc_delinquency"
    }

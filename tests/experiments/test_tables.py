"""Paper tables: experiment lists, ours vs paper, Markdown / CSV output."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from adaptable.experiments import benchmark, paper
from adaptable.experiments.spec import ExperimentSpec
from adaptable.experiments.tables import (
    compare,
    summarize,
    summary,
    table_specs,
    to_markdown,
    write_table,
)

TABLE = benchmark.TABLES["generality"]


def _record(spec: ExperimentSpec, f1: float, bacc: float = 0.5, per_row: float = 1e-4) -> dict:
    return {
        "key": spec.key,
        "spec": spec.to_dict(),
        "metrics": {"macro_f1": f1, "balanced_accuracy": bacc, "accuracy": 0.5, "ece": 0.1},
        "timing": {"seconds_per_row": per_row, "adapt_seconds": 1.0},
    }


def test_table_specs_cover_rows_seeds_and_options() -> None:
    table = paper.TABLES["calibrator_ablation"]
    specs = table_specs(table, [0, 1, 2], ["heloc"])
    assert len(specs) == 5 * 3
    options = {tuple(sorted(s.option_dict.items())) for s in specs}
    assert (("calibrator", "platt"), ("preset", "paper")) in options
    assert (("calibrator", "none"), ("preset", "paper")) in options
    # Every AdapTable row of a paper table runs the paper's algorithm, but the default's row.
    # (The benchmarks beyond the paper are the tables with summary lines.)
    for name, table in paper.TABLES.items():
        for row in table.rows:
            if row.method == "adaptable" and table.summary is None:
                expected = "default" if row.label == "AdapTable (default)" else "paper"
                assert row.option_dict["preset"] == expected, (name, row.label)
    # 6 supervised / CatBoost+AdapTable, 8 MLP TTA rows, 3 + 5 + 3 beyond the paper
    assert len(table_specs(paper.TABLES["main"], [0], ["heloc"])) == 6 + 8 + 3 + 5 + 3


def test_compare_mean_se_and_difference() -> None:
    table = paper.TABLES["main"]
    paper_preset = (("preset", "paper"),)
    specs = [
        ExperimentSpec("heloc", "natural", "mlp", "adaptable", s, paper_preset) for s in (0, 1, 2)
    ]
    records = [_record(s, f1) for s, f1 in zip(specs, (0.60, 0.62, 0.64), strict=True)]
    records.append(_record(ExperimentSpec("heloc", "natural", "mlp", "source", 0), 0.38))
    frame = compare(table, records, [0, 1, 2], ["heloc"])
    line = frame[(frame["method"] == "AdapTable") & (frame["metric"] == "macro_f1")].iloc[0]
    assert line["ours_mean"] == pytest.approx(62.0)
    assert line["ours_se"] == pytest.approx(2.0 / math.sqrt(3))  # sd 2.0 over three seeds
    assert line["paper_mean"] == 64.5 and line["difference"] == pytest.approx(-2.5)
    assert line["n_seeds"] == 3
    missing = frame[(frame["method"] == "TENT") & (frame["metric"] == "macro_f1")].iloc[0]
    assert (
        missing["n_seeds"] == 0
        and math.isnan(missing["ours_mean"])
        and missing["paper_mean"] == 33.2
    )
    text = to_markdown(frame, table, skipped={"voting": "loader not implemented"}, seeds=[0, 1, 2])
    assert "62.0 ± 1.2 (paper 64.5, Δ -2.5)" in text
    assert "| mlp | TENT | not run (paper 33.2) |" in text
    assert "| mlp | Source | 38.0 (1 of 3 seeds, paper 38.2, Δ -0.2) |" in text
    assert "Voting (`voting`): loader not implemented" in text


def test_write_table_markdown_csv_latex(tmp_path: Path) -> None:
    table = paper.TABLES["efficiency"]
    spec = ExperimentSpec("heloc", "natural", "mlp", "adaptable", 0, (("preset", "paper"),))
    frame = compare(table, [_record(spec, 0.6, per_row=2e-4)], [0])
    paths = write_table(frame, table, tmp_path, skipped={}, seeds=[0], latex=True)
    assert [p.suffix for p in paths] == [".md", ".csv", ".tex"]
    rows = list(csv.DictReader(open(paths[1])))
    ms = next(r for r in rows if r["method"] == "AdapTable" and r["metric"] == "ms_per_row")
    assert float(ms["ours_mean"]) == pytest.approx(0.2) and float(
        ms["paper_mean"]
    ) == pytest.approx(0.2)
    assert "\\begin{tabular}" in paths[2].read_text()


def test_summary_groups_seeds() -> None:
    specs = [ExperimentSpec("toy", "natural", "m", "source", s) for s in (0, 1)]
    text = summary([_record(s, f) for s, f in zip(specs, (0.5, 0.7), strict=True)])
    assert "| toy | natural | m | source | 2 | 60.0 ± 10.0 |" in text


def test_summary_compares_per_case_means(generality_records: list[dict]) -> None:
    frame = compare(TABLE, generality_records, [0, 1], ["heloc"])
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


def test_markdown_and_files(tmp_path: Path, generality_records: list[dict]) -> None:
    frame = compare(TABLE, generality_records, [0, 1, 2], ["heloc"])
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


def test_repeated_failures_are_written_once(generality_records: list[dict]) -> None:
    frame = compare(TABLE, generality_records, [0, 1], ["heloc"])
    error = "TypeError: method 'adaptable' (AdapTable): bad options {'preset': 'paper'}"
    failures = {f"heloc|natural|mlp|adaptable|seed={s}|preset": error for s in range(5)}
    failures["heloc|natural|mlp|em|seed=0"] = "ValueError: something else"
    text = to_markdown(frame, TABLE, failures=failures, seeds=[0, 1])
    assert f"- 5 experiments, e.g. `heloc|natural|mlp|adaptable|seed=0|preset`: {error}" in text
    assert "- `heloc|natural|mlp|em|seed=0`: ValueError: something else" in text
    assert text.count("bad options") == 1


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


def test_paper_gaps_compare_each_cell_with_its_source_row() -> None:
    import pandas as pd

    from adaptable.experiments.tables import paper_gaps

    frame = pd.DataFrame(
        {
            "table": "t",
            "dataset": ["d", "d", "d", "e", "d"],
            "scenario": "s",
            "model": "mlp",
            "method": ["Source", "A", "B", "A", "C"],
            "metric": "macro_f1",
            "ours_mean": [33.0, 57.0, 40.0, 70.0, float("nan")],
            "n_seeds": 3,
            "paper_mean": [38.0, 64.0, 39.0, 60.0, 10.0],
            "difference": [-5.0, -7.0, 1.0, 10.0, float("nan")],
        }
    )
    gaps = paper_gaps(frame).set_index(["dataset", "method"])
    # B is within 2 points; C has no value of ours
    assert list(gaps.index) == [("d", "Source"), ("d", "A"), ("e", "A")]
    assert gaps.loc[("d", "A"), "gain_difference"] == -2.0
    assert gaps.loc[("d", "A"), "source_difference"] == -5.0
    # no Source row on data set e: nothing to compare the gain with
    assert math.isnan(gaps.loc[("e", "A"), "gain_difference"])
    assert paper_gaps(frame, threshold=6.0)["method"].tolist() == ["A", "A"]

"""Paper tables: experiment lists, ours vs paper, Markdown / CSV output."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from adaptable.experiments import paper
from adaptable.experiments.spec import ExperimentSpec
from adaptable.experiments.tables import compare, summary, table_specs, to_markdown, write_table


def _record(spec: ExperimentSpec, f1: float, bacc: float = 0.5, per_row: float = 1e-4) -> dict:
    return {
        "key": spec.key,
        "spec": spec.to_dict(),
        "metrics": {"macro_f1": f1, "balanced_accuracy": bacc, "accuracy": 0.5, "ece": 0.1},
        "timing": {"seconds_per_row": per_row, "adapt_seconds": 1.0},
    }


def test_packaged_paper_csv_has_every_row() -> None:
    rows = paper.paper_rows()
    assert len(rows) == 417
    assert {r["table"] for r in rows} == {
        "main", "corruption", "architecture", "label_shift", "calibrator_ablation", "oracle",
    }  # fmt: skip
    assert paper.paper_value("main", "natural", "MLP", "heloc", "Source", "balanced_accuracy") == (
        53.2,
        1.5,
    )
    assert paper.paper_value("main", "natural", "MLP", "heloc", "EM", "macro_f1") is None


def test_every_paper_value_belongs_to_a_table_cell() -> None:
    reached = set()
    for table in paper.TABLES.values():
        for dataset in table.datasets:
            for scenario in table.scenarios:
                for row in table.rows:
                    for metric in table.metrics:
                        if table.paper_table and row.paper_method:
                            found = paper.paper_value(
                                table.paper_table,
                                scenario,
                                row.paper_model,
                                dataset,
                                row.paper_method,
                                metric,
                            )
                            if found:
                                reached.add(
                                    (
                                        table.paper_table,
                                        scenario,
                                        row.paper_model,
                                        dataset,
                                        row.paper_method,
                                        metric,
                                    )
                                )
    assert len(reached) == len(paper.paper_rows())


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

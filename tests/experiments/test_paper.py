"""Paper tables: experiment lists, ours vs paper, Markdown / CSV output."""

from __future__ import annotations

from adaptable.experiments import paper
from adaptable.experiments.spec import ExperimentSpec


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


def test_paper_tables_beyond_main_run_as_the_authors_code_ran() -> None:
    from adaptable.experiments.tables import table_specs

    assert paper.TABLES["main"].recipe == "default"
    assert paper.TABLES["efficiency"].recipe == "default"
    for name in ("corruptions", "architectures", "label_shift", "calibrator_ablation", "oracle"):
        assert paper.TABLES[name].recipe == "authors", name
    specs = table_specs(paper.TABLES["label_shift"], [0], ["heloc"], ["mlp"])
    imbalance = {
        s.shift_option_dict.get("convention") for s in specs if s.scenario == "class_imbalance"
    }
    temporal = {tuple(s.shift_options) for s in specs if s.scenario == "temporal"}
    assert imbalance == {"authors_code"} and temporal == {()}
    # main keeps the keys of the committed results
    main = table_specs(paper.TABLES["main"], [0], ["heloc"], ["mlp"])
    assert all("recipe=" not in s.key and "shift=" not in s.key for s in main)

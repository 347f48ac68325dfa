"""The generality role's table: its definition, its experiments, and the summary lines and
figures every benchmark role's table shares."""

from __future__ import annotations

from adaptable.experiments import benchmark, paper

TABLE = benchmark.TABLES["generality"]


def test_product_tables_keep_their_cells() -> None:
    table = paper.TABLES["corruptions"]
    assert table.cells() == [(d, s) for d in table.datasets for s in table.scenarios]
    assert table.cells(["heloc"]) == [("heloc", s) for s in table.scenarios]


def test_table_spec_carries_the_recipe_and_each_scenarios_shift_options() -> None:
    from adaptable.experiments.table_def import Row, TableDef

    row = Row("mlp", "source", "Source")
    table = TableDef(
        "t", "T", None, ("heloc",), ("class_imbalance", "temporal"), (row,), recipe="authors",
        shift_options=(("class_imbalance", (("convention", "authors_code"),)),),
    )  # fmt: skip
    imbalance = table.spec("heloc", "class_imbalance", row, 1)
    temporal = table.spec("heloc", "temporal", row, 1)
    assert imbalance.shift_option_dict == {"convention": "authors_code"}
    assert temporal.shift_option_dict == {} and temporal.recipe == "authors"
    plain = TableDef("t", "T", None, ("heloc",), ("natural",), (row,))
    assert plain.spec("heloc", "natural", row, 0).key == "heloc|natural|mlp|source|seed=0"

"""The generality role's table: its definition, its experiments, and the summary lines and
figures every benchmark role's table shares."""

from __future__ import annotations

from adaptable.experiments import benchmark, paper

TABLE = benchmark.TABLES["generality"]


def test_product_tables_keep_their_cells() -> None:
    table = paper.TABLES["corruptions"]
    assert table.cells() == [(d, s) for d in table.datasets for s in table.scenarios]
    assert table.cells(["heloc"]) == [("heloc", s) for s in table.scenarios]

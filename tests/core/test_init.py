"""The package ``adaptable.core``: every exported name resolves, and the Algorithm-1 table in
its docstring points at names that exist."""

from __future__ import annotations

import importlib
import re

import adaptable.core as core


def test_every_exported_name_is_importable_from_the_package() -> None:
    for name in core.__all__:
        value = getattr(core, name)
        assert value is not None, name
    assert {"AdapTable", "PaperDecider", "RecommendedDecider", "GraphCalibrator"} <= set(
        core.__all__
    )


def _resolve(dotted: str) -> object:
    """``module.name[.attr]`` under adaptable.core, or a name exported by the package."""
    first, *rest = dotted.split(".")
    try:
        target: object = importlib.import_module(f"adaptable.core.{first}")
    except ModuleNotFoundError:
        target = getattr(core, first)
    for part in rest:
        target = getattr(target, part)
    return target


def test_the_algorithm_table_points_at_existing_functions() -> None:
    rows = [
        line for line in core.__doc__.splitlines() if re.match(r"^(Line|Eq\.|Sec\.|App\.)", line)
    ]
    assert len(rows) >= 15
    for row in rows:
        here = row.split()[-1]
        if here.startswith("AdapTable("):
            continue
        assert callable(_resolve(here)), row

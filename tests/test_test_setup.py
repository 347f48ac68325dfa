"""The test setup itself: doctests run by default, and no test skips over our own imports."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_doctests_are_part_of_the_default_run() -> None:
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]
    settings = options["ini_options"]
    assert "--doctest-modules" in settings["addopts"].split()
    assert "src" in settings["testpaths"]


def test_no_test_skips_when_our_own_modules_fail_to_import() -> None:
    """A broken import of the package must fail, not skip: importorskip is for optional
    third-party libraries only."""
    needle = "importorskip(" + '"adaptable'
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "tests").rglob("*.py")
        if needle in path.read_text()
    ]
    assert offenders == []

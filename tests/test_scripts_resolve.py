"""The benchmark and tool scripts still fit the package they drive.

They are run by hand, not by the test suite, so a renamed function breaks them silently; the
research cache ``benchmarks/generality_dump.py`` imported the runner's old private ``_dataset``
inside a function and failed on every case until it was run again. This reads each script with
``ast`` (imports inside functions too) and checks that every name it imports from ``adaptable``
exists and is public.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT_FOLDERS = ("benchmarks", "tools")


def _scripts() -> list[Path]:
    return sorted(p for folder in SCRIPT_FOLDERS for p in (ROOT / folder).glob("*.py"))


def _package_imports(path: Path) -> list[tuple[str, str | None, int]]:
    """(module, name or None, line) of every absolute import of ``adaptable`` in ``path``."""
    found: list[tuple[str, str | None, int]] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(a.name, None, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [(node.module, a.name, node.lineno) for a in node.names]
    return [f for f in found if f[0] == "adaptable" or f[0].startswith("adaptable.")]


def _problems(path: Path, root: Path = ROOT) -> list[str]:
    problems = []
    for module_name, name, line in _package_imports(path):
        where = f"{path.relative_to(root)}:{line}"
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            problems.append(f"{where}: {module_name} does not import ({error})")
            continue
        if name is None:
            continue
        if name.startswith("_") and not name.startswith("__"):
            problems.append(f"{where}: imports the private {module_name}.{name}")
        if not hasattr(module, name):
            try:
                importlib.import_module(f"{module_name}.{name}")
            except ImportError:
                problems.append(f"{where}: {module_name} has no {name}")
    return problems


def test_the_scripts_are_found() -> None:
    names = {p.name for p in _scripts()}
    assert {"generality_dump.py", "variant_sweep.py", "mutation.py"} <= names


@pytest.mark.parametrize("path", _scripts(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_package_name_a_script_imports_exists_and_is_public(path: Path) -> None:
    assert not _problems(path)


def test_the_check_catches_a_missing_and_a_private_name(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text(
        "from adaptable.experiments.runner import get_dataset\n"
        "def dump():\n"
        "    from adaptable.experiments.runner import _dataset\n"
        "    from adaptable.core import no_such_name\n"
        "import adaptable.no_such_module\n"
    )
    problems = _problems(script, root=tmp_path)
    assert len(problems) == 4  # _dataset: private and missing; no_such_name; no_such_module
    assert any("private adaptable.experiments.runner._dataset" in p for p in problems)
    assert any("has no no_such_name" in p for p in problems)
    assert any("adaptable.no_such_module does not import" in p for p in problems)

"""The benchmark and tool scripts still fit the package they drive, and their own helpers.

They are run by hand, not by the test suite, so a renamed function breaks them silently; the
research cache ``benchmarks/research/generality_dump.py`` imported the runner's old private
``_dataset`` inside a function and failed on every case until it was run again. This reads each
script with ``ast`` (imports inside functions too) and checks that every name it imports from
``adaptable`` exists and is public; then it imports every script as ``python SCRIPT`` would (its
own folder first on ``sys.path``), so that a script moved away from a helper it imports
(``_timing``, ``bench_adaptation``, ``report_estimate``) fails here.

The folders: ``benchmarks/`` (the product benchmarks), ``benchmarks/research/`` (one-off
research scripts; one that needs a product benchmark's module puts ``benchmarks/`` on its path)
and ``tools/``.
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT_FOLDERS = ("benchmarks", "benchmarks/research", "tools")


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
    found = {p.relative_to(ROOT).as_posix() for p in _scripts()}
    assert {
        "benchmarks/bench_adaptation.py",
        "benchmarks/research/generality_dump.py",
        "benchmarks/research/variant_sweep.py",
        "tools/mutation.py",
    } <= found


#: run in a fresh interpreter: each script imported as ``python SCRIPT`` would run it, its own
#: folder first on ``sys.path``, then the modules loaded from the script folders forgotten
_IMPORT_EACH = """
import importlib.util, json, sys, traceback
from pathlib import Path

roots = [Path(p).resolve() for p in json.loads(sys.argv[1])]
base = list(sys.path)
failures = {}
for path in map(Path, json.loads(sys.argv[2])):
    sys.path[:] = [str(path.parent), *base[1:]]
    spec = importlib.util.spec_from_file_location("script_under_test", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except BaseException:
        failures[str(path)] = traceback.format_exc(limit=-1).strip().splitlines()[-1]
    for name, loaded in list(sys.modules.items()):
        file = getattr(loaded, "__file__", None)
        if file and any(Path(file).resolve().is_relative_to(r) for r in roots):
            del sys.modules[name]
print(json.dumps(failures))
"""


def test_every_script_imports_from_its_own_folder() -> None:
    roots = [str(ROOT / folder) for folder in ("benchmarks", "tools")]
    scripts = [str(p) for p in _scripts()]
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_EACH, json.dumps(roots), json.dumps(scripts)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    failures = json.loads(done.stdout.strip().splitlines()[-1])
    assert not failures, failures


@pytest.mark.parametrize("path", _scripts(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_package_name_a_script_imports_exists_and_is_public(path: Path) -> None:
    assert not _problems(path)


def test_the_check_catches_a_missing_and_a_private_name(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text(
        "from adaptable.experiments.components import get_dataset\n"
        "def dump():\n"
        "    from adaptable.experiments.components import _dataset\n"
        "    from adaptable.core import no_such_name\n"
        "import adaptable.no_such_module\n"
    )
    problems = _problems(script, root=tmp_path)
    assert len(problems) == 4  # _dataset: private and missing; no_such_name; no_such_module
    assert any("private adaptable.experiments.components._dataset" in p for p in problems)
    assert any("has no no_such_name" in p for p in problems)
    assert any("adaptable.no_such_module does not import" in p for p in problems)

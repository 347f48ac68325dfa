"""The package's import structure, read from the source with ``ast`` (imports inside functions too).

1. ``adaptable.core`` (AdapTable, the method interface, the model adapter) imports nothing of the
   dataset registry, the models, the baselines, the shifts, the experiments, the method registry
   or the CLI: a user who wants AdapTable on their own model pulls in none of them.
2. No module imports a private name (a leading underscore) from another module, nor a private
   module from outside its own package.
3. No import cycle between the package's modules, type-only imports (``if TYPE_CHECKING:``) and
   imports inside functions included.
4. The feature groups of ``adaptable.core`` (and ``adaptable.framework`` below them) import only
   downwards: a group imports its own modules and those of lower layers, never a higher or a
   sibling group (``LAYERS``).
5. The benchmark scripts obey rule 2 too: they use the package as a user or a maintainer would.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import adaptable

SOURCE = Path(adaptable.__file__).parent

#: what adaptable.core must not import
NOT_FOR_CORE = (
    "adaptable.datasets",
    "adaptable.models",
    "adaptable.baselines",
    "adaptable.shifts",
    "adaptable.experiments",
    "adaptable.methods",
    "adaptable.cli",
)

#: the layers under ``adaptable.core``, lowest first; a group of one layer imports only its own
#: modules and the groups of lower layers (``adaptable.values`` and ``adaptable.encoding`` are
#: below them all)
LAYERS: tuple[tuple[str, ...], ...] = (
    ("adaptable.framework",),
    ("adaptable.core.parts",),
    ("adaptable.core.decision",),
    ("adaptable.core.labels",),
    ("adaptable.core.report",),
    ("adaptable.core.paper", "adaptable.core.recommended", "adaptable.core.updates"),
    ("adaptable.core.presets",),
    ("adaptable.core.batch_input",),
    ("adaptable.core.fitted_parts",),
    ("adaptable.core.persistence",),
    ("adaptable.core.adapter_state", "adaptable.core.label_intake"),
    ("adaptable.core.estimator",),
    ("adaptable.core",),
)

BENCHMARKS = SOURCE.parents[1] / "benchmarks"

#: private imports allowed for now (none: keep it that way)
KNOWN_PRIVATE_IMPORTS: set[tuple[str, str]] = set()


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the imported module
    name: str | None  # the imported name (``from target import name``), or None
    line: int


def _module_name(path: Path, source: Path) -> str:
    parts = path.with_suffix("").relative_to(source.parent).parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(source: Path = SOURCE) -> list[Import]:
    """Every import of a module of the package, by every module under ``source``."""
    found = []
    for path in sorted(source.rglob("*.py")):
        module = _module_name(path, source)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                found += [Import(module, a.name, None, node.lineno) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: resolve against the importing package
                    parts = package.split(".")
                    base = ".".join([*parts[: len(parts) - node.level + 1], *filter(None, [base])])
                found += [Import(module, base, a.name, node.lineno) for a in node.names]
    return [i for i in found if i.target == "adaptable" or i.target.startswith("adaptable.")]


def _is_private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def _core_violations(imports: list[Import]) -> list[str]:
    offending = []
    for i in imports:
        full = f"{i.target}.{i.name}" if i.name else i.target
        if i.module.startswith("adaptable.core") and any(
            full == banned or full.startswith(banned + ".") for banned in NOT_FOR_CORE
        ):
            offending.append(f"{i.module}:{i.line} imports {full}")
    return offending


def _private_imports(imports: list[Import]) -> set[tuple[str, str]]:
    offending = set()
    for i in imports:
        parts = i.target.split(".")
        # A private module (adaptable.shifts._common) is for the modules of its own package.
        for depth, part in enumerate(parts):
            owner = ".".join(parts[:depth])
            if _is_private(part) and not (i.module == owner or i.module.startswith(owner + ".")):
                offending.add((i.module, i.target))
        if i.name is not None and _is_private(i.name) and i.target != i.module:
            offending.add((i.module, f"{i.target}.{i.name}"))
    return offending


def _group(module: str) -> tuple[int, str] | None:
    """(layer, group) of a module under the layered packages, the most specific group first."""
    best: tuple[int, str] | None = None
    for depth, groups in enumerate(LAYERS):
        for group in groups:
            if (module == group or module.startswith(group + ".")) and (
                best is None or len(group) > len(best[1])
            ):
                best = (depth, group)
    return best


def _layer_violations(imports: list[Import], modules: set[str]) -> list[str]:
    offending = []
    for i in imports:
        submodule = f"{i.target}.{i.name}" if i.name else None
        target = submodule if submodule in modules else i.target
        source, destination = _group(i.module), _group(target)
        if source is None or destination is None or source[1] == destination[1]:
            continue
        if destination[0] >= source[0]:
            offending.append(f"{i.module}:{i.line} imports {target} (a higher or sibling group)")
    return offending


def _script_imports(folder: Path = BENCHMARKS) -> list[Import]:
    found = []
    for path in sorted(folder.rglob("*.py")):
        module = f"benchmarks.{path.stem}"
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                found += [Import(module, a.name, None, node.lineno) for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found += [Import(module, node.module, a.name, node.lineno) for a in node.names]
    return [i for i in found if i.target == "adaptable" or i.target.startswith("adaptable.")]


def test_the_source_is_found() -> None:
    modules = {i.module for i in _imports()}
    assert {"adaptable.core.estimator", "adaptable.baselines.tent", "adaptable.cli"} <= modules


def test_core_imports_none_of_the_machinery_around_it() -> None:
    offending = _core_violations(_imports())
    assert not offending, offending


def test_no_module_imports_a_private_name_from_another_module() -> None:
    offending = _private_imports(_imports())
    new = offending - KNOWN_PRIVATE_IMPORTS
    assert not new, f"private imports: {sorted(new)}"
    fixed = KNOWN_PRIVATE_IMPORTS - offending
    assert not fixed, f"fixed, so remove them from KNOWN_PRIVATE_IMPORTS: {sorted(fixed)}"


def test_core_groups_import_only_downwards() -> None:
    modules = {_module_name(path, SOURCE) for path in SOURCE.rglob("*.py")}
    offending = _layer_violations(_imports(), modules)
    assert not offending, offending


def test_every_core_module_is_in_a_layer() -> None:
    modules = {_module_name(path, SOURCE) for path in SOURCE.rglob("*.py")}
    layered = [m for m in modules if m.startswith(("adaptable.core", "adaptable.framework"))]
    assert all(
        _group(m) is not None and _group(m)[1] != "adaptable.core" or m == "adaptable.core"
        for m in layered
    ), sorted(m for m in layered if _group(m) == (len(LAYERS) - 1, "adaptable.core"))


def test_the_layer_rule_catches_upward_and_sibling_imports() -> None:
    modules = {
        "adaptable.core.paper.a",
        "adaptable.core.recommended.b",
        "adaptable.core.decision.c",
    }
    imports = [
        Import("adaptable.core.decision.c", "adaptable.core.paper.a", None, 1),  # upwards
        Import("adaptable.core.paper.a", "adaptable.core.recommended.b", None, 2),  # sibling
        Import("adaptable.core.paper.a", "adaptable.core.decision", "c", 3),  # downwards: fine
        Import("adaptable.framework.x", "adaptable.core.parts", None, 4),  # upwards
    ]
    assert len(_layer_violations(imports, modules)) == 3


def test_benchmark_scripts_import_no_private_name() -> None:
    assert _script_imports(), "no benchmark script found"
    offending = _private_imports(_script_imports())
    assert not offending, f"private imports in benchmarks/: {sorted(offending)}"


def test_the_rules_catch_planted_violations(tmp_path: Path) -> None:
    package = tmp_path / "adaptable"
    (package / "core").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "core" / "__init__.py").write_text("")
    (package / "core" / "bad.py").write_text(
        "def f():\n    from adaptable.datasets import load\n"
        "from adaptable.experiments.components import _dataset\n"
        "from ..baselines import _common\n"
        "import adaptable.shifts._common\n"
        "from adaptable import __version__\n"
    )
    imports = _imports(package)
    assert {(i.target, i.name) for i in imports} == {
        ("adaptable.datasets", "load"),
        ("adaptable.experiments.components", "_dataset"),
        ("adaptable.baselines", "_common"),
        ("adaptable.shifts._common", None),
        ("adaptable", "__version__"),
    }
    assert len(_core_violations(imports)) == 4  # all but __version__
    assert _private_imports(imports) == {
        ("adaptable.core.bad", "adaptable.experiments.components._dataset"),
        ("adaptable.core.bad", "adaptable.baselines._common"),
        ("adaptable.core.bad", "adaptable.shifts._common"),
    }


def _module_graph(source: Path = SOURCE) -> dict[str, set[str]]:
    """Importing module -> the package's modules it imports, at any depth of the code (type-only
    imports under ``if TYPE_CHECKING:`` and imports inside functions included).

    ``from package import name`` points at the submodule ``package.name`` where one exists, else
    at ``package`` itself.
    """
    modules = {_module_name(path, source) for path in source.rglob("*.py")}
    graph: dict[str, set[str]] = {module: set() for module in modules}
    for i in _imports(source):
        submodule = f"{i.target}.{i.name}" if i.name else None
        target = submodule if submodule in modules else i.target
        if target in modules and target != i.module:
            graph[i.module].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph.get(node, ())):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_no_import_cycle_in_the_package() -> None:
    cycles = _cycles(_module_graph())
    assert not cycles, f"import cycles (type-only and function-level imports count): {cycles}"


def test_the_cycle_check_catches_planted_cycles(tmp_path: Path) -> None:
    package = tmp_path / "adaptable"
    (package / "core").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "core" / "__init__.py").write_text("")
    (package / "core" / "a.py").write_text("from adaptable.core import b\n")
    # a type-only import closes the cycle a -> b -> c -> a
    (package / "core" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from adaptable.core.c import C\n"
    )
    # an import inside a function counts too
    (package / "core" / "c.py").write_text("def f():\n    from .a import thing\n")
    (package / "core" / "d.py").write_text("from adaptable.core import a\n")  # no cycle
    assert _cycles(_module_graph(package)) == [
        ["adaptable.core.a", "adaptable.core.b", "adaptable.core.c"]
    ]
    (package / "core" / "c.py").write_text("X = 1\n")
    assert _cycles(_module_graph(package)) == []

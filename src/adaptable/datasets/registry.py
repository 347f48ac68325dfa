"""Task registry: ``load(name)`` and ``available()``."""

from __future__ import annotations

import difflib
import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import adaptable.datasets.domain_cases as domain_cases
from adaptable.datasets._base import (
    DataFileError,
    DataFormatError,
    ShiftDataset,
    resolve_data_dir,
)


@dataclass(frozen=True)
class TaskInfo:
    """What a task is, where its files come from, and whether they are present."""

    name: str
    title: str
    loader: Callable[[Path], ShiftDataset]
    locate: Callable[[Path], object]
    obtain: str


#: the paper's six tasks: name -> (its module in ``adaptable.datasets``, display title); the
#: module provides ``load_<module>``, ``locate`` and ``OBTAIN`` and is imported on first use, so
#: that importing the registry imports no loader
PAPER_TASKS: dict[str, tuple[str, str]] = {
    "heloc": ("heloc", "HELOC"),
    "voting": ("voting", "Voting (ANES)"),
    "hospital_readmission": ("readmission", "Hospital Readmission"),
    "icu_mortality": ("icu_mortality", "ICU Mortality (MIMIC-III / MIMIC-Extract)"),
    "childhood_lead": ("childhood_lead", "Childhood Lead (NHANES)"),
    "diabetes": ("diabetes", "Diabetes (BRFSS)"),
}


def _paper_task(name: str) -> Callable[[], TaskInfo]:
    module_name, title = PAPER_TASKS[name]

    def factory() -> TaskInfo:
        module = importlib.import_module(f"adaptable.datasets.{module_name}")
        return TaskInfo(
            name, title, getattr(module, f"load_{module_name}"), module.locate, module.OBTAIN
        )

    return factory


_FACTORIES: dict[str, Callable[[], TaskInfo]] = {name: _paper_task(name) for name in PAPER_TASKS}
# TableShift's task identifiers, and short names, accepted too.
ALIASES = {
    "diabetes_readmission": "hospital_readmission",
    "readmission": "hospital_readmission",
    "anes": "voting",
    "mimic_extract_mort_hosp": "icu_mortality",
    "nhanes_lead": "childhood_lead",
    "brfss_diabetes": "diabetes",
}
TASKS = tuple(PAPER_TASKS)


def _domain_case(name: str) -> Callable[[], TaskInfo]:
    def factory() -> TaskInfo:
        case = domain_cases.ALL_CASES[name]
        return TaskInfo(
            name, case.title, lambda d: domain_cases.load_case(name, d),
            lambda d: domain_cases.locate_case(name, d), domain_cases.obtain(name),
        )  # fmt: skip

    return factory


_CASE_GROUPS = {role: tuple(cases) for role, cases in domain_cases.CASE_GROUPS.items()}
#: task group -> its tasks, in the order ``available()`` lists them: the paper's six, then each
#: benchmark role's domain-split cases (``datasets/data/benchmark_cases.csv``)
GROUPS = {"paper": TASKS, **_CASE_GROUPS}
# Each role's domain-split cases under the names the suites had before they became one
# benchmark (adaptable.datasets.benchmark_cases.ROLES says what each role was used for).
GENERALITY_TASKS = GROUPS["generality"]
DEVELOPMENT_TASKS = GROUPS["development"]
CONFIRMATION_TASKS = GROUPS["confirmation"]
HOLDOUT_TASKS = GROUPS["holdout"]
SEALED_TASKS = GROUPS["sealed"]
RESERVE_TASKS = GROUPS["reserve"]
_FACTORIES.update({name: _domain_case(name) for tasks in _CASE_GROUPS.values() for name in tasks})
_BUILT_IN = frozenset(_FACTORIES)


def register(name: str, factory: Callable[[], TaskInfo]) -> None:
    """Add (or replace) a task: ``factory`` builds its :class:`TaskInfo` on first use."""
    _FACTORIES[name] = factory


def unregister(name: str) -> None:
    """Remove a task added with :func:`register`.

    Raises:
        KeyError: ``name`` is one of the package's own tasks, or was never registered.
    """
    if name in _BUILT_IN or name not in _FACTORIES:
        raise KeyError(f"{name!r} is not a registered task")
    del _FACTORIES[name]


def canonical(name: str) -> str:
    """The task a name stands for: TableShift's identifiers and short names resolved
    (``canonical("readmission") == "hospital_readmission"``); other names as they are."""
    return ALIASES.get(name, name)


def names() -> list[str]:
    """Every task ``load`` accepts under its own name, in the order ``available()`` lists them:
    the paper's six, each benchmark's domain cases, then any added with :func:`register`."""
    listed = [name for group in GROUPS.values() for name in group]
    grouped = set(listed)
    return listed + [name for name in _FACTORIES if name not in grouped]


def _info(name: str) -> TaskInfo:
    key = canonical(name)
    if key not in _FACTORIES:
        close = difflib.get_close_matches(str(name).lower(), [*_FACTORIES, *ALIASES], n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise KeyError(
            f"Unknown task {name!r}.{hint} Known tasks: {', '.join(sorted(_FACTORIES))}."
        )
    return _FACTORIES[key]()


def load(name: str, data_dir: str | os.PathLike[str] | None = None, seed: int = 0) -> ShiftDataset:
    """Load a TableShift task as AdapTable uses it: in-domain train / valid, out-of-domain test.

    Args:
        name: one of ``heloc``, ``voting``, ``hospital_readmission``, ``icu_mortality``,
            ``childhood_lead``, ``diabetes``, a benchmark case (``adult_education``,
            ``readmission_gender``...: ``datasets/data/benchmark_cases.csv``), an alias of
            :data:`ALIASES`, or a task added with :func:`register`.
        data_dir: directory holding the raw files; defaults to ``$ADAPTABLE_DATA_DIR``, then a
            per-user cache directory. Hospital Readmission falls back to the embedded copy.
        seed: recorded for symmetry with the rest of the API. The domain split itself is
            TableShift's fixed split (random_state 264738) so that split sizes and rows match
            the paper; seeds vary the test stream order and the models, not the split.
    """
    info = _info(name)
    if not isinstance(seed, int):
        raise TypeError(f"seed must be an int; got {seed!r}")
    return info.loader(resolve_data_dir(data_dir))


def available(data_dir: str | os.PathLike[str] | None = None) -> dict[str, dict[str, object]]:
    """Each task with whether its raw files are present (and where to get them if not).

    Only looks for the files (no parsing), so it is cheap. The paper's six tasks come first,
    then the benchmark's domain-split cases role by role; ``group`` says which (``paper``, a
    role of :data:`adaptable.datasets.benchmark_cases.ROLES`, or ``registered``).

    Returns:
        ``{task: {"present": bool, "title": str, "group": str, "file": str}}`` when present
        (``file`` lists every file found, ``"; "``-separated), else ``{"present": False,
        "title": ..., "group": ..., "reason": <the error naming the file and where to obtain
        it>}``.

    Example:
        >>> available()["hospital_readmission"]["present"]  # the embedded copy
        True
    """
    root = resolve_data_dir(data_dir)
    group_of = {name: group for group, tasks in GROUPS.items() for name in tasks}
    return {
        name: _status(name, root) | {"group": group_of.get(name, "registered")} for name in names()
    }


def _status(name: str, root: Path) -> dict[str, object]:
    try:
        info = _info(name)
    except KeyError:
        return {"present": False, "reason": "loader not implemented"}
    try:
        found = info.locate(root)
    except (DataFileError, DataFormatError) as err:
        return {"present": False, "reason": str(err), "title": info.title}
    if isinstance(found, tuple):  # (file, origin)
        found = found[0]
    shown = "; ".join(map(str, found)) if isinstance(found, list) else str(found)
    return {"present": True, "file": shown, "title": info.title}

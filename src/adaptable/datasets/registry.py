"""Task registry: ``load(name)`` and ``available()``."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

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


def _heloc() -> TaskInfo:
    from adaptable.datasets import heloc

    return TaskInfo("heloc", "HELOC", heloc.load_heloc, heloc.locate, heloc.OBTAIN)


def _readmission() -> TaskInfo:
    from adaptable.datasets import readmission

    return TaskInfo(
        "hospital_readmission", "Hospital Readmission", readmission.load_readmission,
        readmission.locate, readmission.OBTAIN,
    )  # fmt: skip


def _voting() -> TaskInfo:
    from adaptable.datasets import voting

    return TaskInfo("voting", "Voting (ANES)", voting.load_voting, voting.locate, voting.OBTAIN)


def _icu_mortality() -> TaskInfo:
    from adaptable.datasets import icu_mortality as icu

    return TaskInfo(
        "icu_mortality", "ICU Mortality (MIMIC-III / MIMIC-Extract)", icu.load_icu_mortality,
        icu.locate, icu.OBTAIN,
    )  # fmt: skip


def _childhood_lead() -> TaskInfo:
    from adaptable.datasets import childhood_lead as lead

    return TaskInfo(
        "childhood_lead", "Childhood Lead (NHANES)", lead.load_childhood_lead, lead.locate,
        lead.OBTAIN,
    )  # fmt: skip


def _diabetes() -> TaskInfo:
    from adaptable.datasets import diabetes

    return TaskInfo(
        "diabetes", "Diabetes (BRFSS)", diabetes.load_diabetes, diabetes.locate, diabetes.OBTAIN
    )


# Factories so that importing the registry does not import every loader.
_FACTORIES: dict[str, Callable[[], TaskInfo]] = {
    "heloc": _heloc,
    "voting": _voting,
    "hospital_readmission": _readmission,
    "icu_mortality": _icu_mortality,
    "childhood_lead": _childhood_lead,
    "diabetes": _diabetes,
}
# TableShift's task identifiers, and short names, accepted too.
ALIASES = {
    "diabetes_readmission": "hospital_readmission",
    "readmission": "hospital_readmission",
    "anes": "voting",
    "mimic_extract_mort_hosp": "icu_mortality",
    "nhanes_lead": "childhood_lead",
    "brfss_diabetes": "diabetes",
}
TASKS = ("heloc", "voting", "hospital_readmission", "icu_mortality", "childhood_lead", "diabetes")


def _domain_case(name: str) -> Callable[[], TaskInfo]:
    def factory() -> TaskInfo:
        from adaptable.datasets import domain_cases

        case = domain_cases.ALL_CASES[name]
        return TaskInfo(
            name, case.title, lambda d: domain_cases.load_case(name, d),
            lambda d: domain_cases.locate_case(name, d), domain_cases.obtain(name),
        )  # fmt: skip

    return factory


def _case_groups() -> dict[str, tuple[str, ...]]:
    from adaptable.datasets import domain_cases

    return {group: tuple(cases) for group, cases in domain_cases.CASE_GROUPS.items()}


_CASE_GROUPS = _case_groups()
#: task group -> its tasks, in the order ``available()`` lists them: the paper's six, then
#: each benchmark's domain-split cases (``adaptable.datasets.domain_cases.CASE_GROUPS``)
GROUPS = {"paper": TASKS, **_CASE_GROUPS}
#: the generality benchmark's domain-split cases (adaptable.datasets.domain_cases), listed
#: apart from the paper's six tasks
GENERALITY_TASKS = GROUPS["generality"]
#: the development benchmark's domain-split cases: other splits of the same data sets, on
#: which the default adapter's design is chosen (the generality cases stay held out)
DEVELOPMENT_TASKS = GROUPS["development"]
#: the confirmation benchmark's cases: a third set of split columns, fixed after the default
#: adapter's design and never used to choose it
CONFIRMATION_TASKS = GROUPS["confirmation"]
#: the holdout benchmark's cases: a fourth set of split columns, fixed after every design of the
#: default adapter, run once on it, never used to choose anything
HOLDOUT_TASKS = GROUPS["holdout"]
#: the sealed benchmark's cases: a fifth set of split columns, fixed before any design was run
#: on them; it judged the default of 2026-11-24 once
SEALED_TASKS = GROUPS["sealed"]
#: the reserve benchmark's cases: a sixth set of split columns, fixed on 2026-11-25 with only
#: the unadapted model run on them, for judging the next design
RESERVE_TASKS = GROUPS["reserve"]
_FACTORIES.update({name: _domain_case(name) for tasks in _CASE_GROUPS.values() for name in tasks})


def register(name: str, factory: Callable[[], TaskInfo]) -> None:
    """Add (or replace) a task: ``factory`` builds its :class:`TaskInfo` on first use."""
    _FACTORIES[name] = factory


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
        raise KeyError(f"Unknown task {name!r}. Known tasks: {', '.join(sorted(_FACTORIES))}.")
    return _FACTORIES[key]()


def load(name: str, data_dir: str | os.PathLike[str] | None = None, seed: int = 0) -> ShiftDataset:
    """Load a TableShift task as AdapTable uses it: in-domain train / valid, out-of-domain test.

    Args:
        name: one of ``heloc``, ``voting``, ``hospital_readmission``, ``icu_mortality``,
            ``childhood_lead``, ``diabetes``, or a generality case of :data:`GENERALITY_TASKS`
            (``adult_education``, ``readmission_gender``...; see
            :mod:`adaptable.datasets.domain_cases`).
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
    then the generality benchmark's domain-split cases; ``group`` says which.

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

"""Task registry: ``load(name)`` and ``available()``."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from adaptable.datasets._base import DataFileError, ShiftDataset, resolve_data_dir


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

    return TaskInfo(
        "heloc", "HELOC", heloc.load_heloc,
        lambda d: heloc.find_file(d, heloc.TASK, heloc.FILES, heloc.OBTAIN), heloc.OBTAIN,
    )  # fmt: skip


def _readmission() -> TaskInfo:
    from adaptable.datasets import readmission

    return TaskInfo(
        "hospital_readmission", "Hospital Readmission", readmission.load_readmission,
        readmission.locate, readmission.OBTAIN,
    )  # fmt: skip


# Factories so that importing the registry does not import every loader.
_FACTORIES: dict[str, Callable[[], TaskInfo]] = {
    "heloc": _heloc,
    "hospital_readmission": _readmission,
}
ALIASES = {"diabetes_readmission": "hospital_readmission", "readmission": "hospital_readmission"}
TASKS = ("heloc", "voting", "hospital_readmission", "icu_mortality", "childhood_lead", "diabetes")


def register(name: str, factory: Callable[[], TaskInfo]) -> None:
    """Add a task (used by the loader modules of the remaining tasks)."""
    _FACTORIES[name] = factory


def _info(name: str) -> TaskInfo:
    key = ALIASES.get(name, name)
    if key not in _FACTORIES:
        raise KeyError(
            f"Unknown task {name!r}. Known tasks: {', '.join(sorted(_FACTORIES))}."
        )
    return _FACTORIES[key]()


def load(name: str, data_dir: str | os.PathLike[str] | None = None, seed: int = 0) -> ShiftDataset:
    """Load a TableShift task as AdapTable uses it: in-domain train / valid, out-of-domain test.

    Args:
        name: one of ``heloc``, ``voting``, ``hospital_readmission``, ``icu_mortality``,
            ``childhood_lead``, ``diabetes``.
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
    """Each task with whether its raw files are present (and where to get them if not)."""
    root = resolve_data_dir(data_dir)
    out: dict[str, dict[str, object]] = {}
    for name in TASKS:
        try:
            info = _info(name)
        except KeyError:
            out[name] = {"present": False, "reason": "loader not implemented"}
            continue
        try:
            found = info.locate(root)
            out[name] = {"present": True, "file": str(found), "title": info.title}
        except DataFileError as err:
            out[name] = {"present": False, "reason": str(err), "title": info.title}
    return out

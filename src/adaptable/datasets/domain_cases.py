"""Load a benchmark domain split: one data set cut in two domains by a column.

The cases themselves are records of ``datasets/data/benchmark_cases.csv``
(:mod:`adaptable.datasets.benchmark_cases`); this module reads the data set a case cuts and
splits it. Train / valid come from the first domain, the test split from the second, with
TableShift's split fractions and seed (:func:`adaptable.datasets._base.split_positions`:
in-domain 80 / 10 / 10 % train / valid / in-domain test, the test split the first 90 % of the
second domain). The split column is dropped from the features unless the case keeps it. Rows
that belong to neither domain (a missing value, or one of HELOC's negative special codes where
a rule asks for a range) are left out.

>>> ALL_CASES["compas_sex"].base, base("compas").title
('compas', 'COMPAS')
"""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd

import adaptable.datasets.benchmark_cases as benchmark_cases
from adaptable.datasets._base import ShiftDataset, build_dataset
from adaptable.datasets.benchmark_cases import BenchmarkCase


class Table(Protocol):
    """What a base loader returns: a LabelledTable, or a PreparedTable (HELOC, Readmission)."""

    features: pd.DataFrame
    target: np.ndarray
    classes: list[str]
    sources: list[str]
    notes: list[str]


@dataclass(frozen=True)
class Base:
    """A data set the cases cut: how to read it, where its files are, where to get them."""

    name: str
    title: str
    prepare: Callable[[Path], Table]
    locate: Callable[[Path], object]
    obtain: str


#: data set -> (its module in ``adaptable.datasets``, display title); the module provides
#: ``prepare_<module>``, ``locate`` and ``OBTAIN``, and is imported on first use so that
#: listing cases imports no loader
BASES: dict[str, tuple[str, str]] = {
    "heloc": ("heloc", "HELOC"),
    "hospital_readmission": ("readmission", "Hospital Readmission"),
    "adult": ("adult", "Adult"),
    "compas": ("compas", "COMPAS"),
    "german": ("german", "German credit"),
    "cmc": ("cmc", "Contraceptive Method Choice"),
}
#: every domain-split case, of every role, in benchmark order
ALL_CASES: dict[str, BenchmarkCase] = benchmark_cases.domain_splits()
#: role -> its domain-split cases, in table order (the paper's natural shifts ``heloc`` and
#: ``hospital_readmission``, tasks of their own, are not among them)
CASE_GROUPS: dict[str, dict[str, BenchmarkCase]] = {
    role: {c.name: c for c in benchmark_cases.by_role(role) if c.is_domain_case}
    for role in benchmark_cases.ROLES
}


def base(name: str) -> Base:
    """The :class:`Base` of a data set name.

    Raises:
        KeyError: not a key of :data:`BASES`.
    """
    if name not in BASES:
        raise KeyError(f"Unknown data set {name!r}; expected one of {', '.join(BASES)}")
    module_name, title = BASES[name]
    module = importlib.import_module(f"adaptable.datasets.{module_name}")
    return Base(
        name, title, getattr(module, f"prepare_{module_name}"), module.locate, module.OBTAIN
    )


def _stamp(found: object) -> tuple[tuple[str, int, int], ...]:
    """(path, mtime, size) of each located file, so that a changed file misses the memo."""
    if isinstance(found, tuple):  # (file, origin), as readmission.locate returns
        found = found[0]
    paths = found if isinstance(found, list) else [found]
    out = []
    for path in paths:
        try:
            info = os.stat(path)  # type: ignore[arg-type]
        except (TypeError, OSError):  # a packaged resource: fixed for the installed version
            out.append((str(path), 0, 0))
        else:
            out.append((str(path), info.st_mtime_ns, info.st_size))
    return tuple(out)


@functools.lru_cache(maxsize=2)
def _prepared(base_name: str, data_dir: str, stamp: tuple[tuple[str, int, int], ...]) -> Table:
    # Consecutive cases of one data set (the benchmark's order) read its raw files once.
    return base(base_name).prepare(Path(data_dir))


def load_case(name: str, data_dir: Path) -> ShiftDataset:
    """The domain-split case ``name`` as a :class:`ShiftDataset` (with ``id_test``).

    Raises:
        KeyError: unknown case. ValueError: a row lies in both domains.
        DataFileError / DataFormatError: as the data set's loader.
    """
    case = ALL_CASES[name]
    stamp = _stamp(base(case.base).locate(data_dir))
    table = _prepared(case.base, os.fspath(data_dir), stamp)
    features = table.features.reset_index(drop=True)
    first = np.asarray(case.in_first(features), dtype=bool)
    second = np.asarray(case.in_second(features), dtype=bool)
    if np.any(first & second):
        raise ValueError(f"case {name!r}: a row lies in both domains")
    return build_dataset(
        name,
        features.drop(columns=case.dropped),
        table.target,
        ood_mask=second,
        id_mask=first,
        classes=list(table.classes),
        domain_split_description=case.description(),
        sources=list(table.sources),
        notes=list(table.notes),
    )


def locate_case(name: str, data_dir: Path) -> object:
    """The raw file(s) a case reads (raises DataFileError naming a missing one)."""
    return base(ALL_CASES[name].base).locate(data_dir)


def obtain(name: str) -> str:
    """Where a user gets the case's raw files."""
    return base(ALL_CASES[name].base).obtain

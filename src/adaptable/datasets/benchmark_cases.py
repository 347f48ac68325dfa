"""The benchmark's cases as records: one row each in ``datasets/data/benchmark_cases.csv``.

That file is the one place a benchmark case is defined. The task registry
(:mod:`adaptable.datasets.registry`), the loader of domain splits
(:mod:`adaptable.datasets.domain_cases`), the benchmark tables
(:mod:`adaptable.experiments.benchmark`) and the tests' expected sizes all read it.

A case is a task whose train / valid splits come from one domain of a data set and whose test
split comes from another. Its columns:

``name``
    the task name (``datasets.load(name)``).
``role``
    what the case was used for while the recommended preset was designed (:data:`ROLES`).
``base``
    the data set it cuts (a key of :data:`adaptable.datasets.domain_cases.BASES`); empty for a
    task with a loader of its own (the paper's natural shifts ``heloc`` and
    ``hospital_readmission``, which the benchmark includes).
``title``
    a short display title.
``column``, ``kept``, ``also_dropped``
    the split column, whether it stays a feature (``yes`` / ``no``), and further columns
    dropped (``|``-separated).
``first``, ``first_rule``, ``second``, ``second_rule``
    each domain in words and as a rule on the split column (:func:`split_rule`); an empty
    ``second_rule`` makes the second domain every row not in the first.
``label_shift``, ``label_shift_order``
    ``binary`` (the in-domain test split resampled to class-1 shares 0.1, 0.5, 0.9),
    ``dirichlet`` (three Dirichlet draws, for a three-class case) or empty; the order of the
    case's label-shift rows within its role's table.
``train_rows``, ``valid_rows``, ``id_test_rows``, ``test_rows``, ``class_balance``
    the sizes and class balance (share of class 1 in train + valid, then in test; three
    shares for a three-class case) as loaded from the publishers' files.

>>> case = CASES["german_housing"]
>>> case.role, case.column, case.sizes
('generality', 'housing', (570, 71, 72, 258))
>>> [c.name for c in by_role("sealed")][:2]
['readmission_inpatient', 'readmission_stay']
"""

from __future__ import annotations

import csv
import functools
import io
import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources

import numpy as np
import pandas as pd

Mask = Callable[[pd.DataFrame], np.ndarray]

#: role -> what the case was used for while the recommended preset was designed, in the order
#: designs passed through them. The role names are the names the six suites had before they
#: became one benchmark; ``adaptable reproduce ROLE`` still runs one role's table.
ROLES: dict[str, str] = {
    "generality": "checked on: the held-out check of the early designs",
    "development": "chosen on: where designs of the recommended preset are compared",
    "confirmation": "confirmed on: fixed after the design, never used to choose it",
    "holdout": "judged once: fixed after every design change and run once on the result",
    "sealed": "judged once: fixed before any design ran on it, for judging the next design",
    "reserve": "kept for the next design: only the unadapted model has run on it",
}
#: roles that ``adaptable reproduce all`` and ``adaptable reproduce benchmark`` leave out unless
#: named: a benchmark kept for judging a design is never run by accident
SEALED_ROLES = ("sealed", "reserve")
#: the label-shift kinds of the ``label_shift`` column
LABEL_SHIFTS = ("binary", "dirichlet")
DATA_FILE = "data/benchmark_cases.csv"


@dataclass(frozen=True)
class BenchmarkCase:
    """One record of ``benchmark_cases.csv`` (the columns are described in the module doc)."""

    name: str
    role: str
    base: str
    title: str
    column: str
    kept: bool
    also_dropped: tuple[str, ...]
    first: str
    first_rule: str
    second: str
    second_rule: str
    label_shift: str
    label_shift_order: int
    sizes: tuple[int, int, int, int]
    class_balance: str

    @property
    def is_domain_case(self) -> bool:
        """Whether :mod:`~adaptable.datasets.domain_cases` cuts it (``False``: a task with a
        loader of its own)."""
        return bool(self.base)

    @property
    def dropped(self) -> list[str]:
        """Every column removed from the features."""
        return ([] if self.kept else [self.column]) + list(self.also_dropped)

    def in_first(self, frame: pd.DataFrame) -> np.ndarray:
        """Rows of ``frame`` in the first domain (train / valid / in-domain test)."""
        return split_rule(self.column, self.first_rule)(frame)

    def in_second(self, frame: pd.DataFrame) -> np.ndarray:
        """Rows of ``frame`` in the second domain (test): the second rule, else every row not
        in the first domain."""
        if not self.second_rule:
            return ~self.in_first(frame)
        return split_rule(self.column, self.second_rule)(frame)

    def description(self) -> str:
        """The ``domain_split`` text of the loaded dataset."""
        kept = "kept as a feature" if self.kept else "dropped"
        extra = f"; also dropped: {', '.join(self.also_dropped)}" if self.also_dropped else ""
        return (
            f"{self.first} (in-domain: train/valid) vs {self.second} (test); split column "
            f"{self.column} {kept}{extra}"
        )


def _numeric(frame: pd.DataFrame, column: str) -> pd.Series:
    return pd.to_numeric(frame[column], errors="coerce")


def _number(text: str) -> float:
    return math.inf if text.strip() == "inf" else float(text)


_RULE = re.compile(
    r"^(?:(?P<not>not )?in (?P<values>.+)|(?P<op>==|<=|>) (?P<value>\S+)"
    r"|(?P<low>-?[\d.]+)\.\.(?P<high>inf|-?[\d.]+))$"
)


def split_rule(column: str, rule: str) -> Mask:
    """The row mask a rule describes on ``column``.

    A rule is one of ``in A|B`` (the text value is one of those; a missing value reads as
    ``nan``), ``not in A|B``, ``== v``, ``<= v``, ``> v`` (the number compares so; a missing
    number is in neither domain) or ``low..high`` (a number in [low, high], ``high`` may be
    ``inf``: HELOC's negative special codes lie outside any range of real values).

    Raises:
        ValueError: the rule is none of these.

    >>> frame = pd.DataFrame({"age": [20, 35, 50, None]})
    >>> split_rule("age", "<= 35")(frame).tolist(), split_rule("age", "30..inf")(frame).tolist()
    ([True, True, False, False], [False, True, True, False])
    >>> split_rule("age", "in 20|50")(pd.DataFrame({"age": ["20", "35"]})).tolist()
    [True, False]
    """
    match = _RULE.match(rule.strip())
    if match is None:
        raise ValueError(
            f"split rule {rule!r} on {column!r} is none of 'in A|B', 'not in A|B', '== v', "
            "'<= v', '> v', 'low..high'"
        )
    if match["values"] is not None:
        values = match["values"].split("|")
        if match["not"]:
            return lambda frame: (~frame[column].isin(values)).to_numpy()
        return lambda frame: frame[column].isin(values).to_numpy()
    if match["op"] is not None:
        value, op = _number(match["value"]), match["op"]
        compare = {"==": operator.eq, "<=": operator.le, ">": operator.gt}[op]
        return lambda frame: compare(_numeric(frame, column), value).to_numpy()
    low, high = _number(match["low"]), _number(match["high"])
    return lambda frame: _numeric(frame, column).between(low, high).to_numpy()


def _record(row: dict[str, str]) -> BenchmarkCase:
    if row["role"] not in ROLES:
        raise ValueError(f"case {row['name']!r}: unknown role {row['role']!r}")
    if row["label_shift"] not in ("", *LABEL_SHIFTS):
        raise ValueError(f"case {row['name']!r}: unknown label_shift {row['label_shift']!r}")
    if row["kept"] not in ("yes", "no"):
        raise ValueError(f"case {row['name']!r}: kept must be yes or no; got {row['kept']!r}")
    if row["base"]:
        split_rule(row["column"], row["first_rule"])  # a bad rule fails here, not at load time
        if row["second_rule"]:
            split_rule(row["column"], row["second_rule"])
    return BenchmarkCase(
        name=row["name"],
        role=row["role"],
        base=row["base"],
        title=row["title"],
        column=row["column"],
        kept=row["kept"] == "yes",
        also_dropped=tuple(v for v in row["also_dropped"].split("|") if v),
        first=row["first"],
        first_rule=row["first_rule"],
        second=row["second"],
        second_rule=row["second_rule"],
        label_shift=row["label_shift"],
        label_shift_order=int(row["label_shift_order"] or 0),
        sizes=(
            int(row["train_rows"]),
            int(row["valid_rows"]),
            int(row["id_test_rows"]),
            int(row["test_rows"]),
        ),
        class_balance=row["class_balance"],
    )


def read_cases(text: str) -> dict[str, BenchmarkCase]:
    """Parse the CSV text of a case file: name -> record, in file order.

    Raises:
        ValueError: an unknown role or label shift, a bad rule, or a name given twice.
    """
    cases: dict[str, BenchmarkCase] = {}
    for row in csv.DictReader(io.StringIO(text)):
        case = _record(row)
        if case.name in cases:
            raise ValueError(f"case {case.name!r} is listed twice")
        cases[case.name] = case
    return cases


@functools.cache
def _packaged() -> dict[str, BenchmarkCase]:
    return read_cases(resources.files("adaptable.datasets").joinpath(DATA_FILE).read_text())


#: every case of the benchmark, in file order (by role, then the order of the role's table)
CASES: dict[str, BenchmarkCase] = _packaged()


def by_role(role: str) -> list[BenchmarkCase]:
    """The cases of one role, in table order.

    Raises:
        KeyError: unknown role.
    """
    if role not in ROLES:
        raise KeyError(f"unknown role {role!r}; choose from {', '.join(ROLES)}")
    return [case for case in CASES.values() if case.role == role]


def domain_splits() -> dict[str, BenchmarkCase]:
    """The cases :mod:`~adaptable.datasets.domain_cases` cuts (every case with a ``base``)."""
    return {name: case for name, case in CASES.items() if case.is_domain_case}

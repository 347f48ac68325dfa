"""What a sweep tells the user on the terminal: the plan, the outcome, and warnings.

>>> class Store:
...     def completed(self): return {"a": {}}
>>> class Spec:
...     def __init__(self, key): self.key = key
>>> plan_line([Spec("a"), Spec("b")], Store())
'2 experiments (1 already in the results store, 1 to run)'
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def plan_line(specs: Sequence[Any], store: Any, run: bool = True) -> str:
    """``"12 experiments (4 already in the results store, 8 to run)"`` (``run=False``: what
    ``--no-run`` finds in the store)."""
    stored = store.completed()
    reused = sum(s.key in stored for s in specs)
    if not run:
        return f"{len(specs)} experiments ({reused} in the results store; --no-run runs none)"
    return (
        f"{len(specs)} experiments ({reused} already in the results store, "
        f"{len(specs) - reused} to run)"
    )


def report_sweep(result: Any) -> None:
    """Print a sweep's counts, skipped datasets and failures (one line per distinct error) on
    stdout, then the warnings of the experiments it ran on stderr."""
    print(
        f"{len(result.ran)} experiments run, {len(result.reused)} reused from the store, "
        f"{len(result.failures)} failed, in {result.seconds:.1f} s"
    )
    for name, reason in result.skipped.items():
        print(f"skipped dataset {name}: {reason}")
    by_error: dict[str, list[str]] = {}
    for key, error in result.failures.items():
        by_error.setdefault(error, []).append(key)
    for error, keys in by_error.items():
        more = f" (and {len(keys) - 1} more with the same error)" if len(keys) > 1 else ""
        print(f"failed {keys[0]}{more}: {error}")
    ran = set(result.ran)  # the warnings of the experiments run in this call, not those reused
    print_warnings(r for r in result.records if r.get("key") in ran)


def print_warnings(records: Iterable[Mapping[str, Any]]) -> None:
    """Each distinct warning of ``records`` once on stderr, with one experiment that raised it
    and how many more did (the records keep every one, with counts)."""
    from adaptable.experiments.runner import warning_lines

    for line in warning_lines(records):
        print(line, file=sys.stderr)

"""What a sweep tells the user on the terminal: the plan, progress bars, the outcome, and the
warnings its experiments kept in their records.

>>> class Store:
...     def completed(self): return {"a": {}}
>>> class Spec:
...     def __init__(self, key): self.key = key
>>> plan_line([Spec("a"), Spec("b")], Store())
'2 experiments (1 already in the results store, 1 to run)'
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any


def count(number: int, noun: str, plural: str | None = None) -> str:
    """``number`` and ``noun``, plural unless it is one: ``count(1, "experiment")`` ->
    ``"1 experiment"``, ``count(0, "experiment")`` -> ``"0 experiments"``.

    >>> count(2, "pass", "passes")
    '2 passes'
    """
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


def plan_line(specs: Sequence[Any], store: Any, run: bool = True, device: str | None = None) -> str:
    """``"12 experiments (4 already in the results store, 8 to run)"`` (``run=False``: what
    ``--no-run`` finds in the store; ``device``: count only the results that ran there)."""
    stored = store.completed() if device is None else store.completed(device=device)
    reused = sum(s.key in stored for s in specs)
    if not run:
        return (
            f"{count(len(specs), 'experiment')} ({reused} in the results store; --no-run runs none)"
        )
    return (
        f"{count(len(specs), 'experiment')} ({reused} already in the results store, "
        f"{len(specs) - reused} to run)"
    )


def report_sweep(result: Any) -> None:
    """Print a sweep's counts on stdout, then its skipped datasets, failures (one line per
    distinct error) and the warnings of the experiments it ran on stderr: standard output
    keeps the tables that scripts read."""
    print(
        f"{count(len(result.ran), 'experiment')} run, {len(result.reused)} reused from the "
        f"store, {len(result.failures)} failed, in {result.seconds:.1f} s"
    )
    for name, reason in result.skipped.items():
        print(f"skipped dataset {name}: {reason}", file=sys.stderr)
    by_error: dict[str, list[str]] = {}
    for key, error in result.failures.items():
        by_error.setdefault(error, []).append(key)
    for error, keys in by_error.items():
        more = f" (and {len(keys) - 1} more with the same error)" if len(keys) > 1 else ""
        print(f"failed {keys[0]}{more}: {error}", file=sys.stderr)
    ran = set(result.ran)  # the warnings of the experiments run in this call, not those reused
    print_warnings(r for r in result.records if r.get("key") in ran)


def print_warnings(records: Iterable[Mapping[str, Any]]) -> None:
    """Each distinct warning of ``records`` once on stderr, with one experiment that raised it
    and how many more did (the records keep every one, with counts)."""
    for line in warning_lines(records):
        print(line, file=sys.stderr)


def warning_summary(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The warnings of several records, one entry per distinct (category, message): how many
    experiments raised it (``experiments``), how often in all (``count``) and the first
    experiment's key (``example``); most widespread first."""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for record in records:
        for item in record.get("warnings", ()):
            key = (item["category"], item["message"])
            entry = merged.setdefault(
                key, {**dict(zip(("category", "message"), key, strict=True)),
                      "experiments": 0, "count": 0, "example": record.get("key")},
            )  # fmt: skip
            entry["experiments"] += 1
            entry["count"] += int(item["count"])
    return sorted(merged.values(), key=lambda e: -e["experiments"])


def warning_lines(records: Iterable[Mapping[str, Any]]) -> list[str]:
    """:func:`warning_summary` as one line per distinct warning, e.g. ``warning (KEY and 3
    more): UserWarning: ...``: what the CLI and the sweep scripts print after a sweep."""
    lines = []
    for entry in warning_summary(records):
        others = entry["experiments"] - 1
        where = f"{entry['example']}" + (f" and {others} more" if others else "")
        lines.append(f"warning ({where}): {entry['category']}: {entry['message']}")
    return lines


# Set while collect_warnings() gathers the warnings shown outside experiments, so that a
# progress bar opened inside hands them over instead of printing them.
_COLLECTOR: list[tuple[str, str]] | None = None


@contextmanager
def collect_warnings() -> Iterator[list[tuple[str, str]]]:
    """Gather the warnings shown inside (``(category, message)`` pairs, in order, under the
    filters in force) instead of printing them with their file and line; print them with
    :func:`collected_lines` afterwards, as a sweep's own are (progress bars opened inside hand
    them over too).

    >>> import warnings
    >>> with collect_warnings() as caught:
    ...     warnings.warn("odd", UserWarning)
    >>> collected_lines(caught, "drawing")
    ['warning (drawing): UserWarning: odd']
    """
    global _COLLECTOR
    caught: list[tuple[str, str]] = []
    previous_collector = _COLLECTOR

    def keep(message: Any, category: Any, *args: Any, **kwargs: Any) -> None:
        caught.append((category.__name__, str(message)))

    with warnings.catch_warnings():
        warnings.showwarning = keep
        _COLLECTOR = caught
        try:
            yield caught
        finally:
            _COLLECTOR = previous_collector


def collected_lines(caught: Iterable[tuple[str, str]], where: str) -> list[str]:
    """One line per distinct collected warning, as :func:`warning_lines` words a sweep's:
    ``warning (WHERE): Category: message`` (``(3 times)`` at the end when repeated)."""
    counts: dict[tuple[str, str], int] = {}
    for item in caught:
        counts[item] = counts.get(item, 0) + 1
    return [
        f"warning ({where}): {category}: {message}" + (f" ({n} times)" if n > 1 else "")
        for (category, message), n in counts.items()
    ]


@contextmanager
def progress_bar(total: int, enabled: bool, description: str, unit: str) -> Iterator[Any]:
    """A tqdm bar on stderr, or a silent one when disabled or when there is nothing to do.

    While the bar is on screen, warnings and log records are printed above it (through
    ``tqdm.write``) instead of through it.
    """
    from tqdm.auto import tqdm
    from tqdm.contrib.logging import logging_redirect_tqdm

    shown = enabled and total > 0
    bar = tqdm(total=total, desc=description, unit=unit, disable=not shown, dynamic_ncols=True)
    if not shown:
        try:
            yield bar
        finally:
            bar.close()
        return
    previous = warnings.showwarning

    collector = _COLLECTOR

    def show(message: Any, category: Any, filename: str, lineno: int, file: Any = None,
             line: str | None = None) -> None:  # fmt: skip
        if collector is not None:  # collect_warnings() reports them afterwards
            collector.append((category.__name__, str(message)))
            return
        text = warnings.formatwarning(message, category, filename, lineno, line)
        tqdm.write(text.rstrip("\n"), file=sys.stderr)

    warnings.showwarning = show
    try:
        with logging_redirect_tqdm():
            yield bar
    finally:
        warnings.showwarning = previous
        bar.close()


def say(bar: Any, text: str) -> None:
    """A line above the progress bar (or a plain line on stderr when the bar is off)."""
    from tqdm.auto import tqdm

    if getattr(bar, "disable", True):
        print(text, file=sys.stderr, flush=True)
    else:
        tqdm.write(text, file=sys.stderr)

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
import time
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


#: how a sweep shows its progress on standard error: ``"bars"``, tqdm's redrawn bars (for a
#: terminal); ``"lines"``, one line per step done (for a log, where redrawn bars pile up);
#: ``"off"``, nothing. ``True`` and ``False`` stand for ``"bars"`` and ``"off"``.
PROGRESS_STYLES = ("bars", "lines", "off")


def progress_style(progress: bool | str) -> str:
    """``progress`` as one of :data:`PROGRESS_STYLES` (``True``: ``"bars"``, ``False``:
    ``"off"``).

    Raises:
        ValueError: any other value.

    >>> progress_style(True), progress_style("lines")
    ('bars', 'lines')
    """
    if progress is True or progress is False:
        return "bars" if progress else "off"
    if progress not in PROGRESS_STYLES:
        raise ValueError(
            f"progress must be True, False or one of {', '.join(PROGRESS_STYLES)}; got {progress!r}"
        )
    return str(progress)


def elapsed(seconds: float) -> str:
    """A duration as a log line gives it: ``"42.0 s"``, ``"5 min 03 s"``, ``"1 h 02 min"``.

    >>> elapsed(42.04), elapsed(303.4), elapsed(3725)
    ('42.0 s', '5 min 03 s', '1 h 02 min')
    """
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    return f"{minutes // 60} h {minutes % 60:02d} min"


class ProgressLines:
    """The ``"lines"`` progress of :func:`progress_bar`: nothing redrawn, one line on stderr
    per step done (:func:`step_done`), with the count and the time since ``started``.

    It answers the calls a sweep makes of a tqdm bar (``update``, ``set_postfix_str``,
    ``set_description``, ``close``) by drawing nothing, and reads as a disabled bar
    (``disable``), so that no bar opens under it and :func:`say` prints plain lines.

    >>> lines = ProgressLines(2, started=0.0)
    >>> lines.total, lines.n, lines.disable
    (2, 0, True)
    """

    disable = True

    def __init__(self, total: int, started: float | None = None) -> None:
        self.total = total
        self.n = 0
        self.started = time.perf_counter() if started is None else started

    def done(self, what: str) -> None:
        """Count one step done and say ``what`` it was: ``what (3/12, 5 min 03 s elapsed)``."""
        self.n += 1
        took = elapsed(time.perf_counter() - self.started)
        print(f"{what} ({self.n}/{self.total}, {took} elapsed)", file=sys.stderr, flush=True)

    def update(self, n: int = 1) -> None:
        """Count ``n`` steps done without a line."""
        self.n += n

    def set_postfix_str(self, *args: Any, **kwargs: Any) -> None:
        """Nothing to redraw."""

    def set_description(self, *args: Any, **kwargs: Any) -> None:
        """Nothing to redraw."""

    def close(self) -> None:
        """Nothing to close."""


def step_done(bar: Any, what: str) -> None:
    """One step of ``bar`` done: a line saying ``what`` for :class:`ProgressLines`, a tick of
    a tqdm bar (which names the step itself)."""
    if isinstance(bar, ProgressLines):
        bar.done(what)
    else:
        bar.update(1)


@contextmanager
def progress_bar(
    total: int, enabled: bool | str, description: str, unit: str, started: float | None = None
) -> Iterator[Any]:
    """A tqdm bar on stderr, or a silent one when disabled or when there is nothing to do.

    Args:
        total: the steps to do.
        enabled: a :func:`progress_style`: ``"lines"`` gives a :class:`ProgressLines`
            (elapsed time counted from ``started``, a :func:`time.perf_counter` value;
            default: now).
        description: the bar's label; unit: what a step is.

    While the bar is on screen, warnings and log records are printed above it (through
    ``tqdm.write``) instead of through it.
    """
    style = progress_style(enabled)
    if style == "lines" and total > 0:
        yield ProgressLines(total, started)
        return
    from tqdm.auto import tqdm
    from tqdm.contrib.logging import logging_redirect_tqdm

    shown = style == "bars" and total > 0
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

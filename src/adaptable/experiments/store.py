"""The results store: one JSON line per finished experiment, appended atomically.

A sweep that is killed leaves at most one torn last line; reading skips it and the next append
cuts it off, so rerunning the sweep completes exactly the experiments that have no line yet. A
complete last line that merely lacks its newline (a file edited by hand, or concatenated) is kept:
the next append adds the newline instead. Every line is checked against :class:`RecordSchema` on
read; a line that fails (no ``spec``, a key that does not match its spec, no ``metrics``) is
skipped with a warning and so does not count as finished work.

>>> import tempfile
>>> spec = ExperimentSpec("heloc", "natural", "mlp", "source", 0)
>>> store = ResultStore(Path(tempfile.mkdtemp()) / "results.jsonl")
>>> store.append({"key": spec.key, "spec": spec.to_dict(), "metrics": {"macro_f1": 0.61}})
>>> store.completed()[spec.key]["metrics"]
{'macro_f1': 0.61}
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adaptable.experiments.spec import ExperimentSpec

try:  # POSIX file locks keep two sweeps appending to one store from interleaving lines.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


class RecordError(ValueError):
    """A results-store record lacks a field the readers rely on, or holds a wrong one."""


@dataclass(frozen=True)
class RecordSchema:
    """The fields every stored record must carry; the rest (traces, timings...) ride along.

    Attributes:
        key: the experiment key; must equal ``spec.key``.
        spec: the experiment, rebuilt from the record's ``spec`` mapping.
        metrics: metric name -> number (NaN allowed: a metric can be undefined).

    Example:
        >>> spec = ExperimentSpec("heloc", "natural", "mlp", "source", 0)
        >>> record = {"key": spec.key, "spec": spec.to_dict(), "metrics": {"macro_f1": 0.6}}
        >>> RecordSchema.validate(record).spec == spec
        True
        >>> RecordSchema.validate({"key": spec.key})
        Traceback (most recent call last):
        ...
        adaptable.experiments.store.RecordError: the record has no 'spec' field
    """

    key: str
    spec: ExperimentSpec
    metrics: Mapping[str, float]

    @classmethod
    def validate(cls, record: Any) -> RecordSchema:
        """Check ``record`` (a mapping read from the store); raises :class:`RecordError`."""
        if not isinstance(record, Mapping):
            raise RecordError(f"a record must be a JSON object; got {type(record).__name__}")
        for name in ("key", "spec", "metrics"):
            if name not in record:
                raise RecordError(f"the record has no {name!r} field")
        key = record["key"]
        if not isinstance(key, str) or not key:
            raise RecordError(f"'key' must be a non-empty string; got {key!r}")
        if not isinstance(record["spec"], Mapping):
            raise RecordError(f"'spec' must be an object; got {record['spec']!r}")
        try:
            spec = ExperimentSpec.from_dict(record["spec"])
        except (KeyError, TypeError, ValueError) as err:
            raise RecordError(f"'spec' does not describe an experiment: {err!r}") from err
        if spec.key != key:
            raise RecordError(f"'key' {key!r} does not match its spec (whose key is {spec.key!r})")
        metrics = record["metrics"]
        if not isinstance(metrics, Mapping):
            raise RecordError(f"'metrics' must be an object; got {metrics!r}")
        for name, value in metrics.items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise RecordError(f"metric {name!r} must be a number; got {value!r}")
        return cls(key, spec, dict(metrics))


class ResultStore:
    """JSON-lines file of experiment records, keyed by ``record["key"]``.

    Args:
        path: the ``.jsonl`` file; created (with its folder) on the first append.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"ResultStore({str(self.path)!r})"

    def records(self) -> Iterator[dict[str, Any]]:
        """Every valid record in file order.

        A torn last line (a killed writer) is skipped silently: it is simply unfinished work.
        Any other line that is not JSON or fails :class:`RecordSchema` is skipped with a warning
        naming the file, the line and the problem.
        """
        if not self.path.exists():
            return
        with open(self.path, "rb") as handle:
            data = handle.read()
        lines = data.split(b"\n")
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                if number < len(lines):
                    warnings.warn(f"{self.path}:{number}: skipping a malformed line", stacklevel=2)
                continue
            try:
                RecordSchema.validate(record)
            except RecordError as err:
                warnings.warn(f"{self.path}:{number}: skipping a record: {err}", stacklevel=2)
                continue
            yield record

    def completed(self) -> dict[str, dict[str, Any]]:
        """Valid records by key; when a key occurs twice the later line wins."""
        return {record["key"]: record for record in self.records()}

    def append(self, record: dict[str, Any]) -> None:
        """Append one record as one line, durably.

        The record is checked against :class:`RecordSchema` first (``RecordError`` otherwise).
        The line is written with a single ``write`` on a file opened for appending, under an
        exclusive lock, then flushed to disk; a torn line left by an earlier crash is cut off
        first, and a complete last line without a newline gets its newline.
        """
        RecordSchema.validate(record)
        line = json.dumps(record, separators=(",", ":"), allow_nan=True).encode() + b"\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, _repair_tail(fd) + line)
            os.fsync(fd)
        finally:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def _repair_tail(fd: int) -> bytes:
    """Make the file end on a line boundary; returns what to write before the next line.

    A last line without its newline is cut off only when it does not parse as JSON (a writer
    killed mid-line); a complete one is kept and gets its newline (returned as ``b"\\n"``).
    """
    size = os.fstat(fd).st_size
    if size == 0:
        return b""
    os.lseek(fd, size - 1, os.SEEK_SET)
    if os.read(fd, 1) == b"\n":
        return b""
    # Walk back to the last newline; everything after it is the unterminated last line.
    position, start_of_tail, chunk = size, 0, 65536
    while position > 0:
        start = max(0, position - chunk)
        os.lseek(fd, start, os.SEEK_SET)
        cut = os.read(fd, position - start).rfind(b"\n")
        if cut >= 0:
            start_of_tail = start + cut + 1
            break
        position = start
    os.lseek(fd, start_of_tail, os.SEEK_SET)
    tail = os.read(fd, size - start_of_tail)
    if _is_complete_json(tail):
        return b"\n"
    os.ftruncate(fd, start_of_tail)
    return b""


def _is_complete_json(line: bytes) -> bool:
    try:
        json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False
    return True

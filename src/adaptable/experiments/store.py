"""The results store: one JSON line per finished experiment, appended atomically.

A sweep that is killed leaves at most one torn last line; reading skips it and the next append
cuts it off, so rerunning the sweep completes exactly the experiments that have no line yet.

>>> store = ResultStore("results.jsonl")          # doctest: +SKIP
>>> store.append({"key": spec.key, ...})          # doctest: +SKIP
>>> spec.key in store.completed()                 # doctest: +SKIP
True
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

try:  # POSIX file locks keep two sweeps appending to one store from interleaving lines.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


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
        """Every complete record in file order (torn or malformed lines are skipped with a warning)."""
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
            except json.JSONDecodeError:
                # The last line of a killed sweep may be torn: it is simply not finished work.
                if number < len(lines):
                    warnings.warn(f"{self.path}:{number}: skipping a malformed line", stacklevel=2)
                continue
            if isinstance(record, dict) and "key" in record:
                yield record

    def completed(self) -> dict[str, dict[str, Any]]:
        """Records by key; when a key occurs twice the later line wins."""
        return {record["key"]: record for record in self.records()}

    def append(self, record: dict[str, Any]) -> None:
        """Append one record as one line, durably.

        The line is written with a single ``write`` on a file opened for appending, under an
        exclusive lock, then flushed to disk; a torn line left by an earlier crash is cut off first.
        """
        if "key" not in record:
            raise ValueError(f"a record needs a 'key' field; got fields {sorted(record)}")
        line = json.dumps(record, separators=(",", ":"), allow_nan=True).encode() + b"\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            self._cut_torn_tail(fd)
            os.write(fd, line)
            os.fsync(fd)
        finally:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    @staticmethod
    def _cut_torn_tail(fd: int) -> None:
        size = os.fstat(fd).st_size
        if size == 0:
            return
        os.lseek(fd, size - 1, os.SEEK_SET)
        if os.read(fd, 1) == b"\n":
            return
        # Walk back to the last newline; everything after it is an unfinished record.
        position = size
        chunk = 65536
        while position > 0:
            start = max(0, position - chunk)
            os.lseek(fd, start, os.SEEK_SET)
            block = os.read(fd, position - start)
            cut = block.rfind(b"\n")
            if cut >= 0:
                os.ftruncate(fd, start + cut + 1)
                return
            position = start
        os.ftruncate(fd, 0)

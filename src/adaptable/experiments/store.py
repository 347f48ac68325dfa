"""The results store: one JSON line per finished experiment, appended atomically.

A sweep that is killed leaves at most one torn last line; reading skips it and the next append
cuts it off, so rerunning the sweep completes exactly the experiments that have no line yet. A
complete last line that merely lacks its newline (a file edited by hand, or concatenated) is kept:
the next append adds the newline instead. Every line is checked against :class:`RecordSchema` on
read; a line that fails (no ``spec``, a key that does not match its spec, no ``metrics``) is
skipped with a warning and so does not count as finished work.

A file is a results store when it is empty or holds a record (a JSON object with a ``key``)
preceded by nothing but damaged records (lines that start with ``{`` and do not parse, which
reading skips); a lone unfinished first line is a record torn by a killed writer. Any other file
(a CSV, other JSON, a text file of damaged lines alone...) is refused,
by :func:`check_results_path` before a sweep starts and by :meth:`ResultStore.append`, and is
never modified.

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
import tempfile
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adaptable.experiments.spec import ExperimentSpec

try:  # POSIX file locks keep two sweeps appending to one store from interleaving lines.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


class SkippedLineWarning(UserWarning):
    """A results-store line that reading skipped; the message is ``FILE:N: what is wrong``."""


#: where :meth:`ResultStore.records` reports skipped lines while :func:`report_skipped_lines`
#: is in force (with the messages already reported); ``None``: as warnings
_SKIPPED_LINE_SINK: ContextVar[tuple[Callable[[str], object], set[str]] | None] = ContextVar(
    "skipped_line_sink", default=None
)


@contextmanager
def report_skipped_lines(say: Callable[[str], object]) -> Iterator[None]:
    """Inside, each line the store readers skip goes to ``say`` as ``FILE:N: problem``, once
    however often the store is read (a command reads it several times), instead of being
    issued as a :class:`SkippedLineWarning` (shown by Python with a source line, or gathered
    with the warnings of drawing or sweeping).

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "r.jsonl"
    >>> _ = path.write_bytes(b"{damaged\\n")
    >>> with report_skipped_lines(lambda message: print(Path(message).name)):
    ...     _ = ResultStore(path).completed(), ResultStore(path).completed()
    r.jsonl:1: skipping a malformed line
    """
    token = _SKIPPED_LINE_SINK.set((say, set()))
    try:
        yield
    finally:
        _SKIPPED_LINE_SINK.reset(token)


def _skipped(message: str) -> None:
    sink = _SKIPPED_LINE_SINK.get()
    if sink is None:
        # stacklevel 3: the caller of records() / completed(), not this module
        warnings.warn(message, SkippedLineWarning, stacklevel=3)
        return
    say, reported = sink
    if message not in reported:
        reported.add(message)
        say(message)


class RecordError(ValueError):
    """A results-store record lacks a field the readers rely on, or holds a wrong one."""


class ResultsPathError(ValueError):
    """A results path that cannot serve as a results store (a folder, a foreign file...)."""


@dataclass(frozen=True)
class RecordSchema:
    """The fields every stored record must carry; the rest (traces, timings...) ride along.

    Attributes:
        key: the experiment key: ``spec.key``. A record's ``key`` must equal it, or be the
            key its spec had with its options spelled out as stored (a record written before
            options at their method's default were left out of keys): that record stands for
            the same experiment, and :meth:`ResultStore.records` gives it under ``spec.key``.
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
        if spec.key != key and not _spelled_out(spec, record["spec"], key):
            raise RecordError(f"'key' {key!r} does not match its spec (whose key is {spec.key!r})")
        metrics = record["metrics"]
        if not isinstance(metrics, Mapping):
            raise RecordError(f"'metrics' must be an object; got {metrics!r}")
        for name, value in metrics.items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise RecordError(f"metric {name!r} must be a number; got {value!r}")
        return cls(spec.key, spec, dict(metrics))


def _spelled_out(spec: ExperimentSpec, data: Mapping[str, Any], key: str) -> bool:
    """Whether ``key`` is the key of ``spec`` with the options of the stored ``data`` spelled
    out as given, defaults included: the key a record written before
    :class:`ExperimentSpec` dropped default-valued options holds for the same experiment."""
    try:
        return spec.key_with(dict(data.get("options") or {})) == key
    except (TypeError, ValueError):
        return False


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
        Any other line that is not JSON or fails :class:`RecordSchema` is skipped with a
        :class:`SkippedLineWarning` naming the file, the line and the problem (or a report to
        :func:`report_skipped_lines`' receiver). A record whose key spells out options at
        their method's default comes under its spec's key (see :class:`RecordSchema`).
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
                    _skipped(f"{self.path}:{number}: skipping a malformed line")
                continue
            try:
                schema = RecordSchema.validate(record)
            except RecordError as err:
                _skipped(f"{self.path}:{number}: skipping a record: {err}")
                continue
            if schema.key != record["key"]:  # defaults spelled out: one experiment, one key
                record = {**record, "key": schema.key, "spec": schema.spec.to_dict()}
            yield record

    def completed(self, device: str | None = None) -> dict[str, dict[str, Any]]:
        """Valid records by key; when a key occurs twice the later line wins.

        Args:
            device: ``"cpu"`` or ``"cuda"``: only the records that answer for a run on that
                device (:func:`ran_on`), so that a sweep on CUDA never reuses a CPU result;
                ``None``: every record.
        """
        return {
            record["key"]: record
            for record in self.records()
            if device is None or ran_on(record, device)
        }

    def append(self, record: dict[str, Any]) -> None:
        """Append one record as one line, durably.

        The record is checked against :class:`RecordSchema` first (``RecordError`` otherwise);
        a file that is not a results store raises :class:`ResultsPathError`, untouched.
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
            problem = _foreign_content(fd)
            if problem is not None:
                raise ResultsPathError(f"{self.path} is not a results store: {problem}")
            os.write(fd, _repair_tail(fd) + line)
            os.fsync(fd)
        finally:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def record_device(record: Mapping[str, Any]) -> str:
    """Where a record's source model ran: ``"cpu"`` or ``"cuda"`` (``"cuda:1"`` counts as
    ``"cuda"``); a record written before devices were recorded ran on the CPU.

    >>> record_device({"device": "cuda:0"}), record_device({})
    ('cuda', 'cpu')
    """
    return str(record.get("device") or "cpu").split(":", 1)[0]


def ran_on(record: Mapping[str, Any], device: str) -> bool:
    """Whether ``record`` answers for a run on ``device`` (``"cpu"`` or ``"cuda"``): its source
    model ran there, or it has no device at all (``device_bound`` false: a GBDT or a plain
    function gives the same result wherever it is asked to run).

    >>> ran_on({"device": "cpu"}, "cuda"), ran_on({"device": "cpu", "device_bound": False}, "cuda")
    (False, True)
    """
    if record.get("device_bound", True) is False:
        return True
    return record_device(record) == device


def check_results_path(
    path: str | os.PathLike[str],
    *,
    write: bool = True,
    say: Callable[[str], object] | None = None,
) -> Path:
    """Check, before any work, that ``path`` can serve as a results store.

    Accepted: an existing results store (see the module docstring), or a file that does not
    exist yet. With ``write`` (a sweep that appends), the store must be writable: an existing
    file is opened for appending (nothing is written), a new one's folder is tested by creating
    and removing a temporary file in it, and missing folders are created now, with one line to
    ``say`` naming them. Without ``write`` (reading only), nothing is created and a missing file
    is simply an empty store.

    Args:
        path: the ``--results`` value.
        write: whether the caller will append to the store.
        say: receives the one line naming the folders created (e.g. ``print``).

    Returns:
        the path, as a :class:`~pathlib.Path`.

    Raises:
        ResultsPathError: an empty path, a folder or other non-file, an existing file that is
            not a results store, a path under a regular file, or (``write``) a file or folder
            that cannot be written; the message names the path and the problem.

    Example:
        >>> folder = Path(tempfile.mkdtemp())
        >>> check_results_path(folder / "runs" / "results.jsonl", say=print).name  # doctest: +ELLIPSIS
        created folder ... for the results store
        'results.jsonl'
        >>> check_results_path(folder)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        adaptable.experiments.store.ResultsPathError: results store ...: is a folder, not a file; ...
    """
    if not str(path).strip():
        raise ResultsPathError("the results store path is empty; name a .jsonl file")
    path = Path(path)

    def refuse(problem: str) -> ResultsPathError:
        return ResultsPathError(f"results store {str(path)!r}: {problem}")

    if path.exists():
        if path.is_dir():
            raise refuse("is a folder, not a file; name a .jsonl file inside it")
        if not path.is_file():
            raise refuse("is not a regular file")
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND if write else os.O_RDONLY)
        except OSError as err:
            raise refuse(f"cannot be {'written' if write else 'read'} ({err.strerror})") from err
        try:
            problem = _foreign_content(fd)
        finally:
            os.close(fd)
        if problem is not None:
            raise refuse(f"is not a results store ({problem}); it is left as it is")
        return path
    folder = path.parent
    missing: list[Path] = []
    while not folder.exists():
        if folder.is_symlink():
            raise refuse(f"{str(folder)!r} is a broken link")
        missing.append(folder)
        folder = folder.parent
    if not folder.is_dir():
        raise refuse(f"{str(folder)!r} is a file, not a folder")
    if not write:
        return path
    try:
        probe_folder(folder)
    except OSError as err:
        raise refuse(f"cannot write in the folder {str(folder)!r} ({err.strerror})") from err
    if missing:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise refuse(f"cannot create the folder {str(path.parent)!r} ({err})") from err
        if say is not None:
            say(f"created folder {missing[0]} for the results store")
    return path


def probe_folder(folder: Path) -> None:
    """Create and remove a temporary file in ``folder``: the one sure test of writing there
    (permission bits say nothing of read-only mounts or of what root may do)."""
    fd, name = tempfile.mkstemp(dir=folder, prefix=".adaptable-write-test-")
    os.close(fd)
    os.unlink(name)


def _foreign_content(fd: int) -> str | None:
    """Why the open file ``fd`` is not a results store, or None when it is one.

    A store's lines are records (JSON objects with a ``key``), blank lines, and damaged
    records: lines that start with ``{`` but do not parse (a line mangled by hand, or torn by a
    killed writer), which reading skips. Lines are read up to the first record, so a store is
    usually told from its first line: the file is a store when a record follows nothing but
    damaged records, or when it holds one unfinished line starting with ``{`` (the first record,
    torn). A line that does not start with ``{``, or parses as something other than a record,
    before any record, makes a foreign file, as does a file of damaged lines alone; the problem
    named is that of its first line.
    """
    first: str | None = None
    lines = 0
    for line, complete in _lines(fd):
        stripped = line.strip()
        if not stripped:
            continue
        lines += 1
        try:
            record = json.loads(stripped)
        except (json.JSONDecodeError, UnicodeDecodeError):
            record = None
            problem = (
                f"its first line is not JSON: {_preview(stripped)}"
                if stripped.startswith(b"{")
                else f"its first line is not a JSON record: {_preview(stripped)}"
            )
            if not complete and lines == 1 and stripped.startswith(b"{"):
                return None  # the first record, torn by a killed writer
            if not stripped.startswith(b"{"):
                return first or problem
            first = first or problem
            continue
        if isinstance(record, dict) and isinstance(record.get("key"), str):
            return None
        return first or f"its first line is not a record with a 'key': {_preview(stripped)}"
    return first


def _lines(fd: int, chunk: int = 65536) -> Iterator[tuple[bytes, bool]]:
    """The lines of the open file ``fd`` from its start (without their newlines), each with
    whether it ended in a newline; read a chunk at a time, so that a caller that stops at the
    first line reads little of a large file."""
    position, pending = 0, b""
    while True:
        data = os.pread(fd, chunk, position)
        if not data:
            break
        position += len(data)
        pending += data
        *complete, pending = pending.split(b"\n")
        for line in complete:
            yield line, True
    if pending:
        yield pending, False


def _preview(line: bytes) -> str:
    text = line.split(b"\n", 1)[0].decode("utf-8", "replace")
    return repr(text if len(text) <= 60 else text[:57] + "...")


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

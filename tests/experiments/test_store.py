"""The experiment key, the JSON-lines results store, and what it accepts as its file (checked
before any work; foreign files are never modified)."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from adaptable import cli
from adaptable.experiments import testing
from adaptable.experiments.spec import ExperimentSpec
from adaptable.experiments.store import (
    RecordError,
    RecordSchema,
    ResultsPathError,
    ResultStore,
    SkippedLineWarning,
    check_results_path,
)


def _record(method: str = "source", seed: int = 0, **extra: object) -> dict[str, object]:
    """A minimal valid record (key, spec, metrics) of a toy experiment."""
    spec = ExperimentSpec("toy", "natural", "softmax", method, seed)
    return {"key": spec.key, "spec": spec.to_dict(), "metrics": {"accuracy": 0.5}, **extra}


def test_store_append_read_and_later_line_wins(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "sub" / "r.jsonl")
    assert store.completed() == {}
    a, b = _record("source")["key"], _record("prior")["key"]
    store.append(_record("source", v=1))
    store.append(_record("prior", v=2))
    store.append(_record("source", v=3))
    assert {k: r["v"] for k, r in store.completed().items()} == {a: 3, b: 2}
    with pytest.raises(RecordError, match="key"):
        store.append({"v": 1})


def test_store_cuts_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    store = ResultStore(path)
    store.append(_record("source"))
    with open(path, "a") as handle:
        handle.write('{"key": "b", "metrics": {"mac')  # a writer killed mid-line
    assert list(store.completed()) == [_record("source")["key"]]
    store.append(_record("prior"))
    lines = path.read_text().splitlines()
    assert [json.loads(line)["spec"]["method"] for line in lines] == ["source", "prior"]


def test_store_keeps_a_complete_last_line_without_newline(tmp_path: Path) -> None:
    """A valid last line lacking its newline is data, not a torn write."""
    path = tmp_path / "r.jsonl"
    first, second = _record("source"), _record("prior")
    path.write_text(json.dumps(first))  # one record, no trailing newline
    store = ResultStore(path)
    assert list(store.completed()) == [first["key"]]
    store.append(second)
    assert list(store.completed()) == [first["key"], second["key"]]
    assert path.read_text().count("\n") == 2
    # a record with NaN metrics (allowed) is complete JSON too
    third = _record("fail", metrics={"accuracy": float("nan")})
    path.write_text(path.read_text() + json.dumps(third))
    store.append(_record("source", seed=1))
    assert len(store.completed()) == 4


def test_store_skips_records_without_spec_or_with_a_mismatched_key(tmp_path: Path) -> None:
    """A key without a spec is not finished work; nor is a wrong key."""
    path = tmp_path / "r.jsonl"
    good = _record("source")
    wrong_key = {**_record("prior"), "key": "toy|natural|softmax|other|seed=0"}
    bad_metric = _record("fail", metrics={"accuracy": "high"})
    lines = [{"key": good["key"].replace("source", "prior")}, wrong_key, bad_metric, good]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.warns(UserWarning) as caught:
        completed = ResultStore(path).completed()
    assert list(completed) == [good["key"]]
    messages = [str(w.message) for w in caught]
    assert any("r.jsonl:1" in m and "no 'spec' field" in m for m in messages)
    assert any("r.jsonl:2" in m and "does not match its spec" in m for m in messages)
    assert any("r.jsonl:3" in m and "must be a number" in m for m in messages)


def test_record_schema_rejects_what_the_readers_need() -> None:
    good = _record("source")
    assert RecordSchema.validate(good).key == good["key"]
    for broken, message in [
        ([1, 2], "JSON object"),
        ({**good, "key": ""}, "non-empty"),
        ({**good, "spec": {"dataset": "toy"}}, "does not describe"),
        ({**good, "spec": "toy"}, "must be an object"),
        ({**good, "metrics": [0.5]}, "must be an object"),
        ({**good, "metrics": {"accuracy": True}}, "must be a number"),
    ]:
        with pytest.raises(RecordError, match=message):
            RecordSchema.validate(broken)


CSV = b"name,score\nalice,0.5\nbob,0.7"  # a last line without its newline
AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def _toy_record(method: str = "source") -> dict[str, object]:
    spec = ExperimentSpec("toy", "natural", "softmax", method, 0)
    return {"key": spec.key, "spec": spec.to_dict(), "metrics": {"accuracy": 0.5}}


def _no_work(*args: object, **kwargs: object) -> None:
    raise AssertionError("work started before the results path was checked")


NO_WORK = replace(testing.COMPONENTS, load_dataset=_no_work, train_model=_no_work)


def _run(results: str, *extra: str, command: str = "run") -> list[str]:
    if command == "run":
        return ["run", "--datasets", "toy", "--models", "softmax", "--methods", "source",
                "--results", results, "--no-progress", *extra]  # fmt: skip
    return ["plot", "reliability", "--datasets", "toy", "--models", "softmax", "--method", "prior",
            "--results", results, "--no-progress", *extra]  # fmt: skip


def _usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as info:
        cli.main(argv, components=NO_WORK)
    assert info.value.code == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    return captured.err


# ----------------------------------------------------------------------- foreign files
@pytest.mark.parametrize(
    "content, problem",
    [
        (CSV, "first line is not a JSON record: 'name,score'"),
        (b'{"a": 1}', "not a record with a 'key'"),  # a JSON file, complete, no newline
        (b'{"a": 1}\n{"b": 2}\n', "not a record with a 'key'"),  # other JSON lines
        (b'{\n  "key": 1\n}\n', "first line is not JSON: '{'"),  # pretty-printed JSON
        (b"\x00\x01binary", "first line is not a JSON record"),
        (b"{damaged\n{also damaged\n", "first line is not JSON: '{damaged'"),  # no record
        (b"{damaged\nhello\n" + json.dumps(_toy_record()).encode() + b"\n", "not JSON"),
    ],
)
def test_a_file_that_is_not_a_store_is_refused_and_left_as_it_is(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes(content)
    with pytest.raises(ResultsPathError, match="is not a results store") as info:
        check_results_path(path)
    assert problem in str(info.value) and str(path) in str(info.value)
    with pytest.raises(ResultsPathError, match="is not a results store"):
        ResultStore(path).append(_toy_record())
    assert path.read_bytes() == content


def test_run_refuses_a_foreign_file_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A CSV given as --results used to lose its last line and gain a JSON record (exit 0)."""
    path = tmp_path / "t.csv"
    path.write_bytes(CSV)
    err = _usage_error(_run(str(path)), capsys)
    assert "is not a results store" in err and "it is left as it is" in err
    assert path.read_bytes() == CSV


@pytest.mark.parametrize(
    "content",
    [
        b"",  # a new, empty store
        b"\n\n",  # blank lines only
        json.dumps(_toy_record()).encode() + b"\n",
        json.dumps(_toy_record()).encode(),  # a complete record without its newline
        b'{"key":"toy|natural|soft',  # the first record, torn by a killed writer
        b'{"key": "x"}\nnot json\n',  # a store whose later line is damaged (read skips it)
        b'{"key":"x","sp\n{"key": "x"}\n',  # a store whose first line is damaged
    ],
)
def test_a_store_is_accepted_unchanged(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(content)
    assert check_results_path(path) == path
    assert check_results_path(path, write=False) == path
    assert path.read_bytes() == content


def test_append_still_writes_to_a_store(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(b'{"key":"toy|natural|soft')  # torn first record: cut, then the new line
    ResultStore(path).append(_toy_record())
    assert list(ResultStore(path).completed()) == [_toy_record()["key"]]


# ----------------------------------------------------------------------- unwritable paths
def test_paths_that_cannot_hold_a_store_are_refused(tmp_path: Path) -> None:
    regular = tmp_path / "file.txt"
    regular.write_text("hello\n")
    for path, problem in [
        ("", "path is empty"),
        ("   ", "path is empty"),
        (tmp_path, "is a folder, not a file"),
        (regular / "r.jsonl", "is a file, not a folder"),
        (regular / "sub" / "r.jsonl", "is a file, not a folder"),
    ]:
        for write in (True, False):
            with pytest.raises(ResultsPathError, match=problem):
                check_results_path(path, write=write)
    assert regular.read_text() == "hello\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt"]


@pytest.mark.skipif(AS_ROOT, reason="root writes through permission bits")
def test_an_unwritable_folder_or_file_is_refused_for_writing(tmp_path: Path) -> None:
    folder = tmp_path / "locked"
    folder.mkdir()
    store = folder / "r.jsonl"
    store.write_text(json.dumps(_toy_record()) + "\n")
    store.chmod(0o444)
    folder.chmod(0o555)
    try:
        with pytest.raises(ResultsPathError, match="cannot be written"):
            check_results_path(store)
        assert check_results_path(store, write=False) == store  # reading it is fine
        with pytest.raises(ResultsPathError, match="cannot write in the folder"):
            check_results_path(folder / "new.jsonl")
        with pytest.raises(ResultsPathError, match="cannot write in the folder"):
            check_results_path(folder / "sub" / "new.jsonl")
    finally:
        folder.chmod(0o755)
        store.chmod(0o644)


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc")
def test_a_folder_no_one_can_write_in_is_refused() -> None:
    """/proc takes no new files, not even from root: the write probe finds that out."""
    with pytest.raises(ResultsPathError, match="cannot write in the folder '/proc'"):
        check_results_path("/proc/adaptable-results.jsonl")


@pytest.mark.parametrize(
    "where",
    ["folder", "empty", "under a file"],
)
def test_run_and_plot_refuse_unusable_paths_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    """These used to run the first experiment, then fail with a traceback inside the store."""
    regular = tmp_path / "file.txt"
    regular.write_text("x")
    results = {"folder": str(tmp_path), "empty": "", "under a file": str(regular / "r.jsonl")}
    for command in ("run", "plot"):
        err = _usage_error(_run(results[where], command=command), capsys)
        assert err.startswith(f"usage: adaptable {command} ")
        assert "results store" in err


# ----------------------------------------------------------------------- missing folders
def test_missing_folders_are_created_and_said_in_one_line(tmp_path: Path) -> None:
    said: list[str] = []
    path = tmp_path / "a" / "b" / "r.jsonl"
    assert check_results_path(path, say=said.append) == path
    assert said == [f"created folder {tmp_path / 'a' / 'b'} for the results store"]
    assert path.parent.is_dir() and not path.exists()
    said.clear()
    check_results_path(path, say=said.append)  # nothing left to create: nothing said
    assert said == []


def test_reading_only_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "a" / "r.jsonl"
    assert check_results_path(path, write=False) == path
    assert list(tmp_path.iterdir()) == []


def test_run_says_which_folder_it_creates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "new" / "r.jsonl"
    assert cli.main(_run(str(path)), components=testing.COMPONENTS) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"created folder {tmp_path / 'new'} for the results store"
    assert len(ResultStore(path).completed()) == 1


def test_a_usage_error_creates_no_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _run(str(tmp_path / "new" / "r.jsonl"))
    argv[argv.index("source")] = "nomethod"
    _usage_error(argv, capsys)
    assert list(tmp_path.iterdir()) == []


def test_a_record_keyed_with_a_default_spelled_out_is_read_under_the_plain_key(
    tmp_path: Path,
) -> None:
    # a store written before default-valued options left the key: its record still counts
    plain = ExperimentSpec("toy", "natural", "softmax", "adaptable", 0)
    key = 'toy|natural|softmax|adaptable|seed=0|{"preset":"default"}'
    spec = {**plain.to_dict(), "options": {"preset": "default"}}
    line = json.dumps({"key": key, "spec": spec, "metrics": {"accuracy": 0.5}})
    (tmp_path / "r.jsonl").write_text(line + "\n")
    (record,) = ResultStore(tmp_path / "r.jsonl").completed().values()
    assert record["key"] == plain.key and ExperimentSpec.from_dict(record["spec"]) == plain


def test_a_damaged_first_line_is_one_skipped_line_reported_once_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r.jsonl"
    assert cli.main(_run(str(path)), components=testing.COMPONENTS) == 0
    record = path.read_bytes().rstrip(b"\n")
    path.write_bytes(record[:40] + b"\n" + record + b"\n")
    with pytest.warns(SkippedLineWarning, match=r"r\.jsonl:1: skipping a malformed line"):
        assert list(ResultStore(path).completed()) == [_toy_record()["key"]]
    capsys.readouterr()
    # the CLI resumes it (the stored experiment is reused), saying so once, in one line
    assert cli.main(_run(str(path)), components=NO_WORK) == 0
    err = capsys.readouterr().err
    assert err == f"warning: {path}:1: skipping a malformed line\n", err

"""The experiment key and the JSON-lines results store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adaptable.experiments.spec import ExperimentSpec
from adaptable.experiments.store import RecordError, RecordSchema, ResultStore


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

"""StateReader: checked access to a saved file's fields; every refusal names the field."""

from __future__ import annotations

import json

import numpy as np
import pytest

from adaptable.core.parts.saved_state import StateReader

FORMATS = ("adaptable.AdapTable/2", "adaptable.AdapTable/1")


def _reader(meta: dict | None = None, **arrays) -> StateReader:
    metadata = {"format": FORMATS[0], "n": 3, "flag": True, **(meta or {})}
    return StateReader("f.safetensors", json.dumps(metadata), arrays, FORMATS)


def test_fields_of_the_right_kind_are_read() -> None:
    reader = _reader(p=np.array([0.25, 0.75]))
    assert reader.integer("n", minimum=2) == 3
    assert reader.field("flag", bool) is True
    np.testing.assert_array_equal(reader.distribution("p", 2, positive=True), [0.25, 0.75])
    assert reader.classes(2).tolist() == [0, 1]
    assert reader.tensor("empty", (0, 2)).shape == (0, 2)  # safetensors drops empty tensors


@pytest.mark.parametrize(
    ("read", "field"),
    [
        (lambda r: r.field("absent", int), "absent"),
        (lambda r: r.field("flag", int), "flag"),  # a bool is no number
        (lambda r: r.integer("n", minimum=5), "n"),
        (lambda r: r.tensor("p", (3,)), "p"),
        (lambda r: r.tensor("nan", (1,)), "nan"),
        (lambda r: r.distribution("zero", 2, positive=True), "zero"),
        (lambda r: r.no_unexpected_tensors(), "nan"),  # the first tensor no one read
    ],
)
def test_each_refusal_names_its_field(read, field) -> None:
    reader = _reader(p=np.array([0.25, 0.75]), nan=np.array([np.nan]), zero=np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match=f"field '{field}'"):
        read(reader)


def test_an_unknown_format_or_bad_json_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown AdapTable file format 'x'"):
        _reader({"format": "x"})
    with pytest.raises(ValueError, match="field 'metadata'"):
        StateReader("f", "{not json", {}, FORMATS)


def test_prefixed_tensors_count_as_read_once_their_data_is() -> None:
    reader = _reader(**{"calibrator.a": np.ones(1), "calibrator.b": np.ones(2)})
    tensors = reader.prefixed("calibrator.")
    assert sorted(tensors) == ["a", "b"] and tensors.header("b") == ((2,), "float64")
    np.testing.assert_array_equal(tensors["a"], [1.0])
    with pytest.raises(ValueError, match="field 'calibrator.b' is not part"):
        reader.no_unexpected_tensors()  # a part that never read it did not own it
    tensors["b"]
    reader.no_unexpected_tensors()

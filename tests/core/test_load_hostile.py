"""AdapTable.load refuses any state the code could not have written, naming the file and the
field, before the stream meets it; and files of every kind but the right one get a ValueError."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from safetensors.numpy import save_file

from adaptable import AdapTable

#: past the reservoir's 4,096 rows, so that every part of the state is in use
STREAM_ROWS = 4_800


@pytest.fixture(scope="module")
def stream(synthetic) -> pd.DataFrame:
    return pd.concat([synthetic.test.X] * 10, ignore_index=True)


@pytest.fixture(scope="module")
def model(synthetic, frame_logreg):
    return frame_logreg(synthetic)


@pytest.fixture(scope="module")
def saved(synthetic, model, stream, tmp_path_factory) -> Path:
    """A default-preset AdapTable saved mid-stream, its reservoir full."""
    method = AdapTable(random_state=0).fit(
        model, synthetic.train.X, synthetic.train.y, synthetic.valid.X, synthetic.valid.y
    )
    for start in range(0, STREAM_ROWS, 64):
        method.predict_proba(stream.iloc[start : start + 64])
    path = tmp_path_factory.mktemp("hostile") / "default.safetensors"
    method.save(path)
    return path


def _tensor(key: str, change: Callable[[np.ndarray], np.ndarray]):
    def edit(tensors: dict, meta: dict) -> None:
        tensors[key] = change(tensors[key])

    return edit


def _encoder(key: str, change: Callable):
    def edit(tensors: dict, meta: dict) -> None:
        meta["encoder"][key] = change(meta["encoder"][key])

    return edit


def _meta(key: str, value):
    def edit(tensors: dict, meta: dict) -> None:
        meta[key] = value

    return edit


def _without_digest(edit):
    """``edit``, on a file without the digest (as written before the digest existed)."""

    def without(tensors: dict, meta: dict) -> None:
        edit(tensors, meta)
        meta.pop("digest")

    return without


def _confusion_of_different_rows(tensors: dict, meta: dict) -> None:
    tensors["expected_confusion"] = np.stack([np.eye(2) * 5.0, np.eye(2) * 3.0])


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        # the encoder: a mean that numpy would broadcast, scales that flip or divide by zero
        (_encoder("mean", lambda mean: mean[:1]), "encoder"),
        (_encoder("scale", lambda scale: [-s for s in scale]), "encoder"),
        (_encoder("scale", lambda scale: [0.0] * len(scale)), "encoder"),
        (_encoder("categories", lambda cats: [cats[0][::-1], *cats[1:]]), "encoder"),
        (_encoder("positional", lambda _: "no"), "encoder"),
        # the reservoir: rows of posteriors
        (_tensor("prior_estimate.reservoir", lambda r: -r), "prior_estimate"),
        (_tensor("prior_estimate.reservoir", lambda r: r * 1000), "prior_estimate"),
        # counts: non-negative integers, as written
        (_tensor("prior_estimate.n_seen", lambda n: -n), "prior_estimate"),
        (_tensor("prior_estimate.n_seen", lambda n: n + 0.5), "prior_estimate.n_seen"),
        (_tensor("shift_test.n_rows", lambda n: -n), "shift_test.n_rows"),
        (_tensor("shift_test.n_rows", lambda n: n.astype(np.float64)), "shift_test.n_rows"),
        # the expected confusions: float counts of the same rows for both rules
        (_tensor("expected_confusion", lambda e: e.astype(bool)), "expected_confusion"),
        (_confusion_of_different_rows, "expected_confusion"),
        # the moment test against the encoder's columns
        (_tensor("shift_test.offsets", lambda o: o + 1), "shift_test.offsets"),
        (_tensor("shift_test.n_numeric", lambda n: n + 1), "shift_test.n_numeric"),
        (_tensor("shift_test.lookup", lambda lookup: lookup[::-1].copy()), "shift_test"),
        (_tensor("shift_test.sums", lambda s: s + 0.5), "shift_test"),
        (_tensor("shift_test.class_means", lambda m: m * 3), "shift_test"),
        (
            _tensor("shift_test.class_means", lambda m: m.astype(np.float32)),
            "shift_test.class_means",
        ),
        # the reservoir's seed: its draws fail past the first 4,096 rows when negative
        (_meta("seed", -1), "seed"),
        (_meta("seed", 1.5), "seed"),
        (
            _meta("rule", {"beta": 0.0, "source_score": 2.0, "balanced_score": 0.5, "evidence": 0}),
            "rule",
        ),
        (_meta("rule", {"beta": 0.0, "source_score": 0.5, "balanced_score": 0.5}), "rule"),
        # a source prior stored as another dtype
        (_tensor("source_prior", lambda p: p.astype(np.float32)), "source_prior"),
        # the package version
        (_meta("version", "banana"), "version"),
        (_meta("version", 1), "version"),
        (lambda t, m: m.pop("version"), "version"),
        (lambda t, m: m.__setitem__("classes", [[0], [1]]), "classes"),
        # numbers too long to convert, and metadata nested too deep to parse
        (lambda t, m: None, None),
    ],
)
def test_load_refuses_what_save_cannot_write(saved, tmp_path, edited_copy, edit, field) -> None:
    if field is None:  # the unedited file loads
        AdapTable.load(edited_copy(saved, tmp_path, edit))
        return
    path = edited_copy(saved, tmp_path, edit)
    with pytest.raises(ValueError, match=f"{str(path)!r}: field '{field}'"):
        AdapTable.load(path)


def test_the_loaded_file_continues_the_stream(saved, model, stream) -> None:
    loaded = AdapTable.load(saved, model=model)
    assert loaded.decider_.prior_estimate.n_seen == STREAM_ROWS
    rest = loaded.predict_proba(stream.iloc[STREAM_ROWS:])  # past 4,096 rows: the seed is used
    assert rest.shape == (len(stream) - STREAM_ROWS, 2)


def _raw_metadata(path: Path, tmp_path: Path, edit: Callable[[str], str]) -> Path:
    """A copy whose metadata text is changed by ``edit`` (for what json.dumps cannot write)."""
    from safetensors import safe_open

    with safe_open(str(path), framework="numpy") as handle:
        tensors = {k: handle.get_tensor(k) for k in handle.keys()}  # noqa: SIM118
        raw = handle.metadata()["adaptable"]
    out = tmp_path / "raw.safetensors"
    save_file(tensors, str(out), metadata={"adaptable": edit(raw)})
    return out


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda raw: raw.replace('"n_classes": 2', '"n_classes": ' + "9" * 5000), "n_classes"),
        # short enough to convert, far too many classes for anything to be built for them
        (lambda raw: raw.replace('"n_classes": 2', '"n_classes": ' + "9" * 99), "source_prior"),
        (lambda raw: raw.replace('"seed": 0', '"seed": ' + "1" * 5000), "seed"),
        # deep enough that the JSON parser itself runs out of recursion
        (lambda raw: raw.replace('"seed": 0', '"seed": ' + "[" * 100_000 + "]" * 100_000), "seed"),
        (lambda raw: raw.replace('"seed": 0', '"seed": ' + "[" * 40 + "]" * 40), "seed"),
        # brackets inside a string are no nesting: the field named is the one nested deep
        (
            lambda raw: raw.replace(
                '"n_classes": 2', '"n_classes": 2, "x": "]]}} [[{\\"a"'
            ).replace('"seed": 0', '"seed": ' + "[" * 100_000 + "]" * 100_000),
            "seed",
        ),
    ],
)
def test_numbers_and_nesting_json_allows_are_refused_by_field(saved, tmp_path, edit, field):
    path = _raw_metadata(saved, tmp_path, edit)
    with pytest.raises(ValueError, match=f"{str(path)!r}: field '{field}'"):
        AdapTable.load(path)


def test_a_version_or_format_this_package_does_not_know_is_refused(saved, tmp_path, edited_copy):
    newer = edited_copy(saved, tmp_path, _meta("version", "99.0.0"))
    with pytest.raises(ValueError, match="written by adaptable 99.0.0, newer than this one"):
        AdapTable.load(newer)
    unknown = edited_copy(saved, tmp_path, _meta("format", "adaptable.AdapTable/3"))
    with pytest.raises(ValueError, match="unknown AdapTable file format 'adaptable.AdapTable/3'"):
        AdapTable.load(unknown)
    minor = edited_copy(saved, tmp_path, _meta("version", "0.2.0"))
    with pytest.raises(ValueError, match="newer than this one"):
        AdapTable.load(minor)
    # as old as this package, older, or a later patch release of this minor version (a file
    # without the digest, as written before it existed)
    for version in ("0.0.9", "0.1.0", "0.1.0.dev3", "0.1.7"):
        AdapTable.load(edited_copy(saved, tmp_path, _without_digest(_meta("version", version))))


def test_an_extra_tensor_is_refused_without_reading_its_data(saved, tmp_path, edited_copy):
    size = 64 * 2**20
    path = edited_copy(saved, tmp_path, _meta("unused", 0))
    path = _with_tensor(path, tmp_path, "extra", np.zeros(size // 8))
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="field 'extra' is not part of an AdapTable file"):
            AdapTable.load(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < size / 8, f"loading took {peak / 2**20:.0f} MiB"


def test_a_huge_tensor_of_the_wrong_shape_is_refused_without_reading_it(saved, tmp_path):
    size = 64 * 2**20
    path = _with_tensor(saved, tmp_path, "prior_estimate.reservoir", np.zeros((size // 16, 2)))
    tracemalloc.start()
    try:
        with pytest.raises(
            ValueError,
            match="field 'prior_estimate' must hold min.n_seen, 4096. reservoir rows; it holds 4194304",
        ):
            AdapTable.load(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < size / 8, f"loading took {peak / 2**20:.0f} MiB"


def _with_tensor(path: Path, tmp_path: Path, key: str, value: np.ndarray) -> Path:
    from safetensors import safe_open

    with safe_open(str(path), framework="numpy") as handle:
        tensors = {k: handle.get_tensor(k) for k in handle.keys()}  # noqa: SIM118
        metadata = handle.metadata()
    tensors[key] = value
    out = tmp_path / "bigger.safetensors"
    save_file(tensors, str(out), metadata=metadata)
    return out


@pytest.mark.parametrize(
    "content",
    [b"", b"garbage" * 10, "truncated", b"\x08\x00\x00\x00\x00\x00\x00\x00{}"],
    ids=["empty", "garbage", "truncated", "short header"],
)
def test_files_that_are_no_safetensors_file_get_the_documented_error(saved, tmp_path, content):
    path = tmp_path / "broken.safetensors"
    data = saved.read_bytes()
    path.write_bytes(data[: len(data) // 2] if content == "truncated" else content)
    with pytest.raises(ValueError, match=f"{str(path)!r} is not a file written by AdapTable.save"):
        AdapTable.load(path)


def test_saving_into_a_missing_folder_names_the_folder(saved, tmp_path) -> None:
    method = AdapTable.load(saved)
    target = tmp_path / "no" / "such" / "folder" / "adapter.safetensors"
    with pytest.raises(FileNotFoundError, match=f"the folder {str(target.parent)!r} does not"):
        method.save(target)
    with pytest.raises(IsADirectoryError, match="it is a folder"):
        method.save(tmp_path)
    with pytest.raises(IsADirectoryError, match="is a folder"):
        AdapTable.load(tmp_path)

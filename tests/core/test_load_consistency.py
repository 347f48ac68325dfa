"""AdapTable.load checks every field against the others, naming the one that disagrees, and
the file's digest catches what the field checks cannot tell from a file the code wrote."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from adaptable import AdapTable

BATCH = 64
SAVED_BATCHES = 15


@pytest.fixture(scope="module")
def stream(synthetic) -> tuple[pd.DataFrame, np.ndarray]:
    return pd.concat([synthetic.test.X] * 3, ignore_index=True), np.tile(synthetic.test.y, 3)


@pytest.fixture(scope="module")
def model(synthetic, frame_logreg):
    return frame_logreg(synthetic)


@pytest.fixture(scope="module")
def saved(synthetic, model, stream, tmp_path_factory) -> Path:
    """The default preset saved after 15 batches, the labels of half the rows of the first 12
    sent back by row id (a score correction fitted on them); without model updates, which a
    save file does not hold."""
    X, y = stream
    method = AdapTable(random_state=0, update="none").fit(
        model, synthetic.train.X, synthetic.train.y, synthetic.valid.X, synthetic.valid.y
    )
    for b in range(SAVED_BATCHES):
        method.predict_proba(X.iloc[b * BATCH : (b + 1) * BATCH])
        if b < 12:
            rows = np.arange(b * BATCH, (b + 1) * BATCH)[::2]
            method.partial_fit(X.iloc[rows], y[rows], rows=rows)
    path = tmp_path_factory.mktemp("consistency") / "saved.safetensors"
    method.save(path)
    return path


def _later_outputs(method: AdapTable, X: pd.DataFrame) -> np.ndarray:
    start = SAVED_BATCHES * BATCH
    return np.concatenate(
        [
            method.predict_proba(X.iloc[s : s + BATCH])
            for s in range(start, start + 4 * BATCH, BATCH)
        ]
    )


Edit = Callable[[dict, dict], None]


def _without_digest(edit: Edit) -> Edit:
    """``edit`` on a file without the digest, so that the field checks alone are tried."""

    def edited(tensors: dict, meta: dict) -> None:
        meta.pop("digest", None)
        edit(tensors, meta)

    return edited


def _drop(prefix: str) -> Edit:
    def edit(tensors: dict, meta: dict) -> None:
        for key in [k for k in tensors if k.startswith(prefix)]:
            del tensors[key]

    return edit


def _tensor(key: str, change: Callable[[np.ndarray], np.ndarray]) -> Edit:
    def edit(tensors: dict, meta: dict) -> None:
        tensors[key] = change(tensors[key].copy())

    return edit


def _first(value: float) -> Callable[[np.ndarray], np.ndarray]:
    def change(array: np.ndarray) -> np.ndarray:
        array.reshape(-1)[0] = value
        return array

    return change


def _set(*path_and_value) -> Edit:
    *path, value = path_and_value

    def edit(tensors: dict, meta: dict) -> None:
        where = meta
        for key in path[:-1]:
            where = where[key]
        where[path[-1]] = value

    return edit


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        # a held-out label outside the classes (it failed deep inside the labelled rule choice)
        (_tensor("feedback.heldout_labels", _first(7)), "feedback.heldout_labels"),
        # the labels kept by row id gone: a conflicting label for a labelled row was accepted
        (_drop("report.given"), "report.given"),
        # the labelled rows, or the report, gone while the other part is in the file
        (_drop("feedback."), "feedback.heldout_scores"),
        (_drop("report."), "report.counters"),
        # more batches than the report recorded
        (_set("stream", "n_batches", 50), "stream"),
        # an objective the held-out rule was not fitted for
        (_set("params", "objective", "accuracy"), "params"),
        (_set("params", "objective", "balanced_accuracy"), "params"),
        # non-finite values where the code writes finite ones
        (_tensor("report.scalars", _first(np.inf)), "report.scalars"),
        (_tensor("feedback.heldout_scores", _first(np.nan)), "feedback.heldout_scores"),
        (_tensor("report.matrices", _first(np.nan)), "report.matrices"),
        # integers stored as floats (a cast would round them silently)
        (_tensor("feedback.heldout_labels", lambda a: a + 0.5), "feedback.heldout_labels"),
        # the correction: all of its tensors or none, on the rows it was fitted on
        (_drop("feedback.correction.scale"), "feedback.correction.scale"),
        (_drop("feedback.fitted_positions"), "feedback.fitted_positions"),
        (_tensor("feedback.correction.out_of_fold", _first(5)), "feedback.correction.out_of_fold"),
        (_tensor("feedback.fitted_n", lambda n: n * 100), "feedback.fitted_n"),
        # counts of the stream's rows that disagree
        (_tensor("report.counters", _first(2000)), "report.counters"),
        (_tensor("shift_test.n_rows", lambda n: n + 64), "shift_test.n_rows"),
        (
            _tensor("report.scalars", lambda s: s * np.array([1, 2, 1, 1, 1, 1, 1, 1])),
            "report.scalars",
        ),
        (
            _tensor("report.kept_sizes", lambda k: k + np.r_[-1, 1, [0] * (len(k) - 2)]),
            "report.kept_sizes",
        ),
        # the report's masks of missing values go with their values, and hold 0 and 1 only
        (_drop("report.scalars_missing"), "report.scalars_missing"),
        (_tensor("report.vectors_missing", lambda a: a + 16), "report.vectors_missing"),
        (_drop("report.matrices"), "report"),
        # the label-corrected estimate's rows against the labels the report scored
        (_tensor("report.residual_rows", _first(31)), "report.residual_rows"),
        (_drop("report.residual_rows"), "report.residual_rows"),
        # the stream's state, saved since before the report's window
        (lambda t, m: m.pop("stream"), "stream"),
        # the report's window against the parameters
        (_set("params", "report_batches", 100), "params"),
        # the fit's columns must hold every column the encoder reads
        (lambda t, m: m["columns"].pop(), "columns"),
        # a tensor of the labelled rows no part owns
        (lambda t, m: t.__setitem__("feedback.extra", np.zeros(3)), "feedback.extra"),
        # the unedited file
        (lambda t, m: None, None),
    ],
)
def test_parts_that_disagree_are_refused_naming_the_field(
    saved, tmp_path, edited_copy, edit, field
) -> None:
    path = edited_copy(saved, tmp_path, _without_digest(edit))
    if field is None:  # the edit leaves the file as the code writes it
        AdapTable.load(path)
        return
    with pytest.raises(ValueError, match=f"{str(path)!r}: field '{field}'"):
        AdapTable.load(path)


def test_a_file_without_the_digest_loads_as_saved(saved, model, stream, tmp_path, edited_copy):
    """A file written before the digest existed is read without it, and goes on as saved."""
    X, _ = stream
    older = AdapTable.load(edited_copy(saved, tmp_path, _without_digest(lambda t, m: None)), model)
    np.testing.assert_array_equal(
        _later_outputs(older, X), _later_outputs(AdapTable.load(saved, model), X)
    )


def _flip_byte_of(path: Path, key: str, out: Path) -> Path:
    """A copy of ``path`` with one byte flipped in the middle of tensor ``key``'s data."""
    data = bytearray(path.read_bytes())
    size = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + size])
    begin, end = header[key]["data_offsets"]
    data[8 + size + (begin + end) // 2] ^= 0x10
    out.write_bytes(bytes(data))
    return out


@pytest.mark.parametrize(
    "key", ["prior_estimate.reservoir", "feedback.reservoir.scores", "report.logits", "rule"]
)
def test_a_changed_byte_or_value_is_caught_by_the_digest(saved, tmp_path, edited_copy, key):
    if key == "rule":  # a self-consistent edit of the metadata, which no field check can tell
        path = edited_copy(saved, tmp_path, _set("rule", "evidence", 0.5))
    else:
        path = _flip_byte_of(saved, key, tmp_path / "flipped.safetensors")
    with pytest.raises(
        ValueError, match="field 'digest' does not match .* corrupted, or was edited"
    ):
        AdapTable.load(path)


def test_the_digest_is_checked_after_the_fields(saved, tmp_path, edited_copy) -> None:
    """An edit the fields refuse is named by its field, not only by the digest."""
    path = edited_copy(saved, tmp_path, _set("stream", "n_batches", 50))
    with pytest.raises(ValueError, match="field 'stream' counts 50 batches"):
        AdapTable.load(path)
    malformed = edited_copy(saved, tmp_path, _set("digest", "md5:0"))
    with pytest.raises(ValueError, match="field 'digest' must be 'sha256:'"):
        AdapTable.load(malformed)


def test_a_conflicting_label_after_load_is_refused(saved, model, stream) -> None:
    X, y = stream
    loaded = AdapTable.load(saved, model)
    with pytest.raises(ValueError, match="row 0 was given two different labels"):
        loaded.partial_fit(X.iloc[[0]], 1 - y[[0]], rows=np.array([0]))

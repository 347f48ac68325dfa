"""The labelled rows' and the drift report's saved tensors, read back checked against each
other and the rest of the file.

:meth:`~adaptable.core.recommended.labelled_rows.LabelledRows.from_state` reads them through
:func:`read_labelled_state`: every ``feedback.*`` and ``report.*`` tensor of the kind the code
writes (integers or finite floats), the tensors each part needs where the file says the part
was in use, and the counts that must agree: the labelled rows with the correction fitted on
them, the report's rows and batches with the stream's (``prior_estimate.n_seen``, the metadata's
``stream``), the labels the report holds by row id with the ones it scored, the report's window
with the parameters. Every refusal is the reader's error, naming the field.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from adaptable.core.parts.saved_state import StateReader

#: the labelled rows' tensors (``feedback.*``) and their kinds ("f" floats, "i" integers)
FEEDBACK_TENSORS = {
    "heldout_scores": "f",
    "heldout_labels": "i",
    "fitted_n": "i",
    "fitted_positions": "i",
    "compared": "i",
    "compared_names": "i",
    "last_rule": "i",
    "reservoir.scores": "f",
    "reservoir.labels": "i",
    "reservoir.positions": "i",
    "reservoir.n_seen": "i",
    "reservoir.counts": "f",
    "correction.scale": "f",
    "correction.calibration_offset": "f",
    "correction.rule_offset": "f",
    "correction.strength": "f",
    "correction.out_of_fold": "i",
    "correction.losses": "f",
}
#: the drift report's tensors (``report.*``) and their kinds
REPORT_TENSORS = {
    "scalars": "f",
    "scalars_missing": "i",
    "vectors": "f",
    "vectors_missing": "i",
    "inputs": "f",
    "inputs_missing": "i",
    "matrices": "f",
    "rules": "i",
    "predictions": "i",
    "counters": "i",
    "kept_sizes": "i",
    "logits": "f",
    "logits_batches": "i",
    "believed": "f",
    "believed_batches": "i",
    "given": "i",
    "residual_batches": "i",
    "residual_rows": "i",
    "residual_sums": "f",
    "residual_cross": "f",
    "residual_outer": "f",
    # the bounded sample of held-out and stream features of the covariate-weighted estimate
    "sample_heldout_rows": "i",
    "sample_heldout_numeric": "f",
    "sample_heldout_codes": "i",
    "sample_stream_numeric": "f",
    "sample_stream_codes": "i",
    "sample_counters": "i",
    "sample_widths": "i",
    "sample_weights": "f",
}
#: the tensors a file with the labelled rows always holds (the others may be empty, and
#: safetensors writes no empty tensor)
NEEDED = (
    "feedback.heldout_scores",
    "feedback.heldout_labels",
    "feedback.fitted_n",
    "feedback.reservoir.n_seen",
    "feedback.reservoir.counts",
    "report.counters",
)
#: needed besides in a file that holds the stream's metadata (written after they existed)
NEEDED_WITH_STREAM = ("feedback.compared",)
#: the file's keys of the labelled rows' state; a file with none of them was written before
#: late labels existed
LABELLED_KEYS = ("feedback.", "report.", "worth_cache")


@dataclass(frozen=True)
class LabelledState:
    """The labelled rows' and the report's tensors as read (``None``: a file written before
    they existed), for their ``restore``."""

    feedback: dict[str, np.ndarray] | None
    report: dict[str, np.ndarray] | None


def read_labelled_state(
    reader: StateReader,
    n_classes: int,
    *,
    capacity: int,
    stream_rows: int | None,
    report_batches: int | None,
) -> LabelledState:
    """The ``feedback.*`` and ``report.*`` tensors, checked.

    Args:
        reader: the file.
        n_classes: C.
        capacity: the labelled rows' reservoir capacity.
        stream_rows: the stream's rows so far (``prior_estimate.n_seen``); ``None``: unknown.
        report_batches: the report's window as the parameters say (``None``: every batch).

    Returns:
        Both parts' tensors by the rest of their key; neither where the file holds neither and
        no ``stream`` metadata (a file written before late labels existed).

    Raises:
        ValueError: naming the field missing, of the wrong kind, or in disagreement.
    """
    present = any(key.startswith(LABELLED_KEYS) for key in reader.arrays)
    if not present and "stream" not in reader.meta:
        return LabelledState(None, None)
    needed = NEEDED + (NEEDED_WITH_STREAM if "stream" in reader.meta else ())
    for key in needed:
        if key not in reader.arrays:
            raise reader.error(key, "is missing (the labelled rows and the report need it)")
    feedback = reader.tensors_under("feedback.", FEEDBACK_TENSORS)
    report = reader.tensors_under("report.", REPORT_TENSORS)
    for name in ("scalars", "vectors", "inputs"):
        if name in report and f"{name}_missing" not in report:
            raise reader.error(f"report.{name}_missing", f"is missing (report.{name} needs it)")
    for name in (
        "scalars_missing",
        "vectors_missing",
        "inputs_missing",
        "logits_batches",
        "believed_batches",
    ):
        mask = report.get(name)
        if mask is not None and mask.size and (mask.min() < 0 or mask.max() > 1):
            raise reader.error(f"report.{name}", "must hold only 0 and 1 (a mask)")
    n_labelled = _check_feedback(reader, feedback, n_classes, capacity, stream_rows)
    _check_report(reader, report, n_classes, n_labelled, stream_rows, report_batches)
    return LabelledState(feedback, report)


def _count(reader: StateReader, key: str, value: np.ndarray) -> int:
    """A one-entry tensor's count (at least 0)."""
    if value.shape != (1,) or value[0] < 0:
        raise reader.error(key, f"must be one count (at least 0); got {value.tolist()!r:.80}")
    return int(value[0])


def _empty(shape: tuple[int, ...], kind: str = "i") -> np.ndarray:
    return np.zeros(shape, dtype=np.int64 if kind == "i" else np.float64)


def _check_feedback(
    reader: StateReader,
    arrays: dict[str, np.ndarray],
    n_classes: int,
    capacity: int,
    stream_rows: int | None,
) -> int:
    """The held-out rows, the labelled rows and the correction fitted on them agree; returns
    the labelled rows received."""
    scores, labels = arrays["heldout_scores"], arrays["heldout_labels"]
    if scores.ndim != 2 or scores.shape[1] != n_classes or labels.shape != (len(scores),):
        raise reader.error(
            "feedback.heldout_labels",
            f"must be one label per held-out row of feedback.heldout_scores, (n, {n_classes}); "
            f"got {labels.shape} labels for scores of shape {scores.shape}",
        )
    if labels.min(initial=0) < 0 or labels.max(initial=0) >= n_classes:
        raise reader.error(
            "feedback.heldout_labels",
            f"holds labels outside the file's {n_classes} classes (codes 0..{n_classes - 1})",
        )
    n_seen = _count(reader, "feedback.reservoir.n_seen", arrays["reservoir.n_seen"])
    kept = min(n_seen, capacity)
    positions = arrays.get("reservoir.positions", _empty((0,)))
    if positions.shape == (kept,) and (
        positions.min(initial=0) < 0
        or positions.max(initial=-1) >= n_seen
        or len(np.unique(positions)) != kept
    ):
        raise reader.error(
            "feedback.reservoir.positions",
            f"must be distinct positions among the {n_seen} labelled rows",
        )
    fitted_n = _count(reader, "feedback.fitted_n", arrays["fitted_n"])
    if fitted_n > n_seen:
        raise reader.error(
            "feedback.fitted_n",
            f"is {fitted_n}, more than the {n_seen} labelled rows (feedback.reservoir.n_seen)",
        )
    _check_correction(reader, arrays, n_classes, fitted_n, min(fitted_n, capacity))
    compared = arrays.get("compared")
    if compared is not None and (
        compared.shape != (2,)
        or compared.min() < 0
        or compared[0] > n_seen
        or stream_rows is not None
        and compared[1] > stream_rows
    ):
        raise reader.error(
            "feedback.compared",
            f"must count at most the {n_seen} labelled rows and the stream's rows "
            "(prior_estimate.n_seen)",
        )
    return n_seen


def _check_correction(
    reader: StateReader, arrays: dict[str, np.ndarray], n_classes: int, fitted_n: int, rows: int
) -> None:
    """The correction is saved exactly when one was fitted (``fitted_n`` > 0), on ``rows``
    labelled rows, each decided out of fold."""
    names = [key for key in FEEDBACK_TENSORS if key.startswith("correction.")]
    held = [key for key in names if key in arrays]
    if held and len(held) != len(names) or bool(held) != (fitted_n > 0):
        missing = sorted(set(names) - set(held)) or names
        raise reader.error(
            f"feedback.{missing[0]}",
            f"must be saved exactly when a correction was fitted (feedback.fitted_n {fitted_n} "
            f"> 0); the file holds {len(held)} of its {len(names)} tensors",
        )
    positions = arrays.get("fitted_positions", _empty((0,)))
    if positions.shape != (rows,) or positions.min(initial=0) < 0:
        raise reader.error(
            "feedback.fitted_positions",
            f"must hold the {rows} labelled positions the correction was fitted on",
        )
    if not held:
        return
    shapes = {
        "correction.scale": (1,),
        "correction.calibration_offset": (n_classes,),
        "correction.rule_offset": (n_classes,),
        "correction.strength": (1,),
        "correction.out_of_fold": (rows,),
        "correction.losses": (2,),
    }
    for key, shape in shapes.items():
        if arrays[key].shape != shape:
            raise reader.error(
                f"feedback.{key}", f"must have shape {shape}; got {arrays[key].shape}"
            )
    decisions = arrays["correction.out_of_fold"]
    if decisions.min(initial=0) < 0 or decisions.max(initial=0) >= n_classes:
        raise reader.error("feedback.correction.out_of_fold", "holds decisions outside the classes")


def _check_report(
    reader: StateReader,
    arrays: dict[str, np.ndarray],
    n_classes: int,
    n_labelled: int,
    stream_rows: int | None,
    report_batches: int | None,
) -> None:
    """The report's rows and batches agree with the stream's, its labels by row id with the
    ones it scored, and its window with the parameters (the shapes are its own restore's)."""
    counters = arrays["counters"]
    if counters.shape not in ((3,), (4,), (5,)) or counters.min() < 0:
        raise reader.error("report.counters", "must hold 3 to 5 counts (at least 0)")
    n_rows, oldest = int(counters[0]), int(counters[2])
    dropped = int(counters[3]) if len(counters) >= 4 else 0
    if stream_rows is not None and n_rows != stream_rows:
        raise reader.error(
            "report.counters",
            f"counts {n_rows} rows but the stream had {stream_rows} (prior_estimate.n_seen)",
        )
    window = sys.maxsize if report_batches is None else report_batches
    if len(counters) == 5 and int(counters[4]) != window:
        raise reader.error(
            "params",
            f"say report_batches={report_batches} but the report was fitted with a window of "
            f"{int(counters[4])} batches (report.counters)",
        )
    scalars = arrays.get("scalars", _empty((0, 8), "f"))
    if scalars.ndim != 2 or scalars.shape[1] < 7:
        return  # its restore names the shape
    first, rows = scalars[:, 0], scalars[:, 1]
    ends = first + rows
    if len(scalars) and (
        np.any(rows < 0)
        or np.any(first[1:] != ends[:-1])
        or ends[-1] != n_rows
        or np.any(scalars[:, 6] > n_labelled)
    ):
        raise reader.error(
            "report.scalars",
            f"must record consecutive batches ending at the {n_rows} rows counted "
            f"(report.counters), with at most the {n_labelled} labelled rows",
        )
    n_batches = dropped + len(scalars)
    _check_stream_batches(reader, n_batches)
    _check_given(reader, arrays, n_classes, n_labelled, oldest, dropped, n_batches, rows)


def _check_stream_batches(reader: StateReader, n_batches: int) -> None:
    """The metadata's ``stream`` counts the batches the report recorded."""
    stream: Any = reader.meta.get("stream")
    count = stream.get("n_batches") if isinstance(stream, dict) else None
    if isinstance(count, int) and not isinstance(count, bool) and count != n_batches:
        raise reader.error(
            "stream",
            f"counts {count} batches but the report recorded {n_batches} (report.counters, "
            "report.scalars)",
        )


def _check_given(
    reader: StateReader,
    arrays: dict[str, np.ndarray],
    n_classes: int,
    n_labelled: int,
    oldest: int,
    dropped: int,
    n_batches: int,
    record_rows: np.ndarray,
) -> None:
    """The labels kept by row id (``report.given``) are the ones each batch's realised
    confusion counted, against the kept predictions, in every batch whose rows and record are
    both kept; and no more than the labelled rows. A file without ``stream`` metadata was
    written before the labels by row id were kept: not checked."""
    if "stream" not in reader.meta:
        return
    codes = arrays.get("predictions", _empty((0,)))
    given = arrays.get("given", np.full(codes.shape, -1, dtype=np.int64))
    sizes = arrays.get("kept_sizes")
    matrices = arrays.get("matrices", _empty((0, 4, n_classes, n_classes), "f"))
    if (
        sizes is None
        or given.shape != codes.shape
        or matrices.shape != (len(record_rows), 4, n_classes, n_classes)
    ):
        return  # written before the kept sizes were saved, or shapes its restore names
    if (
        sizes.shape != (n_batches - oldest,)
        or sizes.min(initial=0) < 0
        or sizes.sum() != len(codes)
    ):
        return  # named by its restore
    if given.min(initial=0) < -1 or given.max(initial=0) >= n_classes:
        return  # named by its restore
    if codes.min(initial=0) < 0 or codes.max(initial=0) >= n_classes:
        raise reader.error("report.predictions", f"holds codes outside 0..{n_classes - 1}")
    if np.count_nonzero(given >= 0) > n_labelled:
        raise reader.error(
            "report.given",
            f"holds more labels than the {n_labelled} labelled rows (feedback.reservoir.n_seen)",
        )
    # the batches whose rows and record are both kept
    first = max(oldest, dropped)
    numbers = np.arange(first, n_batches)
    both = sizes[first - oldest :]
    differs = np.flatnonzero(both != record_rows[first - dropped :])
    if len(differs):
        number = int(numbers[differs[0]])
        raise reader.error(
            "report.kept_sizes",
            f"keeps {both[differs[0]]} rows of batch {number}, whose record has "
            f"{int(record_rows[number - dropped])}",
        )
    rows = slice(int(sizes[: first - oldest].sum()), len(codes))
    labels, predicted = given[rows], codes[rows]
    batch = np.repeat(np.arange(len(numbers)), both)
    known = labels >= 0
    counted = np.zeros((len(numbers), n_classes, n_classes))
    np.add.at(counted, (batch[known], labels[known], predicted[known]), 1.0)
    scored = matrices[first - dropped :, 3]
    wrong = np.flatnonzero((counted != scored).any(axis=(1, 2)))
    if len(wrong):
        raise reader.error(
            "report.given",
            f"disagrees with the labels the report scored for batch {int(numbers[wrong[0]])} "
            "(report.matrices)",
        )
    _check_residual_rows(reader, arrays, numbers, first - oldest, counted.sum(axis=(1, 2)))


def _check_residual_rows(
    reader: StateReader,
    arrays: dict[str, np.ndarray],
    numbers: np.ndarray,
    skip: int,
    scored: np.ndarray,
) -> None:
    """The label-corrected estimate's sums hold, for each batch ``numbers`` (its kept rows
    from position ``skip`` of the kept batches), the rows the report scored where the batch's
    believed posteriors are kept, and none elsewhere."""
    batches = arrays.get("residual_batches", _empty((0,)))
    rows = arrays.get("residual_rows", _empty((0,)))
    if batches.shape != rows.shape or batches.ndim != 1:
        raise reader.error(
            "report.residual_rows", "must hold one count per batch of report.residual_batches"
        )
    if "believed" not in arrays:
        kept = np.zeros(len(numbers), dtype=bool)
    else:  # a file written before the mask: every kept batch has them
        mask = arrays.get("believed_batches", np.ones(skip + len(numbers)))
        kept = mask.reshape(-1)[skip:].astype(bool)
        if kept.shape != numbers.shape:
            return  # named by its restore
    expected = np.where(kept, scored, 0)
    held = np.zeros(len(numbers))
    inside = (batches >= numbers[0]) & (batches <= numbers[-1]) if len(numbers) else batches < 0
    held[batches[inside] - (numbers[0] if len(numbers) else 0)] = rows[inside]
    wrong = np.flatnonzero(held != expected)
    if len(wrong):
        raise reader.error(
            "report.residual_rows",
            f"counts {int(held[wrong[0]])} labelled rows of batch {int(numbers[wrong[0]])}, "
            f"whose labels the report scored {int(expected[wrong[0]])} times (report.given)",
        )

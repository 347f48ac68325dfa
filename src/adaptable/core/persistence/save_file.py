"""Save / load a fitted AdapTable as one ``.safetensors`` file: tensors plus JSON metadata.

Nothing is pickled: the parts' arrays are tensors; the Encoder, column layout, parameters and
package version are JSON in the file's metadata. The file is assembled from the parts' own
states (the calibrator's and the decider's ``state()``, :class:`~adaptable.core.parts.contexts.PartState`)
and read back by each part from a :class:`~adaptable.core.parts.saved_state.StateReader`, which refuses,
naming the field, anything missing, malformed, or in disagreement with the rest of the file.

File layout (format ``adaptable.AdapTable/2``; ``/1`` files hold the paper's algorithm):

- tensors: ``source_prior``; the calibrator's (``calibrator.*``; g_phi also ``numeric_mean``,
  ``category_mean``); the paper decider's ``online_prior``; the recommended decider's
  ``shift_test.*``, ``prior_estimate.*``, ``expected_confusion``;
- metadata: ``format``, ``version``, ``params``, ``n_classes``, ``calibrator`` (its name),
  ``classes`` (labels other than 0..C-1), ``encoder``, ``columns`` (the DataFrame columns of
  fit); g_phi's ``layout``; the deciders'
  ``temperature``, and the recommended decider's ``rule`` and ``seed``;
- per-column drift: ``feature_drift`` and the ``feature_drift.*`` tensors
  (:mod:`~adaptable.core.report.feature_drift_fields`), where the adapter keeps it;
- ``digest``, the SHA-256 of the rest (:mod:`~adaptable.core.persistence.file_digest`), checked
  once every field has passed its own checks (a file without one, written before it existed,
  is read without it).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import math
import os
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from adaptable.core.fitted_parts import FittedParts, model_updates
from adaptable.core.paper.calibrators import CALIBRATORS, calibrator_state, load_calibrator
from adaptable.core.parts.contexts import LoadContext
from adaptable.core.parts.saved_state import (
    SAVED_LABEL_TYPES,
    StateReader,
    Tensors,
    is_column_name,
)
from adaptable.core.persistence.file_digest import DIGEST_FIELD, file_digest, is_digest
from adaptable.core.presets import DECIDERS, calibrator_name
from adaptable.core.report.feature_drift_fields import monitor_state, read_monitor
from adaptable.framework.fitted_columns import FittedColumns, is_saved_name
from adaptable.framework.method import check_model_classes
from adaptable.framework.model_adapter import as_logit_function
from adaptable.values import python_value

FORMAT = "adaptable.AdapTable/2"
#: files written before the presets existed hold the paper's algorithm
OLDER_FORMATS = ("adaptable.AdapTable/1",)
_METADATA_KEY = "adaptable"
#: parameters that are not saved (a callable)
_UNSAVED_PARAMS = ("progress",)


@dataclass(frozen=True)
class SavedAdapTable:
    """What a file holds: the parameters and the fitted parts, checked.

    Attributes:
        params: every AdapTable parameter, as fitted.
        classes: the labels, (C,).
        parts: the fitted parts (their ``columns``: the DataFrame columns of fit, where the
            file names them).
        stream: the stream so far (:func:`_stream`), where the file holds it.
    """

    params: dict[str, Any]
    classes: np.ndarray
    parts: FittedParts
    stream: dict[str, Any] | None = None

    def params_with(self, output: str | None) -> dict[str, Any]:
        """The saved parameters, ``output`` replaced where given (``AdapTable.load``)."""
        return {**self.params, **({} if output is None else {"output": output})}

    def parts_with(
        self, model: Any, output: str, training_rows: tuple[Any, np.ndarray] | None = None
    ) -> FittedParts:
        """The parts, reading ``model`` (``None``: none) as ``output`` says; the model updates
        the parameters ask for start afresh, refitting on ``training_rows`` (rows, label
        codes) where given (the patch alone otherwise)."""
        logits = None if model is None else as_logit_function(model, output)
        updates = model_updates(self.params_with(output), self.parts.n_classes)
        if updates is not None:
            X, codes = training_rows if training_rows is not None else (None, None)
            updates.fit(model, X, codes, self.parts.encoder, output)
            log = getattr(self.parts.decider, "drift_log", None)
            if log is not None and self.stream is not None:
                updates.resume(log.n_rows, self.stream["n_batches"])
        return dataclasses.replace(self.parts, logit_function=logits, updates=updates)


def write(method: Any, path: str | os.PathLike[str], *, drop_updates: bool = False) -> None:
    """Write a fitted AdapTable to ``path`` (see ``AdapTable.save``); reads only its public
    fitted attributes (``classes_``, ``n_classes_``, ``source_prior_``, ``encoder_``,
    ``calibrator_``, ``decider_``, ``updates_``) and parameters. ``drop_updates``: leave the
    model updates out, the file's parameters saying ``update="none"``.

    Raises:
        FileNotFoundError: the folder of ``path`` does not exist (it is named).
        IsADirectoryError: ``path`` is a folder.
        OSError: the file cannot be written.
    """
    from safetensors import SafetensorError
    from safetensors.numpy import save_file

    from adaptable import __version__

    _check_savable(method, drop_updates)
    arrays: dict[str, np.ndarray] = {"source_prior": method.source_prior_}
    meta: dict[str, Any] = {
        "format": FORMAT,
        "version": __version__,
        "params": _saved_params(method) | ({"update": "none"} if drop_updates else {}),
        "n_classes": method.n_classes_,
        "calibrator": method.calibrator_.name,
    }
    if method.encoder_ is not None:
        meta["encoder"] = method.encoder_.to_dict()
    meta["stream"] = _stream_of(method.state)
    columns = getattr(method, "columns_", None)
    names = None if columns is None else columns.to_list()
    if names is not None:
        meta["columns"] = names
    elif columns is not None:
        warnings.warn(
            f"AdapTable.save: the column names {columns.names.tolist()[:3]!r:.80} cannot be "
            "written to the file (only strings, integers and finite floats can); the loaded "
            "adapter passes batches to the model in the order they come, not put back in "
            "fit's order.",
            UserWarning,
            stacklevel=3,
        )
    # Labels other than the integer column indices 0..C-1 (e.g. 'no' / 'yes', or False / True,
    # which compare equal to 0 / 1 but must come back as booleans) are saved with the file.
    classes = method.classes_
    if classes.dtype.kind not in "iu" or not np.array_equal(classes, np.arange(method.n_classes_)):
        meta["classes"] = classes.tolist()
    if classes.dtype.kind in "iuf" and classes.dtype != np.int64:
        meta["classes_dtype"] = classes.dtype.str  # int8, uint64, float32: back as themselves
    monitor = getattr(method, "feature_monitor_", None)
    monitored = None if monitor is None else monitor_state(monitor)
    parts = (calibrator_state(method.calibrator_), method.decider_.state(), monitored)
    for part in (p for p in parts if p is not None):
        arrays.update(part.arrays)
        meta.update(part.metadata)
    # safetensors refuses empty or non-contiguous arrays; load knows the empty ones' shapes
    tensors = {k: np.ascontiguousarray(v) for k, v in arrays.items() if np.asarray(v).size}
    name = os.fspath(path)
    # safetensors writes a temporary file beside the target and names that one in its errors
    folder = os.path.dirname(os.path.abspath(name))
    if not os.path.isdir(folder):
        raise FileNotFoundError(
            f"Cannot save to {name!r}: the folder {folder!r} does not exist; create it first."
        )
    if os.path.isdir(name):
        raise IsADirectoryError(f"Cannot save to {name!r}: it is a folder; give a file name.")
    # the digest over the metadata as load reads it back, and the tensors as written
    meta[DIGEST_FIELD] = file_digest(json.loads(json.dumps(meta)), tensors.items())
    try:
        save_file(tensors, name, metadata={_METADATA_KEY: json.dumps(meta)})
    except SafetensorError as err:
        raise OSError(f"Cannot save to {name!r} ({err}).") from err


def _check_savable(method: Any, drop_updates: bool = False) -> None:
    """A ValueError, before anything is written, where the file could not hold the labels or
    the encoded columns' names as themselves (JSON has no dates, tuples, ...)."""
    updates = getattr(method, "updates_", None)
    if updates is not None and updates.n_labelled and not drop_updates:
        raise ValueError(
            f"AdapTable.save: the model updates (update={updates.mode!r}) have learnt from "
            f"{updates.n_labelled} labelled rows, which a .safetensors file cannot hold (a "
            "refitted model is not an array). Pickle or joblib.dump the adapter to keep them; "
            "or save(path, drop_updates=True) to write the adapter without them (it loads as "
            "update='none'); or use AdapTable(update='none') from fit on."
        )
    labels = [python_value(c) for c in method.classes_.tolist()]
    if not all(isinstance(c, SAVED_LABEL_TYPES) for c in labels):
        kind = type(next(c for c in labels if not isinstance(c, SAVED_LABEL_TYPES)))
        raise ValueError(
            f"AdapTable.save: labels of type {kind.__name__} ({labels[0]!r:.40}, ...) cannot "
            "be written to the file; fit on labels that are strings, integers, floats or "
            "booleans (map them, e.g. to str) to save the adapter."
        )
    if method.encoder_ is not None:
        state = method.encoder_.to_dict()  # as written, so as load will read it
        bad = [n for n in [*state["numerical"], *state["categorical"]] if not is_column_name(n)]
        if bad:
            raise ValueError(
                f"AdapTable.save: column names such as {bad[0]!r:.60} cannot be written to the "
                "file (only strings, integers and finite floats can); rename the columns "
                "(a MultiIndex: join its levels into strings) before fit to save the adapter."
            )


def _saved_params(method: Any) -> dict[str, Any]:
    """Constructor arguments in constructor order, JSON-compatible."""
    order = [p for p in inspect.signature(type(method).__init__).parameters if p != "self"]
    params = method.params_as_fitted()
    # numpy scalars (report_batches=np.int64(5), say) pass the constraints but not json
    saved = {k: python_value(params[k]) for k in order if k not in _UNSAVED_PARAMS}
    for key in ("numerical", "categorical"):
        if saved[key] is not None:
            saved[key] = [python_value(name) for name in saved[key]]
    return saved


def read(cls: type, path: str | os.PathLike[str], model: Any = None) -> SavedAdapTable:
    """Read and check a file written by :func:`write`; ``cls`` validates the parameters, and
    ``model`` (where given) must name the file's classes, as fit checks.

    Raises:
        ValueError: not an AdapTable file (not a safetensors file: empty, truncated, of
            another kind; or no AdapTable metadata), a format it does not know, a version
            newer than this package, or a field missing, malformed or in disagreement (the
            message names the file and the field), or a digest that does not match the
            file's metadata and tensors (field ``digest``); or ``model`` names other classes.
        FileNotFoundError, IsADirectoryError: no file at ``path``.
    """
    from safetensors import SafetensorError, safe_open

    from adaptable import __version__

    name = os.fspath(path)
    if os.path.isdir(name):
        raise IsADirectoryError(f"{name!r} is a folder, not a file written by AdapTable.save.")
    try:
        handle = safe_open(name, framework="numpy")
    except SafetensorError as err:
        raise ValueError(
            f"{name!r} is not a file written by AdapTable.save: it cannot be read as a "
            f"safetensors file ({err}); it may be truncated, empty or of another kind."
        ) from err
    # Names, shapes and dtypes are read from the header; a tensor's data only when a part
    # asks for it, once its shape is checked (a tensor no part owns is never read).
    with handle:
        raw = (handle.metadata() or {}).get(_METADATA_KEY)
        if raw is None:
            raise ValueError(f"{name!r} is not a file written by AdapTable.save.")
        reader = StateReader(
            name, raw, Tensors.of_safetensors(handle), (FORMAT, *OLDER_FORMATS), __version__
        )
        saved = _read_parts(reader, cls)
        _check_digest(reader, handle)
    if model is not None:  # column j of the model must be class j of the file
        check_model_classes(model, saved.classes, "AdapTable.load")
    return saved


def _read_parts(reader: StateReader, cls: type) -> SavedAdapTable:
    """The parameters, then each part from its own fields; then no tensor may be left over."""
    params = _params(reader, cls)
    n_classes = reader.integer("n_classes", minimum=2)
    # p_s first: its shape, read from the header, bounds C before anything of C entries is made
    prior = reader.distribution("source_prior", n_classes, positive=True)
    classes = reader.classes(n_classes)
    saved_calibrator = reader.field("calibrator", str)
    expected = calibrator_name(params)
    if saved_calibrator != expected:
        raise reader.error("calibrator", f"is {saved_calibrator!r} but params say {expected!r}")
    decider_class = DECIDERS[params["preset"]]
    encoder = None
    if decider_class.needs_features or CALIBRATORS[expected].needs_shift_trend:
        encoder = reader.encoder()
    context = LoadContext(reader, params, n_classes, prior, encoder)
    calibrator = load_calibrator(expected, context)
    decider = decider_class.from_state(context)
    monitor = read_monitor(reader, encoder)
    reader.no_unexpected_tensors()
    columns = _columns(reader, encoder)
    parts = FittedParts(
        n_classes, prior, encoder, calibrator, decider,
        None if columns is None else FittedColumns(columns), feature_monitor=monitor,
    )  # fmt: skip
    return SavedAdapTable(params, classes, parts, _stream(reader, n_classes))


def _check_digest(reader: StateReader, handle: Any) -> None:
    """Once every field has passed its own checks: the file's digest (where it holds one; a
    file written before the digest existed holds none) must be that of its metadata and
    tensors (:mod:`~adaptable.core.persistence.file_digest`)."""
    if DIGEST_FIELD not in reader.meta:
        return
    saved = reader.meta[DIGEST_FIELD]
    if not is_digest(saved):
        raise reader.error(DIGEST_FIELD, f"must be 'sha256:' and 64 hex digits; got {saved!r:.80}")
    try:
        found = file_digest(reader.meta, ((k, handle.get_tensor(k)) for k in handle.keys()))  # noqa: SIM118
    except TypeError:  # a value JSON cannot write (a number too long to read): not as saved
        found = None
    if found != saved:
        raise ValueError(
            f"{reader.path!r}: field {DIGEST_FIELD!r} does not match the file's metadata and "
            "tensors: the file is corrupted, or was edited after AdapTable.save wrote it."
        )


def _stream_of(state: Any) -> dict[str, Any]:
    """The stream so far as JSON: the batches adapted and the last batch's rule, target prior
    and likelihood-ratio statistic (its per-row arrays are not kept)."""
    statistic = state.prior_shift_statistic
    target = state.target_prior
    return {
        "n_batches": int(state.n_batches),
        "rule": state.decision_rule,
        "prior_shift_statistic": None
        if statistic is None or not math.isfinite(statistic)
        else float(statistic),
        # (a prior with a gap is not kept: the file must load, and its check refuses NaN)
        "target_prior": None
        if target is None or not np.all(np.isfinite(target))
        else [float(v) for v in target],
    }


def _stream(reader: StateReader, n_classes: int) -> dict[str, Any] | None:
    """:func:`_stream_of`'s entry, checked; ``None`` where the file holds none (written before
    it was kept: the loaded adapter counts its batches from 0)."""
    if "stream" not in reader.meta:
        # the report's window (its fifth counter) has been saved only since the stream was
        if reader.shape("report.counters") == (5,):
            raise reader.error("stream", "is missing (the report's window is saved with it)")
        return None
    stream = reader.field("stream", dict)
    count, rule = stream.get("n_batches"), stream.get("rule")
    statistic, target = stream.get("prior_shift_statistic"), stream.get("target_prior")
    number = (int, float)
    if (
        not isinstance(count, int) or isinstance(count, bool) or count < 0
        or not (rule is None or isinstance(rule, str))
        or not (statistic is None or isinstance(statistic, number) and math.isfinite(statistic))
        or not (target is None or isinstance(target, list) and len(target) == n_classes
                and all(isinstance(v, number) and 0 <= v <= 1 for v in target))
    ):  # fmt: skip
        raise reader.error("stream", "must hold a count of batches and the last batch's rule")
    return {
        "n_batches": count,
        "rule": rule,
        "prior_shift_statistic": None if statistic is None else float(statistic),
        "target_prior": None if target is None else np.array(target, dtype=np.float64),
    }


def _columns(reader: StateReader, encoder: Any) -> pd.Index | None:
    """The fit's DataFrame columns (metadata ``columns``), or ``None`` where the file holds
    none (fitted on arrays, on names JSON cannot hold, or written before they were saved);
    they include every column the saved Encoder reads."""
    if "columns" not in reader.meta:
        return None
    names = reader.field("columns", list)
    if not names or not all(map(is_saved_name, names)) or len(set(names)) != len(names):
        raise reader.error("columns", "must be distinct column names (strings or numbers)")
    columns = pd.Index(names)
    if encoder is not None:
        absent = [c for c in [*encoder.numerical_, *encoder.categorical_] if c not in columns]
        if absent:
            raise reader.error(
                "columns", f"lack the column {absent[0]!r} the encoder reads (field 'encoder')"
            )
    return columns


def _params(reader: StateReader, cls: type) -> dict[str, Any]:
    """The saved parameters, upgraded for files written before some of them existed."""
    params = dict(reader.field("params", dict))
    if reader.format in OLDER_FORMATS:
        # Written before the presets: the paper's algorithm (whose calibrator default was gnn).
        params.setdefault("preset", "paper")
    if "preset" not in params:
        raise reader.error("params", "name no preset")
    # Written before the likelihood-ratio test: its decisions were made without it.
    params.setdefault("label_shift_level", 1.0)
    # Written before covariate_rule_evidence: one evidence threshold decided everywhere.
    params.setdefault("covariate_rule_evidence", params.get("rule_evidence", 0.8))
    # Written before stream_check: the stream confirmed the balanced rule by one reading.
    params.setdefault("stream_check", "model")
    # Parameters added since the file was written take their defaults; unknown ones refuse.
    try:
        return cls(**params).get_params(deep=False)
    except (TypeError, ValueError) as err:
        raise reader.error("params", f"are not valid AdapTable parameters ({err})") from err

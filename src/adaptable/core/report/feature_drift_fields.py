"""The saved fields of a :class:`~adaptable.core.report.feature_drift.FeatureMonitor`, and their
reading back, checked.

Metadata ``feature_drift``: ``own_encoder`` (whether the monitor encodes the batches itself),
``encoder`` (that Encoder's state, ``Encoder.to_dict``; ``null`` where the monitor reads the
adapter's, the file's ``encoder``), the sample size, the seed, the held-out rows and stream rows
counted (``reference_rows``, ``rows_seen``) and the reservoir's generator state
(``generator``: PCG64's ``state``, ``inc``, ``has_uint32``, ``uinteger``). Tensors:

- ``feature_drift.reference``: the held-out sample of the numerical columns, standardised,
  (min(reference_rows, sample_size), numerical columns), float64;
- ``feature_drift.sample``: the stream's sample, (min(rows_seen, sample_size), numerical columns);
- ``feature_drift.reference_counts`` / ``feature_drift.stream_counts``: the categorical columns'
  bin counts one after the other (each column's categories, then unseen), int64.

A monitor whose own Encoder names columns a file cannot hold (a tuple, a date) is not saved
(:func:`monitor_state` gives ``None``); the loaded adapter then has none.

Example:
    >>> import pandas as pd
    >>> from adaptable.core.report.feature_drift import monitor_of
    >>> rows = pd.DataFrame({"a": [1.0, 2.0], "b": ["x", "y"]})
    >>> sorted(monitor_state(monitor_of(rows, rows)).arrays)[:2]
    ['feature_drift.reference', 'feature_drift.reference_counts']
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from adaptable.core.parts.contexts import PartState
from adaptable.core.parts.saved_state import StateReader, encoder_problem
from adaptable.core.report.feature_drift import FeatureMonitor
from adaptable.encoding import Encoder

#: the metadata key, and the prefix of the tensors
KEY = "feature_drift"
_FIELDS = {
    "own_encoder", "encoder", "sample_size", "seed", "reference_rows", "rows_seen", "generator",
}  # fmt: skip
_GENERATOR = ("state", "inc", "has_uint32", "uinteger")


def monitor_state(monitor: FeatureMonitor) -> PartState | None:
    """The monitor's saved fields, or ``None`` where its own Encoder cannot be saved."""
    encoder = None
    if monitor.own_encoder:
        try:  # as the file will hold it: through JSON
            encoder = json.loads(json.dumps(monitor.encoder.to_dict()))
        except (TypeError, ValueError):
            return None
        if encoder_problem(encoder) is not None:
            return None
    generator = monitor.reservoir.generator_state
    metadata = {
        "own_encoder": monitor.own_encoder,
        "encoder": encoder,
        "sample_size": monitor.sample_size,
        "seed": monitor.seed,
        "reference_rows": monitor.reference_rows,
        "rows_seen": monitor.rows_seen,
        "generator": {
            "state": int(generator["state"]["state"]),
            "inc": int(generator["state"]["inc"]),
            "has_uint32": int(generator["has_uint32"]),
            "uinteger": int(generator["uinteger"]),
        },
    }
    arrays = {
        f"{KEY}.reference": monitor.reference,
        f"{KEY}.sample": monitor.reservoir.sample,
        f"{KEY}.reference_counts": monitor.reference_counts,
        f"{KEY}.stream_counts": monitor.stream_counts,
    }
    return PartState(arrays, {KEY: metadata})


def read_monitor(reader: StateReader, encoder: Encoder | None) -> FeatureMonitor | None:
    """The saved monitor, checked; ``None`` where the file holds none (written before
    per-column drift was kept, or by an adapter whose monitor could not be saved).

    Args:
        reader: the file.
        encoder: the adapter's Encoder (the file's ``encoder``), or ``None`` where it has none.

    Raises:
        ValueError: a field missing, malformed, or in disagreement with another (named).
    """
    if KEY not in reader.meta:
        return None
    fields = reader.field(KEY, dict)
    if set(fields) != _FIELDS:
        raise reader.error(KEY, f"must hold exactly the keys {sorted(_FIELDS)}")
    own = fields["own_encoder"]
    if own is not (encoder is None):
        raise reader.error(KEY, "must read through the adapter's Encoder where it has one")
    if own:
        encoder = _encoder(reader, fields["encoder"])
    elif fields["encoder"] is not None:
        raise reader.error(KEY, "holds an Encoder of its own but reads the adapter's")
    size = _count(reader, fields, "sample_size", 1)
    seed = _count(reader, fields, "seed", 0)
    reference_rows = _count(reader, fields, "reference_rows", 1)
    rows_seen = _count(reader, fields, "rows_seen", 0)
    width = len(encoder.numerical_)
    reference = reader.tensor(f"{KEY}.reference", (min(reference_rows, size), width))
    sample = reader.tensor(f"{KEY}.sample", (min(rows_seen, size), width))
    bins = [len(c) + 1 for c in encoder.categories_]
    reference_counts = _counts(reader, "reference_counts", bins, reference_rows)
    stream_counts = _counts(reader, "stream_counts", bins, rows_seen)
    monitor = FeatureMonitor(
        encoder, own, reference.astype(np.float64), reference_counts, reference_rows,
        sample_size=size, seed=seed,
    )  # fmt: skip
    try:
        monitor.reservoir.restore(
            sample.astype(np.float64), rows_seen, _generator(reader, fields["generator"])
        )
    except (TypeError, ValueError, KeyError, OverflowError) as err:
        raise reader.error(KEY, f"holds a generator state that cannot be restored ({err})") from err
    monitor.stream_counts[:] = stream_counts
    return monitor


def _encoder(reader: StateReader, state: Any) -> Encoder:
    """The monitor's own Encoder, checked as the adapter's is."""
    problem = "is no Encoder's state" if not isinstance(state, dict) else encoder_problem(state)
    if problem is None:
        try:
            return Encoder.from_dict(state)
        except (KeyError, TypeError, ValueError, IndexError) as err:
            problem = str(err)
    raise reader.error(KEY, f"holds an Encoder that cannot be read ({problem})")


def _count(reader: StateReader, fields: dict[str, Any], name: str, minimum: int) -> int:
    value = fields[name]
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise reader.error(KEY, f"must hold {name} as a whole number of at least {minimum}")
    return value


def _counts(reader: StateReader, name: str, bins: list[int], total: int) -> np.ndarray:
    """The categorical columns' bin counts, one column after the other; each column's must
    sum to ``total`` rows."""
    key = f"{KEY}.{name}"
    counts = reader.tensor(key, (sum(bins),), "int64").astype(np.int64)
    columns = np.split(counts, np.cumsum(bins)[:-1]) if bins else []
    if any(c.min() < 0 or c.sum() != total for c in columns):
        raise reader.error(key, f"must count each categorical column's {total} rows")
    return counts


def _generator(reader: StateReader, saved: Any) -> dict[str, Any]:
    """PCG64's state from the saved integers."""
    if (
        not isinstance(saved, dict) or set(saved) != set(_GENERATOR)
        or not all(isinstance(saved[k], int) and not isinstance(saved[k], bool) for k in saved)
        or not all(0 <= saved[k] < 2**128 for k in ("state", "inc"))
        or saved["has_uint32"] not in (0, 1) or not 0 <= saved["uinteger"] < 2**32
    ):  # fmt: skip
        raise reader.error(KEY, "must hold the generator's state as four integers")
    return {
        "bit_generator": "PCG64",
        "state": {"state": saved["state"], "inc": saved["inc"]},
        "has_uint32": saved["has_uint32"],
        "uinteger": saved["uinteger"],
    }

"""The saved fields of a :class:`~adaptable.core.report.feature_drift.FeatureMonitor`, and their
reading back, checked.

Metadata ``feature_drift``: the columns (``columns``, ``kinds``, ``categories``), the sample
size, the seed, the held-out rows and stream rows counted (``reference_rows``, ``rows_seen``)
and the reservoir's generator state (``generator``: PCG64's ``state``, ``inc``, ``has_uint32``,
``uinteger``). Tensors (a missing value is held by a mask: a file holds finite floats only):

- ``feature_drift.reference`` / ``feature_drift.reference_missing``: the held-out sample of the
  numerical columns, (min(reference_rows, sample_size), numerical columns), float64 / bool;
- ``feature_drift.sample`` / ``feature_drift.sample_missing``: the stream's sample, (min(rows_seen,
  sample_size), numerical columns);
- ``feature_drift.reference_counts`` / ``feature_drift.stream_counts``: the categorical columns'
  bin counts one after the other (each column's categories, missing, unseen), int64.

A monitor whose column names a file cannot hold as themselves (a tuple, a date, a name twice)
is not saved (:func:`monitor_state` gives ``None``); the loaded adapter then has none.

Example:
    >>> import numpy as np, pandas as pd
    >>> from adaptable.core.report.feature_drift import FeatureMonitor
    >>> monitor = FeatureMonitor.of(pd.DataFrame({"a": [1.0, np.nan], "b": ["x", "y"]}))
    >>> sorted(monitor_state(monitor).arrays)[:2]
    ['feature_drift.reference', 'feature_drift.reference_counts']
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adaptable.core.parts.contexts import PartState
from adaptable.core.parts.saved_state import StateReader
from adaptable.core.report.column_reading import KINDS, ColumnReader
from adaptable.core.report.feature_drift import FeatureMonitor
from adaptable.framework.fitted_columns import is_saved_name
from adaptable.values import python_value

#: the metadata key, and the prefix of the tensors
KEY = "feature_drift"
_FIELDS = {
    "columns", "kinds", "categories", "sample_size", "seed", "reference_rows", "rows_seen",
    "generator",
}  # fmt: skip
_GENERATOR = ("state", "inc", "has_uint32", "uinteger")


def monitor_state(monitor: FeatureMonitor) -> PartState | None:
    """The monitor's saved fields, or ``None`` where its column names cannot be saved."""
    names = [python_value(n) for n in monitor.reader.names]
    if not all(map(is_saved_name, names)) or len(set(names)) != len(names):
        return None
    generator = monitor.reservoir.generator_state
    sample = monitor.reservoir.sample
    metadata = {
        "columns": names,
        "kinds": monitor.reader.kinds,
        "categories": [list(c) for c in monitor.reader.categories],
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
        f"{KEY}.reference": np.nan_to_num(monitor.reference, nan=0.0),
        f"{KEY}.reference_missing": np.isnan(monitor.reference),
        f"{KEY}.sample": np.nan_to_num(sample, nan=0.0),
        f"{KEY}.sample_missing": np.isnan(sample),
        f"{KEY}.reference_counts": monitor.reference_counts,
        f"{KEY}.stream_counts": monitor.stream_counts,
    }
    return PartState(arrays, {KEY: metadata})


def read_monitor(reader: StateReader) -> FeatureMonitor | None:
    """The saved monitor, checked; ``None`` where the file holds none (written before
    per-column drift was kept, or with column names it cannot hold).

    Raises:
        ValueError: a field missing, malformed, or in disagreement with another (named).
    """
    if KEY not in reader.meta:
        return None
    fields = reader.field(KEY, dict)
    if set(fields) != _FIELDS:
        raise reader.error(KEY, f"must hold exactly the keys {sorted(_FIELDS)}")
    names, kinds, categories = fields["columns"], fields["kinds"], fields["categories"]
    if (
        not isinstance(names, list) or not names or not all(map(is_saved_name, names))
        or len(set(names)) != len(names)
        or not isinstance(kinds, list) or len(kinds) != len(names)
        or not all(isinstance(k, str) and k in KINDS for k in kinds)
    ):  # fmt: skip
        raise reader.error(KEY, "must name distinct columns, each numerical or categorical")
    if (
        not isinstance(categories, list) or len(categories) != kinds.count("categorical")
        or not all(_sorted_texts(c) for c in categories)
    ):  # fmt: skip
        raise reader.error(KEY, "must hold sorted distinct categories per categorical column")
    size = _count(reader, fields, "sample_size", 1)
    seed = _count(reader, fields, "seed", 0)
    reference_rows = _count(reader, fields, "reference_rows", 1)
    rows_seen = _count(reader, fields, "rows_seen", 0)
    reader_columns = ColumnReader(names, kinds, categories)
    width = len(reader_columns.numerical)
    reference = _values(reader, "reference", (min(reference_rows, size), width))
    sample = _values(reader, "sample", (min(rows_seen, size), width))
    bins = reader_columns.bins
    reference_counts = _counts(reader, "reference_counts", bins, reference_rows)
    stream_counts = _counts(reader, "stream_counts", bins, rows_seen)
    monitor = FeatureMonitor(
        reader_columns, reference, reference_counts, reference_rows, sample_size=size, seed=seed
    )
    try:
        monitor.reservoir.restore(sample, rows_seen, _generator(reader, fields["generator"]))
    except (TypeError, ValueError, KeyError, OverflowError) as err:
        raise reader.error(KEY, f"holds a generator state that cannot be restored ({err})") from err
    monitor.stream_counts[:] = stream_counts
    return monitor


def _sorted_texts(values: Any) -> bool:
    return (
        isinstance(values, list)
        and all(isinstance(v, str) for v in values)
        and all(a < b for a, b in zip(values, values[1:], strict=False))
    )


def _count(reader: StateReader, fields: dict[str, Any], name: str, minimum: int) -> int:
    value = fields[name]
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise reader.error(KEY, f"must hold {name} as a whole number of at least {minimum}")
    return value


def _values(reader: StateReader, name: str, shape: tuple[int, int]) -> np.ndarray:
    """A numerical sample, its missing values NaN again."""
    values = reader.tensor(f"{KEY}.{name}", shape, "float64").astype(np.float64)
    missing = reader.tensor(f"{KEY}.{name}_missing", shape, "bool")
    return np.where(missing, np.nan, values)


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

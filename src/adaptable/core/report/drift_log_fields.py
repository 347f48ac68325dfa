"""A drift log's saved fields: its records, kept rows, counters, residual sums and feature
sample as arrays, and back (the array names and values are a file format).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def log_arrays(log: Any) -> dict[str, np.ndarray]:
    """A drift log as arrays, for ``save`` / ``load``: the records
    (:meth:`~adaptable.core.report.record_window.RecordWindow.arrays`), the kept rows
    (:meth:`~adaptable.core.report.kept_rows.KeptRows.arrays`), the counters (rows
    recorded, ``unscored``, the oldest kept batch, ``dropped``, ``max_batches``) and the
    residual sums. The names and values are a file format."""
    records = log._records.arrays()  # settles the pending records
    rows = log._rows.arrays()
    counters = [
        log._rows.n_rows,
        log.unscored,
        log._rows.oldest,
        log._records.dropped,
        log._records.max_batches,
    ]
    return (
        records
        | {
            "predictions": rows.pop("predictions"),
            "counters": np.array(counters, dtype=np.int64),
            "kept_sizes": rows.pop("kept_sizes"),
        }
        | rows
        | log._residuals.arrays(log._records.n_batches)
        | log._sample.arrays()
    )


def restore_log(log: Any, arrays: dict[str, np.ndarray]) -> None:
    """Inverse of :func:`log_arrays`, into ``log`` (empty arrays may be missing; a file written before the
    report existed holds no counters: no records).

    Raises:
        ValueError: missing, malformed or inconsistent arrays.
    """
    log.reset()
    if "counters" not in arrays:
        return
    counters = np.asarray(arrays["counters"], dtype=np.int64).reshape(-1)
    # a file written before records were forgotten holds three counters: none was; the
    # fifth, the window the log was fitted with (a later set_params does not change it)
    dropped = int(counters[3]) if len(counters) >= 4 else 0
    window = int(counters[4]) if len(counters) == 5 else log.max_batches
    log._records.restore(arrays, dropped, window)
    if counters.shape not in ((3,), (4,), (5,)):
        raise ValueError("drift report: arrays of inconsistent shapes.")
    n_rows, oldest = int(counters[0]), int(counters[2])
    records = log._records.records
    # a file written before the kept rows were counted kept those of the kept records
    record_sizes = [x.rows for x in records[max(oldest - dropped, 0) :]]
    log._rows.restore(arrays, n_rows, oldest, log._records.n_batches, record_sizes)
    log._residuals.restore(arrays, log._records.n_batches)
    log._residuals.forget_before(dropped)
    log.unscored = int(counters[1])

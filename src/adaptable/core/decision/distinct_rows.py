"""The distinct rows of a 2-D array, and each row's index among them: numpy's
``np.unique(values, axis=0, return_inverse=True)``, without its cost.

numpy's row-wise unique sorts a structured view of the rows, which is slow
(docs/research/design_notes.md#decision-distinct-rows), and the drift report and the
labelled-rows evidence ask for it on every comparison and bootstrap resample. Rows of small
non-negative integers (class codes, decisions) become one integer each, in the same
lexicographic order; other rows (floats) are sorted column by column.

Example:
    >>> import numpy as np
    >>> unique, inverse = unique_rows(np.array([[1, 0], [0, 1], [1, 0]]))
    >>> unique.tolist(), inverse.tolist()
    ([[0, 1], [1, 0]], [1, 0, 1])
    >>> unique_rows(np.array([[1.0, 2.0], [0.0, 5.0], [1.0, 2.0]]))[1].tolist()
    [1, 0, 1]
"""

from __future__ import annotations

import numpy as np


def unique_rows(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``values`` (n, k) in lexicographic order (rows that compare equal,
    0.0 and -0.0 included, are one), and each row's index among them, (n,): what
    ``np.unique(values, axis=0, return_inverse=True)`` gives."""
    values = np.asarray(values)
    if not len(values):
        return values.copy(), np.zeros(0, dtype=np.intp)
    if values.dtype.kind in "biu" and values.min() >= 0:
        # one integer per row, increasing in the rows' lexicographic order
        dims = tuple(int(top) + 1 for top in values.max(axis=0))
        try:
            codes = np.ravel_multi_index(tuple(values.T), dims)
        except ValueError:  # too many combinations for one integer per row
            pass
        else:
            distinct, inverse = np.unique(codes, return_inverse=True)
            rows = np.stack(np.unravel_index(distinct, dims), axis=1).astype(values.dtype)
            return rows, inverse.reshape(-1)
    order = np.lexsort(values.T[::-1])
    ordered = values[order]
    first = np.ones(len(values), dtype=bool)
    first[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    inverse = np.empty(len(values), dtype=np.intp)
    inverse[order] = np.cumsum(first) - 1
    return ordered[first], inverse

"""``unique_rows`` is numpy's row-wise unique (rows, order and indices) on every path: small
non-negative integers (one integer per row), integers too many for that, negative integers,
and floats (signed zeros compare equal)."""

from __future__ import annotations

import numpy as np
import pytest

from adaptable.core.decision.distinct_rows import unique_rows


def _cases():
    rng = np.random.default_rng(0)
    yield rng.integers(0, 3, (500, 6))  # decisions: one integer per row
    yield rng.integers(0, 100, (300, 10))  # 100^10 combinations: past int64
    yield rng.integers(-2, 2, (200, 3))  # negatives
    floats = np.round(rng.normal(size=(400, 2)), 1)
    floats[5, 0], floats[6, 0] = -0.0, 0.0
    yield floats
    yield np.zeros((0, 3), dtype=np.int64)


@pytest.mark.parametrize(
    "values", list(_cases()), ids=["codes", "wide", "negative", "float", "empty"]
)
def test_unique_rows_are_numpys_row_wise_unique(values) -> None:
    unique, inverse = unique_rows(values)
    want, want_inverse = np.unique(values, axis=0, return_inverse=True)
    np.testing.assert_array_equal(unique, want)
    np.testing.assert_array_equal(inverse, want_inverse.reshape(-1))
    assert unique.dtype == values.dtype

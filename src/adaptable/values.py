"""Numpy scalars as the Python values they hold, for messages and JSON.

``repr(np.int64(5))`` is ``np.int64(5)`` and JSON refuses numpy scalars; the user's labels,
column names and cells are shown and saved as the Python values they stand for.

Example:
    >>> import numpy as np
    >>> python_value(np.int64(5)), python_value("yes")
    (5, 'yes')
"""

from __future__ import annotations

from typing import Any

import numpy as np


def python_value(value: Any) -> Any:
    """``value`` as a Python value where it is a numpy scalar; anything else as it is."""
    return value.item() if isinstance(value, np.generic) else value

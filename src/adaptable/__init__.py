"""AdapTable: test-time adaptation for tabular classifiers under distribution shift.

>>> from adaptable import AdapTable, datasets
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_SUBPACKAGES = {
    "datasets",
    "core",
    "encoding",
    "models",
    "baselines",
    "methods",
    "shifts",
    "experiments",
}

__all__ = ["AdapTable", "__version__", *sorted(_SUBPACKAGES)]


def __getattr__(name: str) -> Any:
    # Lazy, so that `from adaptable import AdapTable` pulls in neither the model zoo nor the
    # experiment machinery.
    if name == "AdapTable":
        from adaptable.core import AdapTable

        return AdapTable
    if name in _SUBPACKAGES:
        return importlib.import_module(f"adaptable.{name}")
    raise AttributeError(f"module 'adaptable' has no attribute {name!r}")

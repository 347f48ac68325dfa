"""AdapTable: test-time adaptation for tabular classifiers under distribution shift.

>>> from adaptable import AdapTable, AdaptedClassifier, datasets
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
    "wrapped",
}

#: public classes, each imported from its module on first use
_CLASSES = {"AdapTable": "adaptable.core", "AdaptedClassifier": "adaptable.wrapped"}

__all__ = [*sorted(_CLASSES), "__version__", *sorted(_SUBPACKAGES)]


def __getattr__(name: str) -> Any:
    # Lazy, so that `from adaptable import AdapTable` pulls in neither the model zoo nor the
    # experiment machinery.
    if name in _CLASSES:
        return getattr(importlib.import_module(_CLASSES[name]), name)
    if name in _SUBPACKAGES:
        return importlib.import_module(f"adaptable.{name}")
    raise AttributeError(f"module 'adaptable' has no attribute {name!r}")


def __dir__() -> list[str]:
    # The public names and the module's own dunders, not the helpers imported above.
    return sorted({*__all__, *(name for name in globals() if name.startswith("__"))})

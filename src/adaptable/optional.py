"""Optional dependencies: the extras of ``adaptable-tta`` and the one error a missing one raises.

The core install (``pip install adaptable-tta``) holds what ``AdapTable()`` needs with any model
you bring: numpy, scipy, pandas, scikit-learn, safetensors and platformdirs. Every other library
belongs to an extra (``pyproject.toml``, ``[project.optional-dependencies]``), imported only by
the feature that needs it, through :func:`require`, so that a missing one is reported as the
feature and the command that installs it rather than as a bare ``No module named ...``.

>>> require("numpy", feature="the example", extra="torch").__name__
'numpy'
>>> loaded("a_module_nobody_imported") is None
True
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

#: extra -> what it adds; the same lists as ``pyproject.toml``'s optional dependencies
EXTRAS: dict[str, str] = {
    "torch": "torch, rtdl_revisiting_models, tqdm: the package's deep source models "
    "(models.train), the paper preset's graph calibrator, the peers that update a network "
    "(TENT and the others), adaptable run",
    "boosters": "xgboost-cpu, catboost: the XGBoost and CatBoost source models",
    "plots": "matplotlib: adaptable plot and the drift figures",
    "ray": "ray: the Ray executor (adaptable run --executor ray)",
    "mimic": "tables: the ICU Mortality task's HDF5 file",
    "all": "every extra above",
}

#: the top-level modules of the extras' libraries (what the core install must never import)
EXTRA_MODULES = (
    "torch",
    "xgboost",
    "catboost",
    "matplotlib",
    "ray",
    "tqdm",
    "rtdl_revisiting_models",
)


class MissingExtraError(ModuleNotFoundError):
    """A feature's optional dependency is not installed; the message names the feature and the
    ``pip install`` command of its extra. A :class:`ModuleNotFoundError` (so an ``ImportError``),
    with ``name`` the missing module, so that code catching either keeps working."""


def install_command(extra: str) -> str:
    """The command that installs ``extra``, as the README gives it."""
    if extra not in EXTRAS:
        raise ValueError(f"Unknown extra {extra!r}; expected one of {', '.join(EXTRAS)}.")
    return f"pip install 'adaptable-tta[{extra}]'"


def require(module: str, *, feature: str, extra: str) -> ModuleType:
    """Import ``module`` for ``feature``, or raise :class:`MissingExtraError` naming both the
    feature and ``pip install 'adaptable-tta[extra]'``.

    Only the absence of ``module`` itself (or of its parent package) is translated: where the
    module is installed but one of *its* imports fails, that error is the real one and is
    raised unchanged.

    Args:
        module: the dotted module name to import (``"torch"``, ``"matplotlib.pyplot"``).
        feature: what needs it, as the user asked for it (``"AdapTable(preset='paper')"``).
        extra: the extra of ``adaptable-tta`` that installs it (a key of :data:`EXTRAS`).

    Returns:
        The imported module.
    """
    command = install_command(extra)  # an unknown extra is a bug here, found on any machine
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        missing = err.name or ""
        if not missing or not (module == missing or module.startswith(missing + ".")):
            raise
        raise MissingExtraError(
            f"{feature} needs {missing}, which is not installed. Install the {extra!r} extra: "
            f"{command} (in a clone of the repository: "
            f"pip install -c constraints.txt -e '.[{extra}]').",
            name=missing,
        ) from err


def loaded(module: str) -> ModuleType | None:
    """``module`` if something has imported it already, else ``None``; imports nothing.

    For type checks against an optional library: an object can only be a ``torch.Tensor`` if
    torch has been imported, so ``(torch := loaded("torch")) is not None and isinstance(x,
    torch.Tensor)`` answers without importing torch (seconds) for every caller without it.
    """
    return sys.modules.get(module)

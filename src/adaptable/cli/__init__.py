"""Command-line interface: ``adaptable datasets | drift | run | reproduce | plot``.

Every name and option is checked before any data loads or any model trains; a bad one ends in
the subcommand's usage and one line per problem (exit status 2), never a traceback.

The parser declares the options (:mod:`.parser`, with the argument types of :mod:`.options`
and the defaults of :mod:`.defaults`); :mod:`.checks` checks them all at once (with
:mod:`.name_checks` and :mod:`.path_checks`); each command is a module of :mod:`.commands`;
:mod:`.entry` holds :func:`main`, the ``adaptable`` console script.

Importing this package imports :mod:`.entry` alone (the standard library's modules, no
numpy): the console script reaches :func:`main`, which turns Ctrl-C into one line, before
anything slow loads. The other names load on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from adaptable.cli.entry import EXIT_INTERRUPTED, main

#: the package's other public names, each imported from its module on first use
_LAZY = {
    "check_args": "adaptable.cli.checks",
    "DEFAULT_DATASETS": "adaptable.cli.defaults",
    "DEFAULT_METHODS": "adaptable.cli.defaults",
    "DEFAULT_MODELS": "adaptable.cli.defaults",
    "DEFAULT_RESULTS": "adaptable.cli.defaults",
    "FEEDBACK_METHODS": "adaptable.cli.defaults",
    "MAX_SEED": "adaptable.cli.options",
    "parse_method": "adaptable.cli.options",
    "positive_int": "adaptable.cli.options",
    "seed_value": "adaptable.cli.options",
    "DESCRIPTION": "adaptable.cli.parser",
    "build_parser": "adaptable.cli.parser",
    "Components": "adaptable.experiments.components",
}

__all__ = [
    "DEFAULT_DATASETS",
    "DEFAULT_METHODS",
    "DEFAULT_MODELS",
    "DEFAULT_RESULTS",
    "DESCRIPTION",
    "EXIT_INTERRUPTED",
    "FEEDBACK_METHODS",
    "MAX_SEED",
    "Components",
    "build_parser",
    "check_args",
    "main",
    "parse_method",
    "positive_int",
    "seed_value",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'adaptable.cli' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*__all__, *(name for name in globals() if name.startswith("__"))})

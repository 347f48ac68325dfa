"""Command-line interface: ``adaptable datasets | drift | run | reproduce | plot``.

Every name and option is checked before any data loads or any model trains; a bad one ends in
the subcommand's usage and one line per problem (exit status 2), never a traceback.

The parser declares the options (:mod:`.parser`, with the argument types of :mod:`.options`
and the defaults of :mod:`.defaults`); :mod:`.checks` checks them all at once (with
:mod:`.name_checks` and :mod:`.path_checks`); each command is a module of :mod:`.commands`;
:mod:`.entry` holds :func:`main`, the ``adaptable`` console script.
"""

from adaptable.cli.checks import check_args
from adaptable.cli.defaults import (
    DEFAULT_DATASETS,
    DEFAULT_METHODS,
    DEFAULT_MODELS,
    DEFAULT_RESULTS,
    FEEDBACK_METHODS,
)
from adaptable.cli.entry import EXIT_INTERRUPTED, main
from adaptable.cli.options import MAX_SEED, parse_method, positive_int, seed_value
from adaptable.cli.parser import DESCRIPTION, build_parser
from adaptable.experiments.components import Components

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

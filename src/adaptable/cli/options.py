"""What the text of one option may be.

The argparse types and actions here refuse a text as a usage error of its option, before any
other check and before any work starts; :func:`parse_method` reads one ``--methods`` text (the
checks apply it to each, so that every malformed one is reported at once).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence
from typing import Any

from adaptable.experiments.suggest import folded_name, unknown_name

#: seeds go to numpy's legacy seeding, which takes 32-bit values
MAX_SEED = 2**32 - 1


def parse_method(text: str) -> tuple[str, dict[str, Any]]:
    """``"adaptable[calibrator=none,alpha=0.2]"`` -> ``("adaptable", {"calibrator": "none",
    "alpha": 0.2})``; values are read as JSON where they parse (numbers, booleans), else strings.
    A malformed text raises ``argparse.ArgumentTypeError`` (see
    :func:`adaptable.experiments.spec.parse_method`).

    >>> parse_method("adaptable[calibrator=none,alpha=0.2]")
    ('adaptable', {'calibrator': 'none', 'alpha': 0.2})
    """
    from adaptable.experiments.spec import parse_method as parse

    try:
        return parse(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def seed_value(text: str) -> int:
    """An argparse type: a seed is a whole number from 0 to :data:`MAX_SEED`."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a seed must be a whole number; got {text!r}") from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"a seed must lie between 0 and {MAX_SEED}; got {text}")
    return value


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number; got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1; got {text}")
    return value


class FeedbackAction(argparse.Action):
    """``--feedback SHARE DELAY``: a share of rows from 0 to 1 and a whole number of batches,
    at least 0; stored as ``(share, delay)`` with ``delay`` an int. Anything else is a usage
    error of the option, before any work starts."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        share, delay = values
        if not 0 <= share <= 1:  # NaN fails this too
            raise argparse.ArgumentError(self, f"SHARE must lie between 0 and 1; got {share:g}")
        if not math.isfinite(delay) or delay < 0 or delay != int(delay):
            raise argparse.ArgumentError(
                self, f"DELAY must be a whole number of batches, 0 or more; got {delay:g}"
            )
        setattr(namespace, self.dest, (float(share), int(delay)))


def one_of(kind: str, names: Sequence[str]) -> Callable[[str], str]:
    """An argparse ``type`` that takes one of ``names`` and refuses others with the closest."""

    def check(value: str) -> str:
        folded = folded_name(value, names)  # MAIN: main, as dataset names are folded
        if folded in names:
            return folded
        raise argparse.ArgumentTypeError(unknown_name(kind, value, names))

    return check

"""The message for a name the command line does not know: the closest valid names, else the
valid names themselves where they are few.

Example:
    >>> unknown_name("table", "mian", ["main", "corruptions", "oracle"])
    "unknown table 'mian'; did you mean main?"
    >>> unknown_name("role", "dev", ["generality", "development"])
    "unknown role 'dev'; choose from generality, development"
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

#: up to this many valid names are listed after an unknown one; longer lists are in --help
LISTED_NAMES = 12


def folded_name(name: str, known: Sequence[str]) -> str:
    """The one name of ``known`` that ``name`` spells in another case (``HELOC`` -> ``heloc``),
    else ``name`` unchanged (a name valid as given, or unknown in every case).

    >>> folded_name("MAIN", ["main", "oracle"]), folded_name("mian", ["main"])
    ('main', 'mian')
    """
    if name in known:
        return name
    folded = [k for k in known if k.casefold() == name.casefold()]
    return folded[0] if len(folded) == 1 else name


def unknown_name(kind: str, name: str, known: Sequence[str]) -> str:
    """``unknown <kind> '<name>'; `` and a hint: up to three close valid names (compared in
    lower case), else all of them where at most :data:`LISTED_NAMES`, else where to find them.
    """
    close = difflib.get_close_matches(name.lower(), list(known), n=3, cutoff=0.6)
    if close:
        hint = f"did you mean {' or '.join(close)}?"
    elif len(known) <= LISTED_NAMES:
        hint = f"choose from {', '.join(known)}"
    else:
        hint = f"--help lists the {len(known)} valid {kind} names"
    return f"unknown {kind} {name!r}; {hint}"

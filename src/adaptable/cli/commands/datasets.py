"""``adaptable datasets``: the tasks, and whether their raw files are present."""

from __future__ import annotations

import argparse


def datasets_command(args: argparse.Namespace) -> int:
    """List every task by group with ``present`` / ``absent``, then the other names every
    command accepts; exit status 0."""
    from adaptable import datasets

    group = None
    listed = datasets.available(args.data_dir)
    width = max(map(len, listed), default=0)  # one column for every name, the longest too
    for name, info in listed.items():
        if info.get("group") != group:  # the paper's tasks, then the generality cases
            print(("" if group is None else "\n") + f"[{info.get('group')}]")
            group = info.get("group")
        state = "present" if info["present"] else "absent"
        print(f"{name:{width}s}  {state}")
    # TableShift's identifiers and short names, which every command accepts too
    from adaptable.datasets.registry import ALIASES

    aliases = ", ".join(f"{a} = {t}" for a, t in ALIASES.items())
    print(f"\n[other names]\n{aliases}")
    return 0

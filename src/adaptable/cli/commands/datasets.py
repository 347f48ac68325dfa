"""``adaptable datasets``: the tasks, and whether their raw files are present."""

from __future__ import annotations

import argparse


def datasets_command(args: argparse.Namespace) -> int:
    """Say which data folder was read (and why that one), list every task by group with
    ``present`` / ``absent``, then the other names every command accepts; exit status 0."""
    import os

    from adaptable import datasets
    from adaptable.datasets import DATA_DIR_ENV, resolve_data_dir

    if args.data_dir is not None:
        source = "--data-dir"
    elif os.environ.get(DATA_DIR_ENV):
        source = f"${DATA_DIR_ENV}"
    else:
        source = f"the default; name another with --data-dir or ${DATA_DIR_ENV}"
    print(f"data folder: {resolve_data_dir(args.data_dir)} ({source})\n")
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

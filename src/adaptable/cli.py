"""Command-line interface: ``adaptable ...``."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="adaptable", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    ds = sub.add_parser("datasets", help="list the tasks and whether their raw files are present")
    ds.add_argument("--data-dir", default=None)
    args = parser.parse_args(argv)
    if args.command == "datasets":
        from adaptable import datasets

        for name, info in datasets.available(args.data_dir).items():
            state = "present" if info["present"] else "absent"
            print(f"{name:22s} {state}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``adaptable reproduce TABLE``: run what a table needs, then write it beside the paper's."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from adaptable.cli.commands.workers import context_and_executor
from adaptable.experiments.components import Components, RunContext


def reproduce_command(args: argparse.Namespace, components: Components) -> int:
    """``adaptable reproduce TABLE``: :mod:`adaptable.experiments.reproduce` does the work."""
    import adaptable.experiments.reproduce as reproduce
    from adaptable.experiments.store import ResultStore

    store = ResultStore(args.results)
    if args.no_run:
        context, executor = RunContext(components=components, device=args.device), None
    else:
        context, executor = context_and_executor(args, components)
    names = reproduce.table_names(args.table, args.roles)
    if args.table == "benchmark" and args.latex:  # a note, not an error: the rest still runs
        print("adaptable reproduce: note: --latex applies to the paper's tables only; the "
              "benchmark table is written as Markdown and CSV", file=sys.stderr)  # fmt: skip
    try:
        if args.table == "benchmark":
            return reproduce.reproduce_benchmark(
                names, reproduce_request(args), store, context, executor
            )
        return reproduce.reproduce_tables(names, reproduce_request(args), store, context, executor)
    finally:
        if executor is not None:
            executor.close()


def reproduce_request(args: argparse.Namespace) -> Any:
    """The :class:`~adaptable.experiments.reproduce.Request` that ``reproduce``'s options make."""
    from adaptable.experiments.reproduce import Request

    return Request(
        seeds=args.seeds, datasets=args.datasets, models=args.models, out=args.out,
        latex=args.latex, run=not args.no_run, progress=args.progress,
        several=args.table in ("all", "benchmark"), batch_size=args.batch_size,
    )  # fmt: skip

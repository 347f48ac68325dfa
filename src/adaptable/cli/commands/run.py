"""``adaptable run``: a sweep over a grid of experiments, then its results table."""

from __future__ import annotations

import argparse
import sys

from adaptable.cli.commands.workers import context_and_executor
from adaptable.cli.path_checks import os_reason
from adaptable.experiments.components import Components, lookup_device
from adaptable.experiments.report import plan_line, report_sweep


def run_command(args: argparse.Namespace, components: Components) -> int:
    """``adaptable run``: a sweep over the given grid, then a summary table."""
    from adaptable.experiments.spec import grid
    from adaptable.experiments.store import ResultStore
    from adaptable.experiments.sweep import run_sweep
    from adaptable.experiments.tables import summary

    specs = grid(
        args.datasets, args.scenarios, args.models, args.parsed_methods, args.seeds,
        batch_size=args.batch_size,
    )  # fmt: skip
    if args.feedback is not None:  # checked by the option's action
        from adaptable.experiments.drift_figure import with_feedback

        specs = with_feedback(specs, *args.feedback)
    store = ResultStore(args.results)
    context, executor = context_and_executor(args, components)
    plan = plan_line(specs, store, device=lookup_device(context))
    print(f"{plan}; results store: {store.path}", flush=True)
    if args.feedback is not None and args.feedback[0] > 0:  # the table's rows do not show it
        share, delay = args.feedback
        batches = "1 batch" if delay == 1 else f"{int(delay)} batches"
        print(f"with late labels: {100 * share:g} % of each batch's rows, {batches} late "
              "(partial_fit)")  # fmt: skip
    try:
        result = run_sweep(
            specs, store, context=context, executor=executor, progress=not args.no_progress
        )
    finally:
        executor.close()
    if result.records:
        print(summary(result.records))
    report_sweep(result)
    if args.drift_figure is not None:  # one experiment: checked by check_args
        from adaptable.experiments.drift_figure import draw_experiment

        try:
            path, drift = draw_experiment(specs[0], args.drift_figure, context)
        except (OSError, RuntimeError) as err:  # the results are stored; the figure is not
            print(f"adaptable run: --drift-figure {args.drift_figure}: {os_reason(err)}",
                  file=sys.stderr)  # fmt: skip
            return 1
        print(f"drift report figure: {path}\n{drift}")
    # a requested dataset skipped (its raw file absent) is work not done, as a failure is
    return 0 if result.records and not result.failures and not result.skipped else 1

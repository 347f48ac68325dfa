"""``adaptable run``: a sweep over a grid of experiments, then its results table."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from adaptable.cli.commands.workers import context_and_executor
from adaptable.cli.path_checks import os_reason
from adaptable.experiments.components import Components, lookup_device
from adaptable.experiments.report import (
    collect_warnings,
    collected_lines,
    plan_line,
    report_sweep,
)


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
        result = run_sweep(specs, store, context=context, executor=executor, progress=args.progress)
    finally:
        executor.close()
    if result.records:
        print(summary(result.records))
    report_sweep(result)
    if args.drift_figure is not None:  # one experiment: checked by check_args
        if args.progress == "lines":  # as long as the experiment took: say what it is
            print("drift figure: running the experiment again in this process for its report",
                  file=sys.stderr, flush=True)  # fmt: skip
        drawn = _draw_drift_figure(args.drift_figure, specs[0], context, result)
        if drawn is None:
            return 1
        path, drift = drawn
        print(f"drift report figure: {path}\n{drift}")
    # a requested dataset skipped (its raw file absent) is work not done, as a failure is
    return 0 if result.records and not result.failures and not result.skipped else 1


def _draw_drift_figure(figure: str, spec: Any, context: Any, result: Any) -> tuple[Any, Any] | None:
    """``--drift-figure``: rerun the one experiment in this process and draw its report;
    returns its path and drift summary, or ``None`` (the reason on standard error) where the
    figure cannot be written. The rerun's warnings are the experiment's: those the sweep's
    report has just printed are not printed again, any other is one line as the sweep words
    its own."""
    from adaptable.experiments.drift_figure import draw_experiment

    drawn, failure = None, None
    with collect_warnings() as caught:
        try:
            drawn = draw_experiment(spec, figure, context)
        except (OSError, RuntimeError) as err:  # the results are stored; the figure is not
            failure = f"adaptable run: --drift-figure {figure}: {os_reason(err)}"
    ran = set(result.ran)
    reported = {
        (item["category"], item["message"])
        for record in result.records
        if record.get("key") in ran
        for item in record.get("warnings", ())
    }
    for line in collected_lines((w for w in caught if w not in reported), "drift figure"):
        print(line, file=sys.stderr)
    if failure is not None:
        print(failure, file=sys.stderr)
    return drawn

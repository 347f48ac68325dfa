"""``adaptable drift FILE``: the drift summary of an adapter saved mid-stream, and the columns that
moved most against its held-out rows (``AdapTable.feature_drift``)."""

from __future__ import annotations

import argparse
import json
import math
import sys
import warnings
from pathlib import Path
from typing import Any

from adaptable.cli.checks import drift_option_problems
from adaptable.cli.path_checks import figure_problem, os_reason, unwritable


def drift_command(args: argparse.Namespace) -> int:
    """``adaptable drift FILE``: the drift summary of a saved adapter; 2 where an option is
    out of range, it cannot be read, or the report or figure cannot be written (the reason on
    one line of standard error; options, and where the report and figure go, are checked
    before the summary is printed). ``--report`` and ``--figure`` create their missing
    folders. The ``--columns`` columns that moved most follow the summary (``--json``: its
    ``feature_drift`` field)."""
    from adaptable import AdapTable

    problems = drift_option_problems(args)
    unusable_figure = None
    if args.figure is not None:
        unusable_figure = figure_problem(args.figure) or unwritable(args.figure)
    if unusable_figure is not None:
        problems.append(f"--figure {args.figure}: {unusable_figure}")
    if problems:  # before the summary: nothing printed, nothing written
        for problem in problems:
            print(f"adaptable drift: {problem}", file=sys.stderr)
        return 2
    try:
        adapter = AdapTable.load(args.file)
        summary = adapter.drift_summary(
            last_batches=args.last_batches,
            tolerance=args.tolerance,
            deviations=args.deviations,
            reference=args.reference,
        )
        columns = moved_columns(adapter, args.columns)
    except (OSError, ValueError) as err:
        print(f"adaptable drift: {args.file}: {str(err).removeprefix('adaptable: ')}",
              file=sys.stderr)  # fmt: skip
        return 2
    if args.json:
        fields = summary.as_dict()
        if args.columns:
            fields["feature_drift"] = None if columns is None else _records(columns)
        print(json.dumps(fields))
    else:
        print(summary)
        if args.columns:
            print(columns_text(columns))
    report = None
    if args.report is not None or args.figure is not None:
        # the report's own warnings (classes it names by position) as lines, not raw warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            report = adapter.report()
        for warning in caught:
            message = str(warning.message).removeprefix("adaptable: ")
            print(f"adaptable drift: warning: {message}", file=sys.stderr)
    if args.report is not None:
        try:
            Path(args.report).parent.mkdir(parents=True, exist_ok=True)
            report.to_csv(args.report, index=False)
        except OSError as err:
            print(f"adaptable drift: --report {args.report}: {os_reason(err)}", file=sys.stderr)
            return 2
        print(f"report: {args.report}", file=sys.stderr if args.json else sys.stdout)
    if args.figure is not None:
        from adaptable.experiments.drift_figure import plot_drift_report
        from adaptable.experiments.plots import save_figure

        # the figure shows the batches the summary reads (its so-far curves run from the start)
        shown = report if args.last_batches is None else report.tail(args.last_batches)
        try:
            figure = plot_drift_report(shown, title=_figure_title(adapter))
            save_figure(figure, args.figure)
        except (OSError, RuntimeError) as err:  # RuntimeError: a writer's missing tool (LaTeX)
            print(f"adaptable drift: --figure {args.figure}: {os_reason(err)}", file=sys.stderr)
            return 2
        print(f"figure: {args.figure}", file=sys.stderr if args.json else sys.stdout)
    return 0


def moved_columns(adapter: Any, top: int) -> Any:
    """The ``top`` rows of the adapter's per-column drift (``AdapTable.feature_drift``), the
    flag's count over all columns in its ``attrs["flagged"]``; ``None`` where the file keeps
    no per-column record or ``top`` is 0."""
    if top == 0 or getattr(adapter, "feature_monitor_", None) is None:
        return None
    frame = adapter.feature_drift()
    shown = frame.head(top)
    shown.attrs.update(flagged=int(frame["flagged"].sum()), columns=len(frame))
    return shown


def columns_text(columns: Any) -> str:
    """The moved columns as lines under the summary."""
    if columns is None:
        return "Columns: this file keeps no per-column record (saved by an earlier version)."
    lines = [
        f"Columns that moved most against the held-out rows ({columns.attrs['flagged']} of "
        f"{columns.attrs['columns']} flagged at 5 %, Holm-corrected):"
    ]
    width = max(len(str(name)) for name in columns["column"])
    for row in columns.itertuples(index=False):
        distance = "D" if row.distance_name == "kolmogorov_smirnov" else "TV"
        unseen = (
            f", {100 * row.unseen_share:.1f} % unseen"
            if row.kind == "categorical" and row.unseen_share > 0
            else ""
        )
        lines.append(
            f"  {str(row.column):<{width}}  {row.kind:<11}  {distance} {row.distance:.3f}  "
            f"p {row.p_value:.2g}{unseen}{'  flagged' if row.flagged else ''}"
        )
    return "\n".join(lines)


def _records(columns: Any) -> list[dict[str, Any]]:
    """The rows as JSON values (NaN as None, numpy scalars as Python values)."""
    records = []
    for record in columns.to_dict(orient="records"):
        records.append(
            {
                key: None if isinstance(value, float) and math.isnan(value) else
                value.item() if hasattr(value, "item") else value
                for key, value in record.items()
            }
        )  # fmt: skip
    return records


def _figure_title(adapter: Any) -> str:
    """What a saved adapter's stream is, as far as the file tells: the method and its setting
    (the data set and the model are not saved with it)."""
    classes = len(adapter.classes_)
    return (
        f"AdapTable ({adapter.preset} preset, objective {adapter.objective}, {classes} "
        "classes), saved mid-stream"
    )

"""``adaptable reproduce``: run what a table needs (or read it from the results store) and write
it as Markdown, CSV and figures.

Two kinds of tables: the paper's (:mod:`adaptable.experiments.paper`), ours beside the paper's
numbers, and the benchmark's, one per role (:mod:`adaptable.experiments.benchmark`).
:func:`reproduce_tables` writes each table on its own (``<table>.md``, ``<table>.csv``, and for
a benchmark role ``<role>_summary.csv``, ``<role>_gains.png``, ``<role>_risk.png``);
:func:`reproduce_benchmark` writes several roles as one table with a ``role`` column
(``benchmark.md``, ``benchmark.csv``, ``benchmark_summary.csv``) plus each role's figures.

>>> table_names("all")[-2:], "sealed" in table_names("all")
(['confirmation', 'holdout'], False)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

import adaptable.experiments.benchmark as benchmark
import adaptable.experiments.paper as paper
from adaptable.datasets.benchmark_cases import ROLES, SEALED_ROLES
from adaptable.experiments.report import plan_line, report_sweep
from adaptable.experiments.table_def import TableDef

#: every table ``adaptable reproduce TABLE`` takes: the paper's, then each benchmark role's
TABLES: dict[str, TableDef] = {**paper.TABLES, **benchmark.TABLES}
#: tables that ``all`` (and ``benchmark`` without ``--roles``) leave out: run them by name, once,
#: on purpose
SEALED_TABLES = SEALED_ROLES


@dataclass(frozen=True)
class Request:
    """What to reproduce and where the output goes.

    Args:
        seeds: the seeds of every experiment.
        datasets: a subset of each table's datasets (``None``: all); with several tables, each
            runs the requested datasets it holds and is skipped when it holds none.
        models: run only the rows of these source models (``None``: all).
        out: folder for the Markdown, CSV and PNG files.
        latex: also write ``<table>.tex`` (single tables only).
        run: run the missing experiments (``False``: read the results store alone).
        progress: show progress bars.
        several: the request names several tables (``all``, ``benchmark``): a table without
            the requested datasets or models is skipped instead of an error.
    """

    seeds: Sequence[int]
    datasets: Sequence[str] | None = None
    models: Sequence[str] | None = None
    out: str | Path = "adaptable-results/tables"
    latex: bool = False
    run: bool = True
    progress: bool = True
    several: bool = False


def table_names(table: str, roles: Sequence[str] | None = None) -> list[str]:
    """The tables a request runs: ``all`` is every table but the sealed ones, ``benchmark``
    the given roles (default: every role but the sealed ones), else the table itself."""
    if table == "all":
        return [name for name in TABLES if name not in SEALED_TABLES]
    if table == "benchmark":
        return list(dict.fromkeys(roles)) if roles else list(benchmark.DEFAULT_ROLES)
    return [table]


def request_problems(table: str, request: Request, roles: Sequence[str] | None = None) -> list[str]:
    """Every problem with a request, found before anything runs (one line each)."""
    from adaptable.experiments.tables import table_specs

    if roles and table != "benchmark":
        return ["--roles goes with 'adaptable reproduce benchmark' only"]
    problems = benchmark.check_roles(roles or [])
    if problems:
        return problems
    names = table_names(table, roles)
    for name in names:
        try:
            table_specs(TABLES[name], request.seeds, request.datasets, request.models)
        except ValueError as err:
            if len(names) == 1 and not request.several:
                problems.append(str(err))
    if request.several and request.datasets:
        held = {d for name in names for d in TABLES[name].datasets}
        if not held & set(request.datasets):
            problems.append(f"no table holds dataset(s) {list(request.datasets)}")
    return problems


def _collect(
    name: str, request: Request, store: Any, context: Any, executor: Any
) -> tuple[pd.DataFrame, Any] | None:
    """Run (or read) one table's experiments: its frame and the sweep result, or ``None`` when
    the table is skipped (a line says why)."""
    from adaptable.experiments.runner import run_sweep, stored_only
    from adaptable.experiments.tables import compare, table_specs

    table = TABLES[name]
    datasets = list(request.datasets or table.datasets)
    if request.several and request.datasets:
        datasets = [d for d in datasets if d in set(table.datasets)]
        if not datasets:
            print(f"[{name}] skipped: none of --datasets is among its datasets")
            return None
    try:
        specs = table_specs(table, request.seeds, datasets, request.models)
    except ValueError as err:  # several tables with --models: those without the models
        print(f"[{name}] skipped: {err}")
        return None
    plan = plan_line(specs, store, run=request.run)
    print(f"[{name}] {plan}; results store: {store.path}", flush=True)
    if request.run:
        result = run_sweep(
            specs, store, context=context, executor=executor, progress=request.progress
        )
    else:
        result = stored_only(specs, store, context, check_data=False)
        found = {r["spec"]["dataset"] for r in result.records}
        result.skipped = {
            d: "no results for this table in the results store" for d in datasets if d not in found
        }
    report_sweep(result)
    present = [d for d in datasets if d not in result.skipped]
    return compare(table, result.records, request.seeds, present), result


def _figures(frame: pd.DataFrame, table: TableDef, out: str | Path) -> list[Path]:
    from adaptable.experiments.figures import (
        case_gains_figure,
        paper_table_figure,
        risk_and_reach_figure,
    )
    from adaptable.experiments.tables import summarize

    figures = [case_gains_figure(frame, table, out), paper_table_figure(frame, table, out)]
    if table.summary is not None:
        figures.append(risk_and_reach_figure(summarize(frame, table), table, out))
    return [figure for figure in figures if figure is not None]


def reproduce_tables(
    names: Sequence[str], request: Request, store: Any, context: Any, executor: Any
) -> int:
    """Write each table of ``names`` on its own and print it; 1 if an experiment failed."""
    from adaptable.experiments.tables import write_table

    status = 0
    for name in names:
        collected = _collect(name, request, store, context, executor)
        if collected is None:
            continue
        frame, result = collected
        table = TABLES[name]
        paths = write_table(
            frame, table, request.out, skipped=result.skipped, failures=result.failures,
            seeds=request.seeds, latex=request.latex,
        )  # fmt: skip
        paths += _figures(frame, table, request.out)
        print(paths[0].read_text())
        print("wrote " + ", ".join(str(p) for p in paths))
        status = status or (1 if result.failures else 0)
    return status


def reproduce_benchmark(
    roles: Sequence[str], request: Request, store: Any, context: Any, executor: Any
) -> int:
    """Write the given roles as one benchmark table and print it; 1 if an experiment failed.

    Files in ``request.out``: ``benchmark.csv`` (every role's lines, ``role`` first),
    ``benchmark_summary.csv`` (each role's summary lines), ``benchmark.md`` (a line per role
    with what it was used for, then each role's table) and each role's two figures.
    """
    from adaptable.experiments.tables import markdown_grid, summarize, to_markdown

    frames: dict[str, pd.DataFrame] = {}
    summaries: dict[str, pd.DataFrame] = {}
    sections: list[str] = []
    paths: list[Path] = []
    status = 0
    for role in roles:
        collected = _collect(role, request, store, context, executor)
        if collected is None:
            continue
        frame, result = collected
        table = TABLES[role]
        summaries[role] = summarize(frame, table)
        frames[role] = frame.assign(
            skipped_reason=frame["dataset"].map(lambda d, s=result.skipped: s.get(d, ""))
        )
        sections.append(
            to_markdown(
                frame, table, skipped=result.skipped, failures=result.failures, seeds=request.seeds
            )
        )
        paths += _figures(frame, table, request.out)
        status = status or (1 if result.failures else 0)
    if not frames:
        print("[benchmark] nothing to write: every role was skipped")
        return status
    out = Path(request.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = [
        [role, ROLES[role], str(len(frame[["dataset", "scenario", "model"]].drop_duplicates()))]
        for role, frame in frames.items()
    ]
    head = [
        "# Benchmark: domain splits and pure label shifts, by role",
        "",
        markdown_grid(["role", "what it was used for", "cases"], rows),
        "",
    ]
    written = [out / "benchmark.md", out / "benchmark.csv", out / "benchmark_summary.csv"]
    written[0].write_text("\n".join(head) + "\n" + "\n".join(sections))
    benchmark.combine(frames).to_csv(written[1], index=False, float_format="%.4f")
    benchmark.combine(summaries).to_csv(written[2], index=False, float_format="%.4f")
    print(written[0].read_text())
    print("wrote " + ", ".join(str(p) for p in written + paths))
    return status

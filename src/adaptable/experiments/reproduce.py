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

import dataclasses
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

import adaptable.experiments.benchmark as benchmark
import adaptable.experiments.paper as paper
from adaptable.datasets.benchmark_cases import ROLES, SEALED_ROLES
from adaptable.experiments.report import plan_line, report_sweep
from adaptable.experiments.spec import BATCH_SIZE, ExperimentSpec
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
        progress: show progress bars, or lines (a
            :func:`~adaptable.experiments.report.progress_style`).
        several: the request names several tables (``all``, ``benchmark``): a table without
            the requested datasets or models is skipped instead of an error.
        batch_size: rows per test batch. Another size than the paper's
            (:data:`~adaptable.experiments.spec.BATCH_SIZE`) runs experiments of their own
            and writes ``<table>_batch<N>.*``, leaving the paper-size files as they are.
    """

    seeds: Sequence[int]
    datasets: Sequence[str] | None = None
    models: Sequence[str] | None = None
    out: str | Path = "adaptable-results/tables"
    latex: bool = False
    run: bool = True
    progress: bool | str = True
    several: bool = False
    batch_size: int = BATCH_SIZE

    @property
    def suffix(self) -> str:
        """What output file names get after the table's name: ``""``, or ``"_batch<N>"``."""
        return "" if self.batch_size == BATCH_SIZE else f"_batch{self.batch_size}"


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
    single = len(names) == 1 and not request.several
    for name in names:
        try:
            table_specs(TABLES[name], request.seeds, request.datasets, request.models)
        except ValueError as err:
            if single:
                problems.append(str(err))
    if single and request.datasets and not TABLES[names[0]].cases:
        # A paper table runs on any of the paper's six datasets (where the paper has no
        # number for one, its column says so), not on a benchmark case's split: that one
        # would write <table>.md over a dataset the paper never used (a benchmark role's
        # table_specs refuses other datasets itself).
        held = dict.fromkeys([*TABLES[names[0]].datasets, *paper.DATASET_TITLES])
        absent = [d for d in dict.fromkeys(request.datasets) if d not in held]
        if absent:
            problems.append(
                f"Table {names[0]!r} does not hold dataset(s) {absent}; it runs on the "
                f"paper's datasets {list(held)} (adaptable run takes any dataset)"
            )
    if request.several and request.datasets:
        held = {d for name in names for d in TABLES[name].datasets}
        if not held & set(request.datasets):
            problems.append(f"no table holds dataset(s) {list(request.datasets)}")
    return problems


class NothingStored(Exception):
    """``--no-run`` found none of a table's experiments in the results store."""


def _at_batch_size(
    specs: list[ExperimentSpec], batch_size: int
) -> tuple[list[ExperimentSpec], dict[str, str]]:
    """The table's experiments at ``batch_size``, and each one's key -> the key the table
    reads (the paper-size experiment's, which the table's cells are defined by)."""
    if batch_size == BATCH_SIZE:
        return specs, {}
    resized = [dataclasses.replace(s, batch_size=batch_size) for s in specs]
    return resized, {new.key: old.key for new, old in zip(resized, specs, strict=True)}


def _collect(
    name: str, request: Request, store: Any, context: Any, executor: Any
) -> tuple[pd.DataFrame, Any] | None:
    """Run (or read) one table's experiments: its frame and the sweep result, or ``None`` when
    the table is skipped (a line says why).

    Raises:
        NothingStored: ``--no-run`` and the store holds none of the table's experiments.
    """
    from adaptable.experiments.sweep import run_sweep, stored_only
    from adaptable.experiments.tables import compare, table_specs

    table = TABLES[name]
    datasets = list(request.datasets or table.datasets)
    if request.several and request.datasets:
        datasets = [d for d in datasets if d in set(table.datasets)]
        if not datasets:
            print(f"[{name}] skipped: none of --datasets is among its datasets", file=sys.stderr)
            return None
    try:
        specs = table_specs(table, request.seeds, datasets, request.models)
    except ValueError as err:  # several tables with --models: those without the models
        print(f"[{name}] skipped: {err}", file=sys.stderr)
        return None
    from adaptable.experiments.components import lookup_device

    specs, table_keys = _at_batch_size(specs, request.batch_size)
    plan = plan_line(specs, store, run=request.run, device=lookup_device(context, request.run))
    print(f"[{name}] {plan}; results store: {store.path}", flush=True)
    if request.run:
        result = run_sweep(
            specs, store, context=context, executor=executor, progress=request.progress
        )
    else:
        result = stored_only(specs, store, context, check_data=False)
        if not result.records:
            raise NothingStored(
                f"[{name}] nothing to write: the results store {store.path} holds none of "
                f"its {len(specs)} experiments; run it without --no-run first"
            )
        found = {r["spec"]["dataset"] for r in result.records}
        result.skipped = {
            d: "no results for this table in the results store" for d in datasets if d not in found
        }
    report_sweep(result)
    present = [d for d in datasets if d not in result.skipped]
    # the table's cells name the paper-size experiments: other sizes stand in under their keys
    records = [{**r, "key": table_keys.get(r["key"], r["key"])} for r in result.records]
    return compare(table, records, request.seeds, present), result


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
    """Write each table of ``names`` on its own and print it; 1 if an experiment failed, a
    requested dataset was skipped (its raw file absent), or a table had nothing to write (its
    files, from an earlier run, are then left as they are)."""
    from adaptable.experiments.tables import write_table

    status = 0
    written = 0
    tables = _Collected(names, request, store, context, executor)
    for name, frame, result in tables:
        table = _named(TABLES[name], request)
        status = status or _status(result, request)
        if not result.records:
            print(f"[{name}] nothing to write: none of its experiments ran or is stored; "
                  f"files of an earlier run in {request.out} are left as they are",
                  file=sys.stderr)  # fmt: skip
            status = 1
            continue
        written += 1
        paths = write_table(
            frame, table, request.out, skipped=result.skipped, failures=result.failures,
            seeds=request.seeds, latex=request.latex,
        )  # fmt: skip
        paths += _figures(frame, table, request.out)
        print(paths[0].read_text())
        print("wrote " + ", ".join(str(p) for p in paths))
    return 1 if tables.nothing_stored and not written else status


def _status(result: Any, request: Request) -> int:
    """1 where a table's sweep failed an experiment or (running) skipped a dataset whose raw
    file is absent; with ``--no-run`` a dataset skipped is one the store lacks, which the
    table says in its own lines."""
    return 1 if result.failures or (request.run and result.skipped) else 0


class _Collected:
    """Each table of ``names`` with its frame and sweep result, in order; a table that is
    skipped or (with --no-run) found nowhere in the store is left out, the latter said once and
    remembered in :attr:`nothing_stored`."""

    def __init__(
        self, names: Sequence[str], request: Request, store: Any, context: Any, executor: Any
    ) -> None:
        self.names, self.request = names, request
        self.store, self.context, self.executor = store, context, executor
        self.nothing_stored = False

    def __iter__(self) -> Iterator[tuple[str, pd.DataFrame, Any]]:
        for name in self.names:
            try:
                collected = _collect(name, self.request, self.store, self.context, self.executor)
            except NothingStored as err:
                print(err, file=sys.stderr)
                self.nothing_stored = True
                continue
            if collected is not None:
                yield name, *collected


def _named(table: TableDef, request: Request) -> TableDef:
    """The table under the name its files get (``main_batch128`` at another batch size)."""
    return dataclasses.replace(table, name=table.name + request.suffix) if request.suffix else table


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
    collected = _Collected(roles, request, store, context, executor)
    for role, frame, result in collected:
        table = _named(TABLES[role], request)
        status = status or _status(result, request)
        if not result.records:
            print(f"[{role}] nothing to write: none of its experiments ran or is stored",
                  file=sys.stderr)  # fmt: skip
            status = 1
            continue
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
    if not frames:
        print("[benchmark] nothing to write: every role was skipped", file=sys.stderr)
        return 1 if collected.nothing_stored else status
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
    stem = "benchmark" + request.suffix
    written = [out / f"{stem}.md", out / f"{stem}.csv", out / f"{stem}_summary.csv"]
    written[0].write_text("\n".join(head) + "\n" + "\n".join(sections))
    benchmark.combine(frames).to_csv(written[1], index=False, float_format="%.4f")
    benchmark.combine(summaries).to_csv(written[2], index=False, float_format="%.4f")
    print(written[0].read_text())
    print("wrote " + ", ".join(str(p) for p in written + paths))
    return status

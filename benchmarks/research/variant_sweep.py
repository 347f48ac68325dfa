"""Run chosen columns of benchmark tables, and AdapTable option variants on every cell of them,
into one results store (how a design variant is measured before it becomes a table column).

Usage::

    python benchmarks/research/variant_sweep.py STORE TABLE[,TABLE...] LABELS [NAME=key:value;key:value ...]

``LABELS``: comma-separated column labels of the tables (``"Source,Balanced,Oracle prior"``,
``"AdapTable (default)"``) or ``none``; each ``NAME=...`` adds ``AdapTable(**options)`` on every
(dataset, scenario, source model, seed) cell of the tables, e.g. ``both=stream_check:both``.
Seeds 0-2; ``WORKERS`` (environment, default 2) worker processes; experiments the store already
holds are skipped. Summarise a store with ``adaptable reproduce TABLE --no-run --results STORE``
(the table's columns), or read its records directly.
"""

from __future__ import annotations

import os
import sys
import time

from adaptable.experiments.components import RunContext
from adaptable.experiments.executors import LocalExecutor
from adaptable.experiments.paper import TABLES
from adaptable.experiments.report import warning_lines
from adaptable.experiments.spec import ExperimentSpec
from adaptable.experiments.store import ResultStore
from adaptable.experiments.sweep import run_sweep
from adaptable.experiments.tables import table_specs


def parse_variant(text: str) -> tuple[str, dict[str, object]]:
    """``name=key:value;key:value`` -> (name, options); numbers are parsed as numbers."""
    name, spelled = text.split("=", 1)
    options: dict[str, object] = {}
    for pair in spelled.split(";"):
        key, value = pair.split(":", 1)
        try:
            options[key] = float(value) if "." in value else int(value)
        except ValueError:
            options[key] = value
    return name, options


def main() -> None:
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    store = ResultStore(sys.argv[1])
    labels = sys.argv[3].split(",")
    variants = dict(parse_variant(v) for v in sys.argv[4:])
    specs = []
    for name in sys.argv[2].split(","):
        table = TABLES[name]
        every = table_specs(table, [0, 1, 2])
        keep = {
            (row.method, ExperimentSpec("x", "x", "x", row.method, 0, row.option_dict).options)
            for row in table.rows
            if row.label in labels
        }
        specs += [s for s in every if (s.method, s.options) in keep]
        cells = sorted({(s.dataset, s.scenario, s.model, s.seed) for s in every})
        for options in variants.values():
            specs += [
                ExperimentSpec(d, sc, m, "adaptable", seed, options) for d, sc, m, seed in cells
            ]
    started = time.perf_counter()
    workers = int(os.environ.get("WORKERS", "2"))
    result = run_sweep(
        specs, store, context=RunContext(), executor=LocalExecutor(workers=workers), progress=False
    )
    print(
        f"{len(specs)} experiments asked, {len(result.records)} run, {len(result.reused)} reused, "
        f"{len(result.failures)} failed, {time.perf_counter() - started:.0f} s"
    )
    ran = set(result.ran)
    for line in warning_lines(r for r in result.records if r["key"] in ran):
        print(line, file=sys.stderr)


if __name__ == "__main__":
    main()

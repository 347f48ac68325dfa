"""Command-line interface: ``adaptable datasets | run | reproduce | plot``.

adaptable run                          # the main job: Hospital Readmission, MLP, seed 0
adaptable reproduce main --data-dir DIR --seeds 0 1 2
adaptable plot --dataset heloc
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

#: the main job's defaults: the embedded dataset, the MLP, and methods that finish in minutes
DEFAULT_DATASETS = ["hospital_readmission"]
DEFAULT_MODELS = ["mlp"]
# LAME is left out of the default job: its affinity matrix makes it the slowest of the
# output-only methods (about 2 ms per row); `--methods ... lame` adds it.
DEFAULT_METHODS = [
    "source",
    "adaptable",
    "adaptable[calibrator=none]",
    "em",
    "bbse",
    "pl",
    "tent",
]
DEFAULT_RESULTS = "adaptable-results/results.jsonl"
PLOTS = (
    "reliability",
    "label_distribution",
    "js_divergence",
    "temperature_mmd",
    "sensitivity",
    "efficiency",
)

_METHOD_PATTERN = re.compile(r"^(?P<name>[^\[\]]+)(\[(?P<options>.*)\])?$")


def parse_method(text: str) -> tuple[str, dict[str, Any]]:
    """``"adaptable[calibrator=none,alpha=0.2]"`` -> ``("adaptable", {"calibrator": "none",
    "alpha": 0.2})``; values are read as JSON where they parse (numbers, booleans), else strings."""
    match = _METHOD_PATTERN.match(text.strip())
    if not match:
        raise argparse.ArgumentTypeError(
            f"expected a method as NAME or NAME[key=value,...]; got {text!r}"
        )
    options: dict[str, Any] = {}
    if match.group("options"):
        for part in match.group("options").split(","):
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                raise argparse.ArgumentTypeError(
                    f"method options must be key=value pairs; got {part!r} in {text!r}"
                )
            try:
                options[key.strip()] = json.loads(value)
            except json.JSONDecodeError:
                options[key.strip()] = value.strip()
    return match.group("name").strip(), options


def _add_common(parser: argparse.ArgumentParser, results_default: str = DEFAULT_RESULTS) -> None:
    parser.add_argument(
        "--data-dir", default=None, help="raw data folder (default: $ADAPTABLE_DATA_DIR)"
    )
    parser.add_argument(
        "--cache-dir",
        default=None,
        help="source-model cache (default: $ADAPTABLE_CACHE_DIR or the per-user cache)",
    )
    parser.add_argument(
        "--results",
        default=results_default,
        help=f"JSON-lines results store (default: {results_default})",
    )
    parser.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="where experiments run (default: local)",
    )
    parser.add_argument(
        "--workers", type=int, default=None, help="local processes / Ray CPUs (default: 1 / all)"
    )
    parser.add_argument(
        "--ray-address",
        default=None,
        help="join a Ray cluster (e.g. 'auto') instead of starting one",
    )
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads per worker (default: 1)"
    )
    parser.add_argument(
        "--device",
        choices=("auto", "cpu", "cuda"),
        default="auto",
        help="where deep source models train and run (default: auto, CUDA when available)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def build_parser() -> argparse.ArgumentParser:
    """The ``adaptable`` argument parser."""
    from adaptable.experiments.paper import TABLES

    parser = argparse.ArgumentParser(
        prog="adaptable", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)

    ds = sub.add_parser("datasets", help="list the tasks and whether their raw files are present")
    ds.add_argument("--data-dir", default=None)

    run = sub.add_parser(
        "run", help="run experiments and print a results table (defaults: the main job)"
    )
    run.add_argument("--datasets", nargs="+", default=DEFAULT_DATASETS, metavar="NAME")
    run.add_argument("--models", nargs="+", default=DEFAULT_MODELS, metavar="NAME")
    run.add_argument(
        "--methods",
        nargs="+",
        default=DEFAULT_METHODS,
        metavar="NAME[k=v,...]",
        help="methods, with options in brackets, e.g. adaptable[calibrator=platt]",
    )
    run.add_argument("--scenarios", nargs="+", default=["natural"], metavar="SHIFT")
    run.add_argument("--seeds", nargs="+", type=int, default=[0], metavar="SEED")
    _add_common(run)

    rep = sub.add_parser(
        "reproduce", help="run a paper table and write ours vs the paper (Markdown, CSV)"
    )
    rep.add_argument("table", choices=[*TABLES, "all"])
    rep.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2], metavar="SEED")
    rep.add_argument(
        "--datasets",
        nargs="+",
        default=None,
        metavar="NAME",
        help="a subset (default: the paper's datasets for the table)",
    )
    rep.add_argument(
        "--models",
        nargs="+",
        default=None,
        metavar="NAME",
        help="run only the rows of these source models (the table still shows every stored row)",
    )
    rep.add_argument(
        "--out", default="adaptable-results/tables", help="folder for <table>.md / .csv"
    )
    rep.add_argument("--latex", action="store_true", help="also write <table>.tex")
    rep.add_argument(
        "--no-run",
        action="store_true",
        help="run nothing: build the tables from what the results store already holds",
    )
    _add_common(rep)

    plot = sub.add_parser("plot", help="draw the paper's figures as PNG files")
    plot.add_argument(
        "figures", nargs="*", metavar="FIGURE", help=f"any of {', '.join(PLOTS)} (default: all)"
    )
    plot.add_argument("--dataset", default="heloc")
    plot.add_argument("--model", default="mlp")
    plot.add_argument("--seed", type=int, default=0)
    plot.add_argument("--out", default="adaptable-results/figures")
    _add_common(plot)
    return parser


def _context_and_executor(args: argparse.Namespace) -> tuple[Any, Any]:
    from adaptable.experiments.executors import make_executor
    from adaptable.experiments.runner import Components, RunContext

    context = RunContext(
        data_dir=args.data_dir,
        cache_dir=args.cache_dir,
        components=args.components or Components(),
        threads=args.threads,
        device=args.device,
    )
    executor = make_executor(args.executor, workers=args.workers, address=args.ray_address)
    return context, executor


def _report_sweep(result: Any) -> None:
    print(
        f"{len(result.ran)} experiments run, {len(result.reused)} reused from the store, "
        f"{len(result.failures)} failed, in {result.seconds:.1f} s"
    )
    for name, reason in result.skipped.items():
        print(f"skipped dataset {name}: {reason}")
    for key, error in result.failures.items():
        print(f"failed {key}: {error}")


def cmd_run(args: argparse.Namespace) -> int:
    """``adaptable run``: a sweep over the given grid, then a summary table."""
    from adaptable.experiments.runner import run_sweep
    from adaptable.experiments.spec import grid
    from adaptable.experiments.store import ResultStore
    from adaptable.experiments.tables import summary

    methods = [parse_method(m) for m in args.methods]
    specs = grid(args.datasets, args.scenarios, args.models, methods, args.seeds)
    context, executor = _context_and_executor(args)
    store = ResultStore(args.results)
    print(f"{len(specs)} experiments; results store: {store.path}", flush=True)
    try:
        result = run_sweep(
            specs, store, context=context, executor=executor, progress=not args.no_progress
        )
    finally:
        executor.close()
    if result.records:
        print(summary(result.records))
    _report_sweep(result)
    return 0 if result.records and not result.failures else 1


def cmd_reproduce(args: argparse.Namespace) -> int:
    """``adaptable reproduce TABLE``: run what the table needs, write ours vs the paper."""
    from adaptable.experiments.paper import TABLES
    from adaptable.experiments.runner import run_sweep, stored_only
    from adaptable.experiments.store import ResultStore
    from adaptable.experiments.tables import compare, table_specs, write_table

    names = list(TABLES) if args.table == "all" else [args.table]
    context, executor = _context_and_executor(args)
    store = ResultStore(args.results)
    status = 0
    try:
        for name in names:
            table = TABLES[name]
            datasets = args.datasets or list(table.datasets)
            specs = table_specs(table, args.seeds, datasets, args.models)
            print(f"[{name}] {len(specs)} experiments; results store: {store.path}", flush=True)
            if args.no_run:
                result = stored_only(specs, store, context)
            else:
                result = run_sweep(
                    specs, store, context=context, executor=executor, progress=not args.no_progress
                )
            _report_sweep(result)
            present = [d for d in datasets if d not in result.skipped]
            frame = compare(table, result.records, args.seeds, present)
            paths = write_table(
                frame, table, args.out, skipped=result.skipped, failures=result.failures,
                seeds=args.seeds, latex=args.latex,
            )  # fmt: skip
            print(paths[0].read_text())
            print("wrote " + ", ".join(str(p) for p in paths))
            status = status or (1 if result.failures else 0)
    finally:
        executor.close()
    return status


def cmd_plot(args: argparse.Namespace) -> int:
    """``adaptable plot``: the paper's figures for one dataset / model / seed."""
    from adaptable.experiments import plots
    from adaptable.experiments.store import ResultStore

    figures = args.figures or list(PLOTS)
    unknown = [f for f in figures if f not in PLOTS]
    if unknown:
        raise SystemExit(f"unknown figure(s) {unknown}; choose from {', '.join(PLOTS)}")
    context, executor = _context_and_executor(args)
    try:
        written = plots.make_figures(
            figures, dataset=args.dataset, model=args.model, seed=args.seed, out_dir=Path(args.out),
            store=ResultStore(args.results), context=context, executor=executor,
            progress=not args.no_progress,
        )  # fmt: skip
    finally:
        executor.close()
    for name, outcome in written.items():
        print(f"{name:20s} {outcome}")
    return 0 if all(str(p).endswith(".png") for p in written.values()) else 1


def main(argv: list[str] | None = None, components: Any = None) -> int:
    """Entry point of the ``adaptable`` command.

    Args:
        argv: arguments (default: ``sys.argv[1:]``).
        components: dataset / model / method / shift providers
            (:class:`~adaptable.experiments.runner.Components`); tests pass small doubles.
    """
    args = build_parser().parse_args(argv)
    args.components = components
    if args.command == "datasets":
        from adaptable import datasets

        for name, info in datasets.available(args.data_dir).items():
            state = "present" if info["present"] else "absent"
            print(f"{name:22s} {state}")
        return 0
    if args.threads < 1:
        raise SystemExit(f"--threads must be at least 1; got {args.threads}")
    import torch

    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    handler = {"run": cmd_run, "reproduce": cmd_reproduce, "plot": cmd_plot}[args.command]
    code = handler(args)
    print(f"wall time {time.perf_counter() - started:.1f} s")
    return code


if __name__ == "__main__":
    sys.exit(main())

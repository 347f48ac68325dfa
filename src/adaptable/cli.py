"""Command-line interface: ``adaptable datasets | run | reproduce | plot``.

Every name and option is checked before any data loads or any model trains; a bad one ends in
the subcommand's usage and one line per problem (exit status 2), never a traceback.

>>> build_parser().parse_args(["run", "--seeds", "0", "1"]).seeds
[0, 1]
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import json
import math
import os
import sys
import textwrap
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from adaptable.experiments.components import Components
from adaptable.experiments.report import (
    collect_warnings,
    collected_lines,
    count,
    plan_line,
    print_warnings,
    report_sweep,
)
from adaptable.experiments.suggest import folded_name, unknown_name

DESCRIPTION = """\
AdapTable: test-time adaptation for tabular classifiers. Runs the experiments of the paper,
keeps their results in a resumable store, and writes tables and figures.

examples:
  adaptable run                        the main job: Hospital Readmission, MLP, seed 0
  adaptable run --datasets heloc --methods source adaptable --seeds 0 1 2 --data-dir DIR
  adaptable reproduce main --data-dir DIR --seeds 0 1 2
  adaptable reproduce benchmark --roles development confirmation --data-dir DIR
  adaptable plot                       every figure, on the embedded Hospital Readmission data
  adaptable COMMAND --help             the options of a command and the valid names
"""

#: the main job's defaults: the embedded dataset, the MLP, and methods that finish in minutes
DEFAULT_DATASETS = ["hospital_readmission"]
DEFAULT_MODELS = ["mlp"]
# The main job: no adaptation, the one-line balanced rule, the recommended adapter, the paper's
# AdapTable, the label-shift classics and an online one, TENT, and the oracle-prior reference.
# LAME is left out: its affinity matrix makes it the slowest output-only method;
# `--methods ... lame` adds it.
DEFAULT_METHODS = [
    "source",
    "balanced",
    "adaptable",
    "adaptable[preset=paper]",
    "em",
    "bbse",
    "fth",
    "tent",
    "oracle_prior",
]
#: the methods of ``run --feedback`` without ``--methods``: of the main job's methods only the
#: recommended adapter learns from late labels (the paper preset and the others take none)
FEEDBACK_METHODS = ["adaptable"]
DEFAULT_RESULTS = "adaptable-results/results.jsonl"
#: exit status after Ctrl-C, as a shell reports a command ended by SIGINT (128 + 2)
EXIT_INTERRUPTED = 130
#: seeds go to numpy's legacy seeding, which takes 32-bit values
MAX_SEED = 2**32 - 1
_KINDS = ("dataset", "model", "method", "scenario")
#: what ``plot``'s list options fall back to when they held figure names alone
_PLOT_DEFAULTS = {"datasets": DEFAULT_DATASETS, "models": DEFAULT_MODELS, "method": ["adaptable"]}

#: the options that name files or folders: each gets ``~`` expanded as a shell would
_PATH_OPTIONS = ("results", "out", "drift_figure", "report", "figure", "data_dir", "cache_dir",
                 "file")  # fmt: skip
#: the commands that read the raw data folder, and so check ``$ADAPTABLE_DATA_DIR``
_DATA_COMMANDS = ("datasets", "run", "reproduce", "plot")


def parse_method(text: str) -> tuple[str, dict[str, Any]]:
    """``"adaptable[calibrator=none,alpha=0.2]"`` -> ``("adaptable", {"calibrator": "none",
    "alpha": 0.2})``; values are read as JSON where they parse (numbers, booleans), else strings.
    A malformed text raises ``argparse.ArgumentTypeError`` (see
    :func:`adaptable.experiments.spec.parse_method`).

    >>> parse_method("adaptable[calibrator=none,alpha=0.2]")
    ('adaptable', {'calibrator': 'none', 'alpha': 0.2})
    """
    from adaptable.experiments.spec import parse_method as parse

    try:
        return parse(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def seed_value(text: str) -> int:
    """An argparse type: a seed is a whole number from 0 to :data:`MAX_SEED`."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a seed must be a whole number; got {text!r}") from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"a seed must lie between 0 and {MAX_SEED}; got {text}")
    return value


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number; got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1; got {text}")
    return value


class _Feedback(argparse.Action):
    """``--feedback SHARE DELAY``: a share of rows from 0 to 1 and a whole number of batches,
    at least 0; stored as ``(share, delay)`` with ``delay`` an int. Anything else is a usage
    error of the option, before any work starts."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        share, delay = values
        if not 0 <= share <= 1:  # NaN fails this too
            raise argparse.ArgumentError(self, f"SHARE must lie between 0 and 1; got {share:g}")
        if not math.isfinite(delay) or delay < 0 or delay != int(delay):
            raise argparse.ArgumentError(
                self, f"DELAY must be a whole number of batches, 0 or more; got {delay:g}"
            )
        setattr(namespace, self.dest, (float(share), int(delay)))


class _Parser(argparse.ArgumentParser):
    """A subcommand parser whose help ends with the valid names of ``name_kinds``.

    The names are looked up only when the help is shown: the model and method registries
    import torch, which takes seconds.
    """

    def __init__(
        self, *args: Any, name_kinds: Sequence[str] = (), components: Any = None, **kwargs: Any
    ) -> None:
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)
        self.name_kinds = tuple(name_kinds)
        self.components = components

    def format_help(self) -> str:
        if self.name_kinds and self.epilog is None:
            lines = ["valid names:"]
            for kind in self.name_kinds:
                names = ", ".join(self.components.known_names(kind))
                lines.append(
                    textwrap.fill(
                        names,
                        width=100,
                        initial_indent=f"  {kind + 's:':11s}",
                        subsequent_indent=" " * 13,
                    )  # fmt: skip
                )
            self.epilog = "\n".join(lines)
        return super().format_help()


def _add_common(parser: argparse.ArgumentParser, results_default: str = DEFAULT_RESULTS) -> None:
    parser.add_argument(
        "--data-dir",
        default=None,
        metavar="DIR",
        help="folder holding the raw data files (default: $ADAPTABLE_DATA_DIR, else the per-user "
        "cache folder adaptable/data; Hospital Readmission also has an embedded copy)",
    )
    parser.add_argument(
        "--cache-dir",
        default=None,
        metavar="DIR",
        help="source-model cache (default: $ADAPTABLE_CACHE_DIR or the per-user cache)",
    )
    parser.add_argument(
        "--results",
        default=results_default,
        metavar="FILE",
        help=f"JSON-lines results store (default: {results_default})",
    )
    parser.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="where experiments run (default: local; ray needs the ray package)",
    )
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        metavar="N",
        help="local processes / Ray CPUs (default: 1 / all; local: at most the CPUs there are)",
    )
    parser.add_argument(
        "--ray-address",
        default=None,
        metavar="ADDRESS",
        help="join a Ray cluster (e.g. 'auto') instead of starting one",
    )
    parser.add_argument(
        "--threads",
        type=positive_int,
        default=1,
        metavar="N",
        help="torch threads per worker (default: 1)",
    )
    parser.add_argument(
        "--device",
        choices=("auto", "cpu", "cuda"),
        default="auto",
        help="where deep source models train and run (default: auto, CUDA when available)",
    )
    # one destination for both: the last of them given wins; neither: bars only on a terminal
    parser.add_argument("--no-progress", action="store_const", const=True, default=None,
                        help="no progress bars (the default when standard error is not a "
                        "terminal: a log would fill with redrawn bars)")  # fmt: skip
    parser.add_argument("--progress", dest="no_progress", action="store_const", const=False,
                        help="progress bars even when standard error is not a terminal")  # fmt: skip


def _words(names: Sequence[str]) -> str:
    """Names as a command line spells them: ``mlp resnet`` (not ``['mlp', 'resnet']``)."""
    return " ".join(names)


def _add_grid(parser: argparse.ArgumentParser, defaults: dict[str, Any]) -> None:
    """``--datasets``, ``--models``, ``--seeds``: the same spelling in every subcommand."""
    for option, noun in (("datasets", "datasets"), ("models", "source models")):
        help_text = (
            defaults.get(f"{option}_help") or f"{noun} (default: {_words(defaults[option])})"
        )
        parser.add_argument(
            f"--{option}", nargs="+", default=defaults[option], metavar="NAME", help=help_text
        )
    parser.add_argument(
        "--seeds",
        nargs="+",
        type=seed_value,
        default=defaults["seeds"],
        metavar="SEED",
        help=f"seeds, 0 to {MAX_SEED} (default: {' '.join(map(str, defaults['seeds']))})",
    )


def _add_batch_size(parser: argparse.ArgumentParser) -> None:
    from adaptable.experiments.spec import BATCH_SIZE

    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=BATCH_SIZE,
        metavar="N",
        help=f"rows per test batch (default: {BATCH_SIZE}, the paper's); another size is an "
        "experiment of its own in the results store",
    )


def build_parser(components: Components | None = None) -> argparse.ArgumentParser:
    """The ``adaptable`` argument parser (``components``: where valid names come from)."""
    from adaptable import __version__
    from adaptable.datasets.benchmark_cases import ROLES
    from adaptable.experiments.figures import FIGURES
    from adaptable.experiments.reproduce import TABLES

    components = components or Components()
    parser = argparse.ArgumentParser(
        prog="adaptable",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=_Parser)  # fmt: skip

    ds = sub.add_parser(
        "datasets",
        help="list the tasks and whether their raw files are present",
        description="List the tasks and whether their raw files are present.",
        components=components,
    )
    ds.add_argument("--data-dir", default=None, metavar="DIR", help="raw data folder")
    ds.set_defaults(subparser=ds)

    drift = sub.add_parser(
        "drift",
        help="print the drift summary of an adapter saved mid-stream (AdapTable.save)",
        description="Print AdapTable.drift_summary() of an adapter saved with AdapTable.save "
        "(no model needed): whether the adapted model still does as well on its stream as the "
        "model did on its held-out source rows. Exit status 0 whatever the verdict; --json "
        "prints it for scripts.",
    )
    drift.add_argument("file", metavar="FILE", help="the adapter's file (.safetensors)")
    drift.add_argument("--last-batches", type=int, default=None, metavar="N",
                       help="only the latest N batches (default: every batch)")  # fmt: skip
    drift.add_argument("--tolerance", type=float, default=0.05, metavar="FRACTION",
                       help="the fall accepted, a fraction (default 0.05: 5 points)")  # fmt: skip
    drift.add_argument("--deviations", type=float, default=2.0, metavar="K",
                       help="standard deviations a verdict needs (default 2)")  # fmt: skip
    drift.add_argument("--reference", type=float, default=None, metavar="FRACTION",
                       help="the level to compare with (default: the model's held-out one)")  # fmt: skip
    drift.add_argument("--json", action="store_true", help="print the summary as JSON")
    drift.add_argument("--report", default=None, metavar="CSV",
                       help="also write the per-batch report to this CSV file (folders "
                       "created)")  # fmt: skip
    drift.add_argument("--figure", default=None, metavar="PNG",
                       help="also draw the report to this PNG file (folders created; .pdf, "
                       ".svg and matplotlib's other formats by their suffix)")  # fmt: skip
    drift.set_defaults(subparser=drift, data_dir=None)

    run = sub.add_parser(
        "run",
        help="run experiments and print a results table (defaults: the main job)",
        description="Run every combination of the given datasets, models, methods, scenarios "
        "and seeds (those already in the results store are reused), then print a table.",
        name_kinds=_KINDS,
        components=components,
    )
    _add_grid(run, {"datasets": DEFAULT_DATASETS, "models": DEFAULT_MODELS, "seeds": [0]})
    run.add_argument(
        "--methods",
        nargs="+",
        default=None,  # resolved by check_args: the default depends on --feedback
        metavar="NAME[k=v,...]",
        help="methods, with options in brackets, e.g. adaptable[calibrator=platt] "
        f"(default: {' '.join(DEFAULT_METHODS)}; with --feedback: "
        f"{' '.join(FEEDBACK_METHODS)} alone, the one of them that learns from late labels)",
    )
    run.add_argument(
        "--scenarios",
        nargs="+",
        default=["natural"],
        metavar="NAME",
        help="shift scenarios (default: natural)",
    )
    _add_batch_size(run)
    run.add_argument(
        "--feedback",
        nargs=2,
        type=float,
        action=_Feedback,
        default=None,
        metavar=("SHARE", "DELAY"),
        help="late labels: SHARE of each batch's rows (0-1) reach partial_fit DELAY batches "
        "later (a whole number, 0 or more); metrics score every row as predicted before its "
        "label arrived. Every method must take labels (partial_fit); without --methods: "
        f"{' '.join(FEEDBACK_METHODS)}",
    )
    run.add_argument(
        "--drift-figure",
        default=None,
        metavar="PNG",
        help="draw AdapTable's drift report of the one experiment run (reruns it in-process) "
        "and print its drift summary; the run must be one experiment of the default adapter",
    )
    _add_common(run)
    run.set_defaults(subparser=run)

    rep = sub.add_parser(
        "reproduce",
        help="run a paper or benchmark table and write it (Markdown, CSV, figures)",
        description="Run what a table of the paper needs, then write our numbers beside the "
        "paper's as Markdown and CSV; or run the benchmark's roles (domain splits and label "
        "shifts) and write them as one table with a role column.",
        name_kinds=("dataset", "model"),
        components=components,
    )
    table_names = [*TABLES, "all", "benchmark"]
    rep.add_argument(
        "table",
        type=_one_of("table", table_names),
        metavar="TABLE",
        help=f"one of {', '.join(table_names)}: a table (a benchmark role's name writes that role alone); all: every table but "
        "the sealed and reserve roles, which run only by name; benchmark: the roles of --roles "
        "as one table",
    )
    rep.add_argument(
        "--roles",
        nargs="+",
        default=None,
        metavar="ROLE",
        help=f"with benchmark: the roles to run, of {', '.join(ROLES)} (default: all but "
        "sealed and reserve)",
    )
    _add_grid(
        rep,
        {
            "datasets": None,
            "datasets_help": "a subset of the table's datasets (default: all of them)",
            "models": None,
            "models_help": "only the rows of these source models (the table's other rows "
            "read 'not run')",
            "seeds": [0, 1, 2],
        },
    )
    rep.add_argument(
        "--out",
        default="adaptable-results/tables",
        metavar="DIR",
        help="folder for TABLE.md / TABLE.csv (default: adaptable-results/tables)",
    )
    rep.add_argument("--latex", action="store_true", help="also write TABLE.tex")
    _add_batch_size(rep)
    rep.add_argument(
        "--no-run",
        action="store_true",
        help="run nothing: build the tables from the results store alone (no raw data needed)",
    )
    _add_common(rep)
    rep.set_defaults(subparser=rep)

    plot = sub.add_parser(
        "plot",
        help="draw the paper's figures as PNG files",
        description="Draw the paper's figures for each dataset / model / seed, running (or "
        "reusing from the results store) the experiments they need.",
        name_kinds=("dataset", "model", "method"),
        components=components,
    )
    plot.add_argument(
        "figures",
        nargs="*",
        metavar="FIGURE",
        help=f"any of {', '.join(FIGURES)} (default: all); also --figures",
    )
    plot.add_argument(
        "--figures",
        nargs="+",
        dest="figure_options",
        default=[],
        metavar="FIGURE",
        help="the figures, as an option (a figure name left after --datasets, --models or "
        "--methods is taken as a figure too)",
    )
    _add_grid(plot, {"datasets": DEFAULT_DATASETS, "models": DEFAULT_MODELS, "seeds": [0]})
    plot.add_argument(
        "--methods",
        "--method",
        dest="method",
        nargs="+",
        default=["adaptable"],
        metavar="NAME",
        help="the adapted method the figures show beside the source model, one (default: "
        "adaptable)",
    )
    plot.add_argument(
        "--out",
        default="adaptable-results/figures",
        metavar="DIR",
        help="folder for the PNG files (default: adaptable-results/figures)",
    )
    _add_common(plot)
    plot.set_defaults(subparser=plot)
    return parser


# --------------------------------------------------------------------------- checks
def check_args(args: argparse.Namespace, components: Components) -> None:
    """Every problem with the arguments, found before any work starts; one parser error."""
    problems: list[str] = []
    for option in _PATH_OPTIONS:  # ``--out=~/x`` reaches us unexpanded: the shell expands ~ alone
        value = getattr(args, option, None)
        if isinstance(value, str):
            setattr(args, option, os.path.expanduser(value))
    if getattr(args, "no_progress", False) is None:
        args.no_progress = not sys.stderr.isatty()
    problems += _data_dir_problems(args)
    if getattr(args, "executor", None) == "ray" and importlib.util.find_spec("ray") is None:
        problems.append("--executor ray needs the ray package: pip install 'adaptable-tta[ray]'")
    if args.command == "plot":
        _collect_figures(args)
    _fold_case(args, components)
    if getattr(args, "datasets", None):
        # TableShift's identifiers and short names run, and are stored, as the task they name
        args.datasets = _canonical(args.datasets)
    # a name or seed given twice is one experiment: counted twice it would inflate the plan
    # line and weigh twice in reproduce's means and standard errors
    for option in ("datasets", "models", "seeds", "scenarios", "roles"):
        values = getattr(args, option, None)
        if values:
            setattr(args, option, _unique(values))
    if args.command == "run":
        if args.methods is None:
            labels = args.feedback is not None and args.feedback[0] > 0
            args.methods = list(FEEDBACK_METHODS if labels else DEFAULT_METHODS)
        methods: list[tuple[str, dict[str, Any]]] = []
        for text in args.methods:
            try:
                methods.append(parse_method(text))
            except argparse.ArgumentTypeError as err:
                problems.append(str(err))
        from adaptable.experiments.spec import drop_defaults

        methods = [(_folded(components, "method", name), options) for name, options in methods]
        # an option at its default names the same experiment as no option (one spec key): kept,
        # ``adaptable adaptable[preset=default]`` would count, and label, one experiment twice
        methods = [(name, drop_defaults(name, options)) for name, options in methods]
        methods = list({_label(*method): method for method in methods}.values())
        problems += _unknown(components, args.datasets, args.models, args.scenarios, methods)
        built, unbuildable = _build_methods(components, methods)
        problems += unbuildable
        problems += _incompatible(components, args.models, built)
        if args.feedback is not None and args.feedback[0] > 0:  # share 0: no labels to take
            problems += _refused(
                "--feedback", built, _label_refusal,
                ("takes no late labels", "take no late labels"),
                "run those without --feedback, or leave out --methods to run "
                f"{' '.join(FEEDBACK_METHODS)} alone",
            )  # fmt: skip
        if args.drift_figure is not None:
            problems += _drift_figure_problems(args, methods, built)
        args.parsed_methods = methods
    elif args.command == "reproduce":
        from adaptable.datasets.benchmark_cases import ROLES
        from adaptable.experiments.reproduce import request_problems

        problems += _unknown(components, args.datasets or [], args.models or [], [], [])
        if args.roles:  # HOLDOUT: holdout, as table and dataset names are folded
            args.roles = _unique([folded_name(r, ROLES) for r in args.roles])
        if not problems:
            problems += request_problems(args.table, _request(args), args.roles)
    elif args.command == "plot":
        from adaptable.experiments.figures import FIGURES

        args.figures = _unique([folded_name(f, FIGURES) for f in args.figures])
        unknown = [f for f in args.figures if f not in FIGURES]
        problems += [unknown_name("figure", f, FIGURES) for f in unknown]
        args.method = _unique([_folded(components, "method", m) for m in args.method])
        if len(args.method) != 1:
            problems.append(
                f"--methods: plot draws one adapted method beside the source model; got "
                f"{len(args.method)} ({' '.join(args.method)}): run it once per method"
            )
        args.method = _folded(components, "method", args.method[0])
        for problem in _unknown(components, args.datasets, args.models, [], [(args.method, {})]):
            # `plot --datasets heloc tsnee`: a misspelt figure after --datasets reads as one
            name = problem.split("'")[1] if problem.startswith("unknown dataset '") else ""
            close = difflib.get_close_matches(name.lower(), FIGURES, n=1, cutoff=0.75)
            if name and close:
                problem += f" (or did you mean the figure {close[0]}?)"
            problems.append(problem)
        built, unbuildable = _build_methods(components, [(args.method, {})])
        problems += unbuildable
        problems += _incompatible(components, args.models, built)
    if getattr(args, "device", None) == "cuda" and not getattr(args, "no_run", False):
        from adaptable.experiments.process import cuda_problem

        problem = cuda_problem()
        if problem is not None:
            problems.append(f"--device cuda: {problem}; use --device cpu or auto")
    for option in ("out", "cache_dir"):
        value = getattr(args, option, None)
        folder = None if value is None else _folder_problem(value)
        if folder is not None:
            problems.append(f"--{option.replace('_', '-')} {value}: {folder}")
    if not problems and hasattr(args, "results"):  # last: it may create the store's folder
        from adaptable.experiments.store import ResultsPathError, check_results_path

        try:
            check_results_path(args.results, write=not getattr(args, "no_run", False), say=print)
        except ResultsPathError as err:
            problems.append(str(err))
    if problems:
        unique = list(dict.fromkeys(problems))
        message = unique[0] if len(unique) == 1 else "\n  - ".join(["", *unique]).lstrip("\n")
        args.subparser.error(message if len(unique) == 1 else f"{len(unique)} problems:\n{message}")


def _unique(values: Sequence[Any]) -> list[Any]:
    """``values`` without repeats: the first of each kept, in order."""
    return list(dict.fromkeys(values))


def _data_dir_problems(args: argparse.Namespace) -> list[str]:
    """The raw data folder, from ``--data-dir`` or else ``$ADAPTABLE_DATA_DIR`` (an empty
    variable counts as unset, as the loaders read it), must be a folder: a missing one would
    run nothing and report every dataset skipped. ``--data-dir ""`` is refused rather than
    read as the current folder. ``reproduce --no-run`` reads no raw data: the variable is not
    checked there."""
    if args.data_dir is not None:
        if not args.data_dir:
            return ["--data-dir: an empty path; name a folder"]
        if not Path(args.data_dir).is_dir():
            return [f"--data-dir {args.data_dir!r} is not a folder"]
        return []
    from adaptable.datasets import DATA_DIR_ENV

    env = os.environ.get(DATA_DIR_ENV)
    if not env or args.command not in _DATA_COMMANDS or getattr(args, "no_run", False):
        return []
    if not Path(env).expanduser().is_dir():
        return [f"{DATA_DIR_ENV} {env!r} is not a folder; set it to one, or give --data-dir"]
    return []


def _folder_problem(path: str) -> str | None:
    """Why ``path`` cannot be (or become) a folder to write in, found before any work and
    leaving nothing behind: a file on the way, or a nearest existing folder where no file can
    be written (no permission, a read-only mount, ``/proc``: the store's probe); ``None``
    where nothing stands in the way."""
    from adaptable.experiments.store import probe_folder

    if not path:
        return "an empty path; name a folder"
    target = Path(path)
    if target.exists() and not target.is_dir():
        return f"{path!r} is not a folder"
    folder = target
    while not folder.exists():  # the nearest folder that is there: the rest gets made in it
        folder = folder.parent
    if not folder.is_dir():
        return f"{str(folder)!r} is not a folder"
    try:
        probe_folder(folder)
    except OSError as err:
        return f"cannot write in {str(folder)!r} ({_os_reason(err)})"
    return None


def _drift_problems(args: argparse.Namespace) -> list[str]:
    """``drift``'s options, in the options' names rather than the Python parameters' they
    become: a window of at least one batch, fractions between 0 and 1 (a tolerance of 5 meant
    as 5 points would accept any fall), a number of deviations of 0 or more, and a report
    file that can be written (before the summary is printed, as the figure's is)."""
    problems = []
    if args.last_batches is not None and args.last_batches < 1:
        problems.append(f"--last-batches: must be at least 1; got {args.last_batches}")
    if not 0 <= args.tolerance <= 1:  # NaN fails this too
        problems.append(
            f"--tolerance: a fraction from 0 to 1 (0.05 is 5 points); got {args.tolerance:g}"
        )
    if not (math.isfinite(args.deviations) and args.deviations >= 0):
        problems.append(f"--deviations: must be 0 or more; got {args.deviations:g}")
    if args.reference is not None and not 0 <= args.reference <= 1:
        problems.append(
            f"--reference: a fraction from 0 to 1 (0.72 is 72 percent); got {args.reference:g}"
        )
    if args.report is not None:
        report = _unwritable(args.report) if args.report else "an empty path; name a file"
        if report is not None:
            problems.append(f"--report {args.report}: {report}")
    return problems


def _refused(
    option: str,
    built: dict[str, Any],
    reason: Callable[[Any], str | None],
    lacks: tuple[str, str],
    hint: str,
) -> list[str]:
    """One problem naming every built method that ``reason(method)`` refuses (``None``: it
    does not; an empty reason is not shown), e.g. ``--feedback: source (no partial_fit) and
    adaptable[preset=paper] take no late labels; HINT``: one line however many methods
    (``lacks``: the singular and plural verb).
    """
    refused = {label: reason(method) for label, method in built.items()}
    named = [f"{label} ({why})" if why else label for label, why in refused.items()
             if why is not None]  # fmt: skip
    if not named:
        return []
    if len(named) == 1:
        return [f"{option}: {named[0]} {lacks[0]}; {hint}"]
    return [f"{option}: {', '.join(named[:-1])} and {named[-1]} {lacks[1]}; {hint}"]


def _non_default_adaptable(method: Any) -> str | None:
    """``""`` for AdapTable with a preset other than the default (its label names the preset):
    it has ``partial_fit`` and ``report``, but they raise (the paper's Algorithm 1 keeps no
    report and has no use for labels); else ``None``."""
    preset = getattr(method, "preset", "default")
    if preset == "default":  # also every method without presets: AdapTable is not imported
        return None
    from adaptable.core import AdapTable

    return "" if isinstance(method, AdapTable) else None


def _label_refusal(method: Any) -> str | None:
    """Why a built method cannot take the late labels of ``--feedback`` (``None``: it can);
    the runner would fail each of its experiments for it."""
    if not callable(getattr(method, "partial_fit", None)):
        return "no partial_fit"
    return _non_default_adaptable(method)


def _report_refusal(method: Any) -> str | None:
    """Why a built method has no drift report for ``--drift-figure`` (``None``: it has; the
    message says the rest)."""
    if not callable(getattr(method, "report", None)):
        return ""
    return _non_default_adaptable(method)


def _drift_figure_problems(
    args: argparse.Namespace, methods: Sequence[Any], built: dict[str, Any]
) -> list[str]:
    """``--drift-figure``: one experiment of a method with a drift report, drawn to a file
    whose suffix names a format matplotlib writes; found before the sweep, not after it."""
    problems = []
    sizes = (args.datasets, args.scenarios, args.models, methods, args.seeds)
    experiments = math.prod(len(values) for values in sizes)
    if experiments != 1:
        problems.append(
            f"--drift-figure draws one experiment; this run has {experiments}: give one "
            "dataset, model, method, scenario and seed"
        )
    else:
        problems += _refused(
            "--drift-figure", built, _report_refusal,
            ("keeps no drift report", "keep no drift report"), "use adaptable",
        )  # fmt: skip
    figure = _figure_problem(args.drift_figure)
    if figure is None:
        figure = _unwritable(args.drift_figure)
    if figure is not None:
        problems.append(f"--drift-figure {args.drift_figure}: {figure}")
    return problems


def _unwritable(path: str) -> str | None:
    """Why a file cannot be written at ``path`` (its folders created as needed), found before
    any work: a path that is a folder, or a folder of it that cannot be (see
    :func:`_folder_problem`); ``None`` where nothing stands in the way."""
    if Path(path).is_dir():
        return f"{path!r} is a folder"
    return _folder_problem(str(Path(path).parent))


def _figure_problem(path: str) -> str | None:
    """Why matplotlib cannot write a figure to ``path``: its suffix names no format it writes
    (``None``: it does). Without a suffix matplotlib would add one, writing another file."""
    from matplotlib.backend_bases import FigureCanvasBase

    formats = FigureCanvasBase.get_supported_filetypes()
    suffix = Path(path).suffix.lower().removeprefix(".")
    if suffix in formats:
        return None
    others = ", .".join(sorted(set(formats) - {"png"}))
    if not suffix:
        return f"the file needs a suffix naming the figure's format: .png, or one of .{others}"
    return f"matplotlib writes no format with the suffix '.{suffix}': use .png, or one of .{others}"


def _collect_figures(args: argparse.Namespace) -> None:
    """``plot``'s figures from the positional names, ``--figures``, and any figure name that a
    list option took in (``plot --datasets heloc reliability``: argparse gives ``reliability``
    to ``--datasets``; no dataset, model or method has a figure's name)."""
    from adaptable.experiments.figures import FIGURES

    figures = [*args.figures, *args.figure_options]
    for option in ("datasets", "models", "method"):
        values = getattr(args, option)
        figures += [v for v in values if v in FIGURES]
        kept = [v for v in values if v not in FIGURES]
        setattr(args, option, kept or list(_PLOT_DEFAULTS[option]))
    args.figures = list(dict.fromkeys(figures))


def _fold_case(args: argparse.Namespace, components: Components) -> None:
    """Names given in another case (``HELOC``, ``MLP``) become the registered ones."""
    for option, kind in (("datasets", "dataset"), ("models", "model"), ("scenarios", "scenario")):
        values = getattr(args, option, None)
        if values:
            setattr(args, option, [_folded(components, kind, v) for v in values])


def _one_of(kind: str, names: Sequence[str]) -> Callable[[str], str]:
    """An argparse ``type`` that takes one of ``names`` and refuses others with the closest."""

    def check(value: str) -> str:
        folded = folded_name(value, names)  # MAIN: main, as dataset names are folded
        if folded in names:
            return folded
        raise argparse.ArgumentTypeError(unknown_name(kind, value, names))

    return check


def _folded(components: Components, kind: str, name: str) -> str:
    from adaptable.experiments.components import fold_case

    return fold_case(components, kind, name)


def _unknown(
    components: Components,
    datasets: Sequence[str],
    models: Sequence[str],
    scenarios: Sequence[str],
    methods: Sequence[tuple[str, dict[str, Any]]],
) -> list[str]:
    from adaptable.experiments.components import unknown_names

    return unknown_names(
        components,
        dataset=datasets,
        model=models,
        scenario=scenarios,
        method=[name for name, _ in methods],
    )


def _build_methods(
    components: Components, methods: Sequence[tuple[str, dict[str, Any]]]
) -> tuple[dict[str, Any], list[str]]:
    """Build each known method once with its options: bad values fail here, with the method's
    own message, rather than once per experiment after the data loaded and models trained.

    Returns:
        (label -> built method, one problem per method that could not be built).
    """
    known = set(components.known_names("method"))
    built: dict[str, Any] = {}
    problems = []
    for name, options in methods:
        if name not in known:
            continue
        try:
            built[_label(name, options)] = components.create_method(name, **options)
        except (ValueError, TypeError, KeyError) as err:
            detail = err.args[0] if isinstance(err, KeyError) and err.args else err
            problems.append(f"method {_label(name, options)}: {detail}")
    return built, problems


def _incompatible(
    components: Components, models: Sequence[str], built: dict[str, Any]
) -> list[str]:
    """Methods that cannot run on some of the (known) models: a usage error naming the pair,
    instead of the same failure once per experiment after the data loaded."""
    from adaptable.experiments.components import incompatible_pairs

    known = set(components.known_names("model"))
    return incompatible_pairs(components, [m for m in models if m in known], built)


def _label(name: str, options: dict[str, Any]) -> str:
    inner = ",".join(f"{k}={v}" for k, v in options.items())
    return f"{name}[{inner}]" if options else name


def _canonical(datasets: Sequence[str]) -> list[str]:
    """Task names with TableShift's identifiers and short names resolved (``readmission``)."""
    from adaptable.datasets.registry import canonical

    return list(dict.fromkeys(canonical(d) for d in datasets))


def _request(args: argparse.Namespace) -> Any:
    from adaptable.experiments.reproduce import Request

    return Request(
        seeds=args.seeds, datasets=args.datasets, models=args.models, out=args.out,
        latex=args.latex, run=not args.no_run, progress=not args.no_progress,
        several=args.table in ("all", "benchmark"), batch_size=args.batch_size,
    )  # fmt: skip


# --------------------------------------------------------------------------- commands
def _context_and_executor(args: argparse.Namespace, components: Components) -> tuple[Any, Any]:
    from adaptable.experiments.components import RunContext
    from adaptable.experiments.executors import make_executor

    context = RunContext(
        data_dir=args.data_dir, cache_dir=args.cache_dir, components=components,
        threads=args.threads,
        device=args.device,
    )  # fmt: skip
    workers = args.workers
    cpus = _usable_cpus()
    if args.executor == "local" and workers is not None and workers > cpus:
        # each worker process loads torch and its data: past the CPUs they only compete
        plural = "s" if cpus != 1 else ""
        print(f"adaptable {args.command}: --workers {workers}: this machine lets the command "
              f"use {cpus} CPU{plural}; running {cpus} worker{plural}", file=sys.stderr)  # fmt: skip
        workers = cpus
    executor = make_executor(args.executor, workers=workers, address=args.ray_address)
    return context, executor


def _usable_cpus(quota_file: str = "/sys/fs/cgroup/cpu.max") -> int:
    """The CPUs this process may run on: its affinity where the system has one, and no more
    than a container's CPU quota (cgroup v2 ``cpu.max``, e.g. ``docker --cpus 2``)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity on this system (macOS, Windows)
        cpus = os.cpu_count() or 1
    try:
        with open(quota_file) as quota:
            limit, period = quota.read().split()[:2]
        if limit != "max":
            cpus = min(cpus, math.ceil(int(limit) / int(period)))
    except (OSError, ValueError):  # no cgroup v2 quota here
        pass
    return max(1, cpus)


def cmd_run(args: argparse.Namespace, components: Components) -> int:
    """``adaptable run``: a sweep over the given grid, then a summary table."""
    from adaptable.experiments.components import lookup_device
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
    context, executor = _context_and_executor(args, components)
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
            print(f"adaptable run: --drift-figure {args.drift_figure}: {_os_reason(err)}",
                  file=sys.stderr)  # fmt: skip
            return 1
        print(f"drift report figure: {path}\n{drift}")
    # a requested dataset skipped (its raw file absent) is work not done, as a failure is
    return 0 if result.records and not result.failures and not result.skipped else 1


def cmd_drift(args: argparse.Namespace) -> int:
    """``adaptable drift FILE``: the drift summary of a saved adapter; 2 where an option is
    out of range, it cannot be read, or the report or figure cannot be written (the reason on
    one line of standard error; options, and where the report and figure go, are checked
    before the summary is printed). ``--report`` and ``--figure`` create their missing
    folders."""
    from adaptable import AdapTable

    problems = _drift_problems(args)
    figure_problem = None
    if args.figure is not None:
        figure_problem = _figure_problem(args.figure) or _unwritable(args.figure)
    if figure_problem is not None:
        problems.append(f"--figure {args.figure}: {figure_problem}")
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
    except (OSError, ValueError) as err:
        print(f"adaptable drift: {args.file}: {str(err).removeprefix('adaptable: ')}",
              file=sys.stderr)  # fmt: skip
        return 2
    if args.json:
        print(json.dumps(summary.as_dict()))
    else:
        print(summary)
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
            print(f"adaptable drift: --report {args.report}: {_os_reason(err)}", file=sys.stderr)
            return 2
        print(f"report: {args.report}", file=sys.stderr if args.json else sys.stdout)
    if args.figure is not None:
        from adaptable.experiments.drift_figure import plot_drift_report
        from adaptable.experiments.plots import save_figure

        # the figure shows the batches the summary reads (its so-far curves run from the start)
        shown = report if args.last_batches is None else report.tail(args.last_batches)
        try:
            save_figure(plot_drift_report(shown, title=Path(args.file).name), args.figure)
        except (OSError, RuntimeError) as err:  # RuntimeError: a writer's missing tool (LaTeX)
            print(f"adaptable drift: --figure {args.figure}: {_os_reason(err)}", file=sys.stderr)
            return 2
        print(f"figure: {args.figure}", file=sys.stderr if args.json else sys.stdout)
    return 0


def _os_reason(err: Exception) -> str:
    """An OSError in a few words: ``Permission denied: 'out/r.csv'`` (its text where it has no
    error number, or for another error: a figure writer's missing tool)."""
    if not isinstance(err, OSError):
        return str(err)
    if isinstance(err, FileExistsError):  # a folder to create is there, as a file
        return f"{str(err.filename)!r} is not a folder"
    if err.strerror is None:
        return str(err)
    return f"{err.strerror}: {str(err.filename)!r}" if err.filename else err.strerror


def cmd_reproduce(args: argparse.Namespace, components: Components) -> int:
    """``adaptable reproduce TABLE``: :mod:`adaptable.experiments.reproduce` does the work."""
    import adaptable.experiments.reproduce as reproduce
    from adaptable.experiments.components import RunContext
    from adaptable.experiments.store import ResultStore

    store = ResultStore(args.results)
    if args.no_run:
        context, executor = RunContext(components=components, device=args.device), None
    else:
        context, executor = _context_and_executor(args, components)
    names = reproduce.table_names(args.table, args.roles)
    if args.table == "benchmark" and args.latex:  # a note, not an error: the rest still runs
        print("adaptable reproduce: note: --latex applies to the paper's tables only; the "
              "benchmark table is written as Markdown and CSV", file=sys.stderr)  # fmt: skip
    try:
        if args.table == "benchmark":
            return reproduce.reproduce_benchmark(names, _request(args), store, context, executor)
        return reproduce.reproduce_tables(names, _request(args), store, context, executor)
    finally:
        if executor is not None:
            executor.close()


def cmd_plot(args: argparse.Namespace, components: Components) -> int:
    """``adaptable plot``: the paper's figures for each dataset / model / seed."""
    from adaptable.experiments.components import lookup_device
    from adaptable.experiments.figures import (
        CALIBRATION_FIGURES,
        FIGURES,
        figure_specs,
        make_figures,
    )
    from adaptable.experiments.store import ResultStore

    figures = list(dict.fromkeys(args.figures)) or list(FIGURES)
    store = ResultStore(args.results)
    combos = [(d, m, s) for d in args.datasets for m in args.models for s in args.seeds]
    specs = list(
        {sp.key: sp for c in combos for sp in figure_specs(figures, *c, args.method)}.values()
    )
    passes = len(combos) if set(CALIBRATION_FIGURES) & set(figures) else 0
    extra = (
        f", plus {count(passes, 'calibration pass', 'calibration passes')} over sampled test "
        "batches (not stored)"
        if passes
        else ""
    )
    context, executor = _context_and_executor(args, components)
    plan = plan_line(specs, store, device=lookup_device(context))
    print(
        f"{count(len(figures), 'figure')} for "
        f"{count(len(combos), 'dataset / model / seed combination')}: "
        f"{plan}{extra}; results store: {store.path}",
        flush=True,
    )
    written: dict[str, str] = {}
    stored_before = set(store.completed())
    # warnings outside the experiments (the calibration pass, drawing) are reported as the
    # experiments' are, after the figures, rather than printed raw as they happen
    with collect_warnings() as caught:
        try:
            for dataset, model, seed in combos:
                drawn = make_figures(
                    figures, dataset=dataset, model=model, seed=seed, out_dir=Path(args.out),
                    store=store, context=context, executor=executor,
                    progress=not args.no_progress, method=args.method,
                )  # fmt: skip
                written.update(
                    {f"{name} ({dataset}, {model}, {seed})": p for name, p in drawn.items()}
                )
        finally:
            executor.close()
    wanted = {spec.key for spec in specs} - stored_before
    print_warnings(r for key, r in store.completed().items() if key in wanted)
    for line in collected_lines(caught, "figures"):
        print(line, file=sys.stderr)
    width = max(map(len, written), default=0)  # names in one column, none cut
    for name, outcome in written.items():
        print(f"{name:{width}s}  {outcome}")
    return 0 if all(str(p).endswith(".png") for p in written.values()) else 1


def main(argv: list[str] | None = None, components: Components | None = None) -> int:
    """Entry point of the ``adaptable`` command.

    Args:
        argv: arguments (default: ``sys.argv[1:]``).
        components: dataset / model / method / shift providers
            (:class:`~adaptable.experiments.components.Components`); tests pass small doubles.
    """
    try:
        code = _main(argv, components)
        sys.stdout.flush()  # here, not at exit, so that a closed pipe is caught below
        return code
    except BrokenPipeError:
        # The reader of standard output went away (``adaptable datasets | head``): stop
        # quietly. Any other broken pipe (a worker's, say) is a real error.
        if not _stdout_reader_gone():
            raise
        _silence_stdout()
        return 1


def _stdout_reader_gone() -> bool:
    """Whether standard output is a pipe whose reader has closed it (poll reports an error on
    its descriptor; a failed write does not leave that in the stream, which drops its buffer).
    Where that cannot be asked (no descriptor, no poll), assume it was."""
    try:
        import select

        poller = select.poll()
        poller.register(sys.stdout.fileno(), 0)  # no events asked: errors are always reported
        return any(event & (select.POLLERR | select.POLLHUP) for _, event in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
        return True


def _silence_stdout() -> None:
    """Point standard output at /dev/null, so that the interpreter's last flush at exit does
    not fail on the closed pipe again; a stream without a file descriptor is left as it is."""
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, descriptor)
    finally:
        os.close(devnull)


def _main(argv: list[str] | None, components: Components | None) -> int:
    components = components or Components()
    args = build_parser(components).parse_args(argv)
    check_args(args, components)
    if args.command == "datasets":
        from adaptable import datasets

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
    if args.command == "drift":
        return cmd_drift(args)
    from adaptable.experiments.process import limit_threads

    limit_threads(args.threads)
    from adaptable.experiments.executors import ClusterUnreachable
    from adaptable.experiments.store import report_skipped_lines

    started = time.perf_counter()
    handler = {"run": cmd_run, "reproduce": cmd_reproduce, "plot": cmd_plot}[args.command]
    # a damaged store line: one line on stderr, once however often the command reads the store
    with report_skipped_lines(lambda message: print(f"warning: {message}", file=sys.stderr)):
        stored_before = _stored_count(args.results)
        try:
            code = handler(args, components)
        except ClusterUnreachable as err:  # nothing answers at --ray-address
            print(f"adaptable {args.command}: error: {err}", file=sys.stderr, flush=True)
            return 1
        except KeyboardInterrupt:
            # Every finished experiment is already in the store (appended one by one): say so
            # in one line instead of a traceback through the sweep's internals.
            print(_interrupted_line(args.results, stored_before), file=sys.stderr, flush=True)
            return EXIT_INTERRUPTED
    print(f"wall time {time.perf_counter() - started:.1f} s")
    return code


def _stored_count(path: str) -> int:
    """How many finished experiments the results store at ``path`` holds (0 if none); a
    skipped line is reported as every read reports it (see :func:`_main`: once)."""
    from adaptable.experiments.store import ResultStore

    try:
        return len(ResultStore(path).completed())
    except OSError:
        return 0


def _interrupted_line(path: str, stored_before: int) -> str:
    """``interrupted: 3 experiments saved by this run (7 in the results store r.jsonl); ...``"""
    stored = _stored_count(path)
    saved = max(0, stored - stored_before)
    return (
        f"interrupted: {count(saved, 'experiment')} saved by this run ({stored} in the "
        f"results store {path}); run the same command again to resume: saved experiments are "
        "not run again"
    )


if __name__ == "__main__":
    sys.exit(main())

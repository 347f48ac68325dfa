"""The ``adaptable`` argument parser: what each command takes, declared once per command.

The declarations check only what argparse can (types, choices, counts; :mod:`.options`); the
rest is checked afterwards, all at once (:func:`adaptable.cli.checks.check_args`).

>>> build_parser().parse_args(["run", "--seeds", "0", "1"]).seeds
[0, 1]
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Sequence
from typing import Any, TypeAlias

from adaptable.cli.defaults import (
    DEFAULT_DATASETS,
    DEFAULT_METHODS,
    DEFAULT_MODELS,
    DEFAULT_RESULTS,
    FEEDBACK_METHODS,
)
from adaptable.cli.options import MAX_SEED, FeedbackAction, one_of, positive_int, seed_value
from adaptable.experiments.components import Components

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

#: the kinds of names ``run --help`` lists as valid
_RUN_NAME_KINDS = ("dataset", "model", "method", "scenario")


class CommandParser(argparse.ArgumentParser):
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


#: what ``add_subparsers`` returns: each command's parser is added to it
_Commands: TypeAlias = "argparse._SubParsersAction[CommandParser]"


def _add_common_options(
    parser: argparse.ArgumentParser, results_default: str = DEFAULT_RESULTS
) -> None:
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
    # one destination for both: the last of them given wins; neither: bars only on a
    # terminal, one line per source model and experiment done elsewhere
    parser.add_argument("--no-progress", action="store_const", const=True, default=None,
                        help="no progress at all (by default: bars where standard error is a "
                        "terminal; elsewhere, as in a log, one line per source model ready and "
                        "per experiment done, with the time elapsed)")  # fmt: skip
    parser.add_argument("--progress", dest="no_progress", action="store_const", const=False,
                        help="progress bars even when standard error is not a terminal")  # fmt: skip


def _words(names: Sequence[str]) -> str:
    """Names as a command line spells them: ``mlp resnet`` (not ``['mlp', 'resnet']``)."""
    return " ".join(names)


def _add_grid_options(parser: argparse.ArgumentParser, defaults: dict[str, Any]) -> None:
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


def _add_batch_size_option(parser: argparse.ArgumentParser) -> None:
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

    components = components or Components()
    parser = argparse.ArgumentParser(
        prog="adaptable",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                     parser_class=CommandParser)  # fmt: skip
    # the order of the commands in ``adaptable --help``
    _add_datasets_command(commands, components)
    _add_drift_command(commands)
    _add_run_command(commands, components)
    _add_reproduce_command(commands, components)
    _add_plot_command(commands, components)
    return parser


def _add_datasets_command(commands: _Commands, components: Components) -> None:
    datasets = commands.add_parser(
        "datasets",
        help="list the tasks and whether their raw files are present",
        description="List the tasks and whether their raw files are present.",
        components=components,
    )
    datasets.add_argument("--data-dir", default=None, metavar="DIR", help="raw data folder")
    datasets.set_defaults(subparser=datasets)


def _add_drift_command(commands: _Commands) -> None:
    drift = commands.add_parser(
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
    drift.add_argument("--columns", type=int, default=5, metavar="N",
                       help="also print the N columns that moved most against the held-out "
                       "rows (AdapTable.feature_drift; default 5, 0: none)")  # fmt: skip
    drift.add_argument("--json", action="store_true", help="print the summary as JSON")
    drift.add_argument("--report", default=None, metavar="CSV",
                       help="also write the per-batch report to this CSV file (folders "
                       "created)")  # fmt: skip
    drift.add_argument("--figure", default=None, metavar="PNG",
                       help="also draw the report to this PNG file (folders created; .pdf, "
                       ".svg and matplotlib's other formats by their suffix)")  # fmt: skip
    drift.set_defaults(subparser=drift, data_dir=None)


def _add_run_command(commands: _Commands, components: Components) -> None:
    run = commands.add_parser(
        "run",
        help="run experiments and print a results table (defaults: the main job)",
        description="Run every combination of the given datasets, models, methods, scenarios "
        "and seeds (those already in the results store are reused), then print a table.",
        name_kinds=_RUN_NAME_KINDS,
        components=components,
    )
    _add_grid_options(run, {"datasets": DEFAULT_DATASETS, "models": DEFAULT_MODELS, "seeds": [0]})
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
    _add_batch_size_option(run)
    run.add_argument(
        "--feedback",
        nargs=2,
        type=float,
        action=FeedbackAction,
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
    _add_common_options(run)
    run.set_defaults(subparser=run)


def _add_reproduce_command(commands: _Commands, components: Components) -> None:
    from adaptable.datasets.benchmark_cases import ROLES
    from adaptable.experiments.reproduce import TABLES

    reproduce = commands.add_parser(
        "reproduce",
        help="run a paper or benchmark table and write it (Markdown, CSV, figures)",
        description="Run what a table of the paper needs, then write our numbers beside the "
        "paper's as Markdown and CSV; or run the benchmark's roles (domain splits and label "
        "shifts) and write them as one table with a role column.",
        name_kinds=("dataset", "model"),
        components=components,
    )
    table_names = [*TABLES, "all", "benchmark"]
    reproduce.add_argument(
        "table",
        type=one_of("table", table_names),
        metavar="TABLE",
        help=f"one of {', '.join(table_names)}: a table (a benchmark role's name writes that role alone); all: every table but "
        "the sealed and reserve roles, which run only by name; benchmark: the roles of --roles "
        "as one table",
    )
    reproduce.add_argument(
        "--roles",
        nargs="+",
        default=None,
        metavar="ROLE",
        help=f"with benchmark: the roles to run, of {', '.join(ROLES)} (default: all but "
        "sealed and reserve)",
    )
    _add_grid_options(
        reproduce,
        {
            "datasets": None,
            "datasets_help": "a subset of the table's datasets (default: all of them)",
            "models": None,
            "models_help": "only the rows of these source models (the table's other rows "
            "read 'not run')",
            "seeds": [0, 1, 2],
        },
    )
    reproduce.add_argument(
        "--out",
        default="adaptable-results/tables",
        metavar="DIR",
        help="folder for TABLE.md / TABLE.csv (default: adaptable-results/tables)",
    )
    reproduce.add_argument("--latex", action="store_true", help="also write TABLE.tex")
    _add_batch_size_option(reproduce)
    reproduce.add_argument(
        "--no-run",
        action="store_true",
        help="run nothing: build the tables from the results store alone (no raw data needed)",
    )
    _add_common_options(reproduce)
    reproduce.set_defaults(subparser=reproduce)


def _add_plot_command(commands: _Commands, components: Components) -> None:
    from adaptable.experiments.figures import FIGURES

    plot = commands.add_parser(
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
    _add_grid_options(plot, {"datasets": DEFAULT_DATASETS, "models": DEFAULT_MODELS, "seeds": [0]})
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
    _add_common_options(plot)
    plot.set_defaults(subparser=plot)

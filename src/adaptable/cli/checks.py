"""Every problem with a command's arguments, found before any data loads or any model trains.

:func:`check_args` also puts the arguments in the form the commands use (``~`` expanded, names
in their registered case, repeats dropped, ``run``'s methods parsed), and ends in the
command's usage and one line per problem (exit status 2), never a traceback. ``drift`` reads no
data and builds no method: its options are checked by the command itself
(:func:`drift_option_problems`), so that a bad one prints no usage.
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from adaptable.cli.commands.reproduce import reproduce_request
from adaptable.cli.defaults import DEFAULT_METHODS, FEEDBACK_METHODS, PLOT_DEFAULTS
from adaptable.cli.name_checks import (
    build_methods,
    canonical_datasets,
    incompatible_methods,
    label_refusal,
    method_label,
    refused_methods,
    report_refusal,
    unknown_name_problems,
)
from adaptable.cli.options import parse_method
from adaptable.cli.path_checks import figure_problem, folder_problem, path_collisions, unwritable
from adaptable.experiments.components import Components, fold_case
from adaptable.experiments.suggest import folded_name, unknown_name

#: the options that name files or folders: each gets ``~`` expanded as a shell would
_PATH_OPTIONS = ("results", "out", "drift_figure", "report", "figure", "data_dir", "cache_dir",
                 "file")  # fmt: skip
#: the commands that read the raw data folder, and so check ``$ADAPTABLE_DATA_DIR``
_DATA_COMMANDS = ("datasets", "run", "reproduce", "plot")


def check_args(args: argparse.Namespace, components: Components) -> None:
    """Every problem with the arguments, found before any work starts; one parser error.

    Raises:
        SystemExit: status 2, after the command's usage and its problems on standard error.
    """
    _normalise(args, components)
    problems = _data_dir_problems(args)
    if getattr(args, "executor", None) == "ray" and importlib.util.find_spec("ray") is None:
        problems.append("--executor ray needs the ray package: pip install 'adaptable-tta[ray]'")
    if args.command == "run":
        problems += _run_problems(args, components)
    elif args.command == "reproduce":
        problems += _reproduce_problems(args, components, others=bool(problems))
    elif args.command == "plot":
        problems += _plot_problems(args, components)
    problems += _device_problems(args)
    problems += _output_collisions(args)
    for option in ("out", "cache_dir"):
        value = getattr(args, option, None)
        folder = None if value is None else folder_problem(value)
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


def _normalise(args: argparse.Namespace, components: Components) -> None:
    """The arguments as the commands use them: paths with ``~`` expanded, the progress style
    settled (``args.progress``: ``bars``, ``lines`` or ``off``; ``args.no_progress``: no
    bars), ``plot``'s figures gathered, names in their registered case and spelling, and no
    name or seed twice."""
    for option in _PATH_OPTIONS:  # ``--out=~/x`` reaches us unexpanded: the shell expands ~ alone
        value = getattr(args, option, None)
        if isinstance(value, str):
            setattr(args, option, os.path.expanduser(value))
    if hasattr(args, "no_progress"):
        # --progress: bars; --no-progress: nothing; neither: bars on a terminal, else lines
        asked = args.no_progress
        bars = asked is False or (asked is None and sys.stderr.isatty())
        args.progress = "bars" if bars else "off" if asked else "lines"
        args.no_progress = not bars
    if args.command == "plot":
        _collect_figures(args)
    _fold_case(args, components)
    if getattr(args, "datasets", None):
        # TableShift's identifiers and short names run, and are stored, as the task they name
        args.datasets = canonical_datasets(args.datasets)
    # a name or seed given twice is one experiment: counted twice it would inflate the plan
    # line and weigh twice in reproduce's means and standard errors
    for option in ("datasets", "models", "seeds", "scenarios", "roles"):
        values = getattr(args, option, None)
        if values:
            setattr(args, option, _unique(values))


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
        setattr(args, option, kept or list(PLOT_DEFAULTS[option]))
    args.figures = list(dict.fromkeys(figures))


def _fold_case(args: argparse.Namespace, components: Components) -> None:
    """Names given in another case (``HELOC``, ``MLP``) become the registered ones."""
    for option, kind in (("datasets", "dataset"), ("models", "model"), ("scenarios", "scenario")):
        values = getattr(args, option, None)
        if values:
            setattr(args, option, [fold_case(components, kind, v) for v in values])


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


def _run_problems(args: argparse.Namespace, components: Components) -> list[str]:
    """``run``: its names, its methods built with their options and able to run on its models
    and take what ``--feedback`` and ``--drift-figure`` ask of them. Sets ``args.methods`` where
    it was left out, and ``args.parsed_methods``: (name, options) once per experiment."""
    from adaptable.experiments.spec import drop_defaults

    problems = []
    if args.methods is None:
        labels = args.feedback is not None and args.feedback[0] > 0
        args.methods = list(FEEDBACK_METHODS if labels else DEFAULT_METHODS)
    methods: list[tuple[str, dict[str, Any]]] = []
    for text in args.methods:
        try:
            methods.append(parse_method(text))
        except argparse.ArgumentTypeError as err:
            problems.append(str(err))
    methods = [(fold_case(components, "method", name), options) for name, options in methods]
    # an option at its default names the same experiment as no option (one spec key): kept,
    # ``adaptable adaptable[preset=default]`` would count, and label, one experiment twice
    methods = [(name, drop_defaults(name, options)) for name, options in methods]
    methods = list({method_label(*method): method for method in methods}.values())
    problems += unknown_name_problems(
        components, args.datasets, args.models, args.scenarios, methods
    )
    built, unbuildable = build_methods(components, methods)
    problems += unbuildable
    problems += incompatible_methods(components, args.models, built)
    if args.feedback is not None and args.feedback[0] > 0:  # share 0: no labels to take
        problems += refused_methods(
            "--feedback", built, label_refusal,
            ("takes no late labels", "take no late labels"),
            "run those without --feedback, or leave out --methods to run "
            f"{' '.join(FEEDBACK_METHODS)} alone",
        )  # fmt: skip
    if args.drift_figure is not None:
        problems += _drift_figure_problems(args, methods, built)
    args.parsed_methods = methods
    return problems


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
        problems += refused_methods(
            "--drift-figure", built, report_refusal,
            ("keeps no drift report", "keep no drift report"), "use adaptable",
        )  # fmt: skip
    figure = figure_problem(args.drift_figure)
    if figure is None:
        figure = unwritable(args.drift_figure)
    if figure is not None:
        problems.append(f"--drift-figure {args.drift_figure}: {figure}")
    return problems


def _reproduce_problems(
    args: argparse.Namespace, components: Components, others: bool
) -> list[str]:
    """``reproduce``: its names, then (only where neither they nor the checks before, ``others``,
    found a problem) what the table asks of the options: roles with ``benchmark`` alone, and
    the like. Folds ``args.roles`` to their registered case."""
    from adaptable.datasets.benchmark_cases import ROLES
    from adaptable.experiments.reproduce import request_problems

    problems = unknown_name_problems(components, args.datasets or [], args.models or [], [], [])
    if args.roles:  # HOLDOUT: holdout, as table and dataset names are folded
        args.roles = _unique([folded_name(r, ROLES) for r in args.roles])
    if not problems and not others:
        problems += request_problems(args.table, reproduce_request(args), args.roles)
    return problems


def _plot_problems(args: argparse.Namespace, components: Components) -> list[str]:
    """``plot``: its figures, its one method (built, and able to run on its models), and its
    names; a misspelt figure that a list option took in is suggested as the figure. Sets
    ``args.method`` to that one method's name."""
    from adaptable.experiments.figures import FIGURES

    problems = []
    args.figures = _unique([folded_name(f, FIGURES) for f in args.figures])
    unknown = [f for f in args.figures if f not in FIGURES]
    problems += [unknown_name("figure", f, FIGURES) for f in unknown]
    args.method = _unique([fold_case(components, "method", m) for m in args.method])
    if len(args.method) != 1:
        problems.append(
            f"--methods: plot draws one adapted method beside the source model; got "
            f"{len(args.method)} ({' '.join(args.method)}): run it once per method"
        )
    args.method = fold_case(components, "method", args.method[0])
    method = [(args.method, {})]
    for problem in unknown_name_problems(components, args.datasets, args.models, [], method):
        # `plot --datasets heloc tsnee`: a misspelt figure after --datasets reads as one
        name = problem.split("'")[1] if problem.startswith("unknown dataset '") else ""
        close = difflib.get_close_matches(name.lower(), FIGURES, n=1, cutoff=0.75)
        if name and close:
            problem += f" (or did you mean the figure {close[0]}?)"
        problems.append(problem)
    built, unbuildable = build_methods(components, method)
    problems += unbuildable
    problems += incompatible_methods(components, args.models, built)
    return problems


def _device_problems(args: argparse.Namespace) -> list[str]:
    """``--device cuda`` where CUDA cannot run (a command that runs nothing needs none)."""
    if getattr(args, "device", None) != "cuda" or getattr(args, "no_run", False):
        return []
    from adaptable.experiments.process import cuda_problem

    problem = cuda_problem()
    return [] if problem is None else [f"--device cuda: {problem}; use --device cpu or auto"]


def _output_collisions(args: argparse.Namespace) -> list[str]:
    """An output named twice, or over the results store (which every later run reads): one
    would overwrite the other."""
    outputs = {"--results": getattr(args, "results", None)}
    outputs["--drift-figure"] = getattr(args, "drift_figure", None)
    return path_collisions(outputs, {})


def drift_option_problems(args: argparse.Namespace) -> list[str]:
    """``drift``'s options, in the options' names rather than the Python parameters' they
    become: a window of at least one batch, fractions between 0 and 1 (a tolerance of 5 meant
    as 5 points would accept any fall), a number of deviations of 0 or more, a report file
    that can be written (before the summary is printed, as the figure's is), and no output over
    the saved adapter or over the other output."""
    problems = []
    if args.last_batches is not None and args.last_batches < 1:
        problems.append(f"--last-batches: must be at least 1; got {args.last_batches}")
    if args.columns < 0:
        problems.append(f"--columns: must be 0 or more; got {args.columns}")
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
        report = unwritable(args.report) if args.report else "an empty path; name a file"
        if report is not None:
            problems.append(f"--report {args.report}: {report}")
    # the saved adapter and the two outputs: none may overwrite another
    problems += path_collisions(
        {"--report": args.report, "--figure": args.figure}, {"FILE": args.file}
    )
    return problems

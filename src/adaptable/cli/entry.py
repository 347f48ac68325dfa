"""The ``adaptable`` command's entry point: parse, check, run the command, report its end.

Every command but ``datasets`` and ``drift`` runs experiments: those get the thread limit, one
line per damaged results-store line, and one line rather than a traceback for Ctrl-C (exit
status :data:`EXIT_INTERRUPTED`) and for a Ray cluster that does not answer. Ctrl-C at any
other moment, while the command imports its modules, loads data or checks its options, is one
line and :data:`EXIT_INTERRUPTED` too: this module imports the standard library alone, and
:func:`main` everything else, inside its handler.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING, Any

from adaptable.optional import MissingExtraError  # the standard library's modules alone

if TYPE_CHECKING:
    from adaptable.experiments.components import Components

#: exit status after Ctrl-C, as a shell reports a command ended by SIGINT (128 + 2)
EXIT_INTERRUPTED = 130
#: what Ctrl-C prints before a command has run anything it could save
INTERRUPTED_LINE = "adaptable: interrupted"


def main(argv: list[str] | None = None, components: Components | None = None) -> int:
    """Entry point of the ``adaptable`` command.

    Args:
        argv: arguments (default: ``sys.argv[1:]``).
        components: dataset / model / method / shift providers
            (:class:`~adaptable.experiments.components.Components`); tests pass small doubles.

    Returns:
        the exit status: 0, 1 on an error reported in one line (a missing optional
        dependency among them), 2 on a usage error, :data:`EXIT_INTERRUPTED` after Ctrl-C
        (at any moment: one line on standard error, never a traceback).
    """
    try:
        code = _dispatch(argv, components)
        sys.stdout.flush()  # here, not at exit, so that a closed pipe is caught below
        return code
    except KeyboardInterrupt:
        # before the command's work (imports, parsing, checks) or in a command that saves
        # nothing; an experiment command says what it saved (:func:`_run_experiments`)
        print(INTERRUPTED_LINE, file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader of standard output went away (``adaptable datasets | head``): stop
        # quietly. Any other broken pipe (a worker's, say) is a real error.
        if not _stdout_reader_gone():
            raise
        _silence_stdout()
        return 1
    except MissingExtraError as err:
        # a feature of the light install's missing extras: its message says what to install
        print(f"adaptable: {err}", file=sys.stderr)
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


def _dispatch(argv: list[str] | None, components: Components | None) -> int:
    """Parse and check ``argv``, run its command, and return the command's exit status."""
    from adaptable.cli.checks import check_args
    from adaptable.cli.parser import build_parser
    from adaptable.experiments.components import Components

    components = components or Components()
    args = build_parser(components).parse_args(argv)
    check_args(args, components)
    if args.command == "datasets":
        from adaptable.cli.commands.datasets import datasets_command

        return datasets_command(args)
    if args.command == "drift":
        from adaptable.cli.commands.drift import drift_command

        return drift_command(args)
    return _run_experiments(args, components)


def _experiment_command(name: str) -> Any:
    """The function of the experiment command ``name``."""
    if name == "run":
        from adaptable.cli.commands.run import run_command

        return run_command
    if name == "reproduce":
        from adaptable.cli.commands.reproduce import reproduce_command

        return reproduce_command
    from adaptable.cli.commands.plot import plot_command

    return plot_command


def _run_experiments(args: Any, components: Components) -> int:
    """Run the experiment command of ``args``; Ctrl-C during it is one line that says what
    the results store kept."""
    from adaptable.experiments.process import limit_threads

    limit_threads(args.threads)
    from adaptable.experiments.executors import ClusterUnreachable
    from adaptable.experiments.store import report_skipped_lines

    started = time.perf_counter()
    handler = _experiment_command(args.command)
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
    skipped line is reported as every read reports it (see :func:`_dispatch`: once)."""
    from adaptable.experiments.store import ResultStore

    try:
        return len(ResultStore(path).completed())
    except OSError:
        return 0


def _interrupted_line(path: str, stored_before: int) -> str:
    """``interrupted: 3 experiments saved by this run (7 in the results store r.jsonl); ...``"""
    from adaptable.experiments.report import count

    stored = _stored_count(path)
    saved = max(0, stored - stored_before)
    return (
        f"interrupted: {count(saved, 'experiment')} saved by this run ({stored} in the "
        f"results store {path}); run the same command again to resume: saved experiments are "
        "not run again"
    )

"""Mutation testing of the method's core and the label-shift baselines (mutmut 3); not part of CI.

Mutmut changes one small thing at a time in the code (``<`` into ``<=``, ``+`` into ``-``, a
constant into another, an argument dropped, ...) and runs the tests that reach the changed
function; a mutant that no test notices "survives". The score is the share of mutants killed.

The run happens in a scratch copy (``build/mutation`` by default, ignored by git): ``src/``,
``tests/`` and ``pyproject.toml`` are copied there, a ``setup.cfg`` with the mutmut settings is
written beside them, and mutmut works in its own ``mutants/`` folder inside. The repository is
never touched. The tests are those of ``tests/core`` and ``tests/baselines`` (doctests are not
run: mutmut rewrites each function, docstrings included).

Usage (mutmut is not a dependency of the package: ``pip install mutmut==3.8.1`` first)::

    python tools/mutation.py                        # core + baselines, one child per CPU
    python tools/mutation.py --group core -j 2      # just adaptable/core, two children
    python tools/mutation.py --files src/adaptable/core/decision/rules.py
    python tools/mutation.py --report               # print the scores of the last run again
    python tools/mutation.py --files src/adaptable/core/recommended/recommended_decider.py --sample 150 -j 2
                                                    # a random sample: score and 95 % interval

Prints the mutants per module (killed, survived, timeout, no tests) and the score, and writes
every surviving mutant's diff to ``<workdir>/survivors.txt``. ``docs/maintainer/mutation.md`` holds the
last recorded figures and the survivors judged equivalent. On 2 cores the whole core takes about
half an hour. Should a run stall (children forked from mutmut's process can deadlock on mutants
of functions every test reaches), stop it with Ctrl-C and run the unchecked mutants with
``--keep --isolation forkserver --names NAME ...``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = "src/adaptable/core"
BASELINES = [
    f"src/adaptable/baselines/{name}.py"
    for name in ("em", "bbse", "prior_shift", "bcts", "online_label_shift")
]
GROUPS = {
    "core": [f"{CORE}/*.py"],
    "baselines": BASELINES,
}
TESTS = ["tests/core", "tests/baselines"]
#: exit codes mutmut records per mutant (mutmut.stats.status_by_exit_code)
STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 34: "skipped"}
STATUS |= {36: "timeout", -24: "timeout", 24: "timeout", 152: "timeout", 255: "timeout"}
STATUS |= {-11: "segfault", -9: "segfault", None: "not checked"}
#: a mutant "caught" is one the tests stopped: a failure, a timeout (e.g. an endless loop)
CAUGHT = ("killed", "timeout", "segfault")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--group", choices=[*GROUPS, "all"], default="all")
    parser.add_argument("--files", nargs="+", help="mutate only these source files")
    parser.add_argument("-j", "--max-children", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--workdir", type=Path, default=ROOT / "build" / "mutation")
    parser.add_argument("--keep", action="store_true", help="reuse the workdir's earlier results")
    parser.add_argument("--report", action="store_true", help="only print the last run's scores")
    parser.add_argument(
        "--rerun-survivors",
        action="store_true",
        help="run again only the mutants the last run did not catch (after adding tests)",
    )
    parser.add_argument(
        "--pytest-args", nargs="+", default=[], help="extra pytest arguments, e.g. --deselect ..."
    )
    parser.add_argument(
        "--time-limit",
        type=float,
        default=None,
        help="stop mutmut after this many seconds (interrupted runs keep their results; "
        "--keep continues them)",
    )
    parser.add_argument(
        "--isolation",
        choices=["fork", "forkserver"],
        default="fork",
        help="mutmut's process_isolation (forkserver: children forked from a process that ran "
        "no test)",
    )
    parser.add_argument("--debug", action="store_true", help="mutmut shows every test run")
    parser.add_argument("--names", nargs="+", help="run only these mutants")
    parser.add_argument("--mutmut", default=None, help="the mutmut executable")
    parser.add_argument(
        "--sample",
        type=int,
        default=None,
        help="run a uniform random sample of this many of the files' mutants (an estimate of "
        "the score, printed with its 95%% interval, where all of them would take hours)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seeds --sample")
    args = parser.parse_args(argv)

    patterns = args.files or [
        p for g in (GROUPS if args.group == "all" else [args.group]) for p in GROUPS[g]
    ]
    workdir = args.workdir.resolve()
    if args.rerun_survivors:
        survivors = [
            k
            for statuses in read_results(workdir).values()
            for k, s in statuses.items()
            if s not in CAUGHT
        ]
        print(f"Running again the {len(survivors)} mutants not caught last time.")
        prepare(workdir, patterns, False, args.pytest_args, args.isolation, args.debug)
        code = run_mutmut(workdir, args.max_children, args.mutmut, survivors, args.time_limit)
        if code != 0:
            print(f"mutmut exited with {code}", file=sys.stderr)
    elif args.sample:
        prepare(workdir, patterns, not args.keep, args.pytest_args, args.isolation, args.debug)
        names = sample_mutants(workdir, args.max_children, args.mutmut, args.sample, args.seed)
        print(f"Running a sample of {len(names)} mutants (seed {args.seed}).")
        code = run_mutmut(workdir, args.max_children, args.mutmut, names, args.time_limit)
        if code != 0:
            print(f"mutmut exited with {code}", file=sys.stderr)
    elif not args.report:
        fresh = not (args.keep or args.names)
        prepare(workdir, patterns, fresh, args.pytest_args, args.isolation, args.debug)
        code = run_mutmut(workdir, args.max_children, args.mutmut, args.names, args.time_limit)
        if code != 0:
            print(f"mutmut exited with {code}", file=sys.stderr)
    results = read_results(workdir)
    if not results:
        print(f"No mutmut results under {workdir / 'mutants'}.", file=sys.stderr)
        return 1
    if args.sample:
        # Only the sampled mutants were run; the others stay "not checked".
        results = {
            module: {k: v for k, v in statuses.items() if v != "not checked"}
            for module, statuses in results.items()
        }
        results = {module: statuses for module, statuses in results.items() if statuses}
    print_scores(results)
    if args.sample:
        print_interval(results)
    write_survivors(workdir, results, args.mutmut)
    return 0


def sample_mutants(
    workdir: Path, max_children: int, executable: str | None, size: int, seed: int
) -> list[str]:
    """Names of ``size`` mutants drawn uniformly (without replacement) from all of them.

    mutmut names its mutants only once it has generated them: a first ``mutmut run`` with a
    filter that matches nothing generates them (and measures which tests reach which function)
    and stops; their names are then read from its metadata.
    """
    run_mutmut(workdir, max_children, executable, ["no-such-mutant-only-generate"], None)
    names = sorted(
        k for statuses in read_results(workdir, all_keys=True).values() for k in statuses
    )
    if not names:
        raise SystemExit(f"mutmut generated no mutants under {workdir / 'mutants'}")
    return sorted(random.Random(seed).sample(names, min(size, len(names))))


def print_interval(results: dict[str, dict[str, str]]) -> None:
    """The 95 % Wilson interval of the sampled score (the share of all mutants caught)."""
    statuses = [s for per_module in results.values() for s in per_module.values()]
    n = len(statuses)
    if not n:
        return
    p = sum(s in CAUGHT for s in statuses) / n
    z = 1.96
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    print(
        f"sample of {n}: score {100 * p:.1f} %, 95 % interval {100 * (centre - half):.1f} to "
        f"{100 * (centre + half):.1f} %"
    )


def prepare(
    workdir: Path,
    patterns: list[str],
    fresh: bool,
    pytest_args: list[str],
    isolation: str = "fork",
    debug: bool = False,
) -> None:
    """The scratch copy with its mutmut settings."""
    if fresh and workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    for name in ("src", "tests"):
        target = workdir / name
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(
            ROOT / name, target, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
        )
    shutil.copy2(ROOT / "pyproject.toml", workdir / "pyproject.toml")
    # The default run adds --doctest-modules and the src/ test path; mutants run the tests only.
    pytest_args = ["-o", "addopts=--import-mode=importlib", "-p", "no:cacheprovider", *pytest_args]
    lines = [
        "[mutmut]",
        "source_paths = src",
        "only_mutate =",
        *(f"    {p}" for p in patterns),
        "do_not_mutate =",
        "    */__init__.py",
        "pytest_add_cli_args =",
        *(f"    {a}" for a in pytest_args),
        "pytest_add_cli_args_test_selection =",
        *(f"    {t}" for t in TESTS),
        "use_git_change_detection = false",
        f"process_isolation = {isolation}",
        f"debug = {str(debug).lower()}",
        "",
    ]
    (workdir / "setup.cfg").write_text("\n".join(lines))


def run_mutmut(
    workdir: Path,
    max_children: int,
    executable: str | None,
    names: list[str] | None = None,
    time_limit: float | None = None,
) -> int:
    """``mutmut run`` in the workdir; its (long, animated) output goes to ``mutmut.log``."""
    env = dict(os.environ)
    # Many children at once: one thread each, no GUI backend.
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = "1"
    env.setdefault("MPLBACKEND", "Agg")
    # mutmut forks a child per mutant from a process that already ran the tests: a GPU that torch
    # initialised there cannot be used in the children ("Cannot re-initialize CUDA in forked
    # subprocess"), so every test that trains a model would fail and every mutant count as
    # killed. The tests run on the CPU.
    env["CUDA_VISIBLE_DEVICES"] = ""
    command = [*mutmut_command(executable), "run", "--max-children", str(max_children)]
    print("$", " ".join(command), f"(in {workdir}; output in mutmut.log)", flush=True)
    log = workdir / "mutmut.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [*command, *(names or [])], cwd=workdir, env=env, stdout=out, stderr=out
        )
        try:
            code = process.wait(timeout=time_limit)
        except subprocess.TimeoutExpired:
            # mutmut stops on Ctrl-C and keeps every result so far.
            print(f"time limit of {time_limit:g} s reached: interrupting mutmut", flush=True)
            process.send_signal(signal.SIGINT)
            try:
                code = process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                code = process.wait()
    # The last lines say how it went (the spinner writes carriage returns, not newlines).
    tail = log.read_text(errors="replace").replace("\r", "\n").splitlines()[-8:]
    print("\n".join(line for line in tail if line.strip()))
    return code


def mutmut_command(executable: str | None) -> list[str]:
    if executable:
        return [executable]
    beside = Path(sys.executable).parent / "mutmut"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("mutmut")
    if found:
        return [found]
    return [sys.executable, "-c", "import sys; from mutmut.__main__ import cli; sys.exit(cli())"]


def read_results(workdir: Path, all_keys: bool = False) -> dict[str, dict[str, str]]:
    """Per source file (relative to src/), each mutant's status; only files with a mutant run,
    unless ``all_keys`` (then every generated mutant, run or not)."""
    root = workdir / "mutants" / "src"
    out: dict[str, dict[str, str]] = {}
    for meta in sorted(root.rglob("*.py.meta")):
        data = json.loads(meta.read_text())
        codes = data.get("exit_code_by_key", {})
        if codes and (all_keys or any(v is not None for v in codes.values())):
            module = str(meta.relative_to(root)).removesuffix(".meta")
            out[module] = {k: STATUS.get(v, "suspicious") for k, v in codes.items()}
    return out


def print_scores(results: dict[str, dict[str, str]]) -> None:
    """Per module and in total: the score is the share caught of the mutants *checked*; those
    an interrupted run never reached are counted apart ("unchecked")."""
    header = f"{'module':46s} {'mutants':>7s} {'killed':>7s} {'survived':>8s} {'timeout':>7s}"
    header += f" {'no tests':>8s} {'unchecked':>9s} {'score':>7s}"
    print(header)
    print("-" * len(header))
    groups: dict[str, Counter] = {}
    for module, statuses in results.items():
        counts = Counter(statuses.values())
        print(row(module, counts))
        group = "adaptable/core (all)" if "/core/" in module else "label-shift baselines (all)"
        groups.setdefault(group, Counter()).update(counts)
    print("-" * len(header))
    total = Counter()
    for name, counts in groups.items():
        print(row(name, counts))
        total.update(counts)
    print(row("everything", total))


def row(name: str, counts: Counter) -> str:
    n = sum(counts.values())
    checked = n - counts["not checked"]
    caught = sum(counts[s] for s in CAUGHT)
    score = 100.0 * caught / checked if checked else float("nan")
    return (
        f"{name:46s} {n:7d} {counts['killed']:7d} {counts['survived']:8d} "
        f"{counts['timeout']:7d} {counts['no tests']:8d} {counts['not checked']:9d} {score:6.1f}%"
    )


def write_survivors(workdir: Path, results: dict[str, dict[str, str]], executable: str | None):
    """Every mutant the tests missed, with its diff, in one file."""
    names = [k for statuses in results.values() for k, s in statuses.items() if s not in CAUGHT]
    target = workdir / "survivors.txt"
    if not names:
        target.write_text("")
        return
    # One Python process for all diffs (``mutmut show`` per mutant would start one each).
    script = (
        "import sys\n"
        "from mutmut.mutation.diff_apply import get_diff_for_mutant\n"
        "for name in sys.stdin.read().split():\n"
        "    try:\n"
        "        diff = get_diff_for_mutant(name)\n"
        "    except Exception as err:\n"
        "        diff = f'(no diff: {err!r})'\n"
        "    print(f'# {name}'); print(diff); print()\n"
    )
    python = mutmut_python(executable)
    done = subprocess.run(
        [python, "-c", script],
        input="\n".join(names),
        cwd=workdir,
        capture_output=True,
        text=True,
    )
    status = {k: s for statuses in results.values() for k, s in statuses.items()}
    text = done.stdout
    for name in names:
        text = text.replace(f"# {name}\n", f"# {name}: {status[name]}\n", 1)
    target.write_text(text + done.stderr)
    print(f"\n{len(names)} mutants not caught; their diffs: {target}")


def mutmut_python(executable: str | None) -> str:
    """The Python that has mutmut (the interpreter of the mutmut script, or this one)."""
    command = mutmut_command(executable)
    if command[0] == sys.executable:
        return sys.executable
    first = Path(command[0]).read_text(errors="replace").splitlines()[:1]
    if first and first[0].startswith("#!") and "python" in first[0]:
        return first[0][2:].strip().split()[0]
    return sys.executable


if __name__ == "__main__":
    sys.exit(main())

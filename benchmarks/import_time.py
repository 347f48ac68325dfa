"""What ``from adaptable import AdapTable`` costs in a fresh interpreter, beside its floor
``import numpy, pandas``: the median (and min) over fresh interpreters of the statement's own time,
of the whole process's wall time and of its CPU time (start-up included; on a shared machine the
CPU time is what the wall time would be on an idle one); then which slow libraries the import
loaded. Prints; asserts nothing.

Run it against two checkouts to compare versions, e.g.
    PYTHONPATH=/path/to/old/src python benchmarks/import_time.py
    python benchmarks/import_time.py

Usage:
    python benchmarks/import_time.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

#: the statements timed, each in its own fresh interpreters
STATEMENTS = {
    "floor": "import numpy, pandas",
    "adaptable": "from adaptable import AdapTable",
}
#: the libraries whose presence in sys.modules is reported after the import
SLOW = ("torch", "sklearn", "scipy", "scipy.stats", "scipy.optimize", "pandas")

_PROBE = """
import json, sys, time
start = time.perf_counter()
{statement}
seconds = time.perf_counter() - start
print(json.dumps(dict(seconds=seconds, loaded=[m for m in {slow!r} if m in sys.modules])))
"""


def run(statement: str) -> tuple[float, float, float, list[str]]:
    """(the statement's seconds, the process's wall seconds, its CPU seconds, the slow modules
    loaded) of one fresh interpreter running ``statement``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(statement=statement, slow=SLOW)],
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return found["seconds"], wall, cpu, found["loaded"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7, help="fresh interpreters per line")
    args = parser.parse_args()
    import adaptable

    print(
        f"code: {os.path.dirname(adaptable.__file__)}; python {sys.version.split()[0]}; "
        f"load average {os.getloadavg()[0]:.2f}; {args.repeats} fresh interpreters per line"
    )
    print(
        "| statement | import s (median) | import s (min) | process wall s (median) "
        "| process CPU s (median) |"
    )
    print("|---|---|---|---|---|")
    # the statements take turns, so that a change in the machine's load hits both alike
    runs: dict[str, list[tuple[float, float, float, list[str]]]] = {name: [] for name in STATEMENTS}
    for _ in range(args.repeats):
        for name, statement in STATEMENTS.items():
            runs[name].append(run(statement))
    for name, statement in STATEMENTS.items():
        seconds, walls, cpus, _ = zip(*runs[name], strict=True)
        print(
            f"| `{statement}` | {statistics.median(seconds):.3f} | {min(seconds):.3f} | "
            f"{statistics.median(walls):.3f} | {statistics.median(cpus):.3f} |"
        )
    loaded = runs["adaptable"][-1][3]
    print(
        f"`{STATEMENTS['adaptable']}` leaves in sys.modules: {', '.join(loaded) or 'none'} "
        f"(of {', '.join(SLOW)})"
    )


if __name__ == "__main__":
    main()

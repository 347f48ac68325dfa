"""``adaptable plot``: the paper's figures, from experiments run or read from the store."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from adaptable.cli.commands.workers import context_and_executor
from adaptable.experiments.components import Components, lookup_device
from adaptable.experiments.report import (
    collect_warnings,
    collected_lines,
    count,
    plan_line,
    print_warnings,
)


def plot_command(args: argparse.Namespace, components: Components) -> int:
    """``adaptable plot``: the paper's figures for each dataset / model / seed."""
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
    context, executor = context_and_executor(args, components)
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
                    progress=args.progress, method=args.method,
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

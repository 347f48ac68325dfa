"""What each test-time method costs beside the model: ``method.predict_proba`` per row against the
source model's own ``predict_proba``, measured in one run, same rows, same batches.

The source model is the seed-0 MLP of ``adaptable.models.train`` (trained once into the cache);
rows are the shuffled out-of-domain test split, in batches of ``--batch-size``. Every timed pass
starts from ``reset()``; the minimum and the median over ``--repeats`` passes are printed (the
machine may be shared: the minimum is the least disturbed pass). One torch thread. ``fit`` is
not timed here (``bench_adaptation.py`` times AdapTable's). Prints a table; asserts nothing.

Usage:
    python benchmarks/bench_methods.py --data-dir /path/to/data
        [--datasets heloc hospital_readmission] [--methods source balanced adaptable ...]
        [--rows 4096] [--batch-size 64] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import numpy as np
import torch
from _timing import timed

from adaptable import datasets, methods, models

METHODS = [
    "balanced",
    "adaptable",
    "adaptable[preset=paper]",
    "em",
    "ftat",
    "ftat[ensemble=false]",
    "fth",
    "ogd",
    "flh_ftl",
    "tent",
]


def parse(text: str) -> tuple[str, dict[str, Any]]:
    """``"ftat[ensemble=false]"`` -> ``("ftat", {"ensemble": False})`` (the CLI's spelling)."""
    from adaptable.cli import parse_method

    return parse_method(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["heloc", "hospital_readmission"])
    parser.add_argument("--methods", nargs="+", default=METHODS)
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--cache-dir", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(
        f"batch {args.batch_size}, {args.rows} rows per pass, {args.repeats} passes, "
        f"load average at start {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs\n"
    )
    print(
        "| dataset | method | us/row (min) | us/row (median) | x model (min) | x model (median) |"
    )
    print("|---|---|---|---|---|---|")
    for name in args.datasets:
        dataset = datasets.load(name, data_dir=args.data_dir)
        model = models.train("mlp", dataset, seed=0, cache_dir=args.cache_dir, device="cpu")
        order = np.random.default_rng(0).permutation(len(dataset.test.y))[: args.rows]
        X = dataset.test.X.iloc[order].reset_index(drop=True)
        batches = [X.iloc[i : i + args.batch_size] for i in range(0, len(X), args.batch_size)]
        per_row = 1e6 / len(X)

        def run_model(model: Any = model, batches: list = batches) -> None:
            for batch in batches:
                model.predict_proba(batch)

        m_med, m_min = timed(run_model, args.repeats)
        print(
            f"| {name} | model.predict_proba | {per_row * m_min:.1f} | {per_row * m_med:.1f} "
            "| 1.00 | 1.00 |",
            flush=True,
        )
        for text in args.methods:
            method_name, options = parse(text)
            method = methods.create(method_name, **options)
            method.fit(model, dataset.train.X, dataset.train.y, dataset.valid.X, dataset.valid.y)

            def run_method(method: Any = method, batches: list = batches) -> None:
                method.reset()
                for batch in batches:
                    method.predict_proba(batch)

            t_med, t_min = timed(run_method, args.repeats)
            print(
                f"| {name} | {text} | {per_row * t_min:.1f} | {per_row * t_med:.1f} | "
                f"{t_min / m_min:.2f} | {t_med / m_med:.2f} |",
                flush=True,
            )
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

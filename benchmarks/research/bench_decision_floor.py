"""Where the per-batch cost lies, end to end: the model alone, the default adapter, the default
without its label-shift reading, and the adapter's plumbing alone, timed in one run.

Four ways of predicting the same batches, run in turn (7 passes each after one warm-up pass,
medians; us per row and overhead over the model's own ``predict_proba``):

- ``model``: the source model's own ``predict_proba``;
- ``default``: ``AdapTable()``;
- ``no reading``: ``AdapTable(stream_check="model")``, the default without the label-shift
  reading of the stream (other decisions, so other outputs: a measurement of the reading's
  price, not a candidate);
- ``plumbing only``: ``AdapTable()`` whose per-batch decision is replaced by a plain softmax of
  the logits: the input checks, the shared encoding and the model call, i.e. what any decision
  rule inside the adapter would start from.

The seed-0 MLP of each dataset (one torch thread), the shuffled out-of-domain test split cycled
to 8,192 rows, batches of ``--batch-size`` rows. Prints a table; asserts nothing.

Usage::

    python benchmarks/research/bench_decision_floor.py --data-dir DIR --cache-dir DIR
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

# the product benchmarks' folder (bench_adaptation and its _timing), one level up
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_adaptation import batches_of, load

from adaptable import AdapTable
from adaptable.framework.probability import softmax


def run(predictor: Any, batches: list) -> None:
    """Predict every batch in turn (an adapter from the start of its stream)."""
    if isinstance(predictor, AdapTable):
        predictor.reset()
    for batch in batches:
        predictor.predict_proba(batch)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--datasets", nargs="+", default=["heloc", "hospital_readmission"])
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--rows", type=int, default=8192)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    torch.set_num_threads(1)
    names = ["model", "default", "no reading", "plumbing only"]
    print(f"batch {args.batch_size}, {args.rows} rows, {args.repeats} passes, us per row "
          "(median) and overhead / model\n")  # fmt: skip
    print("| dataset | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for name in args.datasets:
        dataset, model = load(name, args.data_dir, args.cache_dir)
        order = np.random.default_rng(0).permutation(len(dataset.test.y))
        X = dataset.test.X.iloc[order].reset_index(drop=True)
        batches = batches_of(X, args.batch_size, args.rows)
        rows = sum(len(b) for b in batches)
        source = (dataset.train.X, dataset.train.y, dataset.valid.X, dataset.valid.y)
        adapters = {
            "default": AdapTable(random_state=0).fit(model, *source),
            "no reading": AdapTable(random_state=0, stream_check="model").fit(model, *source),
            "plumbing only": AdapTable(random_state=0).fit(model, *source),
        }
        # the decision replaced: the adapter's own work on a batch is then the plumbing
        adapters["plumbing only"]._adapt = lambda logits, encoded, oracle: softmax(logits)

        seconds: dict[str, list[float]] = {v: [] for v in names}
        runners = {"model": model} | adapters
        for variant in names:
            run(runners[variant], batches)
        for _ in range(args.repeats):
            for variant in names:
                start = time.perf_counter()
                run(runners[variant], batches)
                seconds[variant].append(time.perf_counter() - start)
        us = {v: 1e6 * float(np.median(s)) / rows for v, s in seconds.items()}
        base = us["model"]
        cells = [f"{base:.2f}"] + [f"{us[v]:.2f} ({(us[v] - base) / base:+.2f})" for v in names[1:]]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

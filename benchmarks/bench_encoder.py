"""Per-batch cost of the shared Encoder on Hospital Readmission (46 categorical columns, 2,097
encoded columns): ``transform`` (dense float32 one-hot), ``category_codes`` and, where the
installed version has it, ``encode`` (numbers + codes, no dense matrix). Prints; asserts nothing.

Run it against two checkouts to compare versions, e.g.
    PYTHONPATH=/path/to/old/src python benchmarks/bench_encoder.py
    python benchmarks/bench_encoder.py

Usage:
    python benchmarks/bench_encoder.py [--batch-sizes 64 8192] [--rows 16384] [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

from _timing import timed

from adaptable import datasets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="hospital_readmission")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[64, 8192])
    parser.add_argument("--rows", type=int, default=16384, help="test rows encoded per repeat")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    import adaptable.encoding as encoding

    ds = datasets.load(args.dataset, data_dir=args.data_dir)
    start = time.perf_counter()
    encoder = datasets.fit_encoder(ds)
    fit_seconds = time.perf_counter() - start
    X = ds.test.X.sample(frac=1.0, random_state=0).reset_index(drop=True)
    X = X.iloc[: min(args.rows, len(X))]
    print(
        f"{args.dataset}: {encoder!r}, encoder fit on train + valid {fit_seconds:.3f} s; "
        f"code: {os.path.dirname(encoding.__file__)}; load average {os.getloadavg()[0]:.2f}"
    )
    print("| batch | call | us/row (median) | us/row (min) | ms/batch (median) |")
    print("|---|---|---|---|---|")
    calls: dict[str, Callable[..., object]] = {
        "transform": encoder.transform,
        "category_codes": encoder.category_codes,
    }
    if hasattr(encoder, "encode"):
        calls["encode"] = encoder.encode
    for size in args.batch_sizes:
        batches = [X.iloc[i : i + size] for i in range(0, len(X), size)]
        batches = [b for b in batches if len(b) == size] or batches[:1]
        rows = sum(len(b) for b in batches)
        for name, call in calls.items():
            median, best = timed(
                lambda call=call, batches=batches: [call(b) for b in batches], args.repeats
            )
            print(
                f"| {size} | {name} | {1e6 * median / rows:.2f} | {1e6 * best / rows:.2f} | "
                f"{1e3 * median / len(batches):.3f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()

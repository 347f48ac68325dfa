"""What per-column drift costs a stream: the time ``AdapTable.predict_proba`` spends reading each
batch into the per-column record, beside the adapter's own time and the model's, and the size
of that record over a long stream. Prints figures; asserts nothing.

Per dataset: a logistic regression on the package's Encoder as the model, the default adapter
fitted on the training and validation rows; batches of ``--batch-size`` test rows. Timings are
on this process's CPU clock (``_timing.CLOCKS["cpu"]``), the adapter with and without its
record timed in alternation (``_timing.timed_pair``); the record's update alone takes the
batches as the adapter's parts encoded them. Then ``--long`` batches (those batches over and
over) go through the record alone, whose size in memory and pickled is printed as it goes.

Usage:
    python benchmarks/bench_feature_drift.py [--data-dir DIR] [--datasets heloc hospital_readmission]
        [--batches 100] [--repeats 7] [--long 100000]
"""  # noqa: E501

from __future__ import annotations

import argparse
import pickle

import numpy as np
from _timing import timed, timed_pair  # the benchmarks' folder is first on sys.path
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from adaptable import AdapTable, datasets


def per_batch_costs(name: str, args: argparse.Namespace) -> None:
    ds = datasets.load(name, data_dir=args.data_dir, seed=0)
    encoder = datasets.Encoder(ds.numerical, ds.categorical)
    model = make_pipeline(encoder, LogisticRegression(max_iter=1000)).fit(ds.train.X, ds.train.y)
    method = AdapTable(random_state=0).fit(model, ds.train.X, ds.train.y, ds.valid.X, ds.valid.y)
    size = args.batch_size
    X = ds.test.X.reset_index(drop=True)
    batches = [X.iloc[i * size : (i + 1) * size] for i in range(min(args.batches, len(X) // size))]
    monitor = method.feature_monitor_

    def stream(with_record: bool):
        def run() -> None:
            method.feature_monitor_ = monitor if with_record else None
            method.reset()
            for batch in batches:
                method.predict_proba(batch)

        return run

    def model_alone() -> None:
        for batch in batches:
            model.predict_proba(batch)

    encoded = [method.encoder_.encode(batch) for batch in batches]  # as the parts hand them

    def record_alone() -> None:
        monitor.reset()
        for batch in encoded:
            monitor.update(batch)

    def record_encoding() -> None:  # an adapter whose parts encode nothing (paper preset)
        monitor.reset()
        for batch in batches:
            monitor.update(monitor.encode(batch))

    pair = timed_pair(stream(False), stream(True), args.repeats, clock="cpu")
    encoding_time = timed(record_encoding, args.repeats, clock="cpu")[0]
    model_time = timed(model_alone, args.repeats, clock="cpu")[0]
    record_time = timed(record_alone, args.repeats, clock="cpu")[0]
    us = 1e6 / len(batches)
    adapter = pair["baseline_median"] - model_time
    print(
        f"{name}: {len(monitor.encoder.numerical_)} numerical, "
        f"{len(monitor.encoder.categorical_)} categorical columns; us per batch of {size}: "
        f"model {model_time * us:.0f}, AdapTable without the record {pair['baseline_median'] * us:.0f} "
        f"(its own {adapter * us:.0f}), with it {pair['candidate_median'] * us:.0f} "
        f"(difference, median of pairs {pair['difference'] * us:.0f}); the record's "
        f"update alone {record_time * us:.0f} = {record_time / adapter:.2f} x the adapter's own, "
        f"{record_time / pair['baseline_median']:.2f} x AdapTable's whole; encoding the batch "
        f"itself as well {encoding_time * us:.0f}; feature_drift() "
        f"{timed(monitor.frame, 3)[0] * 1e3:.0f} ms"
    )  # noqa: E501
    if args.long:
        long_stream(name, monitor, encoded, args)


def long_stream(name: str, monitor, encoded: list, args: argparse.Namespace) -> None:
    """``--long`` batches (the encoded test batches over and over) through the record: its
    size after each tenfold."""
    monitor.reset()
    marks = {10**k for k in range(2, 9)} | {args.long}
    for b in range(args.long):
        monitor.update(encoded[b % len(encoded)])
        if b + 1 in marks:
            print(
                f"  {name}: after {b + 1:>7} batches ({monitor.rows_seen} rows) the record holds "
                f"{monitor.nbytes} bytes, {len(pickle.dumps(monitor))} pickled "
                f"(held-out side included)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--datasets", nargs="+", default=["heloc", "hospital_readmission"])
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--batches", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--long", type=int, default=0, help="batches of the long stream (0: none)")
    args = parser.parse_args()
    np.seterr(all="ignore")
    for name in args.datasets:
        per_batch_costs(name, args)


if __name__ == "__main__":
    main()

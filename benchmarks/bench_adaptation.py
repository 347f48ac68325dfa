"""Micro-benchmark: AdapTable's adaptation cost per row / per batch of 64 (model forward excluded)
and the calibrator's post-training time, on HELOC and Hospital Readmission. Prints; asserts nothing.

The source model is ``adaptable.models.train("mlp", dataset, seed=0)`` (cached on disk by that
function); its own inference time is printed for comparison (the target: adaptation overhead per
row no larger than the model's inference per row).

Usage:
    ADAPTABLE_DATA_DIR=/path/to/data python benchmarks/bench_adaptation.py
        [--datasets heloc hospital_readmission] [--batches 200] [--repeats 3]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from adaptable import datasets
from adaptable.core import AdapTable


def _min_seconds(function: Callable[[], Any], repeats: int) -> float:
    """Best of ``repeats`` runs: the machine is shared, and the minimum is the least disturbed."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return float(np.min(times))


def bench(name: str, n_batches: int, repeats: int, data_dir: str | None) -> None:
    """Print one dataset's figures."""
    from adaptable import models

    ds = datasets.load(name, data_dir=data_dir)
    start = time.perf_counter()
    model = models.train("mlp", ds, seed=0)
    hit = getattr(model, "cache_info", {}).get("hit")
    print(
        f"\n== {name}: source MLP ready in {time.perf_counter() - start:.1f} s (cache hit: {hit})"
    )
    order = np.random.default_rng(0).permutation(len(ds.test.y))
    X = ds.test.X.iloc[order].reset_index(drop=True)
    batches = [X.iloc[i : i + 64] for i in range(0, min(len(X), 64 * n_batches), 64)]
    rows = sum(len(b) for b in batches)
    logits = [model.predict_logits(b) for b in batches]
    encoded = [model.prepare(b) for b in batches]

    def model_full() -> None:
        for b in batches:
            model.predict_logits(b)

    def model_module() -> None:
        with torch.inference_mode():
            for e in encoded:
                model.module(e)

    t_model = _min_seconds(model_full, repeats)
    t_module = _min_seconds(model_module, repeats)
    print(
        f"model inference (encode + forward): {1e6 * t_model / rows:7.2f} us/row  "
        f"{1e3 * t_model / len(batches):6.3f} ms/batch of 64"
    )
    print(
        f"model forward only (encoded input): {1e6 * t_module / rows:7.2f} us/row  "
        f"{1e3 * t_module / len(batches):6.3f} ms/batch of 64"
    )

    for label, options in (
        ("AdapTable (gnn, complete)", {}),
        ("AdapTable (gnn, correlation)", {"adjacency": "correlation"}),
        ("AdapTable w/o calibrator", {"calibrator": "none"}),
    ):
        method = AdapTable(random_state=0, **options)
        start = time.perf_counter()
        method.fit(model, ds.train.X, ds.train.y, ds.valid.X, ds.valid.y)
        fit_s = time.perf_counter() - start
        report = method.post_training_

        def adapt(method: AdapTable = method) -> None:
            method.reset()
            for z, b in zip(logits, batches, strict=True):
                method.adapt_logits(z, b)

        t = _min_seconds(adapt, repeats)
        post = (
            f"post-training {report.seconds:5.2f} s ({len(report.train_losses)} epochs, best "
            f"{report.best_epoch}), fit total {fit_s:5.2f} s"
            if report is not None
            else f"fit total {fit_s:5.2f} s (no post-training)"
        )
        print(
            f"{label:30s} adaptation {1e6 * t / rows:7.2f} us/row  "
            f"{1e3 * t / len(batches):6.3f} ms/batch of 64 | {post}"
        )
        if report is not None:
            # Split of the per-batch cost: the calibrator's own Encoder, then the rest on
            # precomputed shift-trend inputs.
            def encode(method: AdapTable = method) -> None:
                for b in batches:
                    method._shift_input(b)

            trends = [method._shift_input(b) for b in batches]

            def core(method: AdapTable = method, trends: list = trends) -> None:
                method.reset()
                for z, trend in zip(logits, trends, strict=True):
                    method._adapt(np.asarray(z, dtype=np.float64), trend, None)

            t_enc = _min_seconds(encode, repeats)
            t_core = _min_seconds(core, repeats)
            print(
                f"{'':30s}   of which shift-trend encoding {1e6 * t_enc / rows:7.2f} us/row, "
                f"calibrator + label handler {1e6 * t_core / rows:6.2f} us/row "
                f"({1e3 * t_core / len(batches):6.3f} ms/batch)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["heloc", "hospital_readmission"])
    parser.add_argument("--batches", type=int, default=200, help="test batches timed per run")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    for name in args.datasets:
        bench(name, args.batches, args.repeats, args.data_dir)


if __name__ == "__main__":
    main()

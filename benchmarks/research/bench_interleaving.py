"""Where ``AdapTable.predict_proba``'s time goes when the model runs between the adapter's
batches, against each part timed alone. Prints a table; asserts nothing.

``predict_proba`` does three things per batch: encode the frame once (shared with a model that
uses the same Encoder), the model's forward pass on the encoded batch, and the adaptation
(calibrator and decider). Each is timed inside the real loop (timers around each part, summed
over the stream), then alone in a loop of its own. The difference is what the parts cost each
other: the two halves evict each other's working set from the caches.

Usage:
    python benchmarks/research/bench_interleaving.py --data-dir DIR [--cache-dir DIR]
        [--datasets heloc hospital_readmission] [--batch-size 64] [--repeats 5]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import torch

from adaptable import AdapTable, datasets, models
from adaptable.framework.model_adapter import checked_logits


def one_dataset(name: str, args: argparse.Namespace) -> str:
    dataset = datasets.load(name, data_dir=args.data_dir)
    model = models.train("mlp", dataset, seed=0, cache_dir=args.cache_dir, device="cpu")
    method = AdapTable(random_state=0).fit(
        model, dataset.train.X, dataset.train.y, dataset.valid.X, dataset.valid.y
    )
    if method._encoded_logits is None:
        raise SystemExit(f"{name}: the model does not share the adapter's Encoder")
    order = np.random.default_rng(0).permutation(len(dataset.test.y))
    X = dataset.test.X.iloc[order].reset_index(drop=True)
    size = args.batch_size
    batches = [X.iloc[i : i + size] for i in range(0, len(X) - size + 1, size)][:128]
    encoded = [method.encoder_.encode(b) for b in batches]
    logits = [checked_logits(method._encoded_logits(e), method.n_classes_) for e in encoded]

    def interleaved() -> dict[str, float]:
        method.reset()
        spent = {"encode": 0.0, "model": 0.0, "adapt": 0.0}
        for batch in batches:
            t0 = time.perf_counter()
            e = method.encoder_.encode(batch)
            t1 = time.perf_counter()
            z = checked_logits(method._encoded_logits(e), method.n_classes_)
            t2 = time.perf_counter()
            method._adapt(z, e, None)
            t3 = time.perf_counter()
            spent["encode"] += t1 - t0
            spent["model"] += t2 - t1
            spent["adapt"] += t3 - t2
        return spent

    def alone() -> dict[str, float]:
        spent = {}
        t0 = time.perf_counter()
        for batch in batches:
            method.encoder_.encode(batch)
        t1 = time.perf_counter()
        for e in encoded:
            checked_logits(method._encoded_logits(e), method.n_classes_)
        t2 = time.perf_counter()
        method.reset()
        t3 = time.perf_counter()
        for z, e in zip(logits, encoded, strict=True):
            method._adapt(z, e, None)
        t4 = time.perf_counter()
        spent["encode"], spent["model"], spent["adapt"] = t1 - t0, t2 - t1, t4 - t3
        return spent

    def model_alone() -> float:
        t0 = time.perf_counter()
        for batch in batches:
            model.predict_proba(batch)
        return time.perf_counter() - t0

    def end_to_end() -> float:
        method.reset()
        t0 = time.perf_counter()
        for batch in batches:
            method.predict_proba(batch)
        return time.perf_counter() - t0

    interleaved(), alone(), model_alone(), end_to_end()  # warm-up
    runs = [(interleaved(), alone(), model_alone(), end_to_end()) for _ in range(args.repeats)]
    per_batch = 1e6 / len(batches)
    best = {
        part: (
            min(r[0][part] for r in runs) * per_batch,
            min(r[1][part] for r in runs) * per_batch,
        )
        for part in ("encode", "model", "adapt")
    }
    model_us = min(r[2] for r in runs) * per_batch
    total_us = min(r[3] for r in runs) * per_batch
    cells = " | ".join(f"{inside:.0f} / {apart:.0f}" for inside, apart in best.values())
    return (
        f"| {name} | {size} | {model_us:.0f} | {total_us:.0f} | "
        f"{(total_us - model_us) / model_us:.2f} | {cells} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--datasets", nargs="+", default=["heloc", "hospital_readmission"])
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    print(
        "us per batch, min over repeats; each part: inside predict_proba's loop / alone\n\n"
        "| dataset | batch | model.predict_proba | AdapTable.predict_proba | overhead / model | "
        "encode (shared) | model's forward on the encoded batch | adaptation |\n"
        "|---|---|---|---|---|---|---|---|"
    )
    for name in args.datasets:
        print(one_dataset(name, args), flush=True)


if __name__ == "__main__":
    main()

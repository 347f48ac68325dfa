"""What the model updates cost a user: one stream with late labels through ``AdapTable`` with
``update="none"``, ``"auto"`` (fits where the labels are given) and ``"auto"`` with
``update_in_background=True``, beside the source model's own ``predict_proba`` on the same
batches. Prints tables; asserts nothing.

The stream is a domain split's out-of-domain rows in batches of 64; 5 % of each batch's labels go
to ``partial_fit(X, y, rows=ids)`` 10 batches later (the feedback protocol of the benchmark).
Sources: scikit-learn pipelines (the package's Encoder, then a logistic regression or a
histogram gradient boosting) fitted on the split's training rows.

First table, what a user pays over the whole stream (wall seconds): the model's own
``predict_proba`` on every batch, then each adapter's ``predict_proba`` and ``partial_fit``
together, as a ratio to the model. Second table, per batch: the median and 95th percentile of
``predict_proba`` alone, the same on the batches predicted while a background fit was under way,
and the longest ``partial_fit`` call (a fit where the labels are given). Third: each update's
fit, labelled rows and seconds.

    PYTHONPATH=src ADAPTABLE_DATA_DIR=DATA_DIR OMP_NUM_THREADS=1 \\
        python benchmarks/bench_model_updates.py --dataset adult_age
"""

from __future__ import annotations

import argparse
import time
from collections import deque
from typing import Any

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from adaptable import AdapTable, datasets

BATCH, SHARE, DELAY = 64, 0.05, 10


def _source(kind: str, ds: Any) -> Any:
    head = (
        LogisticRegression(max_iter=500)
        if kind == "logreg"
        else HistGradientBoostingClassifier(max_iter=100, random_state=0)
    )
    encoder = datasets.Encoder(ds.numerical, ds.categorical)
    return make_pipeline(encoder, head).fit(ds.train.X, ds.train.y)


def _run(adapter: Any, X: Any, y: np.ndarray, n_batches: int) -> dict[str, Any]:
    """The stream through ``adapter`` (``None``: the model alone is timed by the caller)."""
    rng = np.random.default_rng(0)
    pending: deque[tuple[int, np.ndarray]] = deque()
    predict, during_fit, learn = [], [], []
    for t in range(n_batches):
        while pending and pending[0][0] + DELAY < t:
            _, ids = pending.popleft()
            if len(ids):
                tick = time.perf_counter()
                adapter.partial_fit(X.iloc[ids], y[ids], rows=ids)
                learn.append(time.perf_counter() - tick)
        rows = np.arange(t * BATCH, (t + 1) * BATCH)
        fitting = adapter.updates_ is not None and adapter.updates_.fitting
        tick = time.perf_counter()
        adapter.predict_proba(X.iloc[rows])
        (during_fit if fitting else predict).append(time.perf_counter() - tick)
        pending.append((t, rows[rng.random(BATCH) < SHARE]))
    return {"predict": predict, "during_fit": during_fit, "learn": learn}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="adult_age")
    parser.add_argument("--models", nargs="+", default=["logreg", "hgb"])
    parser.add_argument("--batches", type=int, default=300)
    args = parser.parse_args()
    ds = datasets.load(args.dataset, seed=0)
    X, y = ds.test.X.reset_index(drop=True), ds.test.y
    n_batches = min(args.batches, len(y) // BATCH)
    settings = {
        "none": {"update": "none"},
        "auto": {"update": "auto"},
        "auto, background": {"update": "auto", "update_in_background": True},
    }
    for kind in args.models:
        model = _source(kind, ds)
        tick = time.perf_counter()
        for t in range(n_batches):
            model.predict_proba(X.iloc[t * BATCH : (t + 1) * BATCH])
        model_seconds = time.perf_counter() - tick
        print(f"\n{args.dataset}, {kind} pipeline, {n_batches} batches of {BATCH}, "
              f"{SHARE:.0%} of labels {DELAY} batches late")  # fmt: skip
        print(f"{'':18} {'stream s':>9} {'/ model':>8} {'predict ms p50':>15} {'p95':>6} "
              f"{'while fitting p50':>18} {'p95':>6} {'longest partial_fit ms':>23}")  # fmt: skip
        print(f"{'model alone':18} {model_seconds:9.2f} {1.0:8.2f}")
        fits: dict[str, Any] = {}
        for name, options in settings.items():
            adapter = AdapTable(random_state=0, **options)
            adapter.fit(model, ds.train.X, ds.train.y, ds.valid.X, ds.valid.y)
            tick = time.perf_counter()
            times = _run(adapter, X, y, n_batches)
            total = time.perf_counter() - tick
            during = np.array(times["during_fit"]) * 1e3
            predict = np.array(times["predict"]) * 1e3
            fitting = (
                f"{np.median(during):18.2f} {np.percentile(during, 95):6.2f}"
                if len(during)
                else f"{'-':>18} {'-':>6}"
            )
            print(
                f"{name:18} {total:9.2f} {total / model_seconds:8.2f} "
                f"{np.median(predict):15.2f} {np.percentile(predict, 95):6.2f} {fitting} "
                f"{max(times['learn'], default=0) * 1e3:23.1f}"
            )
            if adapter.updates_ is not None:
                fits[name] = adapter.updates_
        for name, updates in fits.items():
            history = ", ".join(
                f"{c.name}@{c.n_labelled}: {c.seconds:.2f}s" for c in updates.history
            )
            print(f"  fits ({name}): {history}; in use at the end: {updates.in_use}")


if __name__ == "__main__":
    main()

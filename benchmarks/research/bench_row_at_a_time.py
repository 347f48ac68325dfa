"""What a row costs when rows come one at a time: the model's own ``predict_proba`` against
``AdapTable().predict_proba`` on the same row, given as a one-row DataFrame, as a dict (column
-> value) and as a pandas Series; the model gets the row as a one-row DataFrame (for a dict or
a Series, the ``pandas.DataFrame([row])`` a caller would build for it), and the same rows in
batches of 64 for reference.

The model: a logistic regression over the package's Encoder (a scikit-learn pipeline on the
raw DataFrame), trained on Hospital Readmission's training split; the adapter fitted on the
training and held-out splits. The first ``--rows`` rows of the out-of-domain test split, one
at a time, each pass from the start of the stream (``reset``). The model and each way of
calling the adapter run in alternation (``_timing.timed_pair``, CPU time of this process, so
that other work on a shared machine weighs less); ms per row, medians of ``--repeats`` passes.
Prints a table; asserts nothing.

Usage::

    python benchmarks/research/bench_row_at_a_time.py [--rows 200] [--repeats 5]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

# the product benchmarks' folder (its _timing), one level up
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _timing import timed_pair

from adaptable import AdapTable, datasets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    ds = datasets.load("hospital_readmission")
    model = make_pipeline(
        datasets.Encoder(ds.numerical, ds.categorical), LogisticRegression(max_iter=1000)
    ).fit(ds.train.X, ds.train.y)
    adapter = AdapTable(random_state=0).fit(model, ds.train.X, ds.train.y, ds.valid.X, ds.valid.y)
    test = ds.test.X.iloc[: args.rows]
    frames = [test.iloc[[i]] for i in range(len(test))]
    records = test.to_dict(orient="records")
    series = [test.iloc[i] for i in range(len(test))]

    def model_on(rows: list, build: bool = False) -> None:
        for row in rows:
            model.predict_proba(pd.DataFrame([row]) if build else row)

    def adapter_on(rows: list) -> None:
        adapter.reset()
        for row in rows:
            adapter.predict_proba(row)

    # the same probabilities whichever way the row comes
    adapter.reset()
    as_frames = np.vstack([adapter.predict_proba(row) for row in frames[:20]])
    for rows in (records, series):
        adapter.reset()
        proba = np.vstack([adapter.predict_proba(row) for row in rows[:20]])
        np.testing.assert_allclose(proba, as_frames)

    batches = [test.iloc[i : i + 64] for i in range(0, len(test), 64)]
    print(f"{len(test)} rows, {args.repeats} passes; ms per row (CPU time, medians)")
    print("| rows given as | model alone | adapter | adapter / model |")
    print("|---|---|---|---|")
    cases = (
        ("one-row DataFrame", frames, False),
        ("dict", records, True),
        ("Series", series, True),
        ("batches of 64 (reference)", batches, False),
    )
    for name, rows, build in cases:
        pair = timed_pair(
            lambda rows=rows, build=build: model_on(rows, build),
            lambda rows=rows: adapter_on(rows),
            args.repeats,
            "cpu",
        )
        per_row = 1e3 / len(test)
        print(
            f"| {name} | {pair['baseline_median'] * per_row:.3f} | "
            f"{pair['candidate_median'] * per_row:.3f} | {pair['ratio']:.2f} |"
        )


if __name__ == "__main__":
    main()

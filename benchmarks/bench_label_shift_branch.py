"""What the default AdapTable costs while it corrects a long pure label shift on every batch.

The real benchmarks' label-shift streams are short (a few hundred to a few thousand rows, cut
from in-domain test splits), so the label-shift branch (MAP-EM over the reservoir, the
likelihood-ratio test, the plug-in decision) decides only part of a timed stream. Here a
synthetic task (``adaptable.datasets.synthetic.make_shift_dataset``, no covariate shift, 40,000
source rows) gives an 8,192-row stream whose label distribution is the reverse of the source's,
with a scikit-learn logistic regression over the package's Encoder as the model. Printed per
class count: the model's own ``predict_proba`` and ``AdapTable.predict_proba`` (which calls the
model) in us per row at batch 64, their ratio (median over alternating pairs of runs), and how
many batches each branch decided. Asserts nothing.

Usage:
    python benchmarks/bench_label_shift_branch.py [--classes 2 3] [--repeats 5] [--batch 64]
"""

from __future__ import annotations

import argparse
from collections import Counter

from _timing import timed_pair
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from adaptable import AdapTable, datasets
from adaptable.datasets.synthetic import make_shift_dataset

PRIORS = {2: ([0.7, 0.3], [0.3, 0.7]), 3: ([0.5, 0.3, 0.2], [0.2, 0.3, 0.5])}


def bench(n_classes: int, batch: int, repeats: int) -> str:
    source_prior, target_prior = PRIORS[n_classes]
    task = make_shift_dataset(
        n_train=40000,
        n_valid=8000,
        n_test=8192,
        n_classes=n_classes,
        source_prior=source_prior,
        target_prior=target_prior,
        covariate_shift=0.0,
        seed=1,
    )
    model = make_pipeline(
        datasets.Encoder(task.numerical, task.categorical), LogisticRegression(max_iter=500)
    ).fit(task.train.X, task.train.y)
    method = AdapTable(random_state=0).fit(
        model, task.train.X, task.train.y, task.valid.X, task.valid.y
    )
    batches = [task.test.X.iloc[i : i + batch] for i in range(0, len(task.test.X), batch)]

    def run_model() -> None:
        for rows in batches:
            model.predict_proba(rows)

    def run_adaptable() -> None:
        method.reset()
        for rows in batches:
            method.predict_proba(rows)

    pair = timed_pair(run_model, run_adaptable, repeats)
    method.reset()
    rules = Counter()
    for rows in batches:
        method.predict_proba(rows)
        rules[method.state.decision_rule] += 1
    us = 1e6 / len(task.test.X)
    return (
        f"| {n_classes} | {pair['baseline_median'] * us:.2f} | {pair['candidate_median'] * us:.2f} | "
        f"{pair['ratio']:.2f} | {dict(rules)} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--classes", nargs="+", type=int, default=[2, 3], choices=[2, 3])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()
    print(f"batch {args.batch}, 8,192 stream rows, {args.repeats} alternating pairs of runs\n")
    print("| classes | model us/row | AdapTable us/row | ratio | batches per decision rule |")
    print("|---|---|---|---|---|")
    for n_classes in args.classes:
        print(bench(n_classes, args.batch, args.repeats), flush=True)


if __name__ == "__main__":
    main()

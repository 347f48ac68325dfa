"""On how many rows of a stream do argmax and the balanced rule disagree, and what is it worth?

A diagnostic for the benchmark cases where the two simple rules' macro-F1 differ by several
points: on a short stream the gap can rest on a handful of rows, which no unlabelled test can
single out. For each (model, scenario, seed) the source model predicts the whole stream once;
argmax p(y|x) and the balanced rule argmax p(y|x) / p_s(y) are compared row by row.

Usage (the generality benchmark's CMC education Dirichlet label shifts)::

    ADAPTABLE_DATA_DIR=/path/to/data python benchmarks/rule_disagreement.py \\
        --dataset cmc_education --scenarios prior_dirichlet_0 prior_dirichlet_1 \\
        prior_dirichlet_2 --models logreg mlp xgboost --seeds 0 1 2 --cache-dir .cache/models

Prints p_s and the validation size, then one line per (model, scenario): for each seed the
stream's rows, the rows on which the rules disagree, and the balanced rule's macro-F1 minus
argmax's in points.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from sklearn.metrics import f1_score

from adaptable.core.decision import prior_adjusted
from adaptable.experiments.runner import RunContext, get_dataset, source_model


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--scenarios", nargs="+", default=["natural"])
    parser.add_argument("--models", nargs="+", default=["logreg", "xgboost", "mlp"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--cache-dir", default=None)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")  # unseen-category and convergence warnings of the sources

    context = RunContext(data_dir=args.data_dir, cache_dir=args.cache_dir, device="cpu")
    dataset = get_dataset(args.dataset, context)
    prior = np.asarray(dataset.source_prior(), dtype=np.float64)
    print(
        f"{args.dataset}: p_s {np.round(prior, 3).tolist()}, validation rows {len(dataset.valid.y)}"
    )
    for model_name in args.models:
        for scenario in args.scenarios:
            cells = []
            for seed in args.seeds:
                model = source_model(args.dataset, model_name, seed, context)
                stream = context.components.apply_shift(scenario, dataset, seed)
                labels = np.asarray(stream.y, dtype=np.int64)
                proba = np.asarray(model.predict_proba(stream.X), dtype=np.float64)
                argmax = proba.argmax(axis=1)
                balanced = prior_adjusted(proba, prior).argmax(axis=1)
                gain = f1_score(labels, balanced, average="macro") - f1_score(
                    labels, argmax, average="macro"
                )
                cells.append(
                    f"seed {seed}: {len(labels)} rows, {int((argmax != balanced).sum())} differ, "
                    f"{100 * gain:+.1f}"
                )
            print(f"{model_name:8s} {scenario:18s} " + " | ".join(cells))


if __name__ == "__main__":
    main()

"""What an unlabelled adapter could have known: for each case, which of argmax and the balanced
rule argmax p(y|x) / p_s(y) each of its readings favours, beside the truth.

For every (dataset, scenario, source model, seed) it prints, on the runner's own test stream
(cached source models, stream order and batches of the experiments):

* the stream's length, and the rows where the two rules disagree, with how many of them each
  rule gets right (test labels: the truth, which no adapter sees);
* the same on the held-out (validation) rows, with ``choose_rule``'s bootstrap evidence;
* macro-F1 of both rules on the stream (truth), and their expected macro-F1 under three
  readings: the held-out rows (at the source's class mix), the stream's posteriors as they are
  (a covariate shift) and the same posteriors re-weighted by p_t / p_s (a label shift; p_t the
  MAP-EM estimate with a Dirichlet prior of ``--strength`` rows at p_s, the default's second
  reading); the rule each favours in brackets;
* the true class mix of the stream, the MAP estimate and plain maximum-likelihood EM's.

The readings are taken over the whole stream at its end (the adapter reads them batch by batch
on a reservoir of at most 4,096 rows), so they show what the data could tell, not what the
adapter decided. ``docs/research/design_experiments.md`` ("What the data can show") quotes its
output.

Usage::

    python benchmarks/research/witnesses.py DATASET:SCENARIO:MODEL [...] [--seeds 0 1 2]
        [--strength 64] [--data-dir DIR]

e.g. ``cmc_education:prior_dirichlet_0:mlp adult_education:natural:xgboost``.
"""

from __future__ import annotations

import argparse
import os
import warnings

import numpy as np

from adaptable.core.decision.rules import choose_rule, confusion, expected_confusion, score
from adaptable.core.recommended.prior_estimate import OnlinePriorEstimate
from adaptable.experiments.components import RunContext, get_dataset, source_model
from adaptable.experiments.spec import BATCH_SIZE

OBJECTIVE = "macro_f1"


def stream_of(context: RunContext, dataset, scenario: str, model, seed: int):
    """(posteriors, labels) of the runner's test stream, batch by batch as the runner does."""
    posteriors, labels = [], []
    for X, y in context.components.apply_shift(scenario, dataset, seed).batches(BATCH_SIZE):
        posteriors.append(np.asarray(model.predict_proba(X), dtype=np.float64))
        labels.append(np.asarray(y))
    return np.concatenate(posteriors), np.concatenate(labels)


def rules_of(posteriors: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """(2, n): argmax and the balanced rule."""
    return np.stack([posteriors.argmax(axis=1), (posteriors / prior).argmax(axis=1)])


def disagreement(rules: np.ndarray, labels: np.ndarray) -> str:
    """'k (argmax right a / balanced right b)' over the rows where the two rules disagree."""
    differ = rules[0] != rules[1]
    right = [int(np.sum(rule[differ] == labels[differ])) for rule in rules]
    return f"{int(differ.sum())} ({right[0]} / {right[1]})"


def pair(scores) -> str:
    """'argmax / balanced [the rule favoured]' in points."""
    first, second = (100 * float(s) for s in scores)
    return f"{first:.1f}/{second:.1f} [{'bal' if second > first else 'arg'}]"


def estimate(posteriors: np.ndarray, prior: np.ndarray, strength: float) -> np.ndarray:
    """The MAP-EM estimate of p_t over every stream row (Dirichlet prior at p_s; 0: plain ML)."""
    estimator = OnlinePriorEstimate(
        prior, strength=strength, capacity=len(posteriors), center="source"
    )
    estimator.add(posteriors)
    return estimator.estimate(max_iterations=1000, tolerance=1e-10)


def report(context: RunContext, case: str, seeds: list[int], strength: float) -> None:
    name, scenario, model_name = case.split(":")
    dataset = get_dataset(name, context)
    prior = dataset.source_prior()
    n_classes = len(prior)
    for seed in seeds:
        model = source_model(name, model_name, seed, context)
        valid = np.asarray(model.predict_proba(dataset.valid.X), dtype=np.float64)
        valid_labels = np.asarray(dataset.valid.y)
        held_out = choose_rule(valid, valid_labels, prior, OBJECTIVE, seed=seed)
        posteriors, labels = stream_of(context, dataset, scenario, model, seed)
        rules = rules_of(posteriors, prior)
        truth = [score(confusion(labels, rule, n_classes), OBJECTIVE) for rule in rules]
        covariate = score(expected_confusion(posteriors, rules), OBJECTIVE)
        map_prior = estimate(posteriors, prior, strength)
        reweighted = posteriors * map_prior / prior
        reweighted /= reweighted.sum(axis=1, keepdims=True)
        label_shift = score(expected_confusion(reweighted, rules), OBJECTIVE)
        true_prior = np.bincount(labels, minlength=n_classes) / len(labels)
        print(
            f"{case} seed {seed}: n={len(labels)}, disagree {disagreement(rules, labels)}, "
            f"held-out {disagreement(rules_of(valid, prior), valid_labels)} | "
            f"truth {pair(truth)} | held-out {pair([held_out.source_score, held_out.balanced_score])}"
            f" evidence {held_out.evidence:.2f} | covariate reading {pair(covariate)} | "
            f"label-shift reading {pair(label_shift)} | p_t true {np.round(true_prior, 2)}, "
            f"MAP {np.round(map_prior, 2)}, ML {np.round(estimate(posteriors, prior, 0.0), 2)}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="+", metavar="DATASET:SCENARIO:MODEL")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--strength", type=float, default=64.0)
    parser.add_argument("--data-dir", default=os.environ.get("ADAPTABLE_DATA_DIR"))
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=UserWarning)
    context = RunContext(data_dir=args.data_dir, device="cpu")
    for case in args.cases:
        report(context, case, args.seeds, args.strength)


if __name__ == "__main__":
    main()

"""How far the drift report's unlabelled performance estimate is from the realised one on long
pure label-shift streams, and what the miss comes from. Prints a table; asserts nothing.

For each dataset (seed-0 MLP source, ``adaptable.models.train``), scenario (``prior_0.1`` ...:
the in-domain test split resampled to a positive rate, a pure label shift) and seed, the default
``AdapTable()`` adapts the stream in batches without labels; then, over the whole stream:

- ``report``: the report's estimate of the macro-F1 (``estimated_source_so_far`` for the
  unadapted model, ``estimated_adapter_so_far`` for the adapter, last batch) and the realised
  one (``real``);
- ``prior``: the adapter's estimate of the positive rate (``prior_1`` of the last batch)
  against the stream's true rate;
- ``rates x true prior``: the unadapted model's macro-F1 computed from its confusion rates on
  the held-out source rows (``dataset.valid``: P(argmax = k | y)) and the stream's TRUE label
  distribution. Under a pure label shift these rates carry over to the target, so this is what
  an estimate could reach if it knew the label distribution: the part of the report's miss that
  the label-distribution estimate causes. It reads test labels: a diagnosis, never an
  estimate;
- ``rates x estimated prior``: the same rates with the adapter's estimated prior instead.

Usage:
    python benchmarks/report_estimate.py --data-dir DIR [--cache-dir DIR]
        [--datasets heloc hospital_readmission] [--scenarios prior_0.1 prior_0.5 prior_0.9]
        [--seeds 0 1 2] [--batch-size 64] [--calibrator auto]

``--calibrator`` is ``AdapTable(calibrator=...)``: ``auto`` (the default preset's: none), or a
calibrator fitted on the held-out rows (``temperature``, ``platt``, ...) whose posteriors the
adapter's label-distribution estimate, decisions and report then read.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import torch
from sklearn.metrics import f1_score

from adaptable import AdapTable, datasets, models, shifts
from adaptable.core.decision import confusion, score


def macro_f1(expected: np.ndarray) -> float:
    """Macro-F1 (points) of an expected confusion matrix, rows the true class (the package's
    scoring, as the report's: a class absent from truth and predictions is left out)."""
    return 100 * float(score(expected, "macro_f1"))


def confusion_rates(predicted: np.ndarray, labels: np.ndarray, n_classes: int) -> np.ndarray:
    """P(predicted = k | y) per true class y (rows), on labelled rows (0 for an absent class)."""
    counts = confusion(labels, predicted, n_classes)
    totals = counts.sum(axis=1, keepdims=True)
    return np.divide(counts, totals, out=np.zeros_like(counts), where=totals > 0)


def one_stream(model, method, dataset, scenario: str, seed: int, batch_size: int) -> dict:
    """The figures of one stream (see the module docstring)."""
    stream = shifts.apply(scenario, dataset, seed=seed)
    X, y = stream.X.reset_index(drop=True), np.asarray(stream.y)
    method.reset()
    adapted = [
        method.predict_proba(X.iloc[i : i + batch_size]).argmax(axis=1)
        for i in range(0, len(X), batch_size)
    ]
    adapter, source = np.concatenate(adapted), model.predict_proba(X).argmax(axis=1)
    last = method.report().iloc[-1]
    n_classes = dataset.n_classes
    held_out = confusion_rates(
        model.predict_proba(dataset.valid.X).argmax(axis=1), np.asarray(dataset.valid.y), n_classes
    )
    truth = np.bincount(y, minlength=n_classes) / len(y)
    estimated = np.array([last[f"prior_{k}"] for k in range(n_classes)])
    labels = list(range(n_classes))
    return {
        "rows": len(y),
        "source_estimate": 100 * last["estimated_source_so_far"],
        "source_real": 100 * f1_score(y, source, average="macro", labels=labels),
        "adapter_estimate": 100 * last["estimated_adapter_so_far"],
        "adapter_real": 100 * f1_score(y, adapter, average="macro", labels=labels),
        "prior_estimate": float(estimated[-1]),
        "prior_true": float(truth[-1]),
        "rates_true_prior": macro_f1(truth[:, None] * held_out),
        "rates_estimated_prior": macro_f1(estimated[:, None] * held_out)
        if np.isfinite(estimated).all()
        else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--datasets", nargs="+", default=["heloc", "hospital_readmission"])
    parser.add_argument("--scenarios", nargs="+", default=["prior_0.1", "prior_0.5", "prior_0.9"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--calibrator", default="auto", help="AdapTable(calibrator=...)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    print(
        "| dataset | scenario | seed | rows | source: report / real | adapter: report / real | "
        "positive rate: estimated / true | source: rates x true prior | rates x estimated prior |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    errors = []
    for name in args.datasets:
        dataset = datasets.load(name, data_dir=args.data_dir)
        model = models.train("mlp", dataset, seed=0, cache_dir=args.cache_dir, device="cpu")
        method = AdapTable(random_state=0, calibrator=args.calibrator).fit(
            model, dataset.train.X, dataset.train.y, dataset.valid.X, dataset.valid.y
        )
        for scenario in args.scenarios:
            for seed in args.seeds:
                r = one_stream(model, method, dataset, scenario, seed, args.batch_size)
                print(
                    f"| {name} | {scenario} | {seed} | {r['rows']} | "
                    f"{r['source_estimate']:.1f} / {r['source_real']:.1f} | "
                    f"{r['adapter_estimate']:.1f} / {r['adapter_real']:.1f} | "
                    f"{r['prior_estimate']:.3f} / {r['prior_true']:.3f} | "
                    f"{r['rates_true_prior']:.1f} | {r['rates_estimated_prior']:.1f} |",
                    flush=True,
                )
                errors.append(
                    [
                        r["source_estimate"] - r["source_real"],
                        r["adapter_estimate"] - r["adapter_real"],
                        r["rates_true_prior"] - r["source_real"],
                        r["rates_estimated_prior"] - r["source_real"],
                    ]
                )
    e = np.abs(np.array(errors))
    print(
        f"\n{len(e)} streams. Within 2 points / mean absolute error: report, unadapted model "
        f"{(e[:, 0] <= 2).mean():.0%} / {e[:, 0].mean():.1f}; report, adapter "
        f"{(e[:, 1] <= 2).mean():.0%} / {e[:, 1].mean():.1f}; rates x true prior "
        f"{(e[:, 2] <= 2).mean():.0%} / {e[:, 2].mean():.1f}; rates x estimated prior "
        f"{np.nanmean(e[:, 3] <= 2):.0%} / {np.nanmean(e[:, 3]):.1f}"
    )


if __name__ == "__main__":
    main()

"""Late labels on synthetic streams: what the labelled-rows parts recover, before integration.

A small driver stands in for the recommended decider: per batch it decides with the unlabelled
rule (the held-out choice between argmax and the balanced rule, ``decision.choose_rule``) and
the labelled-rows parts (:class:`adaptable.core.labels.LabelledFeedback`), then, ``delay``
batches later, reveals the labels of a random ``share`` of that batch's rows to them. Every
row is scored as predicted before its label arrived.

Shifts of a two-class Gaussian source (logistic-regression model, 75 % class 0):

- ``concept``: class 0's mean moves towards class 1's (the labels' share stays): p(y|x)
  moves, the model over-calls class 1, and no re-weighting by p_t / p_s can help;
- ``label``: pure label shift to 40 % class 0, with the model's posteriors as they are
  (``label``) or with its class-1 logit raised by 0.8 (``label_biased``: miscalibrated, so the
  unlabelled MAP-EM estimate is off and only labels can fix it);
- ``majority``: pure label shift to 95 % class 0 (the minority gets rarer: rules that call it
  more often lose), and ``none``: no shift at all; both check that labels cost nothing where
  there is nothing to gain.

Per setting it prints macro-F1 (%) over the stream of the unadapted model, the unlabelled rule,
the driver with feedback, the three label-only anchors (``adaptable.baselines.labelled``) and a
model refitted on a separate target sample (the reference), the share of the gap between the
unadapted model and the reference that feedback recovers, the final prior estimates' error,
and the worst seed's gain of feedback over the better of the unadapted model and the
unlabelled rule.

Usage::

    python benchmarks/research/feedback_synthetic.py                 # shares 1/5/20 %, delays 0/10
    python benchmarks/research/feedback_synthetic.py --seeds 0 1 2 --batches 150
"""

from __future__ import annotations

import argparse
import time
from collections import deque
from dataclasses import dataclass

import numpy as np
from sklearn.linear_model import LogisticRegression

from adaptable.baselines.labelled import LabelledOnline, LabelledPrior, LabelledRecalibration
from adaptable.core import softmax
from adaptable.core.decision.rules import choose_rule, confusion, plugin_weights, score
from adaptable.core.labels import LabelledFeedback, standard_rules, unlabelled_worth
from adaptable.core.recommended.prior_estimate import OnlinePriorEstimate, prior_center

SOURCE_PRIOR = (0.75, 0.25)
CLASS_1_MEAN = np.array([1.5, 0.0])
BATCH = 64
#: the concept shift moves both classes by this (the optimal threshold moves with them)
SHIFT = np.array([1.0, 0.0])


@dataclass
class Stream:
    """One synthetic task: source train / held-out rows, the target stream, a target sample."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_valid: np.ndarray
    y_valid: np.ndarray
    x_stream: np.ndarray
    y_stream: np.ndarray
    x_refit: np.ndarray
    y_refit: np.ndarray
    target_prior: np.ndarray
    logit_bias: np.ndarray


def draw(n: int, prior: tuple[float, float], means: tuple[np.ndarray, np.ndarray], rng):
    y = (rng.random(n) >= prior[0]).astype(np.int64)
    x = rng.normal(size=(n, 2)) + np.where(y[:, None] == 1, means[1], means[0])
    return x, y


def make_stream(kind: str, n_stream: int, seed: int) -> Stream:
    """The source and target of one shift (see the module docstring)."""
    rng = np.random.default_rng(seed)
    source_means = (np.zeros(2), CLASS_1_MEAN)
    x_train, y_train = draw(4000, SOURCE_PRIOR, source_means, rng)
    x_valid, y_valid = draw(1000, SOURCE_PRIOR, source_means, rng)
    bias = np.zeros(2)
    if kind == "concept":
        target_prior, target_means = SOURCE_PRIOR, (SHIFT, CLASS_1_MEAN + SHIFT)
    elif kind in ("label", "label_biased"):
        target_prior, target_means = (0.4, 0.6), source_means
        bias = np.array([0.0, 0.8]) if kind == "label_biased" else bias
    elif kind == "majority":
        target_prior, target_means = (0.95, 0.05), source_means
    elif kind == "none":
        target_prior, target_means = SOURCE_PRIOR, source_means
    else:
        raise ValueError(f"unknown shift {kind!r}")
    x_stream, y_stream = draw(n_stream, target_prior, target_means, rng)
    x_refit, y_refit = draw(20000, target_prior, target_means, rng)
    return Stream(
        x_train, y_train, x_valid, y_valid, x_stream, y_stream, x_refit, y_refit,
        np.array(target_prior), bias,
    )  # fmt: skip


class BiasedModel:
    """A logistic regression whose logits get a fixed per-class offset (a miscalibrated model)."""

    def __init__(self, model: LogisticRegression, bias: np.ndarray) -> None:
        self.model, self.bias, self.classes_ = model, bias, model.classes_

    def predict_logits(self, X: np.ndarray) -> np.ndarray:
        margin = self.model.decision_function(X)
        return np.stack([np.zeros_like(margin), margin], axis=1) + self.bias


class Driver:
    """The stand-in decider: the unlabelled rule, the labelled-rows parts, delayed labels.

    Args:
        logits_valid, y_valid: the held-out rows' logits and labels.
        source_prior: p_s.
        objective: the metric decided for.
        seed: seeds the feedback parts and the prior estimate's reservoir.
        anchor: the unlabelled decision's rule, 0 argmax or 1 balanced (default: the held-out
            choice).
    """

    def __init__(
        self, logits_valid, y_valid, source_prior, objective="macro_f1", seed=0, anchor=None
    ):
        self.source_prior, self.objective = source_prior, objective
        proba_valid = softmax(logits_valid)
        choice = choose_rule(proba_valid, y_valid, source_prior, objective, seed=seed)
        self.anchor = (1 if choice.name == "balanced" else 0) if anchor is None else anchor
        self.estimate = OnlinePriorEstimate(
            source_prior, strength=64.0, seed=seed, center=prior_center(objective)
        )
        self.feedback = LabelledFeedback(source_prior, objective, seed=seed)
        self.feedback.fit_heldout(np.log(proba_valid), y_valid)
        self.prior_error: float | None = None

    def decide(self, logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The batch's decisions with feedback, and the unlabelled rule's, (n,) each."""
        proba = softmax(logits)
        self.estimate.add(proba)
        unlabelled = self.estimate.estimate()
        stream = self.estimate.reservoir
        worth = unlabelled_worth(
            stream, self.source_prior, unlabelled, self.estimate.n_seen / len(stream)
        )
        target = self.feedback.prior(unlabelled, worth).mean
        rules = standard_rules(
            self.source_prior,
            target,
            plugin_weights(self.estimate.target_posteriors(prior=target), self.objective),
            plugin_weights(stream, self.objective),
        )
        log_p = np.log(proba)
        decision = self.feedback.decide(
            rules, self.anchor, target_prior=target, decide_on=np.log(stream)
        )
        return decision.rule.predict(log_p), rules[self.anchor].predict(log_p)

    def learn(self, logits: np.ndarray, labels: np.ndarray) -> None:
        """Labels of rows decided earlier (their logits as scored then)."""
        self.feedback.add(np.log(softmax(logits)), labels)


def macro_f1(y: np.ndarray, pred: np.ndarray) -> float:
    return 100.0 * float(score(confusion(y, pred, 2), "macro_f1"))


def run(
    stream: Stream,
    share: float,
    delay: int,
    seed: int,
    with_anchors: bool = True,
    anchor: int | None = None,
) -> dict[str, float]:
    """One stream with feedback: macro-F1 of every method, the gap recovered, prior errors
    (``with_anchors=False`` leaves the label-only anchors out; ``anchor`` forces the unlabelled
    decision, see :class:`Driver`)."""
    source = LogisticRegression().fit(stream.x_train, stream.y_train)
    model = BiasedModel(source, stream.logit_bias)
    p_s = np.bincount(np.concatenate([stream.y_train, stream.y_valid]), minlength=2) / (
        len(stream.y_train) + len(stream.y_valid)
    )
    logits_valid = model.predict_logits(stream.x_valid)
    driver = Driver(logits_valid, stream.y_valid, p_s, seed=seed, anchor=anchor)
    anchors = {
        cls.name: cls(seed=seed).fit(
            model, stream.x_train, stream.y_train, stream.x_valid, stream.y_valid
        )
        for cls in (LabelledRecalibration, LabelledPrior, LabelledOnline)
        if with_anchors
    }
    rng = np.random.default_rng([seed, 1])
    pending: deque[tuple[int, np.ndarray]] = deque()
    predictions = {name: [] for name in ["feedback", "unlabelled", *anchors]}
    logits_stream = model.predict_logits(stream.x_stream)
    for t, start in enumerate(range(0, len(stream.y_stream), BATCH)):
        while pending and pending[0][0] + delay < t:
            _, rows = pending.popleft()
            driver.learn(logits_stream[rows], stream.y_stream[rows])
            for anchor in anchors.values():
                anchor.partial_fit(stream.x_stream[rows], stream.y_stream[rows])
        batch = np.arange(start, min(start + BATCH, len(stream.y_stream)))
        with_feedback, unlabelled = driver.decide(logits_stream[batch])
        predictions["feedback"].append(with_feedback)
        predictions["unlabelled"].append(unlabelled)
        for name, anchor in anchors.items():
            predictions[name].append(anchor.predict_proba(stream.x_stream[batch]).argmax(axis=1))
        revealed = batch[rng.random(len(batch)) < share]
        pending.append((t, revealed))
    y = stream.y_stream
    result = {name: macro_f1(y, np.concatenate(p)) for name, p in predictions.items()}
    result["source"] = macro_f1(y, logits_stream.argmax(axis=1))
    refit = LogisticRegression().fit(stream.x_refit, stream.y_refit)
    refit_proba = refit.predict_proba(stream.x_stream)
    refit_pred = (refit_proba * plugin_weights(refit_proba, "macro_f1")).argmax(axis=1)
    result["refit"] = macro_f1(y, refit_pred)
    gap = result["refit"] - result["source"]
    result["recovered"] = (result["feedback"] - result["source"]) / gap if gap > 0 else np.nan
    unlabelled = driver.estimate.estimate()
    worth = unlabelled_worth(
        driver.estimate.reservoir,
        p_s,
        unlabelled,
        driver.estimate.n_seen / driver.estimate.capacity,
    )
    combined = driver.feedback.prior(unlabelled, worth)
    result["em_error"] = float(np.abs(unlabelled - stream.target_prior).max())
    result["prior_error"] = float(np.abs(combined.mean - stream.target_prior).max())
    result["labels"] = float(driver.feedback.n_labelled)
    return result


COLUMNS = (
    "source", "unlabelled", "feedback", "labelled_recalibration", "labelled_prior",
    "labelled_online", "refit", "recovered", "em_error", "prior_error", "labels", "worst",
)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--shifts", nargs="+", default=["concept", "label", "label_biased", "majority", "none"]
    )
    parser.add_argument("--shares", nargs="+", type=float, default=[0.01, 0.05, 0.2])
    parser.add_argument("--delays", nargs="+", type=int, default=[0, 10])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--batches", type=int, default=150)
    parser.add_argument(
        "--anchor",
        type=int,
        choices=[0, 1],
        help="force the unlabelled decision: 0 argmax, 1 the balanced rule (default: held-out)",
    )
    args = parser.parse_args()
    print("shift share delay " + " ".join(f"{c:>10.10}" for c in COLUMNS) + "  (mean over seeds;")
    print("worst: min over seeds of feedback - max(source, unlabelled))")
    began = time.perf_counter()
    for kind in args.shifts:
        for share in args.shares:
            for delay in args.delays:
                rows = [
                    run(
                        make_stream(kind, args.batches * BATCH, seed),
                        share,
                        delay,
                        seed,
                        anchor=args.anchor,
                    )
                    for seed in args.seeds
                ]
                for r in rows:
                    r["worst"] = r["feedback"] - max(r["source"], r["unlabelled"])
                means = [
                    float(
                        np.min([r[c] for r in rows])
                        if c == "worst"
                        else np.mean([r[c] for r in rows])
                    )
                    for c in COLUMNS
                ]
                cells = " ".join(f"{m:10.3f}" if c.endswith("error") or c == "recovered"
                                 else f"{m:10.1f}" for c, m in zip(COLUMNS, means, strict=True))  # fmt: skip
                print(f"{kind:>12} {share:5.2f} {delay:5d} {cells}", flush=True)
    print(f"wall time {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()

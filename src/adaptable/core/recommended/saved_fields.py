"""The recommended decider's own fields read back from a save file, every one checked.

:meth:`~adaptable.core.recommended.recommended_decider.RecommendedDecider.state` writes them;
:meth:`~adaptable.core.recommended.recommended_decider.RecommendedDecider.from_state` reads them
through these functions, in the file's order: the held-out rule (metadata ``rule``), the moment
test (``shift_test.*``), the target-prior estimate (``prior_estimate.*``) and the stream's
expected confusions (``expected_confusion``). Each tensor's shape and dtype is checked before
its data is read; every error is the reader's, naming the field.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from adaptable.core.decision.rules import OBJECTIVES, RuleChoice, confusion, score
from adaptable.core.recommended.moment_test import LabelShiftTest

if TYPE_CHECKING:
    from adaptable.core.parts.saved_state import StateReader
    from adaptable.core.recommended.prior_estimate import OnlinePriorEstimate
    from adaptable.encoding import Encoder

#: the numbers the metadata field ``rule`` holds (the fields of a RuleChoice)
RULE_FIELDS = ("beta", "source_score", "balanced_score", "evidence")


def rule_metadata(rule: RuleChoice) -> dict[str, float]:
    """The held-out rule as the metadata field ``rule`` holds it."""
    return {name: getattr(rule, name) for name in RULE_FIELDS}


def read_rule(reader: StateReader) -> RuleChoice:
    """The held-out rule: beta 0 or 1, scores and evidence in [0, 1]."""
    rule = reader.field("rule", dict)
    numbers = set(RULE_FIELDS)
    if set(rule) != numbers or not all(
        isinstance(rule[k], int | float) and not isinstance(rule[k], bool) for k in numbers
    ):
        raise reader.error("rule", f"cannot be read (it must hold the numbers {sorted(numbers)})")
    choice = RuleChoice(*(float(rule[name]) for name in RULE_FIELDS))
    scores_and_evidence = (choice.source_score, choice.balanced_score, choice.evidence)
    if choice.beta not in (0.0, 1.0) or not all(0.0 <= v <= 1.0 for v in scores_and_evidence):
        raise reader.error(
            "rule", f"must have beta 0 or 1, and scores and evidence in [0, 1]; got {rule}"
        )
    return choice


def check_rule_objective(
    reader: StateReader,
    rule: RuleChoice,
    objective: str,
    heldout_scores: np.ndarray,
    heldout_labels: np.ndarray,
    source_prior: np.ndarray,
) -> None:
    """Refuse parameters whose ``objective`` is not the one the held-out rule was fitted for:
    the rule's two scores are those of argmax and the balanced rule on the held-out rows
    (``feedback.heldout_*``) under the objective it was fitted for, and under another one
    here. A file without the held-out rows (written before they were kept) is not checked,
    nor is one whose scores no objective reproduces (a tie on the held-out rows may round
    either way)."""
    if not len(heldout_labels):
        return

    def reproduces(name: str) -> bool:
        saved = (rule.source_score, rule.balanced_score)
        return _heldout_scores(heldout_scores, heldout_labels, source_prior, name) == saved

    if reproduces(objective):
        return
    fitted_for = [name for name in OBJECTIVES if name != objective and reproduces(name)]
    if fitted_for:
        raise reader.error(
            "params",
            f"say objective={objective!r} but the held-out rule (field 'rule') was fitted for "
            f"{fitted_for[0]!r}",
        )


def _heldout_scores(
    scores: np.ndarray, labels: np.ndarray, prior: np.ndarray, objective: str
) -> tuple[float, float]:
    """Argmax's and the balanced rule's scores on the held-out rows, as ``choose_rule``
    computes them (from the same counts, so equal where the rows' decisions are)."""
    proba = np.exp(scores)
    n_classes = scores.shape[1]
    source = score(confusion(labels, proba.argmax(axis=1), n_classes), objective)
    balanced = score(confusion(labels, (proba / prior).argmax(axis=1), n_classes), objective)
    return float(source), float(balanced)


def read_shift_test(reader: StateReader, n_classes: int, encoder: Encoder | None) -> LabelShiftTest:
    """The moment test, mid-stream: its columns are the saved Encoder's (numbers, then each
    categorical feature's categories, rare ones pooled by the lookup) where the file holds
    one, else as the tensors declare them."""

    def shift_tensor(name: str, shape: tuple[int, ...], dtype: str = "float64") -> np.ndarray:
        return reader.tensor(f"shift_test.{name}", shape, dtype)

    def declared(name: str) -> tuple[int, ...]:
        return reader.shape(f"shift_test.{name}") or (0,)

    n_numeric = reader.count("shift_test.n_numeric")
    sizes = None if encoder is None else np.asarray(encoder.cardinalities, dtype=np.int64)
    if encoder is not None and n_numeric != len(encoder.numerical_):
        raise reader.error(
            "shift_test.n_numeric",
            f"is {n_numeric} but the encoder has {len(encoder.numerical_)} numerical columns",
        )
    # as fit computes them: [0] for a table without categorical columns
    written = None if sizes is None else np.concatenate([[0], np.cumsum(sizes)[:-1]])
    offsets = shift_tensor(
        "offsets", declared("offsets") if written is None else written.shape, "int64"
    )
    if written is not None and not np.array_equal(offsets, written):
        raise reader.error("shift_test.offsets", "disagrees with the encoder's categories")
    categories = int(sizes.sum()) if sizes is not None else None
    arrays: dict[str, np.ndarray] = {}
    if "shift_test.lookup" in reader.arrays:
        shape = declared("lookup") if categories is None else (categories,)
        lookup = shift_tensor("lookup", shape, "int64")
        if len(lookup) and (lookup.min() < 0 or lookup.max() >= len(lookup)):
            raise reader.error("shift_test.lookup", "points outside the one-hot columns")
        arrays["lookup"] = lookup
        one_hot = int(lookup.max()) + 1 if len(lookup) else 0
    elif categories is not None:  # written before rare categories were pooled
        one_hot = categories
    else:
        one_hot = declared("class_means")[0] - n_numeric
    width = n_numeric + one_hot
    arrays |= {
        "class_means": shift_tensor("class_means", (width, n_classes)),
        "weights": shift_tensor("weights", (width,)),
        "sums": shift_tensor("sums", (width,)),
        "null": shift_tensor("null", (2,)),
        "offsets": offsets,
        "n_numeric": np.array([n_numeric]),
        "n_rows": np.array([reader.count("shift_test.n_rows")]),
    }
    try:
        return LabelShiftTest.from_arrays(arrays, n_classes)
    except (ValueError, KeyError) as err:
        raise reader.error("shift_test", str(err)) from err


def read_heldout_scores(reader: StateReader, n_classes: int) -> np.ndarray:
    """The held-out rows' log-posteriors the labelled rows keep, (n, C) (the file must hold
    ``feedback.heldout_scores``)."""
    shape = reader.shape("feedback.heldout_scores") or (0, n_classes)
    return reader.tensor("feedback.heldout_scores", (shape[0], n_classes))


def read_prior_estimate(reader: StateReader, estimate: OnlinePriorEstimate, n_classes: int) -> int:
    """Restore ``estimate`` (built with the saved seed) mid-stream: a reservoir of
    min(n_seen, capacity) probability rows and the running estimate; returns n_seen."""
    n_seen = int(reader.tensor("prior_estimate.n_seen", (1,), "int64")[0])
    kept = min(n_seen, estimate.capacity)
    # Before the first batch the reservoir is empty, and safetensors does not write it.
    rows = (reader.shape("prior_estimate.reservoir") or (0,))[0]
    if n_seen < 0 or rows != kept:
        raise reader.error(
            "prior_estimate",
            f"must hold min(n_seen, {estimate.capacity}) reservoir rows; it holds {rows} "
            f"with n_seen {n_seen}",
        )
    state = {
        "reservoir": reader.tensor("prior_estimate.reservoir", (kept, n_classes)),
        "n_seen": np.array([n_seen]),
        "prior": reader.tensor("prior_estimate.prior", (n_classes,)),
    }
    try:
        estimate.restore(state)
    except (ValueError, KeyError) as err:
        raise reader.error("prior_estimate", str(err)) from err
    return n_seen


def read_expected_confusion(reader: StateReader, n_classes: int, n_seen: int) -> np.ndarray:
    """Expected (true, predicted) counts of both rules over the same rows, (2, C, C):
    non-negative, the same rows' posteriors per true class in both, and no more rows than the
    stream had (``n_seen``)."""
    expected = reader.tensor("expected_confusion", (2, n_classes, n_classes))
    if np.any(expected < 0):
        raise reader.error("expected_confusion", "holds negative counts")
    by_class = expected.sum(axis=2)
    total = float(by_class[0].sum())
    tolerance = 1e-6 * max(total, 1.0)
    if np.abs(by_class[0] - by_class[1]).max() > tolerance or total > n_seen + tolerance:
        raise reader.error(
            "expected_confusion",
            "must count the same rows for both rules, at most the stream's "
            f"{n_seen} (prior_estimate.n_seen)",
        )
    return expected

"""A verdict from the drift report: is the adapted model still doing as well as it did on its
held-out source rows, and how sure is that?

:class:`DriftSummary` reads the batches of a :class:`~adaptable.core.report.drift_log.DriftLog`
(all of them, or the last few) and sets the adapter's objective over their rows beside a
reference: the unadapted model's objective on the held-out source rows the adapter was fitted
with (what the model was validated at). The objective over the stream comes from the best
estimate the log can give:

1. ``"label-corrected"``, where labels have arrived by row id for at least
   :data:`MIN_LABELLED` of the rows (:mod:`adaptable.core.report.label_corrected_estimate`): unbiased when the
   labelled rows are a random sample of the rows, whatever the model's calibration;
2. ``"calibration-free"``, without labels while the moment test accepts pure label shift
   (:mod:`adaptable.core.report.heldout_estimate`): right where only the label mix moved, and
   wrong by any amount where p(y|x) moved in a way the features cannot show;
3. ``"covariate-weighted"``, without labels once the moment test has rejected pure label
   shift, over the whole stream (``last_batches`` None), where the held-out rows weighted
   towards the stream's features still count as ``MIN_EFFECTIVE_ROWS`` rows and
   ``MIN_EFFECTIVE_SHARE`` of them (:mod:`adaptable.core.report.covariate_reading`)
   (:mod:`adaptable.core.report.covariate_estimate`): the weighted held-out estimate and the
   posteriors' set together by their precisions. Right where p(y | x) did not move (covariate
   shift) and the stream lies where the held-out rows do; wrong by any amount where a change
   the features cannot show moved p(y | x);
4. ``"posteriors"`` otherwise: the objective expected under the posteriors the adapter
   believes, which a covariate shift can bias by any amount, so it carries no deviation; the
   summary's ``covariate_note`` says why the covariate-weighted estimate was not read.

With d = reference - estimate and s its standard deviation (for the label-corrected estimate
its own and the reference's, as independent; the calibration-free one's alone, which already
holds the noise of the held-out rows the reference is read from; for the covariate-weighted
one the weighted part's paired with the reference on the same rows, and the posteriors' part's
assumed bias and the reference's), the verdict is

- ``"degraded"`` where d - k s > tolerance: the objective fell by more than the tolerance
  (k = ``deviations``; at k = 2 a one-sided error rate of about 2 % for one look);
- ``"holding"`` where d + k s <= tolerance;
- ``"undetermined"`` where the interval d -+ k s contains the tolerance: more labels would
  settle it;
- ``"unverified"`` where no estimate with a deviation exists (only the posteriors', which a
  feature shift can bias by any amount; or too few rows yet), or no reference: the printout
  says which.

The tests and the label distribution are the adapter's, over the stream since fit / reset /
load, whatever the window; the estimates are the window's.

The reference's deviation is the delta method's over the held-out rows' confusion counts
(:meth:`~adaptable.core.report.drift_log.DriftLog.heldout_reference`). A summary read after every batch
looks many times, so over a long stream a ``"degraded"`` verdict will sometimes appear by
chance where nothing moved; the benchmark in ``docs/research/feedback.md`` measures how often.

Example:
    >>> import numpy as np
    >>> from adaptable.core.report.drift_log import DriftLog
    >>> log = DriftLog(n_classes=2, objective="accuracy")
    >>> log.use_heldout(np.log(np.full((100, 2), 0.5)), np.r_[np.zeros(50), np.ones(50)])
    >>> eye = np.eye(2) * 32.0
    >>> log.record(rows=64, predictions=np.zeros(64, int), expected=np.stack([eye, eye]),
    ...            rule="source", target_prior=np.array([0.5, 0.5]))
    >>> summary = summarise(log, tolerance=0.05)
    >>> summary.estimate_kind, summary.verdict
    ('posteriors', 'unverified')
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from adaptable.core.report.covariate_reading import (
    summary_covariate,
)
from adaptable.values import python_value

if TYPE_CHECKING:
    from adaptable.core.report.drift_log import DriftLog

#: the verdicts, from the one that asks for action to the one that asks for labels
VERDICTS = ("degraded", "undetermined", "holding", "unverified")
#: the objectives as the summary names them
METRIC_NAMES = {
    "macro_f1": "macro-F1",
    "accuracy": "accuracy",
    "balanced_accuracy": "balanced accuracy",
}
#: labelled rows a window needs before its label-corrected estimate is read: the estimate's
#: deviation comes from the spread of those rows, which a handful cannot show (measured:
#: docs/research/design_notes.md#report-drift-summary)
MIN_LABELLED = 30
#: a drop within this of the tolerance counts as the tolerance (decimal fractions in binary)
ROUNDING = 1e-12


@dataclass(frozen=True)
class DriftSummary:
    """What the adapter saw over some batches of a stream, and how it did (module docstring).

    Every objective is a fraction in [0, 1]; NaN where it cannot be had.

    Attributes:
        objective: the metric (the adapter's ``objective``).
        first_batch: the first batch summarised (0-based, as in the report).
        batches: the batches summarised, through the last one adapted.
        rows: their rows.
        labelled_rows: those of their rows whose labels arrived by row id.
        shift_detected: the moment test rejects pure label shift at the last batch (over the
            stream since fit / reset / load, not the window: the features moved in a way a
            change of label mix cannot explain).
        label_shift_detected: the likelihood-ratio test rejects the source label
            distribution at the last batch (stream since reset); ``None`` where it did not run
            (the moment test had rejected pure label shift, or too few rows): no answer, which
            a script must not read as "no label shift".
        target_prior: the estimated target label distribution at the last batch, (C,).
        source_prior: the source label distribution, (C,).
        reference: the unadapted model's objective on the held-out source rows, or the level
            the caller gave.
        reference_sd: its standard deviation (0 for a level given).
        reference_given: whether the caller gave the reference.
        estimate: the adapter's objective over the summarised rows.
        estimate_sd: the deviation of the realised value around it (NaN for the
            posteriors' estimate, whose bias is unknown).
        source_estimate: the unadapted model's objective there, by the same estimate.
        estimate_kind: ``"label-corrected"``, ``"calibration-free"``, ``"covariate-weighted"``
            or ``"posteriors"``.
        drop: ``reference - estimate`` (negative: the adapter is above the reference).
        drop_sd: the deviation of the drop: the estimate's and the held-out reference's added
            as independent for the label-corrected estimate; the calibration-free one's alone
            (it already holds the held-out rows' noise, which the reference shares).
        tolerance: the drop accepted before the verdict says ``"degraded"``.
        deviations: how many deviations a verdict needs.
        verdict: one of :data:`VERDICTS`.
        classes: the labels the distributions' entries stand for (``None``: 0 .. C - 1).
        forgotten: the batches before the report's window (``report_batches``), which no
            summary can read any more.
        model_update: the output in use with model updates (``AdapTable(update=...)``):
            ``"adapted"``, ``"refit"`` or ``"patch"``; ``None``: no updates.
        update_switches: (batch, candidate) at each change of that output.
        update_scores: each candidate's objective on the labelled rows it predicted before
            their labels, and how many rows: ``{name: (value, rows)}``.
        weighted_estimate: the adapter's objective from the held-out rows weighted towards
            the stream's features alone (the covariate-weighted estimate's weighted part; NaN
            where it was not computed).
        effective_rows: the weights' effective number of held-out rows (Kish's; NaN where
            they were not computed).
        covariate_note: why the covariate-weighted estimate was not read where the summary
            fell back on the posteriors ("" otherwise).
    """

    objective: str
    first_batch: int
    batches: int
    rows: int
    labelled_rows: int
    shift_detected: bool
    label_shift_detected: bool | None
    target_prior: np.ndarray
    source_prior: np.ndarray
    reference: float
    reference_sd: float
    reference_given: bool
    estimate: float
    estimate_sd: float
    source_estimate: float
    estimate_kind: str
    drop: float
    drop_sd: float
    tolerance: float
    deviations: float
    verdict: str
    classes: tuple | None = None
    forgotten: int = 0
    model_update: str | None = None
    update_switches: tuple = ()
    update_scores: dict | None = None
    weighted_estimate: float = math.nan
    effective_rows: float = math.nan
    covariate_note: str = ""

    def as_dict(self) -> dict[str, object]:
        """The fields as plain Python values for JSON: arrays as lists, NaN as None."""
        fields: dict[str, object] = {}
        for key, value in dataclasses.asdict(self).items():
            if isinstance(value, np.ndarray):
                value = [None if math.isnan(v) else v for v in value.tolist()]
            elif isinstance(value, tuple):
                value = [list(v) if isinstance(v, tuple) else v for v in value]
            elif isinstance(value, dict):  # the model updates' scores: (value, rows) each
                value = {
                    k: {"score": None if math.isnan(v) else v, "rows": n}
                    for k, (v, n) in value.items()
                }
            elif isinstance(value, float) and math.isnan(value):
                value = None
            fields[key] = value
        return fields

    def __str__(self) -> str:
        last = self.first_batch + self.batches - 1
        metric = METRIC_NAMES.get(self.objective, self.objective)
        significant = {
            True: ", a significant difference",
            False: "",
            None: ", not tested for a significant difference",
        }[self.label_shift_detected]
        reference = (
            f"  {metric} required (the reference given): {_points(self.reference)}."
            if self.reference_given
            else f"  {metric} on held-out source rows (the model): {_points(self.reference)}"
            f"{_pm(self.reference_sd)}."
        )
        earlier = (
            f" (batches 0-{self.forgotten - 1} are no longer kept: report_batches)"
            if self.forgotten and self.first_batch == self.forgotten
            else ""
        )
        lines = [
            f"Batches {self.first_batch}-{last}: {self.rows:,} rows, "
            f"{self.labelled_rows:,} labelled by row id{earlier}.",
            f"  the stream since reset: "
            f"{'feature shift detected' if self.shift_detected else 'no feature shift detected'}"
            f"; label distribution {_shares(self.target_prior, self.classes)} (source "
            f"{_shares(self.source_prior, self.classes)}{significant}).",
            reference,
            f"  {metric} here ({self.estimate_kind}): adapter {_points(self.estimate)}"
            f"{_pm(self.estimate_sd)}, unadapted model {_points(self.source_estimate)}.",
            f"  verdict: {self.verdict}: {self._explanation()}",
        ]
        if self.model_update is not None:
            lines.append(f"  {self._updates_line(metric)}")
        if self.estimate_kind == "calibration-free":
            lines.append(
                "  (the calibration-free estimate assumes that only the label mix moved, which "
                "the moment test could not reject; labelled rows would check it.)"
            )
        if self.estimate_kind == "covariate-weighted":
            lines.append(
                f"  (the held-out rows weighted towards the stream's features give "
                f"{_points(self.weighted_estimate)}, as {self.effective_rows:,.0f} effective "
                "rows; set beside the posteriors' estimate. It assumes that p(y | x) did not "
                "move; labelled rows would check it.)"
            )
        return "\n".join(lines)

    def _updates_line(self, metric: str) -> str:
        scores = ", ".join(
            f"{name} {_points(value)} ({rows:,} rows)" if rows else f"{name} not scored yet"
            for name, (value, rows) in (self.update_scores or {}).items()
        )
        since = ""
        if self.update_switches:
            batch, _ = self.update_switches[-1]
            since = f" since batch {batch}"
        return (
            f"output: {self.model_update}{since} (model updates; {metric} of each on labelled "
            f"rows predicted before their labels: {scores})."
        )

    def _explanation(self) -> str:
        if self.verdict == "unverified":
            return self._why_unverified()
        k = self.deviations
        low, high = self.drop - k * self.drop_sd, self.drop + k * self.drop_sd
        fall = (
            f"the adapter's fall below the reference is {_points(self.drop)} points "
            f"({_points(low)} to {_points(high)} within {k:g} "
            f"deviation{'' if k == 1 else 's'}"
            f"{'; negative: above it' if low < 0 else ''})"
        )
        tolerance = f"the {_points(self.tolerance)}-point tolerance"
        return {
            "degraded": f"{fall}, beyond {tolerance}: retrain, or refit on recent labelled rows.",
            "holding": f"{fall}, within {tolerance}.",
            "undetermined": f"{fall}; that range holds {tolerance}: more labelled rows will "
            "settle it.",
        }[self.verdict]

    def _why_unverified(self) -> str:
        if not np.isfinite(self.reference):
            return (
                "no held-out reference to compare with (no held-out rows at fit, or none of "
                "some class): pass reference=."
            )
        few = (
            f"only {self.labelled_rows} labelled rows here (the label-corrected estimate needs "
            f"{MIN_LABELLED})"
            if self.labelled_rows
            else "no labelled rows here"
        )
        if self.estimate_kind == "posteriors" and self.shift_detected:
            note = f" (the covariate-weighted estimate is not read: {self.covariate_note})"
            return (
                f"{few}; only the model's own posteriors estimate the performance"
                f"{note if self.covariate_note else ''}, which a feature shift can bias by any "
                "amount: pass the labels of some rows to partial_fit with their row ids to "
                "measure it."
            )
        return f"{few}, and the unlabelled estimate has no deviation yet (too few rows)."


def summarise(
    log: DriftLog,
    *,
    last_batches: int | None = None,
    tolerance: float = 0.05,
    deviations: float = 2.0,
    reference: float | None = None,
    source_prior: np.ndarray | None = None,
    classes: Any = None,
) -> DriftSummary:
    """The :class:`DriftSummary` of ``log``'s batches (the last ``last_batches`` of them, all
    by default).

    Args:
        log: the adapter's drift log.
        last_batches: how many of the latest batches to summarise (None: all).
        tolerance: the fall of the objective (a fraction: 0.05 is 5 points) accepted.
        deviations: the deviations a verdict needs on each side.
        reference: the objective to compare with, a fraction known without error (a level
            signed off at validation, say); None: the unadapted model's objective on the
            held-out source rows, with its deviation.
        source_prior: the source label distribution (C,) to show beside the estimate.
        classes: the labels of the C classes, to name the distributions' entries.

    Raises:
        ValueError: no batch adapted yet; ``last_batches`` not a whole number >= 1; a
            ``tolerance`` or ``deviations`` that is negative or not finite; a ``reference``
            outside [0, 1].
    """
    n_batches = len(log)
    if n_batches == 0:
        raise ValueError("adaptable: no batch adapted since fit / reset / load: nothing to sum up.")
    if last_batches is not None and (
        isinstance(last_batches, bool) or not isinstance(last_batches, numbers.Integral)
        or last_batches < 1
    ):  # fmt: skip
        raise ValueError(
            f"adaptable: last_batches must be a whole number >= 1; got {last_batches!r}."
        )
    checked = {}
    for name, value, fraction in (
        ("tolerance", tolerance, True), ("deviations", deviations, False),
        ("reference", 0.0 if reference is None else reference, True),
    ):  # fmt: skip
        number = _as_number(value)
        if number is None or not (math.isfinite(number) and number >= 0):
            raise ValueError(f"adaptable: {name} must be a finite number >= 0; got {value!r}.")
        if fraction and number > 1:
            raise ValueError(
                f"adaptable: {name} is a fraction of the objective, from 0 to 1 "
                f"(0.05: 5 points); got {value!r}."
            )
        checked[name] = number
    tolerance, deviations = checked["tolerance"], checked["deviations"]
    reference = None if reference is None else checked["reference"]
    first = 0 if last_batches is None else max(0, n_batches - int(last_batches))
    window = log.window(first)
    given = reference is not None
    if reference is None:
        reference, reference_sd = log.heldout_reference()
    else:
        reference, reference_sd = float(reference), 0.0
    labelled = window.labelled_rows
    free, free_sd = np.full(2, np.nan), np.full(2, np.nan)
    corrected = labelled >= MIN_LABELLED and np.isfinite(window.corrected_sd[1])
    if not corrected:
        free, free_sd = log.calibration_free_window(first)
    if corrected:
        kind, values, sd = "label-corrected", window.corrected, window.corrected_sd
        drop_sd = math.hypot(float(sd[1]), reference_sd)
    elif np.isfinite(free[1]) and np.isfinite(free_sd[1]):
        kind, values, sd = "calibration-free", free, free_sd
        drop_sd = float(sd[1])
    else:
        kind, values, sd = "posteriors", window.posteriors, np.full(2, np.nan)
        drop_sd = math.nan
    weighted, effective, note = math.nan, math.nan, ""
    if kind == "posteriors":
        covariate = summary_covariate(log, window, last_batches, reference_sd)
        weighted, effective, note = covariate.weighted, covariate.effective_rows, covariate.note
        if not note:
            kind, values, sd = "covariate-weighted", covariate.values, covariate.deviations
            # the caller's level shares no rows with the weighted estimate
            drop_sd = float(sd[1]) if given else covariate.drop_deviation
    drop = reference - float(values[1])
    if not (math.isfinite(drop_sd) and math.isfinite(drop)):
        verdict = "unverified"
    elif drop - deviations * drop_sd > tolerance + ROUNDING:
        verdict = "degraded"
    elif drop + deviations * drop_sd <= tolerance + ROUNDING:
        verdict = "holding"
    else:
        verdict = "undetermined"
    last = window.last
    c = log.n_classes
    return DriftSummary(
        objective=log.objective,
        first_batch=log.dropped + first,
        batches=n_batches - first,
        rows=window.rows,
        labelled_rows=labelled,
        shift_detected=bool(last.shift_statistic > last.shift_threshold),
        label_shift_detected=(
            None
            if math.isnan(last.prior_statistic)
            else bool(last.prior_statistic >= last.prior_critical)
        ),
        target_prior=last.target_prior.copy(),
        source_prior=np.full(c, np.nan) if source_prior is None else np.array(source_prior),
        reference=reference,
        reference_sd=reference_sd,
        reference_given=given,
        estimate=float(values[1]),
        estimate_sd=float(sd[1]),
        source_estimate=float(values[0]),
        estimate_kind=kind,
        drop=drop,
        drop_sd=drop_sd,
        tolerance=float(tolerance),
        deviations=float(deviations),
        verdict=verdict,
        classes=None if classes is None else tuple(python_value(k) for k in classes),
        forgotten=log.dropped,
        weighted_estimate=weighted,
        effective_rows=effective,
        covariate_note=note,
    )


def _points(value: float) -> str:
    return "n/a" if not np.isfinite(value) else f"{100 * value:.1f}"


def _pm(sd: float) -> str:
    return "" if not np.isfinite(sd) else f" ± {100 * sd:.1f}"


def _shares(prior: np.ndarray, classes: tuple | None = None) -> str:
    if not np.isfinite(prior).all():
        return "unknown"
    if classes is None:
        return "[" + ", ".join(f"{p:.2f}" for p in prior) + "]"
    return "[" + ", ".join(f"{k}: {p:.2f}" for k, p in zip(classes, prior, strict=True)) + "]"


def _as_number(value: Any) -> float | None:
    """``value`` as a float where it is a number (a numpy scalar or 0-d array, a Decimal), not
    a bool (which Python counts as one) nor a string; else ``None``."""
    if isinstance(value, str | bytes | bool | np.bool_):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None

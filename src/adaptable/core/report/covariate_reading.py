"""The covariate-shift reading of a stream: the held-out rows weighted towards a sample of the
stream's features (:mod:`~adaptable.core.report.covariate_estimate`), for the drift log's
kept records (``DriftLog.covariate_estimate``), and as the drift summary reads it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from adaptable.core.report.covariate_estimate import (
    POSTERIORS_BIAS,
    combined,
    effective_rows,
    weighted_estimates,
)
from adaptable.core.report.feature_sample import MIN_STREAM_ROWS, FeatureSample

if TYPE_CHECKING:
    from adaptable.core.report.record_window import BatchRecord


#: the effective held-out rows (Kish's, under the importance weights) the covariate-weighted
#: estimate needs: fewer, and the stream lies where few held-out rows do, whose weighted
#: deviation then understates the miss (docs/research/monitoring_vs_nannyml.md)
MIN_EFFECTIVE_ROWS = 100
#: and this share of the held-out rows: fewer, and the stream sits in a tail of the held-out
#: rows, where the classifier extrapolates (a split on a column the features keep)
MIN_EFFECTIVE_SHARE = 0.1


class CovariateReading(NamedTuple):
    """The covariate-shift estimate over the stream since fit / reset
    (:meth:`DriftLog.covariate_estimate`): the held-out rows weighted towards a sample of the
    stream's features (:mod:`adaptable.core.report.covariate_estimate`). Each array a pair
    (unadapted model, adapter); NaN where not to be had, and ``reason`` says why."""

    values: np.ndarray  # the weighted estimate
    deviations: np.ndarray  # the realised value's deviation around it
    drop_deviations: np.ndarray  # the deviation of the drop from the held-out level to it
    effective_rows: float  # the weights' effective number of held-out rows
    heldout_rows: int  # held-out rows weighted
    stream_rows: int  # stream rows the weights were fitted against
    reason: str  # why there is no estimate ("" where there is one)


def covariate_reading(
    sample: FeatureSample,
    heldout: tuple[np.ndarray, np.ndarray] | None,
    records: Sequence[BatchRecord],
    n_classes: int,
    objective: str,
) -> CovariateReading:
    """The covariate-shift estimate over the kept records: the model's argmax and the
    adapter's rules (each record's class offsets, in proportion to its rows) on the held-out
    rows (``heldout``: their log-posteriors and labels) weighted towards the stream's feature
    ``sample``; fits the weights where they are due (:meth:`FeatureSample.weights
    <adaptable.core.report.feature_sample.FeatureSample.weights>`). NaN, with the reason, where
    there is no estimate."""
    nan = np.full(2, np.nan)
    held = 0 if sample.heldout_rows is None else len(sample.heldout_rows)
    stream_rows = len(sample.stream_numeric)

    def without(reason: str, effective: float = np.nan) -> CovariateReading:
        return CovariateReading(nan, nan, nan, effective, held, stream_rows, reason)

    if heldout is None or not sample.has_heldout:
        return without("the held-out rows' features are not kept (no held-out rows at fit, "
                       "or a file written before they were)")  # fmt: skip
    weights = sample.weights()
    if weights is None:
        return without(f"{stream_rows} stream rows sampled; the weights need {MIN_STREAM_ROWS}")
    log_posteriors, labels = (values[sample.heldout_rows] for values in heldout)
    if not records:
        return without("no batch kept")
    offsets = np.stack([np.full(n_classes, np.nan) if x.offset is None else x.offset
                        for x in records])  # fmt: skip
    rows = np.array([x.rows for x in records], dtype=np.float64)
    values, deviations, drops = weighted_estimates(
        log_posteriors, labels, weights, offsets, rows, objective
    )
    return CovariateReading(
        values, deviations, drops, effective_rows(weights), held, stream_rows, ""
    )


class SummaryCovariate(NamedTuple):
    """The covariate-weighted estimate as the summary reads it: the values and deviations
    (pairs: unadapted model, adapter), the adapter's drop deviation, the adapter's weighted
    estimate alone, the effective held-out rows, and why it is not read ("" where it is)."""

    values: np.ndarray
    deviations: np.ndarray
    drop_deviation: float
    weighted: float
    effective_rows: float
    note: str


def summary_covariate(
    log: Any, window: Any, last_batches: int | None, reference_sd: float
) -> SummaryCovariate:
    """The covariate-weighted estimate (:mod:`adaptable.core.report.covariate_estimate`),
    where it can be read."""
    nan = np.full(2, np.nan)
    if last_batches is not None:
        note = "it reads the whole stream since reset; ask without last_batches"
        return SummaryCovariate(nan, nan, math.nan, math.nan, math.nan, note)
    reading = log.covariate_estimate()
    weighted, effective = float(reading.values[1]), reading.effective_rows
    note = reading.reason
    needed = max(MIN_EFFECTIVE_ROWS, MIN_EFFECTIVE_SHARE * reading.heldout_rows)
    if not note and not effective >= needed:
        note = (
            f"the stream lies where few held-out rows do: the weights leave {effective:.0f} "
            f"effective rows of {reading.heldout_rows:,} (it needs {needed:.0f})"
        )
    if not note and not np.isfinite(weighted):
        note = "a batch's rule is no class offset on the model's scores"
    if note:
        return SummaryCovariate(nan, nan, math.nan, weighted, effective, note)
    values, sd, shares = np.full(2, np.nan), np.full(2, np.nan), np.zeros(2)
    for r in range(2):
        values[r], sd[r], shares[r] = combined(
            float(reading.values[r]), float(reading.deviations[r]), float(window.posteriors[r])
        )
    # the drop's two parts: the weighted one, paired with the reference on the same rows; the
    # posteriors' one, with its assumed bias and the reference's noise
    drop_sd = math.sqrt(
        shares[1] ** 2 * float(reading.drop_deviations[1]) ** 2
        + (1.0 - shares[1]) ** 2 * (POSTERIORS_BIAS**2 + reference_sd**2)
    )
    return SummaryCovariate(values, sd, drop_sd, weighted, effective, "")

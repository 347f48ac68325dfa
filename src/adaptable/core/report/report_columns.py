"""The drift report's columns (:meth:`~adaptable.core.report.drift_log.DriftLog.frame`): what
each holds, the classes' names in them, the columns read from the records alone, and the report
of no batch.

Columns, in their order: ``batch`` (counted from the stream's start), ``first_row``, ``rows``;
``shift_statistic`` (the moment test's z-score), ``shift_threshold``; ``prior_statistic`` (the
likelihood-ratio statistic of the target prior against p_s; NaN where the moment test
rejected), ``prior_critical``; ``n_labelled`` (labelled rows received before the batch was
decided); ``prior_total``; ``rule``; ``shift_rejects``, ``prior_rejects``; per class ``k``:
``prior_k`` and its 90 % interval ``prior_k_low`` / ``prior_k_high`` (NaN where the estimate
has none: no labels while the moment test rejects pure label shift), then ``labelled_share_k``
(the class's share of the labelled rows, NaN without any); the objective of the batch and of
the stream so far (through this batch), estimated from the posteriors (``estimated_source``,
``estimated_source_so_far``, ``estimated_adapter``, ``estimated_adapter_so_far``) and realised
on the labels that have arrived for the batch's rows (``realised_...`` likewise, NaN without
labels; ``realised_rows``); over the stream so far, a calibration-free estimate valid under
pure label shift (:mod:`adaptable.core.report.heldout_estimate`; NaN where the moment test
rejects it): ``calibration_free_prior_k`` (BBSE-soft) and the objective from the held-out
confusion rates under it, ``calibration_free_source_so_far`` and
``calibration_free_adapter_so_far``, each followed by the standard deviation of the realised
value around it (``calibration_free_source_sd``, ``..._adapter_sd``: the stream's noise, the
held-out rows' and the realised metric's own); unlike the posteriors' estimate it does not
depend on the model's calibration, and it is noisy on short streams. Once labels arrive by row
id: ``label_corrected_source_so_far`` and ``..._adapter_so_far``, the objective over every row
so far from the believed posteriors corrected by their error on the labelled rows
(:mod:`adaptable.core.report.label_corrected_estimate`), each followed by the standard
deviation of the realised value around it (``label_corrected_*_sd``; NaN below two labelled
rows). Both deviations are capped at 0.5, beyond which two of them already cover any miss.
``heldout_source`` and ``heldout_source_sd``, the same on every row: the unadapted model's
objective on the held-out source rows
(:meth:`~adaptable.core.report.drift_log.DriftLog.heldout_reference`), the level the stream's
columns compare with. Row counts (:data:`COUNTS`) are integers.

A class ``k`` has the columns ``prior_<k>``, ``prior_<k>_low``, ``prior_<k>_high``,
``labelled_share_<k>`` and ``calibration_free_prior_<k>``; :func:`report_classes` reads the
classes back from a report's columns, :func:`class_names` chooses names that read back.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from adaptable.core.decision.rules import score
from adaptable.core.labels.label_prior import dirichlet_interval
from adaptable.core.report.record_window import SCALARS, BatchRecord

#: the report's columns per class, and its own columns a class's could clash with
CLASS_COLUMNS = ("prior_{}", "prior_{}_low", "prior_{}_high", "labelled_share_{}",
                 "calibration_free_prior_{}")  # fmt: skip
OWN_COLUMNS = frozenset({"prior_statistic", "prior_critical", "prior_rejects", "prior_total"})
#: the report's columns that count rows
COUNTS = ("first_row", "rows", "n_labelled", "realised_rows")


def report_classes(columns: Any) -> list[str]:
    """The class names a report's columns hold, in their order: each class has the columns
    ``prior_<class>``, ``prior_<class>_low`` and ``prior_<class>_high``; the interval's columns
    say which are classes, since a class may itself be called ``low`` or end in ``_high``.

    >>> report_classes(["prior_statistic", "prior_high", "prior_high_low", "prior_high_high",
    ...                 "prior_low", "prior_low_low", "prior_low_high"])
    ['high', 'low']
    """
    columns = list(columns)
    present = set(columns)
    return [
        column.removeprefix("prior_")
        for column in columns
        if column.startswith("prior_")
        and {f"{column}_low", f"{column}_high"} <= present
        and column not in OWN_COLUMNS
    ]


def class_names(classes: Any, n_classes: int) -> list[str]:
    """The classes' names in the report's columns: ``classes`` as strings, or their positions
    (with a warning) where the columns would not name the classes back: two classes giving
    one column, a class giving one of the report's own (classes ``a`` and ``a_low``:
    ``prior_a_low``; a class ``total``), or the columns read as more classes than there are
    (a reader finds a class by ``prior_<k>`` with its ``_low`` and ``_high``: classes ``c``,
    ``c_low_low`` and ``c_low_high`` would read as a fourth, ``c_low``).

    Warns:
        UserWarning: where the positions replace ``classes`` (attributed to the caller of
            ``AdapTable.report``, three frames up).
    """
    positions = [str(k) for k in range(n_classes)]
    if classes is None:
        return positions
    names = [str(k) for k in classes]
    columns = [pattern.format(name) for name in names for pattern in CLASS_COLUMNS]
    clash = len(set(columns) | OWN_COLUMNS) < len(columns) + len(OWN_COLUMNS)
    if clash or sorted(report_classes([*OWN_COLUMNS, *columns])) != sorted(names):
        warnings.warn(
            f"adaptable: the report's columns cannot name the classes {names} unambiguously "
            f"(prior_<class>, prior_<class>_low, ...); it names them by position "
            f"(0 .. {n_classes - 1}) instead.",
            UserWarning,
            stacklevel=4,
        )
        return positions
    return names


def record_columns(
    records: list[BatchRecord],
    expected: np.ndarray,
    realised: np.ndarray,
    first_batch: int,
    names: list[str],
    objective: str,
) -> dict[str, Any]:
    """The report's columns read from the records alone, ``batch`` to ``realised_rows`` in the
    report's order (row counts still floats), of the settled ``records`` with their expected
    and realised confusion matrices, (B, 2, C, C) each; ``first_batch`` is the first record's
    batch number and ``names`` the classes' names."""
    b = records
    data: dict[str, Any] = {"batch": first_batch + np.arange(len(b))}
    for key in SCALARS:
        data[key] = np.array([getattr(x, key) for x in b], dtype=np.float64)
    data["rule"] = [x.rule for x in b]
    data["shift_rejects"] = data["shift_statistic"] > data["shift_threshold"]
    data["prior_rejects"] = data["prior_statistic"] >= data["prior_critical"]
    prior = np.stack([x.target_prior for x in b])
    total = data["prior_total"]
    lower, upper = np.full_like(prior, np.nan), np.full_like(prior, np.nan)
    known = np.isfinite(total)
    if known.any():
        lower[known], upper[known] = dirichlet_interval(prior[known], total[known])
    for k, name in enumerate(names):
        data[f"prior_{name}"] = prior[:, k]
        data[f"prior_{name}_low"] = lower[:, k]
        data[f"prior_{name}_high"] = upper[:, k]
    counts = np.stack([x.labelled_counts for x in b])
    totals = counts.sum(axis=1, keepdims=True)
    shares = np.where(totals > 0, counts / np.maximum(totals, 1), np.nan)
    for k, name in enumerate(names):
        data[f"labelled_share_{name}"] = shares[:, k]
    for kind, matrices in (("estimated", expected), ("realised", realised)):
        batch_scores = objective_scores(matrices, objective)
        so_far = objective_scores(np.cumsum(matrices, axis=0), objective)
        for r, who in enumerate(("source", "adapter")):
            data[f"{kind}_{who}"] = batch_scores[:, r]
            data[f"{kind}_{who}_so_far"] = so_far[:, r]
    data["realised_rows"] = realised[:, 0].sum(axis=(1, 2))
    return data


def objective_scores(matrices: np.ndarray, objective: str) -> np.ndarray:
    """The objective of each (..., rule) confusion matrix, (..., C, C) -> (...), NaN where a
    matrix holds no rows."""
    flat = matrices.reshape(-1, *matrices.shape[-2:])
    # one vectorised call (a leading axis of one keeps score off its two-rule shortcut, so
    # every matrix takes the same arithmetic as alone)
    values = np.asarray(score(flat[None], objective), dtype=np.float64)[0]
    values[flat.sum(axis=(1, 2)) <= 0] = np.nan
    return values.reshape(matrices.shape[:-2])


def empty_report(names: list[Any]) -> pd.DataFrame:
    """The report of no batch: every column of
    :meth:`~adaptable.core.report.drift_log.DriftLog.frame`, in its order, typed."""
    per_class = lambda *forms: [form.format(n) for n in names for form in forms]  # noqa: E731
    columns = [
        "batch", *SCALARS, "rule", "shift_rejects", "prior_rejects",
        *per_class("prior_{}", "prior_{}_low", "prior_{}_high"),
        *per_class("labelled_share_{}"),
        *[c for kind in ("estimated", "realised") for w in ("source", "adapter")
          for c in (f"{kind}_{w}", f"{kind}_{w}_so_far")],
        "realised_rows", *per_class("calibration_free_prior_{}"),
        *[c for kind in ("calibration_free", "label_corrected") for w in ("source", "adapter")
          for c in (f"{kind}_{w}_so_far", f"{kind}_{w}_sd")],
        "heldout_source", "heldout_source_sd",
    ]  # fmt: skip
    kinds = {"batch": "int64", "rule": str, "shift_rejects": bool, "prior_rejects": bool}
    kinds |= dict.fromkeys(COUNTS, "int64")
    return pd.DataFrame({c: pd.Series(dtype=kinds.get(c, "float64")) for c in columns})

"""Labels that come back for target rows: checked, matched to the model's scores and handed to
the decider; and the decider's drift report read back.

:class:`LabelIntake` is the part of :class:`~adaptable.core.estimator.AdapTable` behind its
``partial_fit``, ``partial_fit_logits``, ``report`` and ``drift_summary``. Only the recommended
preset's decider learns from labels
(:meth:`~adaptable.core.recommended.recommended_decider.RecommendedDecider.learn`) and keeps a
report (its ``drift_log``); the intake refuses the other preset's.

Example:
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from adaptable import AdapTable
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2)); y = (X[:, 0] > 0).astype(int)
    >>> method = AdapTable(random_state=0).fit(LogisticRegression().fit(X, y), X, y, X, y)
    >>> proba = method.predict_proba(X[:64])
    >>> reading = BatchInput(
    ...     logit_function=None, encoded_logits=None, encoder=None, columns=None,
    ...     n_classes=2, needs_features=True,
    ... )
    >>> intake = LabelIntake(method.decider_, reading, method.source_prior_)
    >>> intake.learn(None, y[:3], np.arange(3), method.classes_, count=len)  # rows 0, 1, 2
    >>> int(intake.report(method.classes_, "default")["realised_rows"].iloc[0])  # scored
    3
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from adaptable.core.batch_input import BatchInput, RowCount, refuse_sparse
from adaptable.core.report.drift_log import DriftLog
from adaptable.core.report.drift_summary import DriftSummary, summarise
from adaptable.framework.model_adapter import checked_logits

if TYPE_CHECKING:
    import torch

    from adaptable.core.parts.decider import Decider
    from adaptable.core.updates.model_updates import ModelUpdates


class LabelIntake:
    """Labelled target rows, checked and handed to the decider, and the decider's report.

    The estimator builds one on its parts (at fit, load and unpickling) and converts the
    caller's input with the checks every method shares (labels to codes 0..C-1, a batch's
    rows counted) before handing it here. ``classes`` (set by the estimator after its parts
    are fitted) and ``preset`` (named in the messages, as set now) are passed to each call.

    Args:
        decider: the fitted decider; it learns from labels where it has ``learn``, and keeps
            a report where it has a ``drift_log``.
        batch_input: how the estimator reads rows (the model, the Encoder, the fit's columns).
        source_prior: p_s, (C,), the drift summary's reference distribution.
        updates: the model updates, which learn from the same labels after the decider
            (``None``: none).
    """

    def __init__(
        self,
        decider: Decider,
        batch_input: BatchInput,
        source_prior: np.ndarray,
        updates: ModelUpdates | None = None,
    ) -> None:
        self.decider = decider
        self.batch_input = batch_input
        self.source_prior = source_prior
        self.updates = updates

    def check_learns(self, preset: str) -> None:
        """``ValueError`` where the decider has no use for labels (the paper preset)."""
        if not hasattr(self.decider, "learn"):
            raise ValueError(
                f"adaptable: partial_fit needs preset='default'; preset={preset!r} "
                "(Algorithm 1 of the paper) has no use for labelled target rows."
            )

    def check_accepts(self, X: Any, rows: Any, preset: str) -> None:
        """The checks of ``partial_fit(X, y, rows=rows)`` before its labels are read: a decider
        that learns, ``rows`` where ``X`` is ``None``, and a model where ``X`` is given."""
        self.check_learns(preset)
        if X is None and rows is None:
            raise ValueError(
                "adaptable: partial_fit(None, y) needs rows= (the ids of the predicted "
                "rows the labels belong to); otherwise pass the rows' features X."
            )
        if X is not None:
            self.batch_input.require_model("partial_fit_logits(logits, y)")

    def learn(
        self, X: Any, codes: np.ndarray, rows: Any, classes: np.ndarray, *, count: RowCount
    ) -> None:
        """Hand labelled rows to the decider, after :meth:`check_accepts`.

        Args:
            X: the rows as the model takes them, or ``None``: the labels then go with the
                scores the decider kept for the rows ``rows``.
            codes: the labels as codes 0..C-1, (n,).
            rows: the rows' ids in the stream, or ``None``.
            classes: the estimator's ``classes_``.
            count: the checks every method makes of a batch, which count the rows of ``X``.

        Raises:
            ValueError: a batch ``count`` refuses, sparse rows, ``X`` and ``codes`` of
                different lengths, ``rows`` that are not one integer id per label, or ids
                the decider refuses.
        """
        if X is None:
            ids = _row_ids(rows, codes)
            if len(codes):
                logits = self.decider.kept_logits(ids)
                self.decider.learn(logits, codes, ids, classes=classes)
                if self.updates is not None:
                    self.updates.learn(None, codes, ids, logits, self._earlier(ids))
            return
        # X's rows are counted where labels came, or to refuse rows that came without any
        n_rows = count(X) if len(codes) or _has_rows(X) else 0
        if n_rows:
            refuse_sparse(X)
        if len(codes) == 0:  # no labels arrived: nothing to learn, where no rows came either
            if n_rows:
                raise ValueError(f"adaptable: X has {n_rows} rows but y has no labels.")
            return
        X = self.batch_input.conform(X, "X")
        if n_rows != len(codes):
            raise ValueError(f"adaptable: X has {n_rows} rows but y has {len(codes)} labels.")
        self._hand_over(self.batch_input.model_logits(X, n_rows), codes, rows, classes, X)

    def learn_logits(
        self, logits: np.ndarray | torch.Tensor, codes: np.ndarray, rows: Any, classes: np.ndarray
    ) -> None:
        """:meth:`learn` on the rows' logits (n, C), after :meth:`check_learns`."""
        if len(codes) == 0:
            return
        logits = checked_logits(logits, self.batch_input.n_classes)
        if len(logits) != len(codes):
            raise ValueError(f"adaptable: {len(logits)} rows of logits but {len(codes)} labels.")
        self._hand_over(logits, codes, rows, classes)

    def _hand_over(
        self, logits: np.ndarray, codes: np.ndarray, rows: Any, classes: np.ndarray, X: Any = None
    ) -> None:
        ids = None if rows is None else _row_ids(rows, codes)
        self.decider.learn(logits, codes, ids, classes=classes)
        if self.updates is not None:
            self.updates.learn(X, codes, ids, logits, self._earlier(ids))

    def _earlier(self, ids: np.ndarray | None) -> np.ndarray | None:
        """The report's predictions of rows the model updates did not keep (a load mid-stream)."""
        if ids is None or self.updates is None or self.updates.kept_from(ids):
            return None
        return self._drift_log("partial_fit", "default").kept_predictions(ids)

    def report(self, classes: np.ndarray, preset: str) -> pd.DataFrame:
        """The decider's drift report, its classes named by ``classes``
        (:meth:`~adaptable.core.report.drift_log.DriftLog.frame`)."""
        return self._drift_log("report()", preset).frame(classes)

    def drift_summary(
        self,
        classes: np.ndarray,
        preset: str,
        *,
        last_batches: int | None,
        tolerance: float,
        deviations: float,
        reference: float | None,
    ) -> DriftSummary:
        """The drift summary of the decider's report
        (:func:`~adaptable.core.report.drift_summary.summarise`, which checks the options)."""
        summary = summarise(
            self._drift_log("drift_summary()", preset),
            last_batches=last_batches,
            tolerance=tolerance,
            deviations=deviations,
            reference=reference,
            source_prior=self.source_prior,
            classes=classes,
        )
        updates = self.updates
        if updates is None:
            return summary
        return dataclasses.replace(
            summary,
            model_update=updates.in_use,
            update_switches=tuple(updates.switches),
            update_scores=updates.record.scores(updates.objective),
        )

    def _drift_log(self, caller: str, preset: str) -> DriftLog:
        log = getattr(self.decider, "drift_log", None)
        if log is None:
            raise ValueError(f"adaptable: {caller} needs preset='default'; got {preset!r}.")
        return log


def _has_rows(X: Any) -> bool:
    """Whether ``X`` holds at least one row (a sparse matrix or a frame as well as a list)."""
    shape = getattr(X, "shape", None)
    if shape is not None:
        return len(shape) > 0 and shape[0] > 0
    return len(X) > 0


def _row_ids(rows: Any, codes: np.ndarray) -> np.ndarray:
    """``rows`` as one integer id per label."""
    ids = np.asarray(rows)
    if ids.size == 0 and ids.shape == codes.shape:
        return ids.astype(np.int64)  # an empty list is no labels (numpy reads it as floats)
    if ids.shape != codes.shape or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"adaptable: rows must be {len(codes)} integer row ids, one per label.")
    if ids.dtype.kind == "u" and ids.size and ids.max() > np.iinfo(np.int64).max:
        # read as int64 further on, such an id would wrap round to a negative one
        raise ValueError(
            f"adaptable: row ids must name rows already predicted; got {int(ids.max())}, "
            "beyond any stream's rows."
        )
    return ids

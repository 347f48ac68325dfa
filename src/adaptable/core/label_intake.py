"""AdapTable's labelled-rows API: ``partial_fit`` for labels that arrive late, ``report`` for
the drift the adapter sees.

:class:`LateLabels` is the part of :class:`~adaptable.core.estimator.AdapTable` that takes
labelled target rows and hands them to the decider
(:meth:`~adaptable.core.recommended.recommended_decider.RecommendedDecider.learn`); only the recommended
preset's decider learns from labels and keeps a report.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self

import numpy as np
import pandas as pd

from adaptable.core.report.drift_log import DriftLog
from adaptable.core.report.drift_summary import DriftSummary, summarise
from adaptable.framework.model_adapter import checked_logits

if TYPE_CHECKING:
    import torch

    from adaptable.framework.fitted_columns import FittedColumns


class LateLabels:
    """``partial_fit``, ``partial_fit_logits``, ``report`` and ``drift_summary``, mixed into
    AdapTable."""

    columns_: FittedColumns | None

    def partial_fit(self, X: Any, y: Any, *, rows: Any = None) -> Self:
        """Labels of target rows that were predicted earlier (default preset).

        Labels may arrive at any delay, for any share of the rows, in any number of calls
        between two batches; they must come from the labels of :meth:`fit` (``classes_``).
        They change the decisions of the batches that come *after* this call (never the
        predictions already made): the rule is chosen on the labelled rows together with the
        held-out source rows and the stream's posteriors (each kept while the labels do not
        refute it), the target label distribution combines the labelled counts with
        the unlabelled estimate, and with enough labels a correction of the model's scores is
        considered. Without any call the adapter is exactly the unlabelled default.

        Args:
            X: the rows, as the model takes them (n rows); or ``None`` with ``rows``: the
                labels then go with the model's scores the adapter kept when it predicted
                those rows (the last 65,536 rows'), and the model is not called again.
            y: their labels, (n,).
            rows: optional ids of the rows: their positions in the stream since fit / reset
                (the first batch passed to :meth:`predict_proba` holds rows 0 .. n_1 - 1, the
                next one n_1 .. n_1 + n_2 - 1; :meth:`report`'s ``first_row`` shows them).
                With ids the labels are also scored against the predictions made for those
                rows (the report's ``realised_*`` columns); rows re-presented by value cannot
                be matched otherwise. A label sent again for the same row id (a retry, or a
                feed that sends every label it knows each time) counts once; rows older than
                the last 65,536 cannot be checked for repeats.

        Returns:
            self.

        Raises:
            ValueError: the paper preset (it has no use for labels), a label outside
                ``classes_``, a length mismatch, an id naming no row predicted so far, a row
                id given two different labels (in this call or across calls), or ``X=None``
                without ``rows`` or for rows whose scores are no longer kept. Nothing is
                learnt from a call that raises.

        Example:
            >>> method.predict(X_batch)              # doctest: +SKIP
            >>> method.partial_fit(X_batch[:3], y_true[:3], rows=[0, 1, 2])  # doctest: +SKIP
            >>> method.partial_fit(None, y_true[3:5], rows=[3, 4])  # doctest: +SKIP
        """
        self._check_fitted()
        self._check_learns()
        if X is None:
            if rows is None:
                raise ValueError(
                    "adaptable: partial_fit(None, y) needs rows= (the ids of the predicted "
                    "rows the labels belong to); otherwise pass the rows' features X."
                )
            codes = self._label_codes(y, "y")
            ids = self._row_ids(rows, codes)
            if len(codes) == 0:
                return self
            return self._learn(self.decider_.kept_logits(ids), codes, ids)
        if self._logit_function is None:
            raise RuntimeError(
                "This AdapTable was loaded without a model; pass model= to AdapTable.load, or "
                "call partial_fit_logits(logits, y)."
            )
        codes = self._label_codes(y, "y")
        if len(codes) == 0:  # no labels arrived: nothing to learn, where no rows came either
            n_rows = self._check_batch(X) if X is not None and _has_rows(X) else 0
            if n_rows:
                raise ValueError(f"adaptable: X has {n_rows} rows but y has no labels.")
            return self
        n_rows = self._check_batch(X)
        if self.columns_ is not None:
            X = self.columns_.conform(X, "X")
        if n_rows != len(codes):
            raise ValueError(f"adaptable: X has {n_rows} rows but y has {len(codes)} labels.")
        if self._encoded_logits is not None:
            logits = self._encoded_logits(self.encoder_.encode(X))
        else:
            logits = self._logit_function(X)
        return self._learn(checked_logits(logits, self.n_classes_, n_rows), codes, rows)

    def partial_fit_logits(
        self, logits: np.ndarray | torch.Tensor, y: Any, *, rows: Any = None
    ) -> Self:
        """:meth:`partial_fit` on the rows' logits (n, C), which the caller already has."""
        self._check_fitted()
        self._check_learns()
        codes = self._label_codes(y, "y")
        if len(codes) == 0:
            return self
        logits = checked_logits(logits, self.n_classes_)
        if len(logits) != len(codes):
            raise ValueError(f"adaptable: {len(logits)} rows of logits but {len(codes)} labels.")
        return self._learn(logits, codes, rows)

    def _check_learns(self) -> None:
        if not hasattr(self.decider_, "learn"):
            raise ValueError(
                f"adaptable: partial_fit needs preset='default'; preset={self.preset!r} "
                "(Algorithm 1 of the paper) has no use for labelled target rows."
            )

    def _learn(self, logits: np.ndarray, codes: np.ndarray, rows: Any) -> Self:
        ids = None if rows is None else self._row_ids(rows, codes)
        self.decider_.learn(logits, codes, ids, classes=self.classes_)
        return self

    @staticmethod
    def _row_ids(rows: Any, codes: np.ndarray) -> np.ndarray:
        ids = np.asarray(rows)
        if ids.size == 0 and ids.shape == codes.shape:
            return ids.astype(np.int64)  # an empty list is no labels (numpy reads it as floats)
        if ids.shape != codes.shape or not np.issubdtype(ids.dtype, np.integer):
            raise ValueError(
                f"adaptable: rows must be {len(codes)} integer row ids, one per label."
            )
        return ids

    def report(self) -> pd.DataFrame:
        """The drift report: one row per batch adapted since fit / reset / load (default
        preset; columns: :meth:`adaptable.core.report.drift_log.DriftLog.frame`), with the classes
        named by ``classes_`` (by position, with a warning, where two names would give one
        column). On a long stream only the last ``report_batches`` batches are kept (up to a
        quarter more; about 1.2 kB each): the older ones are forgotten, and ``batch`` goes on
        counting. Labels by row id for rows of a forgotten batch still teach the adapter (and
        are checked for repeats) while the last 65,536 rows' scores hold them, but are no
        longer scored.
        :func:`adaptable.experiments.drift_figure.draw` plots it.

        Raises:
            ValueError: the paper preset (it keeps no report).
        """
        return self._drift_log("report()").frame(self.classes_)

    def drift_summary(
        self,
        *,
        last_batches: int | None = None,
        tolerance: float = 0.05,
        deviations: float = 2.0,
        reference: float | None = None,
    ) -> DriftSummary:
        """Whether the adapter still does as well on the stream as the model did on its
        held-out source rows (default preset): the drift tests at the last batch, the
        estimated label distribution, the objective over the stream's rows (label-corrected
        where labels came back by row id, else the best unlabelled estimate) beside that
        reference, and a verdict (:mod:`adaptable.core.report.drift_summary`): ``"degraded"``,
        ``"holding"``, ``"undetermined"`` or ``"unverified"``. ``print`` it to read it.

        Args:
            last_batches: summarise only the latest batches (None: every batch since fit /
                reset / load); a drift that began late shows sooner in a short window.
            tolerance: the fall of the objective accepted (a fraction: 0.05 is 5 points).
            deviations: the standard deviations a verdict needs on each side.
            reference: the level to compare with (a fraction, taken as exact); None: the
                model's objective on the held-out source rows, with its deviation.

        Returns:
            a :class:`~adaptable.core.report.drift_summary.DriftSummary`.

        Raises:
            ValueError: the paper preset, no batch adapted yet, ``last_batches`` below 1, or
                a negative ``tolerance`` or ``deviations``, or a ``reference`` outside [0, 1].

        Example:
            >>> method.predict(X_batch)                          # doctest: +SKIP
            >>> method.partial_fit(None, y_late, rows=late_ids)  # doctest: +SKIP
            >>> print(method.drift_summary(last_batches=50))     # doctest: +SKIP
        """
        log = self._drift_log("drift_summary()")
        return summarise(
            log,
            last_batches=last_batches,
            tolerance=tolerance,
            deviations=deviations,
            reference=reference,
            source_prior=self.source_prior_,
            classes=self.classes_,
        )

    def _drift_log(self, caller: str) -> DriftLog:
        self._check_fitted()
        log = getattr(self.decider_, "drift_log", None)
        if log is None:
            raise ValueError(f"adaptable: {caller} needs preset='default'; got {self.preset!r}.")
        return log


def _has_rows(X: Any) -> bool:
    """Whether ``X`` holds at least one row (a sparse matrix or a frame as well as a list)."""
    shape = getattr(X, "shape", None)
    if shape is not None:
        return len(shape) > 0 and shape[0] > 0
    return len(X) > 0

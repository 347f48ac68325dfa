"""What :attr:`AdapTable.state <adaptable.core.estimator.AdapTable.state>` shows: the current
target-label estimate and the last batch's diagnostics (:class:`AdapTableState`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from adaptable.core.parts.decider import Decider, Decision


@dataclass(frozen=True)
class AdapTableState:
    """Diagnostics after the last batch (``None`` before the first batch).

    Attributes:
        source_prior: p_s, (C,).
        temperature: T of the quantile rule (paper preset; ``None`` in the default preset).
        online_prior: the current estimate of the target label distribution (p^oe in the paper
            preset, the MAP-EM estimate in the default preset), (C,).
        target_prior: p_t used on the last batch, (C,).
        temperatures: the calibrator's per-row T_i of the last batch, (n,) (NaN where none).
        recalibration_temperatures: the per-row T~_i of the last batch (T, 1 or 1/T), (n,).
        uncertainty: delta_i of the last batch, (n,).
        n_batches: batches adapted since fit / reset (a loaded adapter goes on from the
            count it was saved with; after a load ``target_prior``, ``decision_rule`` and
            ``prior_shift_statistic`` are the saved last batch's, its per-row arrays
            ``None``).
        decision_rule: default preset: the rule used on the last batch, ``"source"``,
            ``"balanced"``, ``"plugin"``, ``"between"`` or ``"label_shift"``; once labels
            have come back (``partial_fit``), ``"feedback:"`` and the rule they chose:
            ``argmax``, ``balanced``, ``label_shift``, ``plugin``, ``corrected`` (a score
            correction fitted on them) or the unlabelled rule of the moment, as
            ``"feedback:<rule> (unlabelled)"``.
        shift_statistic: default preset: the label-shift test's z-score now (small: the
            stream is consistent with pure label shift).
        prior_shift_statistic: default preset: the likelihood-ratio statistic of the target-prior
            estimate against p_s on the last batch; ``None`` where the z-score ruled it out.

    Example:
        >>> import numpy as np
        >>> from adaptable.core import PaperDecider
        >>> from adaptable.core.parts.contexts import FitContext
        >>> from adaptable.framework.method import SourceData
        >>> y = np.array([0, 0, 0, 1])
        >>> context = FitContext(SourceData(None, y), np.zeros((4, 2)), None, np.array([.75, .25]))
        >>> decider = PaperDecider().fit(context)
        >>> state = AdapTableState.of(context.source_prior, None, decider, None, None, 0)
        >>> state.n_batches, state.target_prior, state.online_prior.tolist()
        (0, None, [0.5, 0.5])
    """

    source_prior: np.ndarray
    temperature: float | None
    online_prior: np.ndarray
    target_prior: np.ndarray | None
    temperatures: np.ndarray | None
    recalibration_temperatures: np.ndarray | None
    uncertainty: np.ndarray | None
    n_batches: int
    decision_rule: str | None = None
    shift_statistic: float | None = None
    prior_shift_statistic: float | None = None

    @classmethod
    def of(
        cls,
        source_prior: np.ndarray,
        temperature: float | None,
        decider: Decider,
        last: tuple[Decision, np.ndarray | None] | None,
        saved_last: dict[str, Any] | None,
        n_batches: int,
    ) -> AdapTableState:
        """The state now.

        Args:
            source_prior: p_s, (C,) (copied).
            temperature: T of the quantile rule, or ``None``.
            decider: the fitted decider, for its online estimate and shift statistic.
            last: the last batch's decision and calibrator temperatures, or ``None`` before a
                batch (since fit, reset or load).
            saved_last: where no batch was adapted since a load, the last batch's fields the
                file held (``rule``, ``target_prior``, ``prior_shift_statistic``); else
                ``None``.
            n_batches: the batches adapted so far.
        """
        decision, temperatures = last if last is not None else (None, None)
        if decision is None and saved_last is not None:
            decision = Decision(
                np.zeros((0, len(source_prior))), saved_last["target_prior"],
                decider.online_prior, None, None, saved_last["rule"], None,
                saved_last["prior_shift_statistic"],
            )  # fmt: skip
        return cls(
            source_prior=source_prior.copy(),
            temperature=temperature,
            online_prior=decider.online_prior,
            target_prior=None if decision is None else decision.target_prior,
            temperatures=temperatures,
            recalibration_temperatures=None
            if decision is None
            else decision.recalibration_temperatures,
            uncertainty=None if decision is None else decision.uncertainty,
            n_batches=n_batches,
            decision_rule=None if decision is None else decision.rule,
            shift_statistic=decider.shift_statistic,
            prior_shift_statistic=None if decision is None else decision.prior_shift_statistic,
        )

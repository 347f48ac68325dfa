"""The label-shift reading of the stream, kept between batches: whether the balanced rule still
wins when the reservoir's posteriors are re-weighted by a MAP estimate of p_t / p_s.

The reading (:class:`LabelShiftReading`) is the recommended decider's second stream check. Read
in full it is O(reservoir) work on every batch: Newton's method for the MAP estimate p of the
target label distribution under a Dirichlet prior centred at p_s, then both rules' expected
confusion matrices on the reservoir under the re-weighted posteriors. Its answer, a sign, rarely
changes from one batch to the next, so after each full reading the reading keeps what it needs
to *prove* that the answer cannot have changed, and recomputes only when the proof fails.

The proof (free coordinates z = q_1..q_{C-1} of the simplex, q_C = 1 - sum z; a_y = strength
p_s(y) the prior's pseudo-counts; r_i = q(.|x_i) / p_s the reservoir's ratios, m_i(q) = q . r_i,
f_i = r_i[:-1] - r_i[C], w = n_seen / reservoir size; F(z) = w sum_i log m_i + sum_y a_y log q_y
the concave objective whose maximiser is the reading's estimate):

1. *How far the estimate can have moved.* Let q^ be the last full reading's estimate. In the
   box B = {q : q_y / q^_y in [1 / (1 + eps), 1 + eps]} every m_i(q) <= (1 + eps) m_i(q^) and
   q_y <= (1 + eps) q^_y, so -Hess F(q) >= (w L(q^) + P(q^)) / (1 + eps)^2 with L(q^) =
   sum_i f_i f_i^T / m_i(q^)^2 and P(q^) the prior's curvature. The weight w only grows along a
   stream and the reservoir rows that changed since q^ (b of them replaced) each take at most
   ||f_i||^2 / m_i^2 out of L, so the smallest eigenvalue is at least
   mu = (Lambda^ - w sum_replaced ||f_i||^2 / m_i(q^)^2) / (1 + eps)^2, Lambda^ the smallest
   eigenvalue of -Hess at the last reading. F's gradient g at q^ is w times the sum of the
   rows' slopes f_i / m_i(q^), kept slot by slot as rows change (O(batch) per batch), plus the
   prior's gradient (the residual gradient of the last reading's Newton included). F being
   mu-strongly concave on the largest ball of radius rho inside B, the maximiser lies within
   ||g|| / mu of q^ once 2 ||g|| / mu < rho (on the sphere of radius rho, F(q) <= F(q^) +
   ||g|| rho - mu rho^2 / 2 < F(q^)). Newton's method, stopped on a step below 1e-10 with
   quadratic convergence, ends within ``NEWTON_SLACK`` of the maximiser: added to the bound.
2. *How far the answer can have moved.* For estimates p with p_y / q^_y in [lo, hi] every
   re-weighted posterior norm(q_i p / p_s)_y is within the factor kappa = hi / lo of its value
   at q^ (numerator and normaliser each move by at most hi or lo), while each matrix's column
   sums (rows predicted k) do not depend on p. The expected confusion matrices at q^ on the
   current reservoir are the last ones plus the changed rows' terms (O(changed rows)); the
   scores' ranges under cells scaled by [1 / kappa, kappa] are
   :func:`~adaptable.core.decision.rules.score_bounds`. Where the balanced rule's range lies wholly
   above argmax's (or wholly below), the full reading would give that answer. For two classes
   and macro-F1 a tighter range comes first: the gap between the two rules' scores to first
   order in the move of logit(q), from each column's slope kept like the matrices
   (:mod:`adaptable.core.recommended.estimate_bound`); scaling every cell alone loses that the two rules
   share most of their rows, so it misses margins that are small beside the move.

The answer is therefore the one the full reading gives whenever the full reading's Newton ends
within ``NEWTON_SLACK`` of the maximiser (a snapshot is kept only after a Newton run that
stopped on its tolerance). A full reading starts Newton from the last full reading's estimate,
so after bounded answers its estimate can differ from one warm-started batch by batch in the
last bits; the answer can differ only where the two rules' scores tie to rounding. The estimate
itself (:attr:`LabelShiftReading.prior`) is computed on demand after a bounded answer.
"""

from __future__ import annotations

import math

import numpy as np

from adaptable.core.decision.rules import argmax_by_class, expected_confusion, score, score_bounds
from adaptable.core.recommended.estimate_bound import column_slopes, f1_gap_bounds
from adaptable.core.recommended.prior_estimate import OnlinePriorEstimate

#: half-width of the box around the last estimate, relative to each class's share, in which the
#: curvature bound holds
BOX = 0.2
#: how far a converged Newton estimate may be from the maximiser (its last step is below 1e-10)
NEWTON_SLACK = 1e-7
#: the bound on the scores' difference must clear zero by this (rounding in the scores)
SCORE_SLACK = 1e-9
#: no snapshot is kept where the last call found more than this share of the reservoir changed
#: (large batches move the estimate too far for the bound; the snapshot would only cost)
SNAPSHOT_CHANGE = 0.125


class _Snapshot:
    """What a full reading keeps to bound the next ones (module docstring), brought up to date
    slot by slot as the reservoir changes: the changed rows' terms at the reading's estimate.

    ``scaled`` and ``weighted`` are the reading's buffers of ``capacity`` slots (reused from one
    snapshot to the next), zero where no row is yet.
    """

    def __init__(
        self,
        estimate: OnlinePriorEstimate,
        prior: np.ndarray,
        pseudo: np.ndarray,
        weighted: np.ndarray,
        matrices: np.ndarray,
        rules: np.ndarray,
        buffers: tuple[np.ndarray, np.ndarray],
    ) -> None:
        n_classes, size = weighted.shape
        self.n_seen, self.size = estimate.n_seen, size
        self.prior = prior
        # q(y|x_i) / p_s(y) = weighted_y / p_y * m_i: the slopes f_i / m_i from the posteriors
        # re-weighted at the estimate, which the reading computed already
        self.ratio = prior / estimate.source_prior
        self.inverse = 1.0 / prior
        self.scaled, self.weighted = buffers
        scaled = self.slopes(weighted)
        self.scaled[:, :size] = scaled
        self.scaled[:, size:] = 0.0
        self.weighted[:, :size] = weighted
        self.weighted[:, size:] = 0.0
        self.prior_gradient = pseudo[:-1] * self.inverse[:-1] - pseudo[-1] * self.inverse[-1]
        row_weight = self.n_seen / size
        prior_curvature = pseudo * self.inverse**2
        if n_classes == 2:
            self.norms = scaled[0] * scaled[0]  # ||f_i||^2 / m_i^2 of the rows kept then
            self.curvature = row_weight * float(self.norms.sum()) + float(prior_curvature.sum())
        else:
            self.norms = (scaled * scaled).sum(axis=0)
            curvature = row_weight * (scaled @ scaled.T)
            curvature += np.diag(prior_curvature[:-1]) + prior_curvature[-1]
            #: the smallest eigenvalue of -Hess F at the estimate (free coordinates)
            self.curvature = float(np.linalg.eigvalsh(curvature)[0])
        self.slope_sum = scaled.sum(axis=1)
        self.matrices = matrices.copy()
        #: two classes: each rule's column's d(class-1 mass) / d logit(q), (2, 2), kept like
        #: the matrices (for :func:`~adaptable.core.recommended.estimate_bound.f1_gap_bounds`)
        self.mass_slopes = column_slopes(weighted, rules) if n_classes == 2 else None
        self._classes = np.arange(n_classes, dtype=np.intp)
        self.replaced = np.zeros(size, dtype=bool)
        self.removed = 0.0  # sum of norms of the rows kept then and replaced since
        # the largest ball (free coordinates) inside the box: |dq_y| <= |dz| for y < C, and
        # |dq_C| <= sqrt(C - 1) |dz|
        shares = np.append(prior[:-1], prior[-1] / math.sqrt(n_classes - 1))
        self.radius = float(shares.min()) * BOX / (1.0 + BOX)
        self.spread = np.append(np.ones(n_classes - 1), math.sqrt(n_classes - 1))
        #: the largest relative move of a class's share per unit move of the free coordinates
        self.widest = float((self.spread / prior).max())

    def slopes(self, weighted: np.ndarray) -> np.ndarray:
        """f_i / m_i, (C - 1, n), from the re-weighted posteriors at the estimate (C, n)."""
        if len(weighted) == 2:
            return (weighted[0] * self.inverse[0] - weighted[1] * self.inverse[1])[None, :]
        return weighted[:-1] * self.inverse[:-1, None] - weighted[-1] * self.inverse[-1]

    def update(
        self,
        columns: np.ndarray,
        changed: np.ndarray,
        old_rules: np.ndarray,
        new_rules: np.ndarray,
    ) -> None:
        """Replace the terms of the ``changed`` slots (their posteriors now, class-major
        (C, k), and their rules before and after)."""
        if not changed.size:
            return
        weighted = columns * self.ratio[:, None]
        weighted /= weighted.sum(axis=0)
        # the new rows' terms in, the old ones out: one product (C, 2k) @ (2, 2k, C)
        old = self.weighted[:, changed]
        signed = np.concatenate([weighted, -old], axis=1)
        rules = np.concatenate([new_rules, old_rules], axis=1)
        if self.mass_slopes is None:
            scaled = self.slopes(weighted)
            self.slope_sum += scaled.sum(axis=1) - self.scaled[:, changed].sum(axis=1)
            self.matrices += signed @ (rules[:, :, None] == self._classes)
            self.scaled[:, changed] = scaled
        else:
            # Two classes: a third row, the rows' pi (1 - pi), gives the columns' slopes; and
            # a row's slope w_0 / q_0 - w_1 / q_1 is linear in its weights, so the slopes'
            # sum moves by the weights' sums, which the product holds already.
            spreads = np.concatenate([weighted[0] * weighted[1], -(old[0] * old[1])])
            terms = np.concatenate([signed, spreads[None, :]]) @ (
                rules[:, :, None] == self._classes
            )
            self.matrices += terms[:, :2]
            self.mass_slopes += terms[:, 2]
            moved = terms[0, :2].sum(axis=1).tolist()  # the change of sum_i w_y, (2,)
            self.slope_sum += moved[0] * self.inverse[0] - moved[1] * self.inverse[1]
        self.weighted[:, changed] = weighted
        kept = changed[changed < self.size] if changed[-1] >= self.size else changed
        first = kept[~self.replaced[kept]]
        if first.size:
            self.replaced[first] = True
            self.removed += float(self.norms[first].sum())


class LabelShiftReading:
    """The label-shift reading of a stream, recomputed over the reservoir only when its
    answer could change (module docstring).

    Args:
        estimate: the stream's :class:`~adaptable.core.recommended.prior_estimate.OnlinePriorEstimate`
            (its reservoir is read; its running estimate is left as it is).
        strength: rows' worth of the Dirichlet prior centred at p_s.
        balanced_weights: the balanced rule's class weights 1 / p_s, (C,).
        objective: the objective both rules are scored for.

    Example:
        >>> est = OnlinePriorEstimate(np.array([0.8, 0.2]), center="source")
        >>> est.add(np.array([[0.7, 0.3], [0.9, 0.1], [0.4, 0.6]] * 200))
        >>> reading = LabelShiftReading(est, 64.0, 1.0 / est.source_prior, "macro_f1")
        >>> reading.favours_balanced(), reading.prior.round(3).tolist()
        (True, [0.316, 0.684])
    """

    def __init__(
        self,
        estimate: OnlinePriorEstimate,
        strength: float,
        balanced_weights: np.ndarray,
        objective: str,
    ) -> None:
        self.estimate = estimate
        self.strength = float(strength)
        self.balanced_weights = np.asarray(balanced_weights, dtype=np.float64)
        self.objective = objective
        self._pseudo = self.strength * estimate.source_prior
        self._prior = estimate.source_prior.copy()
        self._current = True
        # both rules' predictions of every reservoir slot, brought up to date slot by slot;
        # slots written after stream row ``_until`` are not in it yet
        self._rules = np.zeros((2, estimate.capacity), dtype=np.intp)
        self._until = 0
        self._snapshot: _Snapshot | None = None
        self._buffers: tuple[np.ndarray, np.ndarray] | None = None
        # full readings to go before the next snapshot (the bound failed right after one)
        self._snapshot_wait, self._snapshot_backoff = 0, 1
        self._bounded_at_snapshot = 0
        self._last_changed = 0
        #: full readings and readings answered by the bound, since the start of the stream
        self.full_readings = 0
        self.bounded_readings = 0

    @property
    def prior(self) -> np.ndarray:
        """The reading's estimate of the target label distribution on the current reservoir,
        (C,) (computed here if the last answer came from the bound)."""
        if not self._current:
            self._prior = self._estimate()
            self._current = True
        return self._prior.copy()

    def favours_balanced(self) -> bool:
        """Whether the balanced rule's expected objective is at least argmax's on the
        reservoir re-weighted by the reading's estimate."""
        self._bring_up_to_date()
        snapshot = self._snapshot
        if snapshot is not None:
            answer = self._bounded_answer(snapshot)
            if answer is not None:
                self.bounded_readings += 1
                self._current = False
                self._snapshot_backoff = 1
                return answer
            if self.bounded_readings == self._bounded_at_snapshot:
                # the bound failed at once: the next full readings keep no snapshot for a while
                self._snapshot_wait = self._snapshot_backoff
                self._snapshot_backoff = min(2 * self._snapshot_backoff, 64)
        return self._full_reading()

    def _bring_up_to_date(self) -> None:
        """The rules (and the snapshot's terms) of the slots written since the last call."""
        estimate = self.estimate
        posteriors = estimate.reservoir_by_class
        if estimate.n_seen < self._until:  # the estimate forgot its stream
            self._until, self._snapshot = 0, None
        changed = np.flatnonzero(estimate.written_at[: posteriors.shape[1]] > self._until)
        self._until = estimate.n_seen
        self._last_changed = len(changed)
        if self._snapshot is None:
            self._refresh_rules(posteriors[:, changed], changed)
            return
        old_rules = self._rules[:, changed]
        columns = posteriors[:, changed]
        new_rules = self._refresh_rules(columns, changed)
        self._snapshot.update(columns, changed, old_rules, new_rules)

    def _refresh_rules(self, columns: np.ndarray, slots: np.ndarray) -> np.ndarray:
        """Both rules' predictions of the given slots' rows (C, k), stored and returned: the
        values of :func:`~adaptable.core.decision.rules.argmax_by_class` (two classes: class 1
        where it is strictly more probable, the same comparison)."""
        rules = np.empty((2, columns.shape[1]), dtype=np.intp)
        balanced = columns * self.balanced_weights[:, None]
        if len(columns) == 2:
            np.greater(columns[1], columns[0], out=rules[0], casting="unsafe")
            np.greater(balanced[1], balanced[0], out=rules[1], casting="unsafe")
        else:
            rules[0], rules[1] = argmax_by_class(columns), argmax_by_class(balanced)
        self._rules[:, slots] = rules
        return rules

    # ------------------------------------------------------------------ the full reading
    def _estimate(self) -> np.ndarray:
        estimate = self.estimate
        return estimate.estimate_with(estimate.source_prior, self.strength, self._prior)

    def _full_reading(self) -> bool:
        estimate = self.estimate
        self._prior = self._estimate()
        self._current = True
        self.full_readings += 1
        rules = self._rules[:, : estimate.reservoir_by_class.shape[1]]
        weighted = estimate.target_posteriors_by_class(self._prior)
        matrices = expected_confusion(weighted.T, rules)
        source_score, balanced_score = score(matrices, self.objective)
        self._snapshot, self._bounded_at_snapshot = None, self.bounded_readings
        if self._snapshot_wait > 0:
            self._snapshot_wait -= 1
        elif (
            estimate.last_estimate_converged
            and self._last_changed <= SNAPSHOT_CHANGE * estimate.reservoir_by_class.shape[1]
        ):
            if self._buffers is None:
                n_classes = len(self._prior)
                self._buffers = (
                    np.zeros((n_classes - 1, estimate.capacity)),
                    np.zeros((n_classes, estimate.capacity)),
                )
            self._snapshot = _Snapshot(
                estimate, self._prior, self._pseudo, weighted, matrices, rules, self._buffers
            )
        return bool(balanced_score >= source_score)

    # ------------------------------------------------------------------ the bound
    def _bounded_answer(self, snapshot: _Snapshot) -> bool | None:
        """The full reading's answer where the bound proves it, else ``None``."""
        estimate = self.estimate
        prior = snapshot.prior
        size = estimate.reservoir_by_class.shape[1]
        row_weight = estimate.n_seen / size
        # 1. the estimate's move
        curvature = snapshot.curvature - row_weight * snapshot.removed
        if not curvature > 0:
            return None
        mu = curvature / (1.0 + BOX) ** 2
        if len(prior) == 2:  # one free coordinate: scalars (numpy's per-call cost)
            gradient = row_weight * float(snapshot.slope_sum[0]) + float(snapshot.prior_gradient[0])
            length = abs(gradient)
        else:
            vector = row_weight * snapshot.slope_sum + snapshot.prior_gradient
            length = float(np.sqrt(vector @ vector))
        # (rounding in the running sum: far below any gradient the bound lets through)
        norm = length + 1e-9 * row_weight * size
        if not 2.0 * norm / mu < snapshot.radius:
            return None
        move = (norm / mu + NEWTON_SLACK) * snapshot.widest
        if not move < 1.0:
            return None
        factor = (1.0 + move) / (1.0 - move) * (1.0 + 1e-9)
        # 2. the scores at the old estimate on the current reservoir, then their ranges
        matrices = snapshot.matrices
        if len(snapshot.prior) == 2:  # two classes: eight cells, summed in scalars
            cells = matrices.ravel().tolist()
            actual = [a + b for a, b in zip(cells[::2], cells[1::2], strict=True)]
        else:
            actual = matrices.sum(axis=-1).ravel().tolist()
        if any(0 < total < 1e-6 for total in actual):  # a class about to vanish: read in full
            return None
        if snapshot.mass_slopes is not None and self.objective == "macro_f1":
            # first order in the estimate's move (module reading_bound); the cell-by-cell
            # bound below where it proves nothing
            c = [max(cell, 0.0) for cell in cells]
            clipped = [[c[0:2], c[2:4]], [c[4:6], c[6:8]]]
            gap_low, gap_high = f1_gap_bounds(
                clipped, snapshot.mass_slopes.tolist(), math.log(factor)
            )
            if gap_low > SCORE_SLACK:
                return True
            if gap_high < -SCORE_SLACK:
                return False
        low, high = score_bounds(np.maximum(matrices, 0.0), self.objective, factor)
        if low[1] - high[0] > SCORE_SLACK:
            return True
        if high[1] - low[0] < -SCORE_SLACK:
            return False
        return None

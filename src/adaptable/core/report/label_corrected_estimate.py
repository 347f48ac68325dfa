"""The drift report's label-corrected estimate: the performance over every row of the stream so
far, from the posteriors of all rows corrected by the labelled ones.

The posteriors' estimate (the expected confusion matrix of the rows under the posteriors the
adapter believes) is biased wherever those posteriors are miscalibrated for the target, which a
covariate shift usually makes them; the realised confusion of the labelled rows alone is
unbiased but reads only the few rows whose labels arrived. The difference estimator (in the
machine-learning literature, prediction-powered inference: Angelopoulos et al., Science 2023)
takes both: with p_i the believed posterior of row i, pred_i its prediction, N the rows so far
and L the labelled ones among them,

    cells = (1 / N) sum_{i <= N} p_i e_pred_i^T  +  (1 / |L|) sum_{i in L} (e_y_i - p_i) e_pred_i^T,

whose second term is the posteriors' mean error, measured where labels arrived. Where the
labelled rows are a random sample of the N rows it is unbiased for their realised confusion
shares, whatever the posteriors' calibration; the better the posteriors, the smaller its
variance. Labels that arrive late leave the latest rows unlabelled: the estimate then assumes
that the posteriors err on them as on the earlier rows, and a calibration that drifts over
the stream biases it (as it does the realised columns). The objective is read from the cells
(negative cells, which small samples can give, clipped to zero).

Its deviation (delta method): with g the objective's gradient in the cells, u_i = e_y_i - p_i
and z_i = g . u_i e_pred_i^T, the realised value lies around the estimate with variance
Var(z) (1 / |L| - 1 / N) (the labelled rows are drawn from the N rows themselves; a row
labelled twice counts twice: more labels than rows give no deviation). The deviation (the
square root) is capped at 0.5, beyond which two deviations already cover any miss between two
values in [0, 1] (a nearly absent class makes the delta method blow up). Every
objective's gradient has the form g_jk = a_j delta_jk + h_j + w_k
(:func:`~adaptable.core.report.heldout_estimate.gradient_parts`) and u sums to zero, so
z_i = a_k u_ik + h . u_i for k = pred_i: Var(z) needs only, per rule, the sum of u_k u over the
rows predicted k (row k of a (C, C) array) and, for both rules, the sum of u u^T: three C x C
arrays per batch beside the residuals' sums.

Example:
    >>> import numpy as np
    >>> sums = ResidualSums(n_classes=2)
    >>> # two labelled rows of class 1, predicted 0 and 1 by both rules
    >>> sums.add(0, np.array([1, 1]), np.array([[0.6, 0.4], [0.2, 0.8]]),
    ...          np.array([0, 1]), np.array([0, 1]))
    >>> expected = np.array([[[[5.0, 1.0], [1.0, 3.0]]] * 2])  # 1 batch of 10 rows, 2 rules
    >>> scores, sd = sums.estimates(expected, np.array([10.0]), "accuracy")
    >>> round(float(scores[0, 0]), 6)  # the posteriors alone say 0.8
    0.6
"""

from __future__ import annotations

import numpy as np

from adaptable.core.decision.rules import expected_confusion, score
from adaptable.core.report.heldout_estimate import LARGEST_DEVIATION, gradient_parts


class ResidualSums:
    """The labelled rows' residuals u = e_y - p, summed per batch that received labels: per
    rule (the unadapted model's argmax, the adapter's output) by predicted class, a (2, C, C)
    array whose column k is the sum of u over the rows predicted k, and a (2, C, C) one whose
    row k is the sum of u_k u over them; for both rules the sum of u u^T, (C, C); and the
    labelled rows counted.

    Args:
        n_classes: C.
    """

    def __init__(self, n_classes: int) -> None:
        self.n_classes = int(n_classes)
        self.reset()

    def reset(self) -> None:
        """Forget every batch."""
        self._sums: dict[int, np.ndarray] = {}
        self._cross: dict[int, np.ndarray] = {}
        self._outer: dict[int, np.ndarray] = {}
        self._rows: dict[int, int] = {}

    def add(
        self,
        batch: int,
        labels: np.ndarray,
        believed: np.ndarray,
        source_predictions: np.ndarray,
        adapter_predictions: np.ndarray,
    ) -> None:
        """Labelled rows of batch ``batch``: their label codes (n,), the posteriors the adapter
        believed when it predicted them (n, C), and both rules' predictions (n,)."""
        c = self.n_classes
        residuals = np.eye(c)[labels] - believed  # u, (n, C)
        predicted = np.stack([source_predictions, adapter_predictions])  # (2, n)
        sums = self._sums.setdefault(batch, np.zeros((2, c, c)))
        cross = self._cross.setdefault(batch, np.zeros((2, c, c)))
        outer = self._outer.setdefault(batch, np.zeros((c, c)))
        outer += residuals.T @ residuals
        # column k: the residuals of the rows each rule predicts k, summed
        sums += expected_confusion(residuals, predicted)
        for rule in range(2):
            own = np.take_along_axis(residuals, predicted[rule][:, None], axis=1)  # u_k
            # row k: u_k u summed over the rows the rule predicts k
            cross[rule] += expected_confusion(own * residuals, predicted[rule]).T
        self._rows[batch] = self._rows.get(batch, 0) + len(labels)

    def forget_before(self, batch: int) -> None:
        """Drop the sums of the batches before ``batch``."""
        for store in (self._sums, self._cross, self._outer, self._rows):
            for old in [b for b in store if b < batch]:
                del store[old]

    def estimates(
        self, expected: np.ndarray, rows: np.ndarray, objective: str, start: int = 0
    ) -> tuple[np.ndarray, np.ndarray]:
        """The objective over the stream through each batch, (B, 2), and the deviation of the
        realised value around it, (B, 2), from the batches' expected confusion matrices under
        the believed posteriors (B, 2, C, C) and their rows (B,); NaN before the first
        labelled row (and the deviation before the second). With ``start``, the B batches are
        the stream's from batch ``start`` on, and so are the labelled rows counted."""
        n_batches, c = len(rows), self.n_classes
        batches, labelled, sums, cross, outer = self._kept(start + n_batches, start)
        # the running sums change only at labelled batches: each batch reads the last one's
        last = np.searchsorted(batches, np.arange(n_batches), side="right") - 1
        seen = last >= 0
        running = np.zeros((n_batches, 2, c, c))
        running_cross = np.zeros((n_batches, 2, c, c))
        running_outer = np.zeros((n_batches, c, c))
        count = np.zeros(n_batches)
        if len(batches):
            where = last[seen]
            running[seen] = np.cumsum(sums, axis=0)[where]
            running_cross[seen] = np.cumsum(cross, axis=0)[where]
            running_outer[seen] = np.cumsum(outer, axis=0)[where]
            count[seen] = np.cumsum(labelled)[where]
        total = np.cumsum(rows)
        with np.errstate(divide="ignore", invalid="ignore"):
            cells = (
                np.cumsum(expected, axis=0) / total[:, None, None, None]
                + running / count[:, None, None, None]
            )
        cells = np.maximum(cells, 0.0)
        flat = cells.reshape(-1, c, c)
        known = np.isfinite(flat).all(axis=(1, 2)) & (flat.sum(axis=(1, 2)) > 0)
        values = np.full(len(flat), np.nan)
        a = np.full((len(flat), c), np.nan)
        h = np.full((len(flat), c), np.nan)
        if known.any():
            # (the same call shape as the report's other scores)
            values[known] = np.asarray(score(flat[known][None], objective), dtype=np.float64)[0]
            a[known], h[known], _ = gradient_parts(flat[known], objective)
        a, h = a.reshape(n_batches, 2, c), h.reshape(n_batches, 2, c)
        # z = a_k u_k + h . u over the labelled rows (k the row's prediction): its sum from the
        # residuals' sums, its square's from the cross and outer sums
        own = np.diagonal(running, axis1=2, axis2=3)  # sum over rows predicted k of u_k
        first = (a * own).sum(axis=2) + np.einsum("brj,brjk->br", h, running)
        second = (
            (a**2 * np.diagonal(running_cross, axis1=2, axis2=3)).sum(axis=2)
            + 2.0 * np.einsum("brk,brkj,brj->br", a, running_cross, h)
            + np.einsum("bri,bij,brj->br", h, running_outer, h)
        )
        n = count[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            spread = np.maximum(second - first**2 / n, 0.0) / (n - 1)
            variance = spread * np.maximum(1.0 / n - 1.0 / total[:, None], 0.0)
            deviation = np.minimum(np.sqrt(variance), LARGEST_DEVIATION)
        deviation = np.where((n < 2) | (n > total[:, None]), np.nan, deviation)
        return values.reshape(n_batches, 2), deviation

    def _kept(self, n_batches: int, start: int = 0) -> tuple[np.ndarray, ...]:
        """The labelled batches from ``start`` to below ``n_batches`` in order: their indices
        counted from ``start`` (k,), rows (k,), sums (k, 2, C, C), cross sums (k, 2, C, C) and
        outer sums (k, C, C)."""
        c = self.n_classes
        kept = (b for b in self._sums if start <= b < n_batches)
        batches = np.array(sorted(kept), dtype=np.int64)
        listed = batches.tolist()
        return (
            batches - start,
            np.array([self._rows[b] for b in listed], dtype=np.int64),
            np.array([self._sums[b] for b in listed]).reshape(-1, 2, c, c),
            np.array([self._cross[b] for b in listed]).reshape(-1, 2, c, c),
            np.array([self._outer[b] for b in listed]).reshape(-1, c, c),
        )

    # ------------------------------------------------------------------ state
    def arrays(self, n_batches: int) -> dict[str, np.ndarray]:
        """The labelled batches' sums as arrays (those of the first ``n_batches`` batches)."""
        batches, labelled, sums, cross, outer = self._kept(n_batches)
        return {
            "residual_batches": batches,
            "residual_rows": labelled,
            "residual_sums": sums,
            "residual_cross": cross,
            "residual_outer": outer,
        }

    def restore(self, arrays: dict[str, np.ndarray], n_batches: int) -> None:
        """Inverse of :meth:`arrays`; missing arrays (a file written before them) give none.

        Raises:
            ValueError: arrays of inconsistent shapes, batches out of order or range, or
                counts below one.
        """
        self.reset()
        if "residual_rows" not in arrays:
            return
        c = self.n_classes
        batches = np.asarray(arrays.get("residual_batches", np.zeros(0)), dtype=np.int64)
        labelled = np.asarray(arrays["residual_rows"], dtype=np.int64).reshape(-1)
        k = len(batches)
        shapes = {
            "residual_sums": (k, 2, c, c),
            "residual_cross": (k, 2, c, c),
            "residual_outer": (k, c, c),
        }
        parts = {
            name: np.asarray(arrays.get(name, np.zeros((0, *shape[1:]))), dtype=np.float64)
            for name, shape in shapes.items()
        }
        if (
            batches.shape != (k,)
            or labelled.shape != (k,)
            or any(parts[name].shape != shape for name, shape in shapes.items())
            or (labelled < 1).any()
            or (k and (batches.min() < 0 or batches.max() >= n_batches))
            or (np.diff(batches) <= 0).any()
        ):
            raise ValueError("drift report: residual arrays of inconsistent shapes or counts.")
        for index, batch in enumerate(batches.tolist()):
            self._sums[batch] = parts["residual_sums"][index].copy()
            self._cross[batch] = parts["residual_cross"][index].copy()
            self._outer[batch] = parts["residual_outer"][index].copy()
            self._rows[batch] = int(labelled[index])

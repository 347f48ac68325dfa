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
labelled rows are a random sample of the rows (whatever the delay) it is unbiased for the
realised confusion shares of all N rows, whatever the posteriors' calibration; the better the
posteriors, the smaller its variance. The objective is read from the cells (negative cells,
which small samples can give, clipped to zero).

Its deviation (delta method): with g the objective's gradient in the cells and
z_i = g . (e_y_i - p_i) e_pred_i^T = g[y_i, pred_i] - g[:, pred_i] . p_i, the realised value
lies around the estimate with variance Var(z) (1 / |L| - 1 / N) (the labelled rows are drawn
from the N rows themselves). Var(z) needs, per predicted class k, the sum of u u^T over the
labelled rows predicted k (u = e_y - p): a (C, C, C) array per rule and batch.

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

from adaptable.core.decision import score
from adaptable.core.heldout_estimate import cell_gradient

#: batches whose moments are gathered at once when the report is read (C^3 numbers each)
CHUNK = 4096


class ResidualSums:
    """Per batch and rule (the unadapted model's argmax, the adapter's output), the labelled
    rows' residuals summed by predicted class: ``sums`` (2, C, C), column k the sum of
    u = e_y - p over the rows predicted k; ``moments`` (2, C, C, C), [k] the sum of u u^T over
    them; ``rows``, the labelled rows counted.

    Args:
        n_classes: C.
    """

    def __init__(self, n_classes: int) -> None:
        self.n_classes = int(n_classes)
        self.reset()

    def reset(self) -> None:
        """Forget every batch."""
        self._sums: dict[int, np.ndarray] = {}
        self._moments: dict[int, np.ndarray] = {}
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
        outer = residuals[:, :, None] * residuals[:, None, :]
        sums = self._sums.setdefault(batch, np.zeros((2, c, c)))
        moments = self._moments.setdefault(batch, np.zeros((2, c, c, c)))
        for rule, predicted in enumerate((source_predictions, adapter_predictions)):
            one_hot = np.eye(c)[predicted]  # (n, C)
            sums[rule] += residuals.T @ one_hot
            moments[rule] += np.einsum("nk,nij->kij", one_hot, outer)
        self._rows[batch] = self._rows.get(batch, 0) + len(labels)

    def estimates(
        self, expected: np.ndarray, rows: np.ndarray, objective: str
    ) -> tuple[np.ndarray, np.ndarray]:
        """The objective over the stream through each batch, (B, 2), and the deviation of the
        realised value around it, (B, 2), from the batches' expected confusion matrices under
        the believed posteriors (B, 2, C, C) and their rows (B,); NaN before the first
        labelled row (and the deviation before the second)."""
        n_batches, c = len(rows), self.n_classes
        batches, labelled, sums, moments = self._kept(n_batches)
        # the running sums change only at labelled batches: each batch reads the last one's
        running_sums = np.cumsum(sums, axis=0)
        running_moments = np.cumsum(moments, axis=0)
        running_rows = np.cumsum(labelled)
        last = np.searchsorted(batches, np.arange(n_batches), side="right") - 1
        seen = last >= 0
        where = np.maximum(last, 0)
        total = np.cumsum(rows)[:, None, None, None]
        count = np.where(seen, running_rows[where] if len(batches) else 0, 0.0)
        count = count[:, None, None, None].astype(np.float64)
        residual = np.zeros((n_batches, 2, c, c))
        if len(batches):
            residual[seen] = running_sums[where[seen]]
        with np.errstate(divide="ignore", invalid="ignore"):
            cells = np.cumsum(expected, axis=0) / total + residual / count
        cells = np.maximum(cells, 0.0)
        flat = cells.reshape(-1, c, c)
        known = np.isfinite(flat).all(axis=(1, 2)) & (flat.sum(axis=(1, 2)) > 0)
        values = np.full(len(flat), np.nan)
        gradient = np.full((len(flat), c, c), np.nan)
        if known.any():
            values[known] = np.asarray(score(flat[known], objective), dtype=np.float64)
            gradient[known] = cell_gradient(flat[known], objective)
        gradient = gradient.reshape(n_batches, 2, c, c)
        # z's mean and second moment over the labelled rows: sum_k g[:, k] . (sums[:, k],
        # moments[k] g[:, k]); the moments gathered a chunk of batches at a time (C^3 each)
        first = np.einsum("brik,brik->br", gradient, residual)
        second = np.zeros((n_batches, 2))
        for lo in range(0, n_batches, CHUNK):
            hi = min(lo + CHUNK, n_batches)
            part = seen[lo:hi]
            if part.any():
                chosen = np.arange(lo, hi)[part]
                second[chosen] = np.einsum(
                    "brik,brkij,brjk->br",
                    gradient[chosen],
                    running_moments[where[chosen]],
                    gradient[chosen],
                )
        n = count[:, :, 0, 0]
        with np.errstate(divide="ignore", invalid="ignore"):
            spread = np.maximum(second - first**2 / n, 0.0) / (n - 1)
            variance = spread * (1.0 / n - 1.0 / total[:, :, 0, 0])
        deviation = np.where(n >= 2, np.sqrt(variance), np.nan)
        return values.reshape(n_batches, 2), deviation

    def _kept(self, n_batches: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The labelled batches below ``n_batches`` in order: their indices (k,), rows (k,),
        sums (k, 2, C, C) and moments (k, 2, C, C, C)."""
        c = self.n_classes
        batches = np.array(sorted(b for b in self._sums if b < n_batches), dtype=np.int64)
        listed = batches.tolist()
        return (
            batches,
            np.array([self._rows[b] for b in listed], dtype=np.int64),
            np.array([self._sums[b] for b in listed]).reshape(-1, 2, c, c),
            np.array([self._moments[b] for b in listed]).reshape(-1, 2, c, c, c),
        )

    # ------------------------------------------------------------------ state
    def arrays(self, n_batches: int) -> dict[str, np.ndarray]:
        """The labelled batches' sums as arrays (those of the first ``n_batches`` batches)."""
        batches, labelled, sums, moments = self._kept(n_batches)
        return {
            "residual_batches": batches,
            "residual_rows": labelled,
            "residual_sums": sums,
            "residual_moments": moments,
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
        sums = np.asarray(arrays.get("residual_sums", np.zeros((0, 2, c, c))), dtype=np.float64)
        moments = np.asarray(
            arrays.get("residual_moments", np.zeros((0, 2, c, c, c))), dtype=np.float64
        )
        if (
            batches.shape != (k,)
            or labelled.shape != (k,)
            or sums.shape != (k, 2, c, c)
            or moments.shape != (k, 2, c, c, c)
            or (labelled < 1).any()
            or (k and (batches.min() < 0 or batches.max() >= n_batches))
            or (np.diff(batches) <= 0).any()
        ):
            raise ValueError("drift report: residual arrays of inconsistent shapes or counts.")
        for index, batch in enumerate(batches.tolist()):
            self._sums[batch] = sums[index].copy()
            self._moments[batch] = moments[index].copy()
            self._rows[batch] = int(labelled[index])

"""The features the covariate-shift estimate reads: the held-out source rows' and a uniform
sample of the stream's, both as the adapter's Encoder encoded them, and the importance weights
last fitted on them (:mod:`adaptable.core.report.covariate_estimate`).

Memory is bounded: at most :data:`HELDOUT_ROWS` held-out rows (a seeded uniform subsample of
more) and :data:`STREAM_ROWS` stream rows, kept by reservoir sampling (each row seen so far is
in the sample with the same chance). Each batch costs O(its rows); row t's draw is a hash of
the seed and t, so a saved and loaded sample goes on as the original would, whatever the
batches. The weights are refitted only when asked (:meth:`FeatureSample.weights`) and
the stream has at least doubled since they were last fitted: a stream of n rows pays
O(log n) fits.

>>> sample = FeatureSample(capacity=4, seed=0)
>>> sample.use_heldout(np.zeros((3, 1), np.float32), np.zeros((3, 0), np.int64), rows=3)
>>> sample.add(np.arange(10, dtype=np.float32)[:, None], np.zeros((10, 0), np.int64))
>>> sample.seen, len(sample.stream_numeric)
(10, 4)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adaptable.core.report.covariate_estimate import design_matrix, domain_weights

#: held-out rows whose features are kept (a seeded uniform subsample of more)
HELDOUT_ROWS = 8192
#: stream rows kept in the sample
STREAM_ROWS = 4096
#: the stream grows by this factor before the weights are refitted
REFIT_GROWTH = 2.0
#: stream rows the sample needs before the weights are fitted
MIN_STREAM_ROWS = 100


class FeatureSample:
    """Held-out rows' features, a reservoir sample of the stream's, and the cached weights.

    Args:
        capacity: stream rows kept (None: :data:`STREAM_ROWS`).
        seed: seeds the held-out subsample, the reservoir's draws and the classifier's folds.

    Attributes:
        heldout_rows: the positions (among the held-out rows the log keeps) of the rows whose
            features are kept, (h,); ``None`` before :meth:`use_heldout`.
        seen: stream rows seen since the last reset.
    """

    def __init__(self, capacity: int | None = None, seed: int = 0) -> None:
        self.capacity = STREAM_ROWS if capacity is None else int(capacity)
        self.seed = int(seed)
        self.heldout_rows: np.ndarray | None = None
        self.heldout_numeric = np.zeros((0, 0), np.float32)
        self.heldout_codes = np.zeros((0, 0), np.int64)
        self.reset()

    @property
    def has_heldout(self) -> bool:
        """Whether the held-out rows' features are kept."""
        return self.heldout_rows is not None and len(self.heldout_rows) > 0

    def use_heldout(self, numeric: np.ndarray, codes: np.ndarray, rows: int) -> None:
        """The held-out rows' encoded features (numbers (m, D_num), codes (m, D_cat)) of the
        ``rows`` held-out rows the log keeps, in its order; at most :data:`HELDOUT_ROWS`
        of them kept, a seeded uniform subsample of more (copied).

        Raises:
            ValueError: features of another number of rows.
        """
        numeric, codes = np.asarray(numeric), np.asarray(codes)
        if len(numeric) != rows or len(codes) != rows:
            raise ValueError(f"held-out features must have {rows} rows; got {len(numeric)}.")
        kept = np.arange(rows)
        if rows > HELDOUT_ROWS:
            rng = np.random.default_rng([self.seed, rows])
            kept = np.sort(rng.choice(rows, HELDOUT_ROWS, replace=False))
        self.heldout_rows = kept
        self.heldout_numeric = np.array(numeric[kept], dtype=np.float32).reshape(len(kept), -1)
        self.heldout_codes = np.array(codes[kept], dtype=np.int64).reshape(len(kept), -1)
        self.reset()

    def reset(self) -> None:
        """Forget the stream's rows and the weights (the held-out rows stay)."""
        width = self.heldout_numeric.shape[1], self.heldout_codes.shape[1]
        # the reservoir, allocated at its capacity on the first batch; its first `_filled` rows
        # hold the sample
        self._numeric = np.zeros((0, width[0]), np.float32)
        self._codes = np.zeros((0, width[1]), np.int64)
        self._filled = 0
        self.seen = 0
        self._forget_weights()

    def _forget_weights(self) -> None:
        # the weights last fitted, and the stream rows seen then
        self._weights: np.ndarray | None = None
        self._fitted_at = 0

    @property
    def stream_numeric(self) -> np.ndarray:
        """The sampled stream rows' numbers, (k, D_num), k <= capacity (a view)."""
        return self._numeric[: self._filled]

    @property
    def stream_codes(self) -> np.ndarray:
        """The sampled stream rows' category codes, (k, D_cat) (a view)."""
        return self._codes[: self._filled]

    def add(self, numeric: np.ndarray, codes: np.ndarray) -> None:
        """One batch's encoded rows (numbers (n, D_num), codes (n, D_cat)): each row seen so far
        stays in the sample with chance ``capacity / seen`` (reservoir sampling, Algorithm R;
        row t's draw a hash of the seed and t, so it does not depend on how the rows were
        batched, nor on a save and load in between)."""
        n, start = len(numeric), self.seen
        if len(self._numeric) < self.capacity:
            for name in ("_numeric", "_codes"):
                kept = getattr(self, name)
                grown = np.zeros((self.capacity, kept.shape[1]), kept.dtype)
                grown[: self._filled] = kept[: self._filled]
                setattr(self, name, grown)
        room = min(self.capacity - self._filled, n)
        if room:
            self._numeric[self._filled : self._filled + room] = numeric[:room]
            self._codes[self._filled : self._filled + room] = codes[:room]
            self._filled += room
        if n > room:
            # row t (0-based over the stream) replaces a random slot with chance capacity / (t + 1)
            positions = np.arange(start + room, start + n, dtype=np.uint64)
            slots = (uniform_draws(self.seed, positions) * (positions + 1.0)).astype(np.int64)
            chosen = np.flatnonzero(slots < self.capacity)
            if len(chosen):
                # a slot drawn twice in one batch keeps the later row, as one row after another
                latest = chosen[::-1]
                where, first = np.unique(slots[latest], return_index=True)
                which = room + latest[first]
                self._numeric[where] = numeric[which]
                self._codes[where] = codes[which]
        self.seen += n

    def weights(self) -> np.ndarray | None:
        """The held-out rows' importance weights towards the stream (h,)
        (:func:`~adaptable.core.report.covariate_estimate.domain_weights`), refitted where the
        stream has grown by :data:`REFIT_GROWTH` since they were last fitted; ``None`` without
        held-out features or with fewer than :data:`MIN_STREAM_ROWS` stream rows."""
        if not self.has_heldout or len(self.stream_numeric) < MIN_STREAM_ROWS:
            return None
        if self._weights is None or self.seen >= REFIT_GROWTH * self._fitted_at:
            # one-hot blocks as wide as the largest code either side holds
            largest = np.vstack([self.heldout_codes, self.stream_codes]).max(axis=0, initial=-1)
            widths = largest + 1
            held = design_matrix(self.heldout_numeric, self.heldout_codes, widths)
            stream = design_matrix(self.stream_numeric, self.stream_codes, widths)
            self._weights = domain_weights(held, stream, seed=self.seed)
            self._fitted_at = self.seen
        return self._weights

    # ------------------------------------------------------------------ saved layout
    def arrays(self) -> dict[str, np.ndarray]:
        """The sample as arrays, for ``save`` / ``load`` (empty without held-out features). The
        names and values are a file format."""
        if self.heldout_rows is None:
            return {}
        weights = np.zeros(0) if self._weights is None else self._weights
        return {
            "sample_heldout_rows": self.heldout_rows.astype(np.int64),
            "sample_heldout_numeric": self.heldout_numeric,
            "sample_heldout_codes": self.heldout_codes,
            "sample_stream_numeric": self.stream_numeric.copy(),
            "sample_stream_codes": self.stream_codes.copy(),
            "sample_counters": np.array([self.seen, self._fitted_at, self.capacity], np.int64),
            "sample_widths": np.array(
                self.heldout_numeric.shape[1:] + self.heldout_codes.shape[1:]
            ),
            "sample_weights": weights.astype(np.float64),
        }

    def restore(self, arrays: Any, heldout_count: int) -> None:
        """Inverse of :meth:`arrays`; a file written before the sample existed holds none (no
        held-out features: the covariate estimate is not read). ``heldout_count``: the held-out
        rows the log keeps, which the kept positions index.

        Raises:
            ValueError: arrays of inconsistent shapes or values.
        """
        self.heldout_rows = None
        self.heldout_numeric = np.zeros((0, 0), np.float32)
        self.heldout_codes = np.zeros((0, 0), np.int64)
        self.reset()
        if "sample_heldout_rows" not in arrays:
            return
        rows = np.asarray(arrays["sample_heldout_rows"], dtype=np.int64).reshape(-1)
        counters = np.asarray(arrays["sample_counters"], dtype=np.int64).reshape(-1)
        widths = np.asarray(arrays.get("sample_widths", np.zeros(2)), dtype=np.int64).reshape(-1)
        if widths.shape != (2,) or counters.shape != (3,) or (widths < 0).any():
            raise ValueError("drift report: the feature sample's arrays are inconsistent.")
        h, k = len(rows), min(int(counters[0]), int(counters[2]))

        def read(name: str, n: int, width: int, dtype: type) -> np.ndarray:
            # (a file holds no empty array: a side without columns or rows is missing)
            return np.asarray(arrays.get(name, np.zeros((n, width))), dtype=dtype)

        numeric = read("sample_heldout_numeric", h, int(widths[0]), np.float32)
        codes = read("sample_heldout_codes", h, int(widths[1]), np.int64)
        stream_numeric = read("sample_stream_numeric", k, int(widths[0]), np.float32)
        stream_codes = read("sample_stream_codes", k, int(widths[1]), np.int64)
        weights = np.asarray(arrays.get("sample_weights", np.zeros(0)), np.float64).reshape(-1)
        if (
            numeric.shape != (h, widths[0]) or codes.shape != (h, widths[1])
            or stream_numeric.shape != (k, widths[0]) or stream_codes.shape != (k, widths[1])
            or (h and (rows.min() < 0 or rows.max() >= heldout_count))
            or (np.diff(rows) <= 0).any()
            or counters[2] < 1 or counters[1] > counters[0] or counters[1] < 0
            or (len(weights) not in (0, h))
            or not (np.isfinite(numeric).all() and np.isfinite(stream_numeric).all())
            or not (np.isfinite(weights).all() and (weights >= 0).all())
            or (codes < -1).any() or (stream_codes < -1).any()
        ):  # fmt: skip
            raise ValueError("drift report: the feature sample's arrays are inconsistent.")
        self.capacity = int(counters[2])
        self.heldout_rows, self.heldout_numeric, self.heldout_codes = rows, numeric, codes
        self._numeric, self._codes, self._filled = stream_numeric, stream_codes, k
        self.seen = int(counters[0])
        if len(weights):
            self._weights, self._fitted_at = weights, int(counters[1])


def uniform_draws(seed: int, positions: np.ndarray) -> np.ndarray:
    """One draw in [0, 1) per position (uint64 array), a hash of ``seed`` and the position
    (SplitMix64's finaliser): the same for the same pair whatever else was drawn."""
    mixed = positions.astype(np.uint64) + np.uint64((int(seed) * 0x9E3779B97F4A7C15) % 2**64)
    mixed = mixed + np.uint64(0x9E3779B97F4A7C15)
    mixed = (mixed ^ (mixed >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    mixed = (mixed ^ (mixed >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    mixed = mixed ^ (mixed >> np.uint64(31))
    return (mixed >> np.uint64(11)).astype(np.float64) * 2.0**-53

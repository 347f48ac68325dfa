"""A bounded, uniform sample of the labelled target rows that have arrived so far.

Labels arrive late and in any number of calls; each labelled row is kept as its scores (the
model's log-posteriors, or calibrated ones, as the caller chooses) and its label code. Beyond
``capacity`` rows the sample is kept uniform by reservoir sampling (Algorithm R), so memory is
bounded and each call costs O(rows added). Every labelled row, kept or not, counts in the exact
per-class label counts.

Example:
    >>> import numpy as np
    >>> store = LabelledReservoir(n_classes=2, capacity=3, seed=0)
    >>> store.add(np.log([[0.9, 0.1], [0.2, 0.8]]), np.array([0, 1]))
    >>> store.size, store.n_seen, store.counts.tolist()
    (2, 2, [1.0, 1.0])
    >>> store.add(np.log([[0.6, 0.4]] * 4), np.array([0, 0, 1, 0]))
    >>> store.size, store.n_seen, store.counts.tolist(), store.row_weight
    (3, 6, [4.0, 2.0], 2.0)
"""

from __future__ import annotations

import numpy as np


class LabelledReservoir:
    """Uniform reservoir of (scores, label) pairs with exact label counts.

    Args:
        n_classes: C.
        capacity: rows kept at most (>= 1).
        seed: seeds the replacements; the draws are keyed by a row's position among the
            labelled rows (one generator per block of ``capacity`` positions, seeded by
            (seed, block)), so the sample does not depend on how the rows were split into
            calls, and there is no generator state to save.

    Attributes:
        n_seen: labelled rows added since the last reset.
        counts: labels of all of them per class, (C,) float64.
    """

    def __init__(self, n_classes: int, capacity: int = 2048, seed: int = 0) -> None:
        if int(n_classes) < 2:
            raise ValueError(f"n_classes must be at least 2; got {n_classes!r}")
        if int(capacity) < 1:
            raise ValueError(f"capacity must be a positive integer; got {capacity!r}")
        self.n_classes = int(n_classes)
        self.capacity = int(capacity)
        self.seed = int(seed)
        self.reset()

    def reset(self) -> None:
        """Forget every labelled row."""
        self._scores = np.zeros((self.capacity, self.n_classes))
        self._labels = np.zeros(self.capacity, dtype=np.int64)
        self._positions = np.zeros(self.capacity, dtype=np.int64)
        self._size = 0
        self.n_seen = 0
        self.counts = np.zeros(self.n_classes)
        self._block: tuple[int, np.ndarray] | None = None

    @property
    def size(self) -> int:
        """Rows held now, min(n_seen, capacity)."""
        return self._size

    @property
    def scores(self) -> np.ndarray:
        """The kept rows' scores, (size, C) (a view: do not write to it)."""
        return self._scores[: self._size]

    @property
    def labels(self) -> np.ndarray:
        """The kept rows' label codes, (size,) (a view: do not write to it)."""
        return self._labels[: self._size]

    @property
    def positions(self) -> np.ndarray:
        """Each kept row's position among all labelled rows (0 for the first added), (size,)
        (a view): tells a fit on an earlier sample which rows it saw."""
        return self._positions[: self._size]

    @property
    def row_weight(self) -> float:
        """How many labelled rows each kept row stands for, n_seen / size (1 before any)."""
        return self.n_seen / self._size if self._size else 1.0

    def add(self, scores: np.ndarray, labels: np.ndarray) -> None:
        """Add labelled rows: their scores (n, C) and label codes 0..C-1 (n,).

        Raises:
            ValueError: shapes that do not match, non-finite scores, or codes outside 0..C-1.
        """
        scores = np.asarray(scores, dtype=np.float64)
        labels = np.asarray(labels)
        if scores.ndim != 2 or scores.shape[1] != self.n_classes:
            raise ValueError(f"scores must be (n, {self.n_classes}); got {scores.shape}.")
        if labels.shape != (len(scores),):
            raise ValueError(f"labels must be ({len(scores)},); got {labels.shape}.")
        if len(scores) == 0:
            return
        if not np.all(np.isfinite(scores)):
            raise ValueError("scores hold NaN or inf values.")
        if not np.issubdtype(labels.dtype, np.integer):
            raise ValueError(f"labels must be integer codes; got dtype {labels.dtype}.")
        labels = labels.astype(np.int64)
        if labels.min() < 0 or labels.max() >= self.n_classes:
            raise ValueError(f"label codes must lie in 0..{self.n_classes - 1}.")
        self.counts += np.bincount(labels, minlength=self.n_classes)
        room = min(self.capacity - self._size, len(scores))
        self._scores[self._size : self._size + room] = scores[:room]
        self._labels[self._size : self._size + room] = labels[:room]
        self._positions[self._size : self._size + room] = self.n_seen + np.arange(room)
        self._size += room
        if room < len(scores):
            # Algorithm R: labelled row t replaces slot floor(u_t (t + 1)) when that is a slot.
            first = self.n_seen + room
            rest = len(scores) - room
            slots = (self._uniforms(first, rest) * np.arange(first + 1, first + 1 + rest)).astype(
                np.int64
            )
            keep = np.flatnonzero(slots < self.capacity)
            # in order, so that a later row overwrites an earlier one drawn to the same slot
            self._scores[slots[keep]] = scores[room:][keep]
            self._labels[slots[keep]] = labels[room:][keep]
            self._positions[slots[keep]] = first + keep
        self.n_seen += len(scores)

    def _uniforms(self, first: int, count: int) -> np.ndarray:
        """The uniform draws of labelled positions first .. first + count - 1."""
        parts = []
        while count > 0:
            block, offset = divmod(first, self.capacity)
            if self._block is None or self._block[0] != block:
                self._block = (
                    block,
                    np.random.default_rng([self.seed, block]).random(self.capacity),
                )
            take = min(count, self.capacity - offset)
            parts.append(self._block[1][offset : offset + take])
            first, count = first + take, count - take
        return np.concatenate(parts)

    def arrays(self) -> dict[str, np.ndarray]:
        """The state as arrays (copies), for saving; :meth:`restore` reads them back."""
        return {
            "scores": self.scores.copy(),
            "labels": self.labels.copy(),
            "positions": self.positions.copy(),
            "n_seen": np.array([self.n_seen], dtype=np.int64),
            "counts": self.counts.copy(),
        }

    def restore(self, arrays: dict[str, np.ndarray]) -> None:
        """Inverse of :meth:`arrays` (the empty arrays of a reservoir without rows may be left
        out).

        Raises:
            ValueError: missing arrays, wrong shapes, or counts that do not add up.
        """
        # Empty arrays may be missing (safetensors writes no empty tensor): before any label.
        empty = {"scores": np.zeros((0, self.n_classes)), "labels": np.zeros(0, np.int64)}
        empty["positions"] = empty["labels"]
        try:
            scores = np.asarray(arrays.get("scores", empty["scores"]), dtype=np.float64)
            labels = np.asarray(arrays.get("labels", empty["labels"]), dtype=np.int64)
            positions = np.asarray(arrays.get("positions", empty["positions"]), dtype=np.int64)
            n_seen = int(np.asarray(arrays["n_seen"]).reshape(-1)[0])
            counts = np.asarray(arrays["counts"], dtype=np.float64)
        except KeyError as err:
            raise ValueError(f"labelled reservoir: missing array {err}.") from err
        size = min(n_seen, self.capacity)
        if (
            scores.shape != (size, self.n_classes)
            or labels.shape != (size,)
            or positions.shape != (size,)
        ):
            raise ValueError(
                f"labelled reservoir: expected {size} rows of {self.n_classes} scores for "
                f"n_seen {n_seen}; got {scores.shape} and {labels.shape}."
            )
        if counts.shape != (self.n_classes,) or counts.sum() != n_seen or np.any(counts < 0):
            raise ValueError("labelled reservoir: counts must be (C,), >= 0, summing to n_seen.")
        if not np.all(np.isfinite(scores)) or (
            size and (labels.min() < 0 or labels.max() >= self.n_classes)
        ):
            raise ValueError("labelled reservoir: non-finite scores or labels outside 0..C-1.")
        self.reset()
        self._scores[:size] = scores
        self._labels[:size] = labels
        self._positions[:size] = positions
        self._size = size
        self.n_seen = n_seen
        self.counts = counts.copy()

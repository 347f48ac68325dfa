"""The labels' honest record: each candidate's predictions of labelled rows made before it saw
their labels, and the choice of the candidate in use on that record alone.

Every labelled row is scored once, when its label arrives: the adapted decision by the class it
predicted for the row when the row was adapted, each model update by the class it predicts now,
fitted on earlier labels only. A candidate that had not been fitted yet has no prediction for
the row (-1), and a comparison reads only the rows both candidates predicted. The record keeps
the last ``window`` scored rows, so the choice follows a stream whose best candidate changes.

The incumbent is replaced only on strong evidence: a challenger must beat it on at least
``min_rows`` shared rows and in a share ``evidence`` of paired bootstrap draws of those rows.

Example:
    >>> import numpy as np
    >>> record = PrequentialRecord(["adapted", "refit"], n_classes=2, window=100)
    >>> labels = np.array([0, 1] * 30)
    >>> record.add(labels, np.stack([np.zeros(60, int), labels]))   # refit right, adapted not
    >>> record.choose("adapted", "accuracy", min_rows=30, evidence=0.9, seed=0)
    'refit'
"""

from __future__ import annotations

import numpy as np

from adaptable.core.decision.rules import score

#: bootstrap draws of a comparison
DRAWS = 400


class PrequentialRecord:
    """The last ``window`` labelled rows, each with its label and every candidate's prediction.

    Args:
        names: the candidates, in a fixed order.
        n_classes: C.
        window: rows kept (the oldest go first).

    Attributes:
        labels: the kept rows' labels, (n,).
        predictions: each candidate's predicted class of each kept row, -1 where it had none,
            (len(names), n).
    """

    def __init__(self, names: list[str], n_classes: int, window: int) -> None:
        self.names = list(names)
        self.n_classes = int(n_classes)
        self.window = int(window)
        self.labels = np.zeros(0, dtype=np.int64)
        self.predictions = np.zeros((len(self.names), 0), dtype=np.int64)

    def __len__(self) -> int:
        return len(self.labels)

    def add(self, labels: np.ndarray, predictions: np.ndarray) -> None:
        """Rows scored now: their labels (n,) and each candidate's predictions (K, n), -1 for a
        candidate without one."""
        self.labels = np.concatenate([self.labels, labels])[-self.window :]
        self.predictions = np.concatenate([self.predictions, predictions], axis=1)[
            :, -self.window :
        ]

    def scores(self, objective: str) -> dict[str, tuple[float, int]]:
        """Each candidate's objective on the rows it predicted, and how many (NaN, 0: none)."""
        out = {}
        for k, name in enumerate(self.names):
            mine = self.predictions[k] >= 0
            n = int(mine.sum())
            value = float("nan")
            if n:
                value = float(
                    score(self._confusion(self.labels[mine], self.predictions[k, mine]), objective)
                )
            out[name] = (value, n)
        return out

    def choose(
        self, incumbent: str, objective: str, *, min_rows: int, evidence: float, seed: int
    ) -> str:
        """The candidate to use from now on: the incumbent, unless a challenger beats it on at
        least ``min_rows`` shared rows in at least a share ``evidence`` of :data:`DRAWS`
        paired bootstrap draws (of those, the one with the largest mean gain)."""
        i = self.names.index(incumbent)
        best, best_gain = incumbent, 0.0
        for k, name in enumerate(self.names):
            if k == i:
                continue
            shared = (self.predictions[k] >= 0) & (self.predictions[i] >= 0)
            n = int(shared.sum())
            if n < min_rows:
                continue
            labels = self.labels[shared]
            gains = self._paired_gains(
                labels, self.predictions[k, shared], self.predictions[i, shared], objective, seed
            )
            if (gains > 0).mean() >= evidence and gains.mean() > best_gain:
                best, best_gain = name, float(gains.mean())
        return best

    def _paired_gains(
        self,
        labels: np.ndarray,
        challenger: np.ndarray,
        incumbent: np.ndarray,
        objective: str,
        seed: int,
    ) -> np.ndarray:
        """The challenger's objective minus the incumbent's on :data:`DRAWS` bootstrap draws of
        the same rows, (DRAWS,)."""
        n, c = len(labels), self.n_classes
        draws = np.random.default_rng([seed, n]).integers(0, n, size=(DRAWS, n))
        offsets = (np.arange(DRAWS) * c * c)[:, None]
        gains = []
        for predicted in (challenger, incumbent):
            cells = offsets + labels[draws] * c + predicted[draws]
            matrices = np.bincount(cells.ravel(), minlength=DRAWS * c * c).reshape(DRAWS, c, c)
            gains.append(np.asarray(score(matrices, objective)))
        return gains[0] - gains[1]

    def _confusion(self, labels: np.ndarray, predicted: np.ndarray) -> np.ndarray:
        c = self.n_classes
        return np.bincount(labels * c + predicted, minlength=c * c).reshape(c, c)

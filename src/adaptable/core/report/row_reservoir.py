"""A fixed-size uniform sample of a stream's rows (reservoir sampling), updated batch by batch.

:class:`RowReservoir` keeps at most ``size`` rows of a matrix of values: after any number of
rows, each row seen is in the sample with the same chance, ``size / rows seen`` (Vitter's
Algorithm R: row t, counted from 0, replaces a uniformly drawn slot with chance size / (t + 1)).
A batch is taken in one vectorised step that gives the same sample as taking its rows one by
one (where two rows of a batch draw the same slot, the later one stays). Its memory is
``size`` rows whatever the stream's length; its draws come from its own seeded generator, so
a stream replayed from the same seed keeps the same rows.

Example:
    >>> import numpy as np
    >>> reservoir = RowReservoir(width=1, size=3, seed=0)
    >>> for start in range(0, 100, 10):
    ...     reservoir.add(np.arange(start, start + 10, dtype=float)[:, None])
    >>> reservoir.rows_seen, reservoir.sample.shape
    (100, (3, 1))
"""

from __future__ import annotations

from typing import Any

import numpy as np


class RowReservoir:
    """A uniform sample of at most ``size`` rows of a stream of ``width`` values each.

    Args:
        width: values per row.
        size: rows kept at most (at least 1).
        seed: seeds the generator that picks the rows.

    Attributes:
        rows_seen: rows added since the reservoir was made or reset.
    """

    def __init__(self, *, width: int, size: int, seed: int) -> None:
        if size < 1:
            raise ValueError(f"RowReservoir: size must be at least 1; got {size}.")
        self.width, self.size, self.seed = width, size, seed
        self.reset()

    def reset(self) -> None:
        """Forget the stream: no row kept, none seen, the generator back at its seed."""
        self._values = np.empty((self.size, self.width), dtype=np.float64)
        self.rows_seen = 0
        self._generator = np.random.Generator(np.random.PCG64(self.seed))

    @property
    def sample(self) -> np.ndarray:
        """The rows kept, (min(rows_seen, size), width): a uniform sample of the rows seen."""
        return self._values[: min(self.rows_seen, self.size)]

    def add(self, rows: np.ndarray) -> None:
        """Take a batch of rows, (n, width), into the sample.

        Raises:
            ValueError: ``rows`` is not (n, width).
        """
        if rows.ndim != 2 or rows.shape[1] != self.width:
            raise ValueError(
                f"RowReservoir: rows must be (n, {self.width}); got {tuple(rows.shape)}."
            )
        start = self.rows_seen
        filling = min(max(self.size - start, 0), len(rows))
        self._values[start : start + filling] = rows[:filling]
        if filling < len(rows):  # the reservoir is full: each later row may replace a slot
            # row t draws a slot uniformly in 0..t (a float draw, scaled: its rounding is far
            # below any sample's resolution), and replaces it where the slot is below size
            index = np.arange(start + filling + 1, start + len(rows) + 1, dtype=np.float64)
            slots = (self._generator.random(len(index)) * index).astype(np.int64)
            taken = np.flatnonzero(slots < self.size)
            if len(taken) > 1:  # the last of the rows that drew a slot stays, as one by one
                last = len(taken) - 1 - np.unique(slots[taken][::-1], return_index=True)[1]
                taken = taken[last]
            self._values[slots[taken]] = rows[filling + taken]
        self.rows_seen = start + len(rows)

    @property
    def generator_state(self) -> dict[str, Any]:
        """The generator's state (numpy's ``bit_generator.state``: PCG64's integers)."""
        return self._generator.bit_generator.state

    def restore(self, sample: np.ndarray, rows_seen: int, generator_state: dict[str, Any]) -> None:
        """Put back a sample, its count of rows seen and the generator's state (a saved file's).

        Raises:
            ValueError: ``sample`` is not (min(rows_seen, size), width), or the state is not
                a PCG64 state.
        """
        if sample.shape != (min(rows_seen, self.size), self.width):
            raise ValueError(
                f"RowReservoir: a sample of {min(rows_seen, self.size)} rows of {self.width} "
                f"values was expected; got {tuple(sample.shape)}."
            )
        generator = np.random.Generator(np.random.PCG64())
        generator.bit_generator.state = generator_state
        self._values[: len(sample)] = sample
        self.rows_seen, self._generator = rows_seen, generator

    @property
    def nbytes(self) -> int:
        """Bytes held by the sample's buffer (fixed at ``size`` rows)."""
        return self._values.nbytes

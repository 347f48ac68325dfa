"""How likely each class is to occur in the stream at all, from the stream's posteriors.

Balanced accuracy averages the recall of the classes the stream holds. For label-shift
correction its Bayes rule is argmax q(y|x) / p_t(y) with q proportional to p(y|x) p_t(y) /
p_s(y): p_t cancels, and the decision is the balanced rule p(y|x) / p_s(y) whatever share the
estimate gives a class, as long as it gives it any. A class the stream never holds keeps a
small share in every estimate (its prior counts, the model's overlap between classes), so the
decision keeps sending rows into it, and each such row is recall taken from a class the stream
holds (measured: docs/research/design_notes.md#decision-class-presence). What the decision
lacks is the chance that a class occurs at all; multiplying the class's weight by it gives the
decision that maximises the expected balanced accuracy when presence is uncertain.

:func:`presence` computes it as a Bayes factor between "the class's share is 0" and "it is some
share e", the other classes' shares scaled by 1 - e, at even prior odds. With r_i = p(.|x_i) /
p_s, m_i = r_i . p the mixture with the class's share moved to the others, and w the stream
rows each kept row stands for, the stream's log-likelihood moves by

    L(e) = w sum_i log(1 + e x_i),   x_i = r_iy / m_i - 1,

and the factor is exp(L) integrated against a log-uniform prior on e, from one row of the
stream (1 / n) to 0.999: a share matters on its own scale, one row in a thousand as much as
half the stream. The integral runs over ``GRID_POINTS`` evenly spaced values of log e.

- A class the stream's rows need gets a chance near one.
- A class they do not need is ruled out as far as the rows *could* have shown it. Where each row
  of the class would say so (a model that tells the classes apart: x_i near -1 on the other
  rows), L falls as -n e and the chance falls to about 1 / log(n).
- Where the model cannot tell the class from the others (x_i near 0), L stays flat and the chance
  stays at even odds.

Why this prior and an integral rather than the alternatives considered:
docs/research/design_notes.md#decision-class-presence.

The shares of the other classes are the running MAP estimate's, not refitted: O(C n G) in all,
G the grid's points.

Example:
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 400) * 2                       # classes 0 and 2 only
    >>> sharp = np.full((400, 3), 0.01); sharp[np.arange(400), y] = 0.98
    >>> presence(sharp.T, np.full(3, 1 / 3), np.array([0.49, 0.02, 0.49]), 400).round(3).tolist()
    [1.0, 0.036, 1.0]
    >>> flat = np.full((3, 400), 1 / 3)                       # rows that say nothing
    >>> presence(flat, np.full(3, 1 / 3), np.array([0.49, 0.02, 0.49]), 400).round(3).tolist()
    [0.5, 0.5, 0.5]
"""

from __future__ import annotations

import math

import numpy as np

#: points of the grid of shares e, evenly spaced in log e from one row of the stream to 0.999
GRID_POINTS = 48


def presence(
    posteriors_by_class: np.ndarray,
    source_prior: np.ndarray,
    prior: np.ndarray,
    n_rows: float,
) -> np.ndarray:
    """The posterior probability that each class occurs in the stream, (C,) in [0, 1].

    Args:
        posteriors_by_class: the model's (calibrated) posteriors of stream rows, class-major
            (C, m), a uniform sample of the stream.
        source_prior: p_s, (C,).
        prior: the estimated target label distribution the other classes' shares come from,
            (C,).
        n_rows: stream rows the sample stands for (each sampled row counts n_rows / m).

    Returns:
        The chances; all ones for an empty sample or fewer than three classes (with two, a
        stream without one class is a stream of one class).
    """
    ratio = np.asarray(posteriors_by_class, dtype=np.float64) / np.asarray(source_prior)[:, None]
    n_classes, m = ratio.shape
    if m == 0 or n_rows <= 0 or n_classes < 3:
        return np.ones(n_classes)
    weight = n_rows / m
    prior = np.asarray(prior, dtype=np.float64)
    mixture = prior @ ratio
    # a share below one row of the stream is no class in it: the grid starts there
    log_grid = np.linspace(-math.log(max(n_rows, 2.0)), math.log(0.999), GRID_POINTS)
    grid = np.exp(log_grid)
    step = float(log_grid[1] - log_grid[0])
    span = float(log_grid[-1] - log_grid[0])
    chances = np.ones(n_classes)
    for k, share in enumerate(prior.tolist()):
        if share >= 1.0:
            continue
        rest = np.maximum((mixture - share * ratio[k]) / (1.0 - share), 1e-300)
        excess = np.maximum(ratio[k] / rest - 1.0, -1.0)
        # (a few grid points at a time: a (points, rows) block that stays in cache)
        curve = weight * np.concatenate(
            [
                np.log1p(grid[start : start + 8, None] * excess[None, :]).sum(axis=1)
                for start in range(0, GRID_POINTS, 8)
            ]
        )
        top = float(curve.max())
        # the log-uniform density 1 / (e span) is uniform in log e: trapezoids there, scaled
        # by exp(-top) against overflow
        values = np.exp(curve - top)
        integral = step * (float(values.sum()) - 0.5 * float(values[0] + values[-1])) / span
        log_factor = top + math.log(integral)
        chances[k] = 1.0 / (1.0 + math.exp(-log_factor)) if log_factor > -700 else 0.0
    return chances

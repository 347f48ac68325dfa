"""A tight bound, for two classes and macro-F1, on how far the label-shift reading's answer can
move when its estimate of the target label distribution moves a little.

The reading (:mod:`adaptable.core.recommended.label_shift_estimate`) compares the balanced rule with argmax
on the reservoir re-weighted by an estimate q of the target's class-1 share. Between two full
readings it knows the answer at the last estimate q^ and a bound on how far the current
maximiser can be from q^. Written in the logit u = log(q / (1 - q)), every reservoir row's
re-weighted class-1 posterior is a logistic function of u, pi_i(u) = sigma(u + c_i), so:

- each rule's column k (the rows it predicts k, n_rk of them, a count that does not depend on
  u) holds the class-1 mass A_rk(u) = sum_i pi_i(u), whose derivative is
  V_rk(u) = sum_i pi_i (1 - pi_i) and whose second derivative is at most V_rk(u) in size
  (|sigma''| = sigma' |1 - 2 sigma| <= sigma');
- sigma' changes by at most the factor e^|d| when its argument moves by d (the derivative of
  log sigma' is 1 - 2 sigma, within [-1, 1]), so over |u - u^| <= delta both |A'| and |A''| are
  at most G V_rk(u^), G = e^delta;
- a rule's macro-F1 is the mean of two terms 2x / (x + y) with x, y affine in the A_rk
  (class 1: x = A_r1, y = n_r1 + A_r0; class 0: x = n_r0 - A_r0, y = N - A_r1), whose second
  derivative along u is bounded from those of x and y and the smallest value of x + y.

The gap D(u) = F1(balanced) - F1(argmax) then lies within D(u^) +- (|D'(u^)| delta +
M delta^2 / 2), M the bound on |D''| over the interval: first order in delta, where the bound
that scales every cell by a common factor (:func:`~adaptable.core.decision.rules.score_bounds`)
loses the correlation between the two rules, which share most of their rows.

Example:
    >>> import numpy as np
    >>> cells = np.array([[[60.0, 10.0], [15.0, 15.0]], [[50.0, 5.0], [25.0, 20.0]]])
    >>> slopes = np.array([[8.0, 4.0], [9.0, 3.0]])
    >>> low, high = f1_gap_bounds(cells, slopes, 0.0)
    >>> round(low, 6) == round(high, 6)  # no move: the gap itself
    True
"""

from __future__ import annotations

import math

import numpy as np


def f1_gap_bounds(
    cells: np.ndarray | list, slopes: np.ndarray | list, delta: float
) -> tuple[float, float]:
    """Bounds of macro-F1(balanced) - macro-F1(argmax) over |u - u^| <= ``delta``.

    Args:
        cells: both rules' expected confusion matrices at u^, (2 rules: argmax, balanced;
            2 true classes; 2 predicted classes); an array or nested lists.
        slopes: V_rk(u^), each rule's (rows) column's sum of pi (1 - pi) at u^, (2, 2).
        delta: the largest move of the logit of the class-1 share, >= 0.

    Returns:
        (low, high); ``(-inf, inf)`` where a term's denominator may reach zero in the interval.
    """
    cells = cells.tolist() if isinstance(cells, np.ndarray) else cells
    slopes = slopes.tolist() if isinstance(slopes, np.ndarray) else slopes
    gap, slope, curvature = 0.0, 0.0, 0.0
    growth = math.exp(delta)
    for rule, sign in ((0, -1.0), (1, 1.0)):
        (tn, fp), (fn, tp) = cells[rule]
        v0, v1 = slopes[rule]
        counts = (tn + fn, fp + tp)  # the rows predicted 0 and 1
        rows = counts[0] + counts[1]
        # (x, y, x', y') of the two terms at u^
        terms = (
            (tp, counts[1] + fn, v1, v0),  # class 1: 2 tp / (tp + n_1 + fn)
            (tn, rows - tp, -v0, -v1),  # class 0: 2 tn / (tn + N - tp)
        )
        values, derivatives, bounds = [], [], []
        for x, y, dx, dy in terms:
            if x + y <= 0:  # a class absent from truth and predictions: left out of the mean
                continue
            values.append(2.0 * x / (x + y))
            derivatives.append(2.0 * (dx * y - x * dy) / (x + y) ** 2)
            bound = _term_curvature(x, y, growth * abs(dx), growth * abs(dy), delta)
            if bound is None:
                return -math.inf, math.inf
            bounds.append(bound)
        present = max(len(values), 1)
        gap += sign * sum(values) / present
        slope += sign * sum(derivatives) / present
        curvature += sum(bounds) / present
    reach = abs(slope) * delta + 0.5 * curvature * delta**2
    return gap - reach, gap + reach


def _term_curvature(x: float, y: float, dx: float, dy: float, delta: float) -> float | None:
    """An upper bound of |g''| for g = 2 x / (x + y) over the interval, where |x'| and |x''|
    are at most ``dx`` (and likewise y), so x stays within x +- dx delta; ``None`` where x + y
    may reach zero there."""
    x_low, x_high = x - dx * delta, x + dx * delta
    y_low, y_high = y - dy * delta, y + dy * delta
    total_low = x_low + y_low
    if total_low <= 0:
        return None
    x_high, y_high = max(x_high, 0.0), max(y_high, 0.0)
    # g'' = 2 [(x'' y - x y'') (x + y) - 2 (x' y - x y') (x' + y')] / (x + y)^3
    first = (dx * y_high + x_high * dy) * (x_high + y_high)
    second = 2.0 * (dx * y_high + x_high * dy) * (dx + dy)
    return 2.0 * (first + second) / total_low**3


def column_slopes(weighted: np.ndarray, rules: np.ndarray) -> np.ndarray:
    """V_rk: each rule's column's sum of pi (1 - pi), (2, 2), from re-weighted posteriors
    (2 classes, n) and both rules' predictions (2, n)."""
    spread = weighted[0] * weighted[1]
    ones = rules @ spread  # the predicted-1 rows' sums, (2,)
    return np.stack([spread.sum() - ones, ones], axis=1)

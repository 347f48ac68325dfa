"""The two-sample tests of one column against its held-out rows, and Holm's correction.

- :func:`numerical_test`: scipy's two-sample Kolmogorov-Smirnov test. Its statistic D, the
  largest gap between the two empirical distribution functions, is also the column's distance:
  it is the largest difference in probability of a half-line ``x <= t`` between the two samples,
  in [0, 1], unchanged by any monotone rescaling of the column, so columns in any unit compare.
  Where values tie (counts, codes) the p-value is conservative: such a column is flagged less
  often than the level where nothing moved.
- :func:`categorical_test`: Pearson's chi-square test of homogeneity on the 2 x B table of
  category counts (held-out, stream), scipy's ``chi2_contingency`` without Yates' correction.
  Bins whose expected count is below :data:`MIN_EXPECTED` in either row are pooled into one
  (Cochran's rule), so that the chi-square law of the statistic holds on few rows. The distance
  is the total variation between the two shares of the bins (unpooled): the largest difference
  in probability of any set of categories, in [0, 1] like D.
- :func:`holm`: Holm's step-down adjustment of the columns' p-values; a column whose adjusted
  p-value is at most the level is flagged, and the chance of flagging any column where none
  moved is at most the level whatever the dependence between the columns (they are read off
  the same rows).

scipy.stats is imported inside the functions (importing the package stays light).

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> same = numerical_test(rng.normal(size=500), rng.normal(size=400))
    >>> moved = numerical_test(rng.normal(size=500), rng.normal(1.0, size=400))
    >>> bool(same.p_value > 0.01), bool(moved.p_value < 1e-6), moved.distance == moved.statistic
    (True, True, True)
    >>> holm(np.array([0.01, 0.04, 0.03])).tolist()
    [0.03, 0.06, 0.06]
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

#: a chi-square bin expected to hold fewer rows than this (in either sample) is pooled
MIN_EXPECTED = 5.0


@dataclass(frozen=True)
class ColumnTest:
    """One column's test against its held-out rows.

    Attributes:
        statistic_name: ``"kolmogorov_smirnov"`` or ``"chi_square"``.
        statistic: the test's statistic.
        p_value: its p-value (1.0 where one sample is empty or a single bin is left).
        distance_name: ``"kolmogorov_smirnov"`` (D) or ``"total_variation"``.
        distance: the distance between the two samples' distributions, in [0, 1].
    """

    statistic_name: str
    statistic: float
    p_value: float
    distance_name: str
    distance: float


def numerical_test(reference: np.ndarray, stream: np.ndarray) -> ColumnTest:
    """The two-sample Kolmogorov-Smirnov test of ``stream`` against ``reference``.

    Args:
        reference: the held-out values, (n,) float.
        stream: the stream's values, (m,) float.

    Returns:
        the test; its distance is D: the statistic and p-value are
        ``scipy.stats.ks_2samp(reference, stream)``'s.
    """
    from scipy.stats import ks_2samp

    if len(reference) == 0 or len(stream) == 0:
        return ColumnTest("kolmogorov_smirnov", 0.0, 1.0, "kolmogorov_smirnov", 0.0)
    with warnings.catch_warnings():
        # where the exact p-value cannot be computed scipy says so and gives the asymptotic
        # one, as its method="auto" documents: nothing the caller can act on
        warnings.filterwarnings("ignore", "ks_2samp: Exact calculation", RuntimeWarning)
        result = ks_2samp(reference, stream)
    statistic = float(result.statistic)
    return ColumnTest(
        "kolmogorov_smirnov", statistic, float(result.pvalue), "kolmogorov_smirnov", statistic
    )


def categorical_test(reference: np.ndarray, stream: np.ndarray) -> ColumnTest:
    """Pearson's chi-square test of homogeneity of two rows of bin counts.

    Args:
        reference: the held-out rows' count in each bin, (B,) integers.
        stream: the stream's count in the same bins, (B,) integers.

    Returns:
        the test; its distance is the total variation between the two rows' shares. Where
        every bin is expected to hold at least :data:`MIN_EXPECTED` rows in both samples,
        the statistic and p-value are ``scipy.stats.chi2_contingency([reference, stream],
        correction=False)``'s on the bins either sample holds.
    """
    from scipy.stats import chi2_contingency

    reference = np.asarray(reference, dtype=np.float64)
    stream = np.asarray(stream, dtype=np.float64)
    n_reference, n_stream = reference.sum(), stream.sum()
    if n_reference == 0 or n_stream == 0:
        return ColumnTest("chi_square", 0.0, 1.0, "total_variation", 0.0)
    distance = 0.5 * float(np.abs(reference / n_reference - stream / n_stream).sum())
    table = np.stack([reference, stream])
    table = table[:, table.sum(axis=0) > 0]
    expected = np.outer([n_reference, n_stream], table.sum(axis=0)) / (n_reference + n_stream)
    rare = (expected < MIN_EXPECTED).any(axis=0)
    if rare.any():  # Cochran's rule: one pooled bin for the rare ones
        table = np.column_stack([table[:, ~rare], table[:, rare].sum(axis=1)])
    if table.shape[1] < 2:
        return ColumnTest("chi_square", 0.0, 1.0, "total_variation", distance)
    result = chi2_contingency(table, correction=False)
    return ColumnTest(
        "chi_square", float(result.statistic), float(result.pvalue), "total_variation", distance
    )


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values: with m columns, the k-th smallest p-value times
    (m - k + 1), made non-decreasing in that order and capped at 1.

    Args:
        p_values: the columns' p-values, (m,).

    Returns:
        the adjusted p-values, (m,), in the order of ``p_values``. Flagging the columns whose
        adjusted p-value is at most a level flags any column where none moved with a chance
        of at most that level, whatever the dependence between the tests.
    """
    p = np.asarray(p_values, dtype=np.float64)
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, p[order] * (len(p) - np.arange(len(p))))
    adjusted = np.empty_like(p)
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted

"""Does label-shift correction apply to this stream, and what is the target label distribution?

Label-shift correction re-weights p(y|x) by p_t(y) / p_s(y). That is right when only the label
distribution moved (p(x|y) unchanged) and wrong when the features moved for other reasons:
then p(y|x) may not have changed at all and the correction double-counts. The recommended
adapter applies the correction only when the stream is statistically consistent with pure
label shift, and estimates p_t(y) online:

- :class:`LabelShiftTest` -- under label shift the target's feature means are a mixture of the
  source's class-conditional means, E_t[phi(x)] = sum_y p_t(y) E_s[phi(x) | y]. We fit the
  mixture weights on the simplex (least squares, each feature scaled by its within-class
  variance) to the running mean of the stream's encoded features (standardised numbers and
  one-hot category frequencies, a feature's rare categories pooled into one column, see
  :func:`pooled_columns`), and compare the residual n * r with its distribution under
  the null of pure label shift, calibrated once at fit time by drawing source rows: z =
  (n r - mean_0) / sd_0. A large z says the shift is not (only) a label shift.
The target label distribution's online estimate is in :mod:`adaptable.core.recommended.prior_estimate`.

The test works on any model (it needs the encoded features, not the model) and costs
O(batch) per batch.

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 4000); x = rng.normal(size=(4000, 3)) + y[:, None]
    >>> test = LabelShiftTest.fit(x, np.zeros((4000, 0), int), [], y, 2, seed=0)
    >>> ys = (rng.random(2000) < 0.8).astype(int)          # pure label shift: 80 % class 1
    >>> test.update(rng.normal(size=(2000, 3)) + ys[:, None], np.zeros((2000, 0), int))
    >>> bool(test.z_score() < 3), test.mixture().round(1).tolist()
    (True, [0.2, 0.8])
    >>> test.reset(); test.update(rng.normal(size=(2000, 3)) + 2.0, np.zeros((2000, 0), int))
    >>> bool(test.z_score() > 3)                             # a covariate shift
    True
"""

from __future__ import annotations

import numpy as np

#: rows per draw and draws of the null distribution of n * residual (calibrated at fit)
NULL_ROWS, NULL_DRAWS = 1024, 64
#: features whose within-class variance is below this carry no weight (constant columns)
MIN_VARIANCE = 1e-6
#: a category expected fewer times than this in a null draw of NULL_ROWS rows is pooled with the
#: feature's other rare categories into one column (the chi-squared test's rule of thumb: with
#: smaller expected counts one occurrence dominates the statistic, and a category seen a handful
#: of times in the source has a frequency too uncertain to be weighted by its inverse)
MIN_EXPECTED_COUNT = 5.0


def feature_sums(
    numeric: np.ndarray,
    codes: np.ndarray,
    offsets: np.ndarray,
    width: int,
    lookup: np.ndarray | None = None,
):
    """Column sums of [numbers, one-hot(codes)] without building the one-hot matrix, (width,).

    Args:
        numeric: standardised numbers, (n, D_num).
        codes: category codes per categorical feature, -1 for unseen, (n, D_cat).
        offsets: first one-hot column of each categorical feature, (D_cat,).
        width: D_num + the number of one-hot columns.
        lookup: one-hot column of each category (``codes + offsets`` indexes it), where
            categories share columns; ``None``: one column per category.
    """
    numeric = np.asarray(numeric)
    out = np.zeros(width)
    n_numeric = numeric.shape[1]
    # summed in float64 whatever the input's dtype, without a float64 copy of the batch
    out[:n_numeric] = numeric.sum(axis=0, dtype=np.float64)
    if codes.shape[1]:
        seen = codes >= 0
        columns = (codes + offsets[None, :])[seen]
        if lookup is not None:
            columns = lookup[columns]
        out[n_numeric:] = np.bincount(columns, minlength=width - n_numeric)
    return out


def pooled_columns(frequencies: np.ndarray, sizes: np.ndarray, minimum: float) -> np.ndarray:
    """The one-hot column of each category once each feature's rare categories share one.

    Within a feature, the categories at or above ``minimum`` keep a column each, in order, and
    the rare ones share the column after them; where the rare ones together are still below
    ``minimum`` (a lone rare category, say), the smallest other category joins them. A feature
    left with one column (two levels, one of them rare; or every category rare, as a
    high-cardinality code can be) becomes a constant column, which carries no weight: the test
    then reads that feature no more.

    Args:
        frequencies: each category's share of the source rows, (total categories,).
        sizes: categories per feature, (D_cat,).
        minimum: categories below this share are rare.

    Example:
        >>> pooled_columns(np.array([0.5, 0.001, 0.499, 0.002, 0.998]), np.array([3, 2]), 0.005)
        array([0, 1, 1, 2, 2])
        >>> pooled_columns(np.array([0.9, 0.003, 0.004, 0.093, 1.0]), np.array([4, 1]), 0.005)
        array([0, 2, 2, 1, 3])
    """
    frequencies = np.asarray(frequencies, dtype=np.float64)
    lookup = np.empty(len(frequencies), dtype=np.int64)
    column = start = 0
    for size in np.asarray(sizes, dtype=np.int64).tolist():
        block = np.arange(start, start + size)
        rare = frequencies[block] < minimum
        if rare.any() and frequencies[block[rare]].sum() < minimum and not rare.all():
            # Still rare together (or a lone rare category): the smallest other one joins them.
            others = np.flatnonzero(~rare)
            rare[others[np.argmin(frequencies[block[others]])]] = True
        kept = block[~rare]
        lookup[kept] = column + np.arange(len(kept))
        lookup[block[rare]] = column + len(kept)
        column += len(kept) + int(rare.any())
        start += size
    return lookup


class LabelShiftTest:
    """Running moment-matching test of "this stream is a pure label shift of the source".

    Build with :meth:`fit`; then :meth:`update` with each batch's encoded features and read
    :meth:`z_score` (large: not a label shift) and :meth:`mixture` (the fitted weights, a
    feature-based estimate of p_t(y)). :meth:`reset` starts a new stream.

    Attributes:
        class_means: E_s[phi | y], (d, C).
        weights: 1 / within-class variance of each feature (0 for constant ones), (d,).
        null_mean, null_sd: mean and standard deviation of n * residual under the null.
        offsets: first one-hot column of each categorical feature, (D_cat,).
        n_numeric: D_num.
        lookup: the one-hot column of each category after pooling (``None`` in files saved
            before pooling: one column per category).
    """

    def __init__(
        self,
        class_means: np.ndarray,
        weights: np.ndarray,
        null_mean: float,
        null_sd: float,
        offsets: np.ndarray,
        n_numeric: int,
        lookup: np.ndarray | None = None,
    ) -> None:
        self.class_means = np.asarray(class_means, dtype=np.float64)
        self.weights = np.asarray(weights, dtype=np.float64)
        self.null_mean = float(null_mean)
        self.null_sd = float(null_sd)
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.n_numeric = int(n_numeric)
        #: the one-hot column of each category (rare ones pooled); None: one per category
        self.lookup = None if lookup is None else np.asarray(lookup, dtype=np.int64)
        # The quadratic form of the residual in the mixture weights: G = M^T W M.
        weighted = self.class_means * self.weights[:, None]
        self._gram = self.class_means.T @ weighted
        self._weighted_means = weighted
        self.reset()

    @classmethod
    def fit(
        cls,
        numeric: np.ndarray,
        codes: np.ndarray,
        cardinalities: list[int] | np.ndarray,
        labels: np.ndarray,
        n_classes: int,
        *,
        seed: int = 0,
    ) -> LabelShiftTest:
        """Class-conditional means and variances of the source rows, and the null distribution.

        Args:
            numeric: standardised numbers of the source rows, (n, D_num).
            codes: their category codes, (n, D_cat).
            cardinalities: number of categories of each categorical feature.
            labels: their labels 0..C-1, (n,).
            n_classes: C.
            seed: seeds the draws that calibrate the null distribution.
        """
        numeric = np.asarray(numeric, dtype=np.float64)
        codes = np.asarray(codes, dtype=np.int64)
        labels = np.asarray(labels, dtype=np.int64)
        sizes = np.asarray(cardinalities, dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        n_numeric = numeric.shape[1]
        frequencies = feature_sums(
            np.zeros((len(labels), 0)), codes, offsets, int(sizes.sum())
        ) / max(len(labels), 1)
        lookup = pooled_columns(frequencies, sizes, MIN_EXPECTED_COUNT / NULL_ROWS)
        width = n_numeric + (int(lookup.max()) + 1 if len(lookup) else 0)
        means = np.zeros((width, n_classes))
        within = np.zeros(width)
        for c in range(n_classes):
            rows = labels == c
            count = max(int(rows.sum()), 1)
            means[:, c] = feature_sums(numeric[rows], codes[rows], offsets, width, lookup) / count
            # Numbers: sum of squared deviations; one-hot columns: count * f (1 - f).
            deviation = numeric[rows] - means[: numeric.shape[1], c]
            within[: numeric.shape[1]] += (deviation**2).sum(axis=0)
            frequency = means[numeric.shape[1] :, c]
            within[numeric.shape[1] :] += count * frequency * (1.0 - frequency)
        within /= max(len(labels), 1)
        weights = np.where(within > MIN_VARIANCE, 1.0 / np.maximum(within, MIN_VARIANCE), 0.0)
        test = cls(means, weights, 0.0, 1.0, offsets, n_numeric, lookup)
        # The null: streams drawn from the source itself are exactly label-shift consistent.
        rng = np.random.default_rng(seed)
        draws = []
        for _ in range(NULL_DRAWS):
            rows = rng.integers(0, len(labels), NULL_ROWS)
            test.reset()
            test.update(numeric[rows], codes[rows])
            draws.append(NULL_ROWS * test.residual())
        test.null_mean = float(np.mean(draws))
        test.null_sd = float(max(np.std(draws), 1e-9))
        test.reset()
        return test

    @property
    def width(self) -> int:
        return len(self.weights)

    def reset(self) -> None:
        """Forget the stream."""
        self._sums = np.zeros(self.width)
        self.n_rows = 0
        self._fitted: tuple[np.ndarray, float] | None = None

    def update(self, numeric: np.ndarray, codes: np.ndarray) -> None:
        """Add one batch's encoded rows to the running feature means."""
        self._sums += feature_sums(
            numeric, np.asarray(codes), self.offsets, self.width, self.lookup
        )
        self.n_rows += len(numeric)
        self._fitted = None

    def _fit_mixture(self) -> tuple[np.ndarray, float]:
        if self._fitted is None:
            mean = self._sums / max(self.n_rows, 1)
            self._fitted = _simplex_least_squares(
                self._gram, self._weighted_means.T @ mean, float(mean @ (self.weights * mean))
            )
        return self._fitted

    def mixture(self) -> np.ndarray:
        """The mixture weights that best explain the stream's feature means, (C,)."""
        return self._fit_mixture()[0].copy()

    def residual(self) -> float:
        """The weighted squared distance of the stream's means to the best mixture."""
        return self._fit_mixture()[1]

    def z_score(self) -> float:
        """(n * residual - null mean) / null sd; 0 before any row."""
        if self.n_rows == 0:
            return 0.0
        return (self.n_rows * self.residual() - self.null_mean) / self.null_sd

    def arrays(self) -> dict[str, np.ndarray]:
        """Fitted state and running sums, for saving."""
        return {
            "class_means": self.class_means,
            "weights": self.weights,
            "null": np.array([self.null_mean, self.null_sd]),
            "offsets": self.offsets,
            "n_numeric": np.array([self.n_numeric]),
            "sums": self._sums,
            "n_rows": np.array([self.n_rows]),
            **({} if self.lookup is None else {"lookup": self.lookup}),
        }

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], n_classes: int) -> LabelShiftTest:
        """Inverse of :meth:`arrays`; refuses what :meth:`fit` and :meth:`update` cannot have
        made: a wrong shape or dtype, NaN, negative weights, counts that are no non-negative
        integers, category frequencies outside [0, 1], or a lookup that does not map each
        feature's categories onto consecutive columns."""

        def integers(key: str) -> np.ndarray:
            if key not in arrays:
                raise ValueError(f"label-shift state: missing array {key!r}.")
            value = np.asarray(arrays[key])
            if value.ndim != 1 or value.dtype.kind not in "iu":
                raise ValueError(f"label-shift state: {key} must be a 1-D integer array.")
            return value.astype(np.int64)

        def floats(key: str) -> np.ndarray:
            if key in arrays and np.asarray(arrays[key]).dtype.kind != "f":
                raise ValueError(f"label-shift state: {key} must be a float array.")
            return finite_array(arrays, key)

        means = floats("class_means")
        if means.ndim != 2 or means.shape[1] != n_classes:
            raise ValueError(f"label-shift test: class_means must be (d, {n_classes}).")
        width = means.shape[0]
        weights, sums = floats("weights"), floats("sums")
        null = floats("null")
        if weights.shape != (width,) or sums.shape != (width,) or null.shape != (2,):
            raise ValueError("label-shift test: weights / sums / null have the wrong shape.")
        if np.any(weights < 0) or null[1] <= 0:
            raise ValueError("label-shift test: negative weights or a non-positive null sd.")
        if null[0] < 0:
            raise ValueError("label-shift test: the null mean of n * residual must be >= 0.")
        n_numeric, n_rows = integers("n_numeric"), integers("n_rows")
        if n_numeric.shape != (1,) or n_rows.shape != (1,) or n_numeric[0] < 0 or n_rows[0] < 0:
            raise ValueError("label-shift test: n_numeric and n_rows must be one count each.")
        n_numeric, n_rows = int(n_numeric[0]), int(n_rows[0])
        if n_numeric > width:
            raise ValueError(
                f"label-shift test: n_numeric {n_numeric} exceeds the {width} columns."
            )
        offsets = integers("offsets")
        if len(offsets) and (offsets[0] != 0 or np.any(np.diff(offsets) < 1)):
            raise ValueError("label-shift test: offsets must start at 0 and increase.")
        one_hot = width - n_numeric
        # Files written before rare categories were pooled have no lookup: one column each.
        lookup = integers("lookup") if "lookup" in arrays else None
        categories = len(lookup) if lookup is not None else one_hot
        # (fit writes offsets [0] for a table without categorical columns)
        if categories and (not len(offsets) or categories <= offsets[-1]):
            raise ValueError("label-shift test: offsets do not match the categories.")
        if not categories and len(offsets) > 1:
            raise ValueError("label-shift test: offsets do not match the categories.")
        if lookup is not None:
            # each feature's categories share consecutive columns, after the previous feature's
            column = 0
            for block in np.split(lookup, offsets[1:]):
                used = np.unique(block)
                if not np.array_equal(used, np.arange(column, column + len(used))):
                    raise ValueError("label-shift test: lookup does not match the one-hot columns.")
                column += len(used)
            if column != one_hot:
                raise ValueError("label-shift test: lookup does not match the one-hot columns.")
        frequencies, counts = means[n_numeric:], sums[n_numeric:]
        if np.any((frequencies < 0) | (frequencies > 1)):
            raise ValueError("label-shift test: class_means of the categories must be in [0, 1].")
        if np.any((counts < 0) | (counts > n_rows) | (counts != np.round(counts))):
            raise ValueError(
                f"label-shift test: sums of the categories must be counts of at most n_rows "
                f"({n_rows})."
            )
        test = cls(means, weights, null[0], null[1], offsets, n_numeric, lookup)
        test._sums = sums.copy()
        test.n_rows = n_rows
        return test


def _simplex_least_squares(gram: np.ndarray, linear: np.ndarray, constant: float):
    """min over the simplex of pi^T G pi - 2 l^T pi + c, and the minimum (clipped at 0)."""
    n_classes = len(linear)
    if n_classes == 2:
        # The simplex is the segment pi = (1 - t, t): a quadratic in t, minimised and clipped.
        # Written out in scalars: this runs once per batch, and numpy's per-call cost on 2 x 2
        # arrays is most of its price.
        (g00, g01), (_, g11) = gram.tolist()
        l0, l1 = linear.tolist()
        curvature = g00 - 2.0 * g01 + g11
        slope = (l1 - l0) - (g01 - g00)
        t = min(max(slope / curvature, 0.0), 1.0) if curvature > 0 else 0.0
        u = 1.0 - t
        value = u * u * g00 + 2.0 * u * t * g01 + t * t * g11 - 2.0 * (l0 * u + l1 * t) + constant
        return np.array([u, t]), max(value, 0.0)
    # G = L L^T; the objective is ||L^T pi - L^{-1} l||^2 + const, an NNLS problem once a heavily
    # weighted row asks sum(pi) = 1.
    scale = max(float(np.trace(gram)) / n_classes, 1e-12)
    ridge = gram + 1e-10 * scale * np.eye(n_classes)
    chol = np.linalg.cholesky(ridge)
    target = np.linalg.solve(chol, linear)
    penalty = np.sqrt(1e6 * scale)
    design = np.vstack([chol.T, np.full((1, n_classes), penalty)])
    # imported here, not at import: scipy.optimize alone costs more than the rest of
    # `from adaptable import AdapTable` (docs/research/costs.md#importing-adaptable)
    from scipy.optimize import nnls

    pi, _ = nnls(design, np.append(target, penalty))
    pi = pi / max(pi.sum(), 1e-12)
    value = float(pi @ gram @ pi - 2.0 * linear @ pi + constant)
    return pi, max(value, 0.0)


def finite_array(arrays: dict[str, np.ndarray], key: str) -> np.ndarray:
    """``arrays[key]`` as float64, refusing a missing key or NaN / inf values (ValueError)."""
    if key not in arrays:
        raise ValueError(f"label-shift state: missing array {key!r}.")
    value = np.asarray(arrays[key], dtype=np.float64)
    if not np.all(np.isfinite(value)):
        raise ValueError(f"label-shift state: array {key!r} holds NaN or inf values.")
    return value

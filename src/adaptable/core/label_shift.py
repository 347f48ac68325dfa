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
- :class:`OnlinePriorEstimate` -- the maximum a posteriori EM estimate of p_t(y) (Saerens et
  al. 2002) over a bounded reservoir of the stream's calibrated posteriors, with
  ``strength`` pseudo-rows at a centre, so that a short stream cannot swing it to a corner of
  the simplex. The centre is the prior under which the plug-in decision is the objective's
  rule without evidence: the uniform distribution for macro-F1 and balanced accuracy (the
  decision then leans towards the balanced rule, right for balanced accuracy whatever the
  target prior), the source prior for accuracy (the decision then stays the model's argmax,
  so a short stream cannot talk the adapter out of the unadapted model's accuracy). Its
  :meth:`~OnlinePriorEstimate.likelihood_ratio` tests the estimate against p_s: the recommended
  adapter corrects only once the stream shows that the label distribution moved, since a
  stream consistent with label shift may be one with no shift at all, or one whose posteriors
  carry too little information to move the estimate off the prior's centre.

Both work on any model (they need the encoded features and the calibrated probabilities, not
the model) and cost O(batch) per batch, plus O(reservoir) for EM while correction applies.

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

import math

import numpy as np
from scipy.optimize import nnls

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
        """Inverse of :meth:`arrays`; refuses arrays of the wrong shape or with NaN."""
        means = _finite(arrays, "class_means")
        if means.ndim != 2 or means.shape[1] != n_classes:
            raise ValueError(f"label-shift test: class_means must be (d, {n_classes}).")
        width = means.shape[0]
        weights, sums = _finite(arrays, "weights"), _finite(arrays, "sums")
        null = _finite(arrays, "null")
        if weights.shape != (width,) or sums.shape != (width,) or null.shape != (2,):
            raise ValueError("label-shift test: weights / sums / null have the wrong shape.")
        if np.any(weights < 0) or null[1] <= 0:
            raise ValueError("label-shift test: negative weights or a non-positive null sd.")
        n_numeric = int(_finite(arrays, "n_numeric")[0])
        # Files written before rare categories were pooled have no lookup: one column each.
        lookup = _finite(arrays, "lookup").astype(np.int64) if "lookup" in arrays else None
        if (
            lookup is not None
            and len(lookup)
            and (lookup.min() < 0 or lookup.max() != width - n_numeric - 1)
        ):
            raise ValueError("label-shift test: lookup does not match the one-hot columns.")
        test = cls(
            means,
            weights,
            null[0],
            null[1],
            _finite(arrays, "offsets").astype(np.int64),
            n_numeric,
            lookup,
        )
        test._sums = sums.copy()
        test.n_rows = int(_finite(arrays, "n_rows")[0])
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
    pi, _ = nnls(design, np.append(target, penalty))
    pi = pi / max(pi.sum(), 1e-12)
    value = float(pi @ gram @ pi - 2.0 * linear @ pi + constant)
    return pi, max(value, 0.0)


def _newton_direction(
    scaled: np.ndarray, prior: np.ndarray, pseudo: list[float], row_weight: float
) -> np.ndarray:
    """Newton's step for :meth:`OnlinePriorEstimate.estimate_with` in all C coordinates, (C,).

    ``scaled`` (C - 1, n) holds d m_i / d q_k / m_i of the free coordinates k < C - 1 (the last
    is one minus the others). F's gradient there is row_weight * sum_i scaled_ki + a_k / q_k -
    a_C / q_C and its Hessian -row_weight * scaled scaled^T - diag(a_k / q_k^2) - a_C / q_C^2,
    with a = ``pseudo``. Two classes, the common case, take scalar arithmetic: numpy's
    per-call cost on 1 x 1 arrays was most of a step.
    """
    q = prior.tolist()
    if len(q) == 2:
        row = scaled[0]
        gradient = row_weight * float(row.sum()) + pseudo[0] / q[0] - pseudo[1] / q[1]
        hessian = -row_weight * float(row @ row) - pseudo[0] / q[0] ** 2 - pseudo[1] / q[1] ** 2
        step = -gradient / hessian
        return np.array([step, -step])
    gradient = row_weight * scaled.sum(axis=1) + np.divide(pseudo[:-1], q[:-1])
    gradient -= pseudo[-1] / q[-1]
    hessian = -row_weight * scaled @ scaled.T
    hessian -= np.diag(np.divide(pseudo[:-1], np.square(q[:-1]))) + pseudo[-1] / q[-1] ** 2
    step = np.linalg.solve(hessian, -gradient)
    return np.append(step, -step.sum())


def _finite(arrays: dict[str, np.ndarray], key: str) -> np.ndarray:
    if key not in arrays:
        raise ValueError(f"label-shift state: missing array {key!r}.")
    value = np.asarray(arrays[key], dtype=np.float64)
    if not np.all(np.isfinite(value)):
        raise ValueError(f"label-shift state: array {key!r} holds NaN or inf values.")
    return value


def prior_center(objective: str) -> str:
    """Where the MAP prior of the target label distribution is centred for ``objective``.

    Without evidence from the stream, the plug-in decision should be the objective's own rule:
    for accuracy the model's argmax (prior p_s: q = p), for macro-F1 and balanced accuracy the
    balanced rule (prior uniform: q proportional to p / p_s).

    >>> prior_center("accuracy"), prior_center("macro_f1")
    ('source', 'uniform')
    """
    return "source" if objective == "accuracy" else "uniform"


class OnlinePriorEstimate:
    """MAP-EM estimate of the target label distribution from a stream of calibrated posteriors.

    The fixed point of EM for label shift (Saerens et al. 2002) maximises the likelihood of the
    stream under p_t(y|x) proportional to q(y|x) p_t(y) / p_s(y). A Dirichlet prior worth
    ``strength`` rows at ``center`` keeps a short stream's estimate moderate. The
    stream's posteriors are kept in a uniform reservoir of at most ``capacity`` rows (each
    reservoir row stands for n_seen / size stream rows), so memory and time per batch stay
    bounded however long the stream runs.

    Args:
        source_prior: p_s, (C,).
        strength: pseudo-rows of the prior (0: plain maximum likelihood).
        center: ``"uniform"`` or ``"source"`` (p_s): the mean of the Dirichlet prior, and the
            estimate before any row.
        capacity: reservoir rows.
        seed: seeds the reservoir's replacements (derived per block of stream rows, so no state
            to save).

    Example:
        >>> est = OnlinePriorEstimate(np.array([0.5, 0.5]), strength=0)
        >>> q = np.array([[1.0, 0.0]] * 80 + [[0.0, 1.0]] * 20)   # certain posteriors: counts
        >>> est.add(q); est.estimate().round(2).tolist()
        [0.8, 0.2]
        >>> OnlinePriorEstimate(np.array([0.8, 0.2]), strength=100).estimate().tolist()
        [0.5, 0.5]
        >>> OnlinePriorEstimate(np.array([0.8, 0.2]), center="source").estimate().tolist()
        [0.8, 0.2]
    """

    def __init__(
        self,
        source_prior: np.ndarray,
        strength: float = 64.0,
        capacity: int = 4096,
        seed: int = 0,
        center: str = "uniform",
    ) -> None:
        if center not in ("uniform", "source"):
            raise ValueError(f"center must be 'uniform' or 'source'; got {center!r}")
        self.source_prior = np.asarray(source_prior, dtype=np.float64)
        self.center_name = center
        self.strength = float(strength)
        self.capacity = int(capacity)
        self.seed = int(seed)
        self.reset()

    @property
    def center(self) -> np.ndarray:
        """The mean of the Dirichlet prior: uniform over the classes, or p_s."""
        if self.center_name == "source":
            return self.source_prior.copy()
        return np.full(len(self.source_prior), 1.0 / len(self.source_prior))

    def reset(self) -> None:
        """Forget the stream."""
        # class-major, (C, capacity): EM, the label-shift reading and the likelihood-ratio test
        # sum and compare over contiguous rows instead of along the short class axis
        self._columns = np.zeros((len(self.source_prior), self.capacity))
        self._size = 0
        self.n_seen = 0
        self._block: tuple[int, np.ndarray] | None = None
        self.prior = self.center
        self._reweighted: tuple[tuple[int, bytes], np.ndarray, np.ndarray] | None = None

    @property
    def reservoir(self) -> np.ndarray:
        """The kept posteriors row-major, (min(n_seen, capacity), C): a copy of
        :attr:`reservoir_by_class` transposed (for the fallbacks' decisions and for saving)."""
        return self.reservoir_by_class.T.copy()

    @property
    def reservoir_by_class(self) -> np.ndarray:
        """The kept posteriors class-major, (C, min(n_seen, capacity)), each class's column
        contiguous (a view of the reservoir itself)."""
        return self._columns[:, : self._size]

    def add(self, posteriors: np.ndarray) -> None:
        """Add one batch's calibrated source posteriors, (n, C), to the reservoir."""
        posteriors = np.asarray(posteriors, dtype=np.float64)
        room = min(self.capacity - self._size, len(posteriors))
        self._columns[:, self._size : self._size + room] = posteriors[:room].T
        self._size += room
        rest = posteriors[room:]
        if len(rest):
            # Algorithm R: stream row t replaces a random slot with probability
            # capacity / (t + 1), its slot floor(u_t (t + 1)).
            first = self.n_seen + room
            index = np.arange(first + 1, first + 1 + len(rest))
            slots = (self._uniforms(first, len(rest)) * index).astype(np.int64)
            keep = slots < self.capacity
            self._columns[:, slots[keep]] = rest[keep].T
        self.n_seen += len(posteriors)

    def _uniforms(self, first: int, count: int) -> np.ndarray:
        """The uniform draws u_t of stream rows first .. first + count - 1.

        Each block of ``capacity`` stream rows has its own generator, seeded by (seed, block):
        the draws depend on a row's position in the stream, not on how the stream was cut into
        batches, and one generator serves many batches (a generator costs as much as the rest
        of a batch's update). Nothing to save: the last block's draws are kept only as a cache.
        """
        parts = []
        while count > 0:
            block, offset = divmod(first, self.capacity)
            if self._block is None or self._block[0] != block:
                generator = np.random.default_rng([self.seed, block])
                self._block = (block, generator.random(self.capacity))
            take = min(count, self.capacity - offset)
            parts.append(self._block[1][offset : offset + take])
            first, count = first + take, count - take
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def estimate(self, max_iterations: int = 100, tolerance: float = 1e-6) -> np.ndarray:
        """MAP-EM from the last estimate (warm start); updates and returns p_t, (C,)."""
        if self.n_seen == 0:
            return self.prior.copy()
        # class-major (C, n): EM's products and sums run over contiguous rows (several times
        # faster than along the short class axis of (n, C) on a full reservoir)
        ratio = self.reservoir_by_class / self.source_prior[:, None]
        row_weight = self.n_seen / self._size
        pseudo = self.strength * self.center
        prior = self.prior
        for _ in range(max_iterations):
            responsibility = ratio * prior[:, None]
            responsibility /= responsibility.sum(axis=0)
            totals = responsibility.sum(axis=1)
            new = (row_weight * totals + pseudo) / (self.n_seen + self.strength)
            done = np.abs(new - prior).max() < tolerance
            prior = new
            if done:
                break
        self.prior = prior
        return prior.copy()

    def estimate_with(
        self,
        center: np.ndarray,
        strength: float,
        start: np.ndarray,
        max_iterations: int = 50,
        tolerance: float = 1e-10,
    ) -> np.ndarray:
        """The MAP estimate on the reservoir under another Dirichlet prior (mean ``center``,
        ``strength`` > 0 rows), from ``start``; the running estimate p_t is left as it is.

        The fixed point EM reaches (see :meth:`estimate`) maximises the concave
        F(q) = sum_i w log sum_y q(y|x_i) q_y / p_s(y) + sum_y strength center_y log q_y on the
        simplex; this solves it by Newton's method in the C - 1 free coordinates, a handful of
        O(reservoir C^2) steps where EM's linear convergence took 30 or more O(reservoir C)
        ones on a long stream whose estimate moves a little with every batch.

        >>> est = OnlinePriorEstimate(np.array([0.5, 0.5]), strength=0)
        >>> est.add(np.array([[1.0, 0.0]] * 80 + [[0.0, 1.0]] * 20))
        >>> est.estimate_with(np.array([0.5, 0.5]), 100, np.array([0.5, 0.5])).round(2).tolist()
        [0.65, 0.35]
        >>> est.prior.tolist()
        [0.5, 0.5]
        """
        center = np.asarray(center, dtype=np.float64)
        if strength <= 0:
            raise ValueError("estimate_with needs a prior of positive strength.")
        if self.n_seen == 0:
            return center.copy()
        # class-major (C, n): the sums over rows run along contiguous memory
        ratio = self.reservoir_by_class / self.source_prior[:, None]
        row_weight = self.n_seen / self._size
        pseudo = (strength * center).tolist()
        free = ratio[:-1] - ratio[-1]  # d m_i / d q_k in the free coordinates, (C - 1, n)
        # Near the boundary the prior term's curvature makes Newton's steps tiny (q_k about
        # doubles per step), which the stopping rule below reads as convergence: a start at
        # 1e-12 stopped there. From 1e-6 the first step already moves more than the tolerance
        # and about 20 of the 50 steps reach any interior optimum.
        prior = np.clip(np.asarray(start, dtype=np.float64), 1e-6, None)
        prior /= prior.sum()

        def objective(q: np.ndarray, mixture: np.ndarray) -> float:
            prior_term = sum(a * math.log(b) for a, b in zip(pseudo, q.tolist(), strict=True))
            return float(row_weight * np.log(mixture).sum()) + prior_term

        mixture = prior @ ratio  # sum_y q(y|x_i) p_t(y) / p_s(y), (n,)
        value = objective(prior, mixture)
        for _ in range(max_iterations):
            full = _newton_direction(free / mixture, prior, pseudo, row_weight)
            # the longest step along the Newton direction that stays inside the simplex
            limit = min(
                (-p / f for p, f in zip(prior.tolist(), full.tolist(), strict=True) if f < 0),
                default=math.inf,
            )
            length = min(1.0, 0.99 * limit)
            while True:  # backtrack until the (concave) objective does not fall
                candidate = prior + length * full
                candidate_mixture = candidate @ ratio
                candidate_value = objective(candidate, candidate_mixture)
                if candidate_value >= value - 1e-12 or length < 1e-8:
                    break
                length /= 2
            moved = float(np.abs(candidate - prior).max())
            prior, value, mixture = candidate, candidate_value, candidate_mixture
            if moved < tolerance:
                break
        return prior / prior.sum()

    def likelihood_ratio(self) -> float:
        """2 log [L(p_t) / L(p_s)]: the stream's likelihood under the current estimate against
        no label shift at all, in the label-shift model p(x) = sum_y p(x|y) p_t(y).

        Under p_s every row's likelihood ratio sum_y q(y|x) p_s(y) / p_s(y) is one, so the
        statistic is 2 sum_i log sum_y q(y|x_i) p_t(y) / p_s(y) (reservoir rows weighted by
        n_seen / size). Evaluated at the MAP estimate, it is at most the likelihood-ratio
        statistic of the maximum-likelihood one: a conservative test of "p_t differs from p_s".
        """
        if self.n_seen == 0:
            return 0.0
        _, mixture = self._reweighted_reservoir()
        return float(2.0 * self.n_seen / self._size * np.log(mixture).sum())

    def target_posteriors(
        self, posteriors: np.ndarray | None = None, prior: np.ndarray | None = None
    ) -> np.ndarray:
        """``norm(q * p_t / p_s)`` of the given rows (default: the reservoir), (n, C); p_t the
        running estimate, or ``prior`` (e.g. an :meth:`estimate_with` result)."""
        if posteriors is None:
            weighted, mixture = (
                self._reweighted_reservoir() if prior is None else self._reweight(prior)
            )
            # a fresh array, so the transposed view shares nothing; plugin_weights reads it
            # class-major again without a copy
            return (weighted / mixture).T
        rows = np.asarray(posteriors, dtype=np.float64)
        weighted = rows * ((self.prior if prior is None else prior) / self.source_prior)
        return weighted / weighted.sum(axis=1, keepdims=True)

    def target_posteriors_by_class(self, prior: np.ndarray) -> np.ndarray:
        """The reservoir's ``norm(q * prior / p_s)``, class-major (C, n) like
        :attr:`reservoir_by_class`."""
        weighted, mixture = self._reweight(prior)
        return weighted / mixture

    def _reweight(self, prior: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``q * prior / p_s`` of the reservoir rows, class-major (C, n), and its sums over the
        classes (each row's likelihood ratio against p_s), (n,)."""
        weighted = self.reservoir_by_class * (np.asarray(prior) / self.source_prior)[:, None]
        return weighted, weighted.sum(axis=0)

    def _reweighted_reservoir(self) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_reweight` at the running estimate p_t, kept until the stream or p_t changes:
        the decision reads it on every batch, for the likelihood-ratio test and for the
        plug-in's posteriors."""
        key = (self.n_seen, self.prior.tobytes())
        if self._reweighted is None or self._reweighted[0] != key:
            self._reweighted = (key, *self._reweight(self.prior))
        return self._reweighted[1], self._reweighted[2]

    def arrays(self) -> dict[str, np.ndarray]:
        """Running state, for saving."""
        return {
            "reservoir": self.reservoir,
            "n_seen": np.array([self.n_seen]),
            "prior": self.prior,
        }

    def restore(self, arrays: dict[str, np.ndarray]) -> None:
        """Inverse of :meth:`arrays`; refuses malformed state."""
        reservoir, prior = _finite(arrays, "reservoir"), _finite(arrays, "prior")
        n_classes = len(self.source_prior)
        if reservoir.ndim != 2 or reservoir.shape[1] != n_classes:
            raise ValueError(f"prior estimate: reservoir must be (n, {n_classes}).")
        if prior.shape != (n_classes,) or np.any(prior < 0) or abs(prior.sum() - 1) > 1e-6:
            raise ValueError(f"prior estimate: prior must be a probability vector; got {prior}.")
        n_seen = int(_finite(arrays, "n_seen")[0])
        if n_seen < 0 or len(reservoir) != min(n_seen, self.capacity):
            raise ValueError(
                f"prior estimate: the reservoir must hold min(n_seen, {self.capacity}) rows; it "
                f"holds {len(reservoir)} with n_seen {n_seen}."
            )
        self.reset()
        self._columns[:, : len(reservoir)] = reservoir.T
        self._size = len(reservoir)
        self.n_seen = n_seen
        self.prior = prior.copy()

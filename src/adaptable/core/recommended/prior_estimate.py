"""The online estimate of the target label distribution p_t(y), for label-shift correction.

:class:`OnlinePriorEstimate` is the maximum a posteriori EM estimate of p_t(y) (Saerens et al.
2002) over a bounded reservoir of the stream's calibrated posteriors, with ``strength``
pseudo-rows at a centre, so that a short stream cannot swing it to a corner of the simplex. The centre is the prior under which the plug-in decision is the objective's
rule without evidence: the uniform distribution for macro-F1 and balanced accuracy (the
decision then leans towards the balanced rule, right for balanced accuracy whatever the
target prior), the source prior for accuracy (the decision then stays the model's argmax,
so a short stream cannot talk the adapter out of the unadapted model's accuracy). Its
:meth:`~OnlinePriorEstimate.likelihood_ratio` tests the estimate against p_s: the recommended
adapter corrects only once the stream shows that the label distribution moved, since a
stream consistent with label shift may be one with no shift at all, or one whose posteriors
carry too little information to move the estimate off the prior's centre.

It works on any model (it needs the calibrated probabilities, not the model) and costs
O(batch) per batch, plus O(reservoir) for EM while correction applies.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from adaptable.core.recommended.moment_test import finite_array


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
        # the stream count n_seen right after each slot was last written: a reader that kept
        # something per slot finds what changed since with one comparison
        self.written_at = np.zeros(self.capacity, dtype=np.int64)
        #: whether the last :meth:`estimate_with` stopped on its tolerance (not on a cap)
        self.last_estimate_converged = False
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
        self.written_at[self._size : self._size + room] = self.n_seen + len(posteriors)
        self._size += room
        rest = posteriors[room:]
        if len(rest):
            # Algorithm R: stream row t replaces a random slot with probability
            # capacity / (t + 1), its slot floor(u_t (t + 1)).
            first = self.n_seen + room
            index = np.arange(first + 1, first + 1 + len(rest))
            slots = (self.uniforms(first, len(rest)) * index).astype(np.int64)
            keep = slots < self.capacity
            self._columns[:, slots[keep]] = rest[keep].T
            self.written_at[slots[keep]] = self.n_seen + len(posteriors)
        self.n_seen += len(posteriors)

    def uniforms(self, first: int, count: int) -> np.ndarray:
        """The uniform draws u_t of stream rows first .. first + count - 1.

        Each block of ``capacity`` stream rows has its own generator, seeded by (seed, block):
        the draws depend on a row's position in the stream, not on how the stream was cut into
        batches, and one generator serves many batches (making one is costly beside a batch's
        update: docs/research/design_notes.md#recommended-prior-estimate). Nothing to save: the
        last block's draws are kept only as a cache.
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
        # class-major (C, n): EM's products and sums run over contiguous rows, not along the
        # short class axis of (n, C) (docs/research/design_notes.md#recommended-prior-estimate)
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
        simplex; this solves it by Newton's method in the C - 1 free coordinates: a handful of
        O(reservoir C^2) steps instead of EM's linearly converging O(reservoir C) ones
        (docs/research/design_notes.md#recommended-prior-estimate).

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
        # doubles per step), which the stopping rule below reads as convergence: the start is
        # kept at least 1e-6 from it (docs/research/design_notes.md#recommended-prior-estimate).
        prior = np.maximum(np.asarray(start, dtype=np.float64), 1e-6)
        prior /= prior.sum()

        def objective(q: np.ndarray, mixture: np.ndarray) -> float:
            prior_term = sum(a * math.log(b) for a, b in zip(pseudo, q.tolist(), strict=True))
            return float(row_weight * np.log(mixture).sum()) + prior_term

        mixture = prior @ ratio  # sum_y q(y|x_i) p_t(y) / p_s(y), (n,)
        direction = _newton_step(free / mixture, prior, pseudo, row_weight)[0]
        # F at ``prior``, evaluated only where a step must be checked against it: the logs of
        # the whole reservoir cost more than the rest of a step
        value: float | None = None
        self.last_estimate_converged = False
        for _ in range(max_iterations):
            length = _step_length(prior, direction)
            candidate = prior + length * direction
            candidate_mixture = candidate @ ratio
            step = _newton_step(free / candidate_mixture, candidate, pseudo, row_weight)
            # F is concave, so its slope along the step falls along it: F(candidate) - F(prior)
            # >= length * (slope at the candidate), and F did not fall by more than the
            # tolerance below where that is >= -1e-12
            rose = length * _slope(step[1], direction) >= -1e-12
            if not rose:  # past the maximum: backtrack until the objective does not fall
                if value is None:
                    value = objective(prior, mixture)
                candidate_value = objective(candidate, candidate_mixture)
                shortened = False
                while not (candidate_value >= value - 1e-12 or length < 1e-8):
                    length /= 2
                    shortened = True
                    candidate = prior + length * direction
                    candidate_mixture = candidate @ ratio
                    candidate_value = objective(candidate, candidate_mixture)
                rose = candidate_value >= value - 1e-12
                value = candidate_value
                if shortened:  # the step at the first candidate no longer applies
                    step = _newton_step(free / candidate_mixture, candidate, pseudo, row_weight)
            else:
                value = None
            moved = float(np.abs(candidate - prior).max())
            prior, mixture, direction = candidate, candidate_mixture, step[0]
            if moved < tolerance:
                self.last_estimate_converged = rose
                break
            if isinstance(step[1], float) and abs(float(direction[0])) < 0.5 * tolerance:
                # Two classes, and the next step already below the tolerance: it is the last
                # one, taken without reading the reservoir again. Along a step that short F's
                # curvature stays within a factor 4 of |h| at its start (m_i barely moves),
                # and the slope there is >= 0, so F falls by at most 2 |h| step^2.
                length = _step_length(prior, direction)
                prior = prior + length * direction
                fall = 2.0 * abs(step[2]) * (length * float(direction[0])) ** 2
                self.last_estimate_converged = fall <= 1e-12
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
        """Inverse of :meth:`arrays`; refuses what :meth:`add` and :meth:`estimate` cannot have
        made: a reservoir whose rows are not probabilities, a prior that is no probability
        vector, or a row count that is no non-negative integer or disagrees with the reservoir.
        """
        for key in ("reservoir", "prior"):
            if key in arrays and np.asarray(arrays[key]).dtype.kind != "f":
                raise ValueError(f"prior estimate: {key} must be a float array.")
        reservoir, prior = finite_array(arrays, "reservoir"), finite_array(arrays, "prior")
        n_classes = len(self.source_prior)
        if reservoir.ndim != 2 or reservoir.shape[1] != n_classes:
            raise ValueError(f"prior estimate: reservoir must be (n, {n_classes}).")
        # calibrated posteriors: rows of probabilities, as the calibrators give them
        if len(reservoir) and (
            reservoir.min() < 0 or np.abs(reservoir.sum(axis=1) - 1.0).max() > 1e-6
        ):
            raise ValueError(
                "prior estimate: the reservoir's rows must be probabilities (non-negative, "
                "summing to one)."
            )
        if prior.shape != (n_classes,) or np.any(prior < 0) or abs(prior.sum() - 1) > 1e-6:
            raise ValueError(f"prior estimate: prior must be a probability vector; got {prior}.")
        if "n_seen" not in arrays:
            raise ValueError("prior estimate: missing array 'n_seen'.")
        count = np.asarray(arrays["n_seen"])
        if count.shape != (1,) or count.dtype.kind not in "iu":
            raise ValueError(f"prior estimate: n_seen must be one integer; got {count!r}.")
        n_seen = int(count[0])
        if n_seen < 0 or len(reservoir) != min(n_seen, self.capacity):
            raise ValueError(
                f"prior estimate: the reservoir must hold min(n_seen, {self.capacity}) rows; it "
                f"holds {len(reservoir)} with n_seen {n_seen}."
            )
        self.reset()
        self._columns[:, : len(reservoir)] = reservoir.T
        self._size = len(reservoir)
        self.written_at[: len(reservoir)] = n_seen
        self.n_seen = n_seen
        self.prior = prior.copy()


def _newton_step(
    scaled: np.ndarray, prior: np.ndarray, pseudo: list[float], row_weight: float
) -> tuple[np.ndarray, float | np.ndarray, float | np.ndarray]:
    """Newton's step for :meth:`OnlinePriorEstimate.estimate_with` in all C coordinates, (C,),
    and F's gradient and Hessian in the free coordinates (floats for two classes, else (C - 1,)
    and (C - 1, C - 1)).

    ``scaled`` (C - 1, n) holds d m_i / d q_k / m_i of the free coordinates k < C - 1 (the last
    is one minus the others). F's gradient there is row_weight * sum_i scaled_ki + a_k / q_k -
    a_C / q_C and its Hessian -row_weight * scaled scaled^T - diag(a_k / q_k^2) - a_C / q_C^2,
    with a = ``pseudo``. Two classes, the common case, take scalar arithmetic, without numpy's
    per-call cost on 1 x 1 arrays.
    """
    q = prior.tolist()
    if len(q) == 2:
        row = scaled[0]
        gradient = row_weight * float(row.sum()) + pseudo[0] / q[0] - pseudo[1] / q[1]
        hessian = -row_weight * float(row @ row) - pseudo[0] / q[0] ** 2 - pseudo[1] / q[1] ** 2
        step = -gradient / hessian
        return np.array([step, -step]), gradient, hessian
    free_gradient = row_weight * scaled.sum(axis=1) + np.divide(pseudo[:-1], q[:-1])
    free_gradient -= pseudo[-1] / q[-1]
    hessian = -row_weight * scaled @ scaled.T
    hessian -= np.diag(np.divide(pseudo[:-1], np.square(q[:-1]))) + pseudo[-1] / q[-1] ** 2
    step = np.linalg.solve(hessian, -free_gradient)
    return np.append(step, -step.sum()), free_gradient, hessian


def _step_length(prior: np.ndarray, direction: np.ndarray) -> float:
    """The Newton step's length: 1, or 0.99 of the longest that stays inside the simplex."""
    limit = min(
        (-p / f for p, f in zip(prior.tolist(), direction.tolist(), strict=True) if f < 0),
        default=math.inf,
    )
    return min(1.0, 0.99 * limit)


def _slope(gradient: float | np.ndarray, direction: np.ndarray) -> float:
    """F's derivative along ``direction`` (all C coordinates) from its free-coordinate
    gradient."""
    if isinstance(gradient, float):
        return gradient * float(direction[0])
    return float(gradient @ direction[:-1])


@functools.lru_cache(maxsize=16)
def chi2_critical(level: float, degrees: int) -> float:
    """The chi-squared quantile a statistic must reach to reject at ``level``."""
    from scipy.stats import chi2

    return float(chi2.isf(level, degrees))

"""The target label distribution from labelled rows and the unlabelled MAP-EM estimate together.

Labels that arrive for a random share of the stream's rows are a multinomial sample of the
target labels; the conjugate posterior of the label distribution is a Dirichlet whose parameters
are the label counts plus the prior's. The unlabelled stream's MAP-EM estimate pi_u (see
:class:`adaptable.core.recommended.moment_test.OnlinePriorEstimate`) enters as that prior: a Dirichlet with
mean pi_u worth ``k`` rows, where ``k`` is what the estimate is worth in labelled rows.

- :func:`unlabelled_worth` -- k from the observed Fisher information of the label-shift
  likelihood at pi_u: the number of labelled rows whose multinomial estimate would have the
  same variance (the smallest over the classes, to stay on the cautious side). It is right
  only when the stream is a label shift and the posteriors are calibrated; the caller passes
  0 where the moment test says otherwise.
- :func:`combine_prior` -- the Dirichlet posterior, its mean and a central interval per class.
  Where the labelled counts are incompatible with pi_u at its worth (a chi-squared test of
  the counts against pi_u, the variance inflated by pi_u's own), the estimate is dropped and
  the labels alone decide: the unlabelled estimate is biased where the shift is not a label
  shift or the posteriors are miscalibrated, and the labels are not.

Example:
    >>> import numpy as np
    >>> est = combine_prior(np.array([45.0, 55.0]), np.array([0.5, 0.5]), worth=100.0)
    >>> est.mean.round(3).tolist(), est.compatible      # (45 + 50 + 0.5) / (100 + 100 + 1)
    ([0.475, 0.525], True)
    >>> far = combine_prior(np.array([10.0, 90.0]), np.array([0.8, 0.2]), worth=1000.0)
    >>> far.compatible, far.mean.round(2).tolist()
    (False, [0.1, 0.9])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# scipy.stats is imported where it is used: importing it costs more than the rest of
# `from adaptable import AdapTable` (docs/research/costs.md#importing-adaptable).

#: pseudo-rows per class under every estimate (Jeffreys' prior), so no class gets probability 0
JEFFREYS = 0.5


@dataclass(frozen=True)
class PriorPosterior:
    """The combined estimate of the target label distribution.

    Attributes:
        mean: the posterior mean, (C,), summing to 1.
        lower, upper: central ``level`` interval of each class's probability, (C,) each.
        n_labelled: labelled rows counted.
        worth: the weight the unlabelled estimate got, in rows (0 where it was dropped).
        compatible: whether the labelled counts agreed with the unlabelled estimate.
    """

    mean: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    n_labelled: float
    worth: float
    compatible: bool

    @property
    def total(self) -> float:
        """The Dirichlet's total pseudo-count (labelled rows, the estimate's worth, Jeffreys')."""
        return self.n_labelled + self.worth + JEFFREYS * len(self.mean)


def combine_prior(
    counts: np.ndarray,
    unlabelled: np.ndarray | None,
    worth: float,
    *,
    level: float = 0.9,
    compatibility_level: float = 0.01,
    interval: bool = True,
) -> PriorPosterior:
    """Dirichlet posterior of the target label distribution.

    Args:
        counts: labelled rows per class, (C,).
        unlabelled: the unlabelled estimate pi_u, (C,), or ``None`` (labels alone).
        worth: what pi_u is worth in labelled rows (>= 0; see :func:`unlabelled_worth`).
        level: coverage of the reported per-class intervals.
        compatibility_level: the chi-squared test's level; where the counts reject pi_u at it,
            pi_u is dropped.
        interval: compute the intervals (``False``: NaN, and no quantile function is called;
            :func:`dirichlet_interval` gives them later from the mean and the total).

    Returns:
        :class:`PriorPosterior`; with no labels and no estimate, the uniform distribution.

    Raises:
        ValueError: negative counts or worth, or shapes that do not match.
    """
    counts = np.asarray(counts, dtype=np.float64)
    if counts.ndim != 1 or np.any(counts < 0):
        raise ValueError("counts must be a vector of non-negative numbers.")
    if worth < 0 or not np.isfinite(worth):
        raise ValueError(f"worth must be finite and >= 0; got {worth!r}")
    n_classes, n = len(counts), float(counts.sum())
    compatible = True
    if unlabelled is None or worth == 0:
        centre, worth = np.full(n_classes, 1.0 / n_classes), 0.0
    else:
        centre = np.asarray(unlabelled, dtype=np.float64)
        if centre.shape != counts.shape:
            raise ValueError(f"unlabelled must be ({n_classes},); got {centre.shape}.")
        centre = np.clip(centre, 1e-12, None) / np.clip(centre, 1e-12, None).sum()
        if n > 0:
            # Counts ~ Multinomial(n, pi), pi ~ (pi_u, variance pi (1 - pi) / worth): each count's
            # variance is n pi (1 - pi) (1 + n / worth), so Pearson's statistic is divided by that.
            pearson = float(np.sum((counts - n * centre) ** 2 / (n * centre)))
            statistic = pearson / (1.0 + n / worth)
            from scipy.stats import chi2

            compatible = statistic <= chi2.ppf(1.0 - compatibility_level, n_classes - 1)
        if not compatible:
            centre, worth = np.full(n_classes, 1.0 / n_classes), 0.0
    alpha = counts + worth * centre + JEFFREYS
    total = float(alpha.sum())
    if interval:
        lower, upper = dirichlet_interval(alpha / total, np.array(total), level)
    else:
        lower = upper = np.full(n_classes, np.nan)
    return PriorPosterior(alpha / total, lower, upper, n, float(worth), bool(compatible))


def dirichlet_interval(
    mean: np.ndarray, total: np.ndarray, level: float = 0.9
) -> tuple[np.ndarray, np.ndarray]:
    """Central ``level`` interval of each class's probability under Dirichlet(mean * total):
    its marginals are Beta(alpha_k, total - alpha_k). ``mean`` (..., C), ``total`` (...,)."""
    from scipy.stats import beta as beta_distribution

    mean = np.asarray(mean, dtype=np.float64)
    alpha = mean * np.asarray(total, dtype=np.float64)[..., None]
    rest = np.asarray(total, dtype=np.float64)[..., None] - alpha
    tail = (1.0 - level) / 2.0
    return beta_distribution.ppf(tail, alpha, rest), beta_distribution.ppf(1 - tail, alpha, rest)


def unlabelled_worth(
    posteriors: np.ndarray, source_prior: np.ndarray, estimate: np.ndarray, row_weight: float = 1.0
) -> float:
    """What the MAP-EM estimate is worth in labelled rows, under the label-shift model.

    The log-likelihood of the stream is sum_i log sum_y q(y|x_i) pi_y / p_s(y); its observed
    information at pi (in the C - 1 free coordinates) inverts to the estimate's covariance.
    A Dirichlet worth k rows has variance pi_y (1 - pi_y) / (k + 1); the worth is the smallest
    k over the classes that matches the information's variance.

    Args:
        posteriors: the stream's (calibrated) source posteriors, or a uniform sample of them,
            (n, C).
        source_prior: p_s, (C,).
        estimate: pi at which the information is taken (the MAP-EM estimate), (C,).
        row_weight: stream rows each given row stands for (a reservoir's n_seen / size).

    Returns:
        k >= 0 (0 for no rows).

    Example:
        >>> certain = np.array([[1.0, 0.0]] * 30 + [[0.0, 1.0]] * 70)   # posteriors that are labels
        >>> round(unlabelled_worth(certain, np.array([0.5, 0.5]), np.array([0.3, 0.7])), 6)
        99.0
    """
    q = np.asarray(posteriors, dtype=np.float64)
    if len(q) == 0:
        return 0.0
    pi = np.clip(np.asarray(estimate, dtype=np.float64), 1e-12, None)
    pi = pi / pi.sum()
    # Posteriors that are hard 0 / 1 (a fully grown tree) can make a slope overflow: the
    # information is then not finite, and the estimate is worth nothing (checked below).
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        ratio = q / np.asarray(source_prior, dtype=np.float64)
        mixture = np.maximum(ratio @ pi, 1e-300)
        free = (ratio[:, :-1] - ratio[:, -1:]) / mixture[:, None]  # d log m_i / d pi_k
        information = row_weight * free.T @ free
        if not np.all(np.isfinite(information)):
            return 0.0
        # the covariance of all C coordinates: the last is minus the sum of the others
        try:
            covariance_free = np.linalg.inv(information)
        except np.linalg.LinAlgError:
            return 0.0
        basis = np.vstack([np.eye(len(pi) - 1), -np.ones((1, len(pi) - 1))])
        variance = np.diag(basis @ covariance_free @ basis.T)
    if np.any(variance <= 0) or not np.all(np.isfinite(variance)):
        return 0.0
    return float(max(np.min(pi * (1.0 - pi) / variance) - 1.0, 0.0))

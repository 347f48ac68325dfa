"""Online label-shift adaptation: FTH and OGD (Wu et al. 2021), FLH-FTL (Baby et al. 2023).

The test stream is a sequence of rounds (our batches) whose label distribution q_t may drift while
p(x|y) stays fixed. Each method keeps a re-weighting vector p_t and predicts round t with Bayes'
rule for label shift, ``norm(f(x) * p_t / p_s)``, where f is the calibrated source model and p_s
the source label distribution. The labels are never seen; what each round reveals is an unbiased
estimate of q_t (Wu et al., Section 3; Lipton et al.'s BBSE):

    q_hat_t = (C^{-1} mu_t) * p_v,

with mu_t the round's mean predicted class probabilities (``soft=True``, BBSE-soft as in Baby et
al.'s code) or predicted-class frequencies (``soft=False``), C the joint confusion matrix of the
source model on the validation split and p_v that split's label frequencies. q_hat_t sums to one
but may hold negative entries: it is left unclipped so that averages of it stay unbiased, and only
the vector used to re-weight is projected onto the probability simplex.

- ``fth``, Follow The History: p_{t+1} = the mean of q_hat_1..q_hat_t (rows weighted, so that it
  is exactly BBSE on every row seen so far).
- ``ogd``, Online Gradient Descent (Wu et al.'s ROGD): p_{t+1} = Proj(p_t - eta * grad l(p_t;
  q_hat_t)), where l(p; q) = sum_y q_y (1 - E_{x|y}[norm(f(x) * p / p_s)_y]) is the expected error
  of the re-weighted classifier (the probabilistic version of the 0-1 error), linear in q and
  therefore estimated without bias from q_hat_t, with E_{x|y} taken over the validation rows.
- ``flh_ftl``, Follow the Leading History over Follow-The-Leader experts (Baby et al.): an expert
  starts at every round and predicts the running mean of the estimates since its start; the
  experts are mixed with weights updated multiplicatively by their squared error against each
  new estimate, and a new expert enters with weight 1/t (Hazan and Seshadhri's FLH).

Protocol (both papers' code): round t is predicted with p_t, fixed before its rows are seen,
then its estimate updates the state (``use_current_batch=True`` folds the round's own estimate in
first). p_1 = p_s. The source model is calibrated on the validation split, as in both papers
(they use temperature scaling; we use the same BCTS as our EM baseline). Every method works on
any model through the package's model adapter. Cost per round: O(batch * C) plus O(C^3) for the
estimate; OGD adds O(n_ref * C^2) for its gradient over at most ``reference_size`` validation rows
and FLH-FTL O(n_experts * C) with at most ``max_experts`` experts, both independent of the
stream's length.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np

from adaptable.baselines.bbse import confusion_joint, confusion_soft
from adaptable.baselines.bcts import BiasCorrectedTemperature, fit_bcts
from adaptable.baselines.common import FLAG, CheckedParameters
from adaptable.core.paper.label_handler import source_prior
from adaptable.framework.method import SourceData, TestTimeMethod
from adaptable.framework.model_adapter import as_logit_function
from adaptable.framework.parameters import Constraint, Interval
from adaptable.framework.probability import normalize, softmax

__all__ = [
    "FLHFTL",
    "FollowTheHistory",
    "OnlineGradientDescent",
    "OnlineLabelShiftMethod",
    "flh_ftl_step",
    "ogd_step",
    "project_to_simplex",
    "soft_error_gradient",
    "unbiased_prior_estimate",
]


# --------------------------------------------------------------------------- the math
def project_to_simplex(vector: np.ndarray, floor: float = 0.0) -> np.ndarray:
    """Euclidean projection onto {p : p_k >= floor, sum p = 1} (sort-based, Duchi et al. 2008).

    Example:
        >>> project_to_simplex(np.array([0.8, 0.6]))
        array([0.6, 0.4])
        >>> project_to_simplex(np.array([1.2, -0.2]), floor=0.01)
        array([0.99, 0.01])
    """
    vector = np.asarray(vector, dtype=np.float64)
    n = vector.shape[0]
    total = 1.0 - n * floor
    if total <= 0:
        raise ValueError(f"floor {floor} leaves no mass for {n} classes (need floor < 1/{n})")
    # Shifting by the floor turns the problem into a projection onto the simplex of size `total`.
    shifted = vector - floor
    ordered = np.sort(shifted)[::-1]
    cumulative = np.cumsum(ordered) - total
    index = np.arange(1, n + 1)
    rho = index[ordered - cumulative / index > 0][-1]
    theta = cumulative[rho - 1] / rho
    return np.maximum(shifted - theta, 0.0) + floor


def unbiased_prior_estimate(
    mean_prediction: np.ndarray, confusion: np.ndarray, valid_prior: np.ndarray
) -> np.ndarray:
    """BBSE's estimate of the label distribution without clipping: ``(C^{-1} mu) * p_v``.

    Args:
        mean_prediction: mu, the batch's mean predicted probabilities or predicted-class
            frequencies, (C,).
        confusion: joint confusion matrix on the validation split, (C, C).
        valid_prior: the validation split's label frequencies, (C,).

    Returns:
        (C,) summing to one (the confusion matrix's columns sum to p_v); entries may be negative.

    Example:
        >>> C = np.array([[0.4, 0.1], [0.1, 0.4]])  # 80 % accurate, balanced validation split
        >>> unbiased_prior_estimate(np.array([0.9, 0.1]), C, np.array([0.5, 0.5]))
        array([ 1.16666667, -0.16666667])
    """
    # lstsq: the confusion matrix is singular when a class is never predicted on validation.
    weights = np.linalg.lstsq(confusion, np.asarray(mean_prediction, np.float64), rcond=None)[0]
    return weights * valid_prior


def soft_error_gradient(
    p: np.ndarray,
    q: np.ndarray,
    reference_proba: np.ndarray,
    reference_labels: np.ndarray,
    source_prior: np.ndarray,
) -> np.ndarray:
    """Gradient in p of l(p; q) = sum_y q_y (1 - E_{x|y}[norm(f(x) * p / p_s)_y]).

    With a_k(x) = f_k(x) / p_s(k), S = sum_j a_j p_j and r_y = a_y p_y / S (the re-weighted
    probability of class y), d r_y / d p_k = ([k = y] a_y - r_y a_k) / S.

    Args:
        p: the re-weighting vector, (C,).
        q: a (possibly unnormalised or negative) label-distribution estimate, (C,).
        reference_proba: calibrated source-model probabilities of labelled rows, (n, C).
        reference_labels: their labels, (n,); every class must occur.
        source_prior: p_s, (C,).
    """
    a = reference_proba / source_prior
    s = a @ p
    r = a * p / s[:, None]
    n_classes = p.shape[0]
    # dr[i, k] = d r_{y_i} / d p_k for row i with label y_i.
    rows = np.arange(len(reference_labels))
    r_true = r[rows, reference_labels]
    dr = -(r_true / s)[:, None] * a
    dr[rows, reference_labels] += a[rows, reference_labels] / s
    # E_{x|y}[dr] for every class y: one (C, C) matrix, row y.
    counts = np.bincount(reference_labels, minlength=n_classes).astype(np.float64)
    per_class = np.zeros((n_classes, n_classes))
    np.add.at(per_class, reference_labels, dr)
    per_class /= counts[:, None]
    return -(q @ per_class)


def ogd_step(
    p: np.ndarray,
    estimate: np.ndarray,
    step: float,
    reference_proba: np.ndarray,
    reference_labels: np.ndarray,
    source_prior: np.ndarray,
    floor: float,
) -> np.ndarray:
    """One projected gradient step: ``Proj(p - step * grad l(p; estimate))`` onto p_k >= floor."""
    gradient = soft_error_gradient(p, estimate, reference_proba, reference_labels, source_prior)
    return project_to_simplex(p - step * gradient, floor)


def flh_ftl_step(
    log_weights: np.ndarray,
    means: np.ndarray,
    counts: np.ndarray,
    estimate: np.ndarray,
    n_rows: int,
    n_rounds: int,
    meta_lr: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One FLH round over FTL experts, after the round's estimate has been revealed.

    1. every expert's weight is multiplied by exp(-meta_lr * ||mean - estimate||^2), where mean is
       what it predicted for this round, and the weights are renormalised;
    2. every expert folds the estimate into its running mean (rows weighted);
    3. a new expert starts at this round (its mean is the estimate) with weight 1 / n_rounds; the
       others keep (1 - 1 / n_rounds) of theirs.

    Args:
        log_weights: log mixture weights of the current experts, (K,) (K = 0 before round 1).
        means: their predictions, (K, C).
        counts: rows each has averaged, (K,).
        estimate: this round's unbiased estimate, (C,).
        n_rows: rows in this round.
        n_rounds: rounds seen, this one included (the new expert's index in FLH).
        meta_lr: the exp-concavity rate of the squared loss.

    Returns:
        (log_weights, means, counts) with K + 1 experts, the newest last.
    """
    if means.shape[0]:
        losses = np.sum((means - estimate) ** 2, axis=1)
        log_weights = log_weights - meta_lr * losses
        log_weights = log_weights - _logsumexp(log_weights)
        means = (means * counts[:, None] + n_rows * estimate) / (counts + n_rows)[:, None]
        counts = counts + n_rows
        log_weights = log_weights + math.log1p(-1.0 / n_rounds)
    log_weights = np.append(log_weights, -math.log(n_rounds))
    means = np.vstack([means, estimate[None, :]]) if means.size else estimate[None, :].copy()
    counts = np.append(counts, float(n_rows))
    return log_weights, means, counts


def _logsumexp(values: np.ndarray) -> float:
    top = float(np.max(values))
    return top + math.log(float(np.sum(np.exp(values - top))))


# --------------------------------------------------------------------------- the methods
class OnlineLabelShiftMethod(CheckedParameters, TestTimeMethod):
    """Base class: calibrated outputs re-weighted by an online label-distribution vector.

    Subclasses define the state (``_reset_state``), the vector used for the next round
    (``_reweighting``) and the update once a round's estimate is known (``_update``).

    Args:
        calibrate: fit BCTS on the validation split (default) or use the raw softmax.
        soft: BBSE-soft (mean probabilities, default) or hard BBSE (predicted-class counts).
        use_current_batch: fold a round's own estimate in before predicting it (the papers'
            protocol, False, predicts a round with what earlier rounds taught).

    Attributes (after fit / predict_proba):
        source_prior_: p_s, (C,) (train + validation labels, as AdapTable's).
        confusion_: the validation confusion matrix, (C, C).
        batch_prior_: the last round's unbiased estimate, (C,).
        target_prior_: the re-weighting vector used on the last round, (C,).
    """

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "calibrate": FLAG,
        "soft": FLAG,
        "use_current_batch": FLAG,
    }

    def __init__(
        self, *, calibrate: bool = True, soft: bool = True, use_current_batch: bool = False
    ) -> None:
        self.calibrate = calibrate
        self.soft = soft
        self.use_current_batch = use_current_batch
        self._check_parameters()

    def _fit(self, model: Any, source: SourceData) -> None:
        """Calibrate on the validation split and fit the confusion matrix there.

        Raises:
            ValueError: no validation split, or a class absent from it.
        """
        X_valid, y_valid = source.X_valid, source.y_valid
        if X_valid is None or y_valid is None:
            raise ValueError(
                f"{self.name}: needs the validation split (X_valid, y_valid) for its calibration "
                "and confusion matrix; got none"
            )
        self._logits = as_logit_function(model)
        valid_logits = self._logits(X_valid)
        n_classes = valid_logits.shape[1]
        missing = np.flatnonzero(np.bincount(y_valid, minlength=n_classes) == 0)
        if missing.size:
            raise ValueError(
                f"{self.name}: classes {missing.tolist()} never occur in the validation split, "
                "so the confusion matrix cannot be estimated"
            )
        self.n_classes_ = n_classes
        self.source_prior_ = source_prior(source.y, y_valid, n_classes=n_classes)
        #: the fitted BCTS map, or None without calibration
        self.calibration_: BiasCorrectedTemperature | None = (
            fit_bcts(valid_logits, y_valid) if self.calibrate else None
        )
        valid_proba = self._proba(valid_logits)
        self.confusion_ = (
            confusion_soft(valid_proba, y_valid, n_classes)
            if self.soft
            else confusion_joint(valid_proba.argmax(axis=1), y_valid, n_classes)
        )
        self.valid_prior_ = np.bincount(y_valid, minlength=n_classes) / len(y_valid)
        self._fit_method(valid_proba, y_valid)
        self._start_stream()

    def predict_proba(self, X_batch: Any) -> np.ndarray:
        """Re-weighted probabilities of the round, (n, C); then the state learns from it."""
        self._check_fitted()
        self._check_batch(X_batch)
        proba = self._proba(self._logits(X_batch))
        mean_prediction = (
            proba.mean(axis=0)
            if self.soft
            else np.bincount(proba.argmax(axis=1), minlength=self.n_classes_) / len(proba)
        )
        estimate = unbiased_prior_estimate(mean_prediction, self.confusion_, self.valid_prior_)
        if self.use_current_batch:
            self._learn(estimate, len(proba))
        self.target_prior_ = self._reweighting()
        if not self.use_current_batch:
            self._learn(estimate, len(proba))
        self.batch_prior_ = estimate
        return normalize(proba * (self.target_prior_ / self.source_prior_))

    def reset(self) -> None:
        """Back to the state right after fit (p_1 = p_s)."""
        self._check_fitted()
        self._start_stream()

    def _start_stream(self) -> None:
        self.n_rounds_ = 0
        self.n_rows_ = 0
        self.batch_prior_ = self.target_prior_ = None
        self._reset_state()

    @property
    def next_prior_(self) -> np.ndarray:
        """The re-weighting vector the next round will use (after every round seen), (C,)."""
        self._check_fitted()
        return self._reweighting()

    @property
    def state(self) -> dict[str, np.ndarray | None]:
        """``target_prior``: the vector that re-weighted the last round (the runner traces it)."""
        return {"target_prior": self.target_prior_}

    # ----------------------------------------------------------------- internals
    def _proba(self, logits: np.ndarray) -> np.ndarray:
        if self.calibration_ is None:
            return softmax(logits)
        return self.calibration_.proba(logits)

    def _learn(self, estimate: np.ndarray, n_rows: int) -> None:
        self.n_rounds_ += 1
        self.n_rows_ += n_rows
        self._update(estimate, n_rows)

    # ----------------------------------------------------------------- for subclasses
    def _fit_method(self, valid_proba: np.ndarray, y_valid: np.ndarray) -> None:
        """Method-specific preparation on the calibrated validation outputs; none by default."""

    def _reset_state(self) -> None:
        raise NotImplementedError

    def _reweighting(self) -> np.ndarray:
        """The vector p_t in the simplex that re-weights the next round, (C,)."""
        raise NotImplementedError

    def _update(self, estimate: np.ndarray, n_rows: int) -> None:
        raise NotImplementedError


class FollowTheHistory(OnlineLabelShiftMethod):
    """FTH (Wu et al. 2021): re-weight by the mean of every unbiased estimate so far.

    Deliberate difference: the papers' rounds have equal sizes and average estimates per round;
    ours weight each round by its rows (only the stream's last batch is smaller), which makes the
    running mean exactly BBSE on all rows seen so far. The mean is projected onto the simplex
    before it re-weights (Wu et al.'s code re-weights with the raw mean, which can be negative).

    Example:
        >>> method = FollowTheHistory()  # then fit(model, X_s, y_s, X_v, y_v) as any method
    """

    name = "fth"

    def _reset_state(self) -> None:
        self._sum = np.zeros(self.n_classes_)

    def _reweighting(self) -> np.ndarray:
        if self.n_rows_ == 0:
            return self.source_prior_.copy()
        return project_to_simplex(self._sum / self.n_rows_)

    def _update(self, estimate: np.ndarray, n_rows: int) -> None:
        self._sum += n_rows * estimate


class OnlineGradientDescent(OnlineLabelShiftMethod):
    """OGD on the re-weighting vector (Wu et al. 2021, "ROGD" in Baby et al. 2023).

    Step size (Wu et al., Theorem 2): eta = sqrt(2 / T) / L for a horizon of T rounds, L the
    Lipschitz constant of l(.; q_hat) over the domain, estimated as in both papers' code: the
    largest gradient norm over the domain's vertices, its centre and 30 random points, for the
    most extreme estimates (one-row estimates, q_hat = (C^{-1} e_j) * p_v). The domain is the
    simplex with every entry >= ``floor`` (Wu et al.'s code uses 0.01 with this loss).

    Deliberate difference: Wu et al.'s rounds are single rows; with batches we keep their
    per-row rule (T counts rows) and take, per batch, the sum of its rows' steps, n_b * eta * grad
    l(p; q_hat_batch) (the gradient is linear in q_hat). Since the stream's length is unknown
    when the method is fitted, the default is the anytime rule eta_t = sqrt(2 / t) / L with t the
    rows seen so far (O(sqrt T) regret as well); ``horizon`` restores the fixed rule and ``lr``
    sets a constant step per batch.
    Deliberate difference: Wu et al.'s default loss is the 0-1 error with a smoothed
    finite-difference gradient; we use the differentiable variant both papers' code also offers
    (the expected probability of the true class, in Wu et al.'s form norm(f(x) p / p_s)), whose
    exact gradient costs one pass over at most ``reference_size`` validation rows.

    Args:
        lr: constant step per batch; None (default) uses the rule above.
        horizon: expected number of test rows T; None (default) uses the anytime rule.
        floor: lower bound of every entry of p (0.01).
        reference_size: validation rows used for the gradient (a seeded subset when larger).
        calibrate, soft, use_current_batch: see :class:`OnlineLabelShiftMethod`.
        seed: seed of the reference subset and of the Lipschitz search.
    """

    name = "ogd"

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        **OnlineLabelShiftMethod._parameter_constraints,
        "lr": [Interval(Real, 0, None, closed="neither"), None],
        "horizon": [Interval(Integral, 1, None), None],
        "floor": [Interval(Real, 0, 0.5, closed="left")],
        "reference_size": [Interval(Integral, 1, None)],
        "seed": [Interval(Integral, 0, None)],
    }

    def __init__(
        self,
        *,
        lr: float | None = None,
        horizon: int | None = None,
        floor: float = 0.01,
        reference_size: int = 2000,
        calibrate: bool = True,
        soft: bool = True,
        use_current_batch: bool = False,
        seed: int = 0,
    ) -> None:
        super().__init__(calibrate=calibrate, soft=soft, use_current_batch=use_current_batch)
        self.lr = lr
        self.horizon = horizon
        self.floor = floor
        self.reference_size = reference_size
        self.seed = seed
        self._check_parameters()

    def _fit_method(self, valid_proba: np.ndarray, y_valid: np.ndarray) -> None:
        if self.floor * self.n_classes_ >= 1:
            raise ValueError(f"ogd: floor {self.floor} is too large for {self.n_classes_} classes")
        rng = np.random.default_rng(self.seed)
        if len(y_valid) > self.reference_size:
            keep = np.sort(rng.choice(len(y_valid), size=self.reference_size, replace=False))
            valid_proba, y_valid = valid_proba[keep], y_valid[keep]
        self._reference = (valid_proba, y_valid)
        #: the Lipschitz estimate L of the step-size rule
        self.lipschitz_ = self._lipschitz(rng)

    def _lipschitz(self, rng: np.random.Generator) -> float:
        n, floor = self.n_classes_, self.floor
        points = [np.full(n, 1.0 / n)]
        for k in range(n):
            vertex = np.full(n, floor)
            vertex[k] = 1.0 - (n - 1) * floor
            points.append(vertex)
        points += [project_to_simplex(rng.dirichlet(np.ones(n)), floor) for _ in range(30)]
        extremes = [
            unbiased_prior_estimate(np.eye(n)[j], self.confusion_, self.valid_prior_)
            for j in range(n)
        ]
        norms = [np.linalg.norm(self._gradient(p, q_hat)) for p in points for q_hat in extremes]
        return max(float(max(norms)), 1e-12)

    def _gradient(self, p: np.ndarray, estimate: np.ndarray) -> np.ndarray:
        proba, labels = self._reference
        return soft_error_gradient(p, estimate, proba, labels, self.source_prior_)

    def step_size(self, n_rows: int) -> float:
        """The step for a batch of ``n_rows`` once ``n_rows_`` rows (this batch included) are in."""
        if self.lr is not None:
            return self.lr
        horizon = self.horizon if self.horizon is not None else self.n_rows_
        return n_rows * math.sqrt(2.0 / horizon) / self.lipschitz_

    def _reset_state(self) -> None:
        self._p = project_to_simplex(self.source_prior_, self.floor)

    def _reweighting(self) -> np.ndarray:
        return self._p.copy()

    def _update(self, estimate: np.ndarray, n_rows: int) -> None:
        proba, labels = self._reference
        self._p = ogd_step(
            self._p,
            estimate,
            self.step_size(n_rows),
            proba,
            labels,
            self.source_prior_,
            self.floor,
        )


class FLHFTL(OnlineLabelShiftMethod):
    """FLH with FTL experts (Baby et al. 2023), on the unbiased per-round estimates.

    The prediction for the next round is the weighted mean of the experts' running means,
    projected onto the simplex; before the first round it is p_s.

    Deliberate difference: FLH's expert set grows by one per round (O(t) work at round t); we keep
    at most ``max_experts`` and, past that, drop the lowest-weight expert other than the newest
    (the mixture is renormalised). Streams shorter than ``max_experts`` rounds run exact FLH.
    Deliberate difference: in Baby et al.'s code, as we read it, the experts are recomputed by
    window length each round while their weights stay in creation order, so a weight does not
    follow one expert; we keep each expert's start time and weight together, as FLH defines.

    Args:
        meta_lr: rate of the multiplicative weights (Baby et al.'s default 1 / C when None).
        max_experts: bound on the expert set.
        calibrate, soft, use_current_batch: see :class:`OnlineLabelShiftMethod`.
    """

    name = "flh_ftl"

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        **OnlineLabelShiftMethod._parameter_constraints,
        "meta_lr": [Interval(Real, 0, None, closed="neither"), None],
        "max_experts": [Interval(Integral, 2, None)],
    }

    def __init__(
        self,
        *,
        meta_lr: float | None = None,
        max_experts: int = 256,
        calibrate: bool = True,
        soft: bool = True,
        use_current_batch: bool = False,
    ) -> None:
        super().__init__(calibrate=calibrate, soft=soft, use_current_batch=use_current_batch)
        self.meta_lr = meta_lr
        self.max_experts = max_experts
        self._check_parameters()

    @property
    def meta_lr_(self) -> float:
        """The multiplicative-weights rate in use."""
        return self.meta_lr if self.meta_lr is not None else 1.0 / self.n_classes_

    @property
    def expert_weights_(self) -> np.ndarray:
        """Mixture weights of the current experts, oldest first, (K,)."""
        return np.exp(self._log_weights)

    def _reset_state(self) -> None:
        self._log_weights = np.zeros(0)
        self._means = np.zeros((0, self.n_classes_))
        self._counts = np.zeros(0)

    def _reweighting(self) -> np.ndarray:
        if not self._counts.size:
            return self.source_prior_.copy()
        return project_to_simplex(self.expert_weights_ @ self._means)

    def _update(self, estimate: np.ndarray, n_rows: int) -> None:
        self._log_weights, self._means, self._counts = flh_ftl_step(
            self._log_weights,
            self._means,
            self._counts,
            estimate,
            n_rows,
            self.n_rounds_,
            self.meta_lr_,
        )
        if self._counts.size > self.max_experts:
            drop = int(np.argmin(self._log_weights[:-1]))
            keep = np.arange(self._counts.size) != drop
            self._log_weights = self._log_weights[keep]
            self._log_weights -= _logsumexp(self._log_weights)
            self._means, self._counts = self._means[keep], self._counts[keep]

"""Black-box shift estimation (BBSE; Lipton, Wang and Smola 2018).

With hard predictions yhat of a fixed classifier, label shift gives mu_t(yhat = i) =
sum_j C[i, j] w_j, where C[i, j] = P_s(yhat = i, y = j) is the joint confusion matrix on held-out
source data (the validation split) and w_j = p_t(j) / p_s(j). BBSE solves w = C^{-1} mu_t with
mu_t the predicted-class frequencies of the target batch. The weights are clipped at zero and
the implied prior p_t = w * p_s renormalised (a small batch can give negative solutions).
Online use and output re-weighting: see :mod:`adaptable.baselines.prior_shift`.

BBSE needs an invertible confusion matrix. A source model that never predicts some class on the
validation split (it happens with weak source models: docs/research/design_notes.md#baselines-bbse)
makes it singular; the least-squares (minimum-norm) solution is then used and fit warns that
the estimate is not identifiable. ``soft=True`` gives BBSE-soft (Lipton et al., Section 5;
Alexandari et al. 2020): the same equations with predicted probabilities in place of hard
predictions, which stays invertible in that case.

Deliberate difference: BBSE's p_s is the validation split's label frequencies, while our
re-weighting divides by AdapTable's p_s (train + validation); the two splits are drawn from the
same distribution, so they differ only by sampling noise.
"""

from __future__ import annotations

import warnings
from typing import ClassVar

import numpy as np

from adaptable.baselines.common import FLAG
from adaptable.baselines.prior_shift import PriorShiftMethod
from adaptable.core.report.heldout_estimate import soft_confusion
from adaptable.framework.parameters import Constraint
from adaptable.framework.probability import softmax


def confusion_joint(predicted: np.ndarray, y: np.ndarray, n_classes: int) -> np.ndarray:
    """C[i, j] = fraction of rows with prediction i and label j, (C, C)."""
    joint = np.zeros((n_classes, n_classes))
    np.add.at(joint, (predicted, y), 1.0)
    return joint / max(len(y), 1)


def confusion_soft(proba: np.ndarray, y: np.ndarray, n_classes: int) -> np.ndarray:
    """BBSE-soft's C[i, j] = mean over rows of p(yhat = i | x) * [y = j], (C, C)."""
    return soft_confusion(np.asarray(proba).reshape(-1, n_classes), y)


def bbse_prior(
    predicted: np.ndarray, confusion: np.ndarray, source_prior: np.ndarray
) -> np.ndarray:
    """BBSE's target prior from a batch's predictions.

    Args:
        predicted: the batch's predicted classes, (n,) (hard BBSE), or its predicted
            probabilities, (n, C) (BBSE-soft).
        confusion: joint confusion matrix on validation data, (C, C).
        source_prior: label frequencies of that validation data, (C,).

    Returns:
        the estimated target prior, (C,), non-negative and summing to one (the source prior
        when every weight clips to zero).

    Example:
        >>> C = np.array([[0.4, 0.1], [0.1, 0.4]])  # 80 % accurate, balanced source
        >>> bbse_prior(np.array([0] * 7 + [1] * 3), C, np.array([0.5, 0.5])).round(3)
        array([0.833, 0.167])
    """
    n_classes = confusion.shape[0]
    predicted = np.asarray(predicted)
    if predicted.ndim == 2:
        mu = predicted.astype(np.float64).mean(axis=0)
    else:
        mu = np.bincount(predicted, minlength=n_classes).astype(np.float64) / max(len(predicted), 1)
    # lstsq: the confusion matrix is singular when a class is never predicted on validation.
    weights = np.linalg.lstsq(confusion, mu, rcond=None)[0]
    prior = np.clip(weights, 0.0, None) * source_prior
    if prior.sum() <= 0:
        return np.asarray(source_prior, dtype=np.float64).copy()
    return prior / prior.sum()


class BBSE(PriorShiftMethod):
    """Online black-box shift estimation; works for any model.

    Args:
        alpha: online smoothing factor (AdapTable's 0.1).
        soft: BBSE-soft (predicted probabilities) instead of hard predictions (Lipton et al.'s
            BBSE, the default).
    """

    name = "bbse"

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        **PriorShiftMethod._parameter_constraints,
        "soft": FLAG,
    }

    def __init__(self, *, alpha: float = 0.1, soft: bool = False) -> None:
        super().__init__(alpha=alpha)
        self.soft = soft
        self._check_parameters()

    def _fit_estimator(self, valid_logits: np.ndarray, y_valid: np.ndarray) -> None:
        if self.soft:
            confusion = confusion_soft(softmax(valid_logits), y_valid, self.n_classes_)
        else:
            confusion = confusion_joint(valid_logits.argmax(axis=1), y_valid, self.n_classes_)
        #: joint confusion matrix on the validation split, (C, C)
        self.confusion_ = confusion
        #: validation label frequencies, BBSE's own p_s
        self.valid_prior_ = np.bincount(y_valid, minlength=self.n_classes_) / len(y_valid)
        if np.linalg.matrix_rank(confusion) < self.n_classes_:
            never = np.flatnonzero(confusion.sum(axis=1) == 0).tolist()
            warnings.warn(
                f"bbse: the validation confusion matrix is singular (classes {never} are never "
                "predicted), so the target prior is not identifiable; using the least-squares "
                "solution. Consider BBSE(soft=True) or 'em'.",
                RuntimeWarning,
                stacklevel=3,
            )

    def _output_proba(self, logits: np.ndarray) -> np.ndarray:
        return softmax(logits)

    def _estimate_prior(self, proba: np.ndarray) -> np.ndarray:
        predicted = proba if self.soft else proba.argmax(axis=1)
        return bbse_prior(predicted, self.confusion_, self.valid_prior_)

"""Pure label shift: the IN-DOMAIN test split resampled to a chosen class prior.

The in-domain test split (``dataset.id_test``) comes from the training distribution, so
resampling its rows by label changes p(y) and nothing else: p(x|y) stays the source's. These
are the generality benchmark's pure label-shift cases; the paper's own label-shift scenarios
(``class_imbalance``, ``temporal``) resample the out-of-domain test split instead.

Scenarios (registered in :data:`adaptable.shifts.SCENARIOS`):

- ``prior_0.1``, ``prior_0.5``, ``prior_0.9``: binary tasks, share of class 1 in the stream.
- ``prior_dirichlet_0``, ``prior_dirichlet_1``, ``prior_dirichlet_2``: a target prior drawn
  from Dirichlet(1, ..., 1) over the classes with the fixed draw seed 0, 1 or 2 (the same prior
  for every experiment seed; the experiment seed picks the rows).

Sampling rule: rows are drawn WITHOUT replacement, so the stream is as long as the target prior
allows: ``n = floor(min_c n_c / q_c)`` over the classes with ``q_c > 0`` (``n_c`` rows of class c
in the in-domain test split), class c contributes ``round(q_c * n)`` rows (largest remainders,
never more than ``n_c``), and the stream is shuffled. The realised prior therefore equals the
target up to rounding (within ``1 / n`` per class).
"""

from __future__ import annotations

import numpy as np

from adaptable.datasets import ShiftDataset
from adaptable.shifts._common import Purpose, check_dataset, check_seed, generator
from adaptable.shifts.stream import Stream

#: positive-class rates of the binary scenarios
BINARY_RATES = (0.1, 0.5, 0.9)
#: draw seeds of the Dirichlet scenarios
DIRICHLET_DRAWS = (0, 1, 2)
# Separates the Dirichlet draws' random stream from every experiment-seeded one.
_DIRICHLET_STREAM = 7919


def dirichlet_prior(n_classes: int, draw: int) -> np.ndarray:
    """The target prior of ``prior_dirichlet_<draw>``: one Dirichlet(1) draw, fixed by ``draw``.

    Example:
        >>> q = dirichlet_prior(3, 0)
        >>> bool(np.isclose(q.sum(), 1.0)) and q.shape == (3,)
        True
    """
    if n_classes < 2:
        raise ValueError(f"n_classes must be at least 2; got {n_classes}")
    rng = np.random.default_rng([int(draw), _DIRICHLET_STREAM])
    return rng.dirichlet(np.ones(n_classes))


def class_counts_for_prior(available: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """Rows to draw per class: the largest stream with ``prior`` that needs no replacement.

    Args:
        available: rows of each class in the pool, shape (C,).
        prior: the target prior, shape (C,), non-negative, summing to one.

    Returns:
        int64 counts, shape (C,), each at most ``available[c]``.

    Example:
        >>> class_counts_for_prior(np.array([80, 20]), np.array([0.5, 0.5])).tolist()
        [20, 20]
        >>> class_counts_for_prior(np.array([80, 20]), np.array([0.9, 0.1])).tolist()
        [79, 9]
    """
    available = np.asarray(available, dtype=np.int64)
    prior = np.asarray(prior, dtype=np.float64)
    if prior.shape != available.shape or np.any(prior < 0) or not np.isclose(prior.sum(), 1.0):
        raise ValueError(
            f"prior must be a probability vector over {available.shape[0]} classes; got {prior}"
        )
    wanted = prior > 0
    if np.any(available[wanted] == 0):
        missing = np.flatnonzero(wanted & (available == 0)).tolist()
        raise ValueError(f"the pool has no rows of class(es) {missing}, which the prior needs")
    total = int(np.floor(np.min(available[wanted] / prior[wanted]) + 1e-9))
    exact = prior * total
    counts = np.floor(exact + 1e-9).astype(np.int64)
    # Largest remainders fill the rows lost to flooring, where the pool has rows to spare.
    for c in np.argsort(-(exact - counts), kind="stable"):
        if counts.sum() >= total:
            break
        if counts[c] < available[c] and prior[c] > 0:
            counts[c] += 1
    return np.minimum(counts, available)


def resample_to_prior(dataset: ShiftDataset, seed: int, prior: np.ndarray, name: str) -> Stream:
    """The in-domain test split resampled (without replacement, shuffled) to ``prior``.

    ``Stream.rows`` are positions in ``dataset.id_test``; ``info`` holds the target and the
    realised prior, and ``"split": "id_test"``.

    Raises:
        ValueError: the dataset has no in-domain test split, or it lacks a class the prior needs.
    """
    dataset, seed = check_dataset(dataset), check_seed(seed)
    if dataset.id_test is None or len(dataset.id_test.y) == 0:
        raise ValueError(
            f"scenario {name!r} resamples the in-domain test split, and dataset "
            f"{dataset.name!r} has none (ShiftDataset.id_test is None)"
        )
    y = dataset.id_test.y
    counts = class_counts_for_prior(np.bincount(y, minlength=dataset.n_classes), prior)
    rng = generator(seed, Purpose.SAMPLING)
    picked = [
        rng.choice(np.flatnonzero(y == c), size=int(k), replace=False)
        for c, k in enumerate(counts)
        if k > 0
    ]
    rows = rng.permutation(np.concatenate(picked)).astype(np.int64)
    info = {
        "split": "id_test",
        "target_prior": [float(v) for v in prior],
        "realised_prior": (counts / counts.sum()).tolist(),
        "pool_counts": np.bincount(y, minlength=dataset.n_classes).tolist(),
    }
    X = dataset.id_test.X.iloc[rows].reset_index(drop=True)
    return Stream(name, X, y[rows], seed, dataset.name, rows, info)


def _binary(rate: float):
    name = f"prior_{rate}"

    def scenario(dataset: ShiftDataset, seed: int) -> Stream:
        dataset = check_dataset(dataset)
        if dataset.n_classes != 2:
            raise ValueError(
                f"scenario {name!r} sets the positive rate of a binary task; dataset "
                f"{dataset.name!r} has {dataset.n_classes} classes (use prior_dirichlet_*)"
            )
        return resample_to_prior(dataset, seed, np.array([1.0 - rate, rate]), name)

    scenario.__name__ = name.replace(".", "_")
    scenario.__doc__ = (
        f"Pure label shift: the in-domain test split resampled to a positive rate of {rate}."
    )
    return scenario


def _dirichlet(draw: int):
    name = f"prior_dirichlet_{draw}"

    def scenario(dataset: ShiftDataset, seed: int) -> Stream:
        dataset = check_dataset(dataset)
        return resample_to_prior(dataset, seed, dirichlet_prior(dataset.n_classes, draw), name)

    scenario.__name__ = name
    scenario.__doc__ = (
        f"Pure label shift: the in-domain test split resampled to Dirichlet(1) draw {draw}."
    )
    return scenario


#: name -> scenario, for the registry
PRIOR_SCENARIOS = {f"prior_{rate}": _binary(rate) for rate in BINARY_RATES} | {
    f"prior_dirichlet_{draw}": _dirichlet(draw) for draw in DIRICHLET_DRAWS
}

"""Label-distribution shifts of the test stream (paper appendix "Label Distribution Shifts").

Both scenarios resample test rows (with replacement, stream length = test size) by their label;
the features are not modified.

- ``class_imbalance``: row weight ``rank(y)/C * (rho - 1) + 1``, rho = 10 (``convention``:
  ``"paper"``, the formula; ``"authors"``, rare source classes up-weighted; ``"authors_code"``,
  the authors' sampler as it runs, see :func:`class_imbalance`).
- ``temporal``: labels follow a Dirichlet process over the histogram of the last w = 5 labels
  (the paper's definition and the authors' sampler agree; both are near-absorbing).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from adaptable.datasets import ShiftDataset
from adaptable.shifts._common import Purpose, check_dataset, check_seed, generator
from adaptable.shifts.stream import Stream

IMBALANCE_RATIO = 10.0
TEMPORAL_WINDOW = 5
TEMPORAL_FLOOR = 1e-6

Convention = Literal["paper", "authors", "authors_code"]
CONVENTIONS: tuple[str, ...] = ("paper", "authors", "authors_code")


def class_weights(
    source_labels: np.ndarray,
    n_classes: int,
    ratio: float = IMBALANCE_RATIO,
    convention: Convention = "paper",
) -> np.ndarray:
    """Per-class sampling weights of the class-imbalance scenario, shape ``(n_classes,)``.

    Classes are ranked by ascending frequency in ``source_labels`` (ties broken by class
    index): rank 1 = least frequent, rank C = most frequent, as the paper's appendix and the
    issue define it.

    - ``convention="paper"`` (default): ``w = rank/C * (ratio - 1) + 1``, the paper's formula.
      Read literally it favours the classes that are FREQUENT in the source: for C = 2 and
      ratio 10 the weights are 5.5 (rare) and 10 (frequent), a ratio of 1.8, not 10.
    - ``convention="authors"``: the authors' code, ``w = (1 - (rank-1)/(C-1)) * (ratio - 1) + 1``:
      the rarest source class gets ``ratio``, the most frequent gets 1. This matches the paper's
      prose ("labels that are rare in the training set are more likely to appear frequently in
      the test set") but not its formula.

    - ``convention="authors_code"``: the same weights as ``"authors"`` (what differs is how
      :func:`class_imbalance` applies them).

    Example:
        >>> class_weights(np.array([0, 0, 0, 1]), 2).tolist()
        [10.0, 5.5]
        >>> class_weights(np.array([0, 0, 0, 1]), 2, convention="authors").tolist()
        [1.0, 10.0]
    """
    if not ratio >= 1.0:
        raise ValueError(f"ratio must be at least 1; got {ratio}")
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {', '.join(CONVENTIONS)}; got {convention!r}")
    counts = np.bincount(np.asarray(source_labels, dtype=np.int64), minlength=n_classes)
    rank = np.empty(n_classes, dtype=np.float64)
    rank[np.argsort(counts, kind="stable")] = np.arange(1, n_classes + 1)
    if convention == "paper":
        return rank / n_classes * (ratio - 1.0) + 1.0
    return (1.0 - (rank - 1.0) / max(n_classes - 1, 1)) * (ratio - 1.0) + 1.0


def class_imbalance(
    dataset: ShiftDataset,
    seed: int,
    *,
    ratio: float = IMBALANCE_RATIO,
    convention: Convention = "paper",
) -> Stream:
    """Class imbalance: test rows drawn with replacement with weight w_{y_i} of their label.

    The class ranks use the SOURCE frequencies (train split), see :func:`class_weights`; the
    expected share of class c in the stream is ``n_c^test * w_c / sum_k n_k^test * w_k``.

    The authors' ``ImbalancedSampler`` is built from the TRAIN labels but indexes the test
    split: it draws ``len(train)`` positions among ``0..len(train)-1`` of the test split, each
    with the weight of the TRAIN row at that position, so the labels it streams are not
    re-weighted at all (their share is about the test split's). ``convention="authors_code"``
    reproduces that stream; the other conventions apply the weights to the test rows' own
    labels, as the appendix describes.

    Args:
        dataset: the task.
        seed: seeds the draws.
        ratio: the imbalance ratio rho (paper: 10).
        convention: ``"paper"`` (default, the formula as written), ``"authors"`` (rare source
            classes up-weighted by ``ratio``) or ``"authors_code"`` (the authors' sampler as it
            runs; needs at least as many test rows as train rows).

    Returns:
        A ``"class_imbalance"`` Stream with ``info["class_weights"]`` and
        ``info["expected_proportions"]``.

    Raises:
        ValueError: unknown convention, ``ratio < 1``, or ``"authors_code"`` on a task with
            fewer test rows than train rows (the authors' sampler would index past the end).
    """
    dataset, seed = check_dataset(dataset), check_seed(seed)
    weights = class_weights(dataset.train.y, dataset.n_classes, ratio, convention)
    if convention == "authors_code":
        n = len(dataset.train.y)
        if n > len(dataset.test.y):
            raise ValueError(
                f"convention 'authors_code' draws test positions 0..{n - 1} (one per train row), "
                f"but the test split has only {len(dataset.test.y)} rows"
            )
        row_weights = weights[dataset.train.y]
        position_labels = dataset.test.y[:n]
    else:
        row_weights = weights[dataset.test.y]
        n = len(row_weights)
        position_labels = dataset.test.y
    rng = generator(seed, Purpose.SAMPLING)
    probabilities = row_weights / row_weights.sum()
    rows = rng.choice(n, size=n, replace=True, p=probabilities)
    expected = np.bincount(position_labels, weights=probabilities, minlength=dataset.n_classes)
    info = {
        "ratio": float(ratio),
        "convention": convention,
        "class_weights": weights.tolist(),
        "expected_proportions": expected.tolist(),
    }
    X = dataset.test.X.iloc[rows].reset_index(drop=True)
    return Stream("class_imbalance", X, dataset.test.y[rows], seed, dataset.name, rows, info)


def temporal_labels(
    test_labels: np.ndarray,
    rng: np.random.Generator,
    window: int = TEMPORAL_WINDOW,
    floor: float = TEMPORAL_FLOOR,
) -> np.ndarray:
    """The temporally correlated label sequence, one label per test row, shape ``(n,)``.

    Over the classes present in ``test_labels`` (K of them): P_0 is uniform; for draw i,
    pi_i ~ Dirichlet(P_{i-1}), floored at ``floor`` and renormalised, and y_i ~ pi_i. Once
    ``window`` labels exist, P_i is the histogram of the last ``window`` labels, floored at
    ``floor`` and renormalised (a Dirichlet parameter must be positive).

    Deliberate difference: until ``window`` labels have been drawn P stays uniform (the paper's
    window would reach before the first draw); the authors' code does the same.

    Note: the chain is sticky by design and, with a floor of 1e-6, close to absorbing. After
    ``window`` equal labels the other classes have Dirichlet parameter ~1e-6, their draw is
    ~0 and floored to 1e-6, so the chain leaves that class with probability ~2e-5 per draw
    (measured). In practice the last switch happens within the first ~20 draws and one class,
    chosen at random, fills the rest of the stream.
    """
    if window < 1:
        raise ValueError(f"window must be a positive integer; got {window}")
    if not 0.0 < floor < 1.0:
        raise ValueError(f"floor must lie in (0, 1); got {floor}")
    classes = np.unique(test_labels)
    k = len(classes)
    n = len(test_labels)
    drawn = np.empty(n, dtype=np.int64)  # indices into `classes`
    counts = np.zeros(k, dtype=np.int64)  # histogram of the current window
    parameter = np.full(k, 1.0 / k)
    uniforms = rng.random(n)  # one uniform per label draw, taken up front
    for i in range(n):
        pi = np.maximum(rng.dirichlet(parameter), floor)
        cumulative = np.cumsum(pi / pi.sum())
        drawn[i] = min(int(np.searchsorted(cumulative, uniforms[i], side="right")), k - 1)
        counts[drawn[i]] += 1
        if i >= window:
            counts[drawn[i - window]] -= 1
        if i + 1 >= window:
            parameter = np.maximum(counts / window, floor)
            parameter /= parameter.sum()
    return classes[drawn]


def temporal(
    dataset: ShiftDataset,
    seed: int,
    *,
    window: int = TEMPORAL_WINDOW,
    floor: float = TEMPORAL_FLOOR,
) -> Stream:
    """Temporal correlation: a sticky label sequence, each label's row drawn from the test split.

    The labels come from :func:`temporal_labels`; the row of stream position i is drawn
    uniformly, with replacement, from the test rows whose label is y_i. Classes absent from the
    test split cannot be drawn and are left out of the Dirichlet (as the authors' code does).

    Args:
        dataset: the task.
        seed: seeds the labels and the row draws.
        window: the sliding window w (paper: 5).
        floor: the smoothing floor eta (paper: 1e-6).

    Returns:
        A ``"temporal"`` Stream with ``info["label_switches"]`` (how often consecutive labels
        differ) and ``info["label_proportions"]``.
    """
    dataset, seed = check_dataset(dataset), check_seed(seed)
    rng = generator(seed, Purpose.SAMPLING)
    labels = temporal_labels(dataset.test.y, rng, window, floor)
    rows = np.empty(len(labels), dtype=np.int64)
    for label in np.unique(labels):
        where = np.flatnonzero(labels == label)
        pool = np.flatnonzero(dataset.test.y == label)
        rows[where] = pool[rng.integers(0, len(pool), size=len(where))]
    counts = np.bincount(labels, minlength=dataset.n_classes)
    info = {
        "window": int(window),
        "floor": float(floor),
        "label_switches": int(np.count_nonzero(np.diff(labels))),
        "label_proportions": (counts / counts.sum()).tolist(),
    }
    X = dataset.test.X.iloc[rows].reset_index(drop=True)
    return Stream("temporal", X, dataset.test.y[rows], seed, dataset.name, rows, info)

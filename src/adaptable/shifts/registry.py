"""The scenario registry: ``apply(name, dataset, seed) -> Stream`` and ``names()``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from adaptable.datasets import ShiftDataset
from adaptable.shifts._common import check_dataset, check_seed, shuffled_test
from adaptable.shifts.column_shifts import categorical, numerical
from adaptable.shifts.corruptions import column_drop, gaussian, random_drop, uniform
from adaptable.shifts.label_shifts import class_imbalance, temporal
from adaptable.shifts.prior_shifts import PRIOR_SCENARIOS
from adaptable.shifts.stream import Stream


def natural(dataset: ShiftDataset, seed: int) -> Stream:
    """The identity scenario: the test split, unmodified, in the seed's random order.

    The corruptions with the same seed visit the rows in this same order.
    """
    dataset, seed = check_dataset(dataset), check_seed(seed)
    X, y, rows = shuffled_test(dataset, seed)
    return Stream("natural", X, y, seed, dataset.name, rows, {})


Scenario = Callable[..., Stream]

#: name -> scenario, in the order reports list them (natural, six corruptions, two label shifts,
#: then the pure label shifts of the in-domain test split)
SCENARIOS: dict[str, Scenario] = {
    "natural": natural,
    "gaussian": gaussian,
    "uniform": uniform,
    "random_drop": random_drop,
    "column_drop": column_drop,
    "numerical": numerical,
    "categorical": categorical,
    "class_imbalance": class_imbalance,
    "temporal": temporal,
    # Beyond the paper: pure label shift of the in-domain test split (generality benchmark).
    **PRIOR_SCENARIOS,
}

#: the paper's display names, for tables next to paper_results.csv
PAPER_NAMES: dict[str, str] = {
    "natural": "Natural",
    "gaussian": "Gaussian",
    "uniform": "Uniform",
    "random_drop": "Random Drop",
    "column_drop": "Column Drop",
    "numerical": "Numerical",
    "categorical": "Categorical",
    "class_imbalance": "Class Imbalance",
    "temporal": "Temporal Correlation",
}


def names() -> list[str]:
    """The registered scenario names, natural first."""
    return list(SCENARIOS)


def apply(name: str, dataset: ShiftDataset, seed: int, **options: Any) -> Stream:
    """Build the test stream of scenario ``name`` for ``dataset``, seeded.

    Args:
        name: one of :func:`names`.
        dataset: the task; its test split is what is streamed, its train split is the source.
        seed: non-negative integer; the same (name, dataset, seed) always gives the same stream.
        **options: scenario options with the paper's values as defaults (e.g. ``rate`` for the
            drops, ``scale`` for the noises, ``ratio``/``convention`` for class imbalance,
            ``window``/``floor`` for temporal).

    Returns:
        The :class:`~adaptable.shifts.Stream`.

    Raises:
        ValueError: unknown ``name`` (the message lists the known ones).

    Example:
        >>> from adaptable import datasets, shifts
        >>> ds = datasets.make_shift_dataset(seed=0)
        >>> len(shifts.apply("gaussian", ds, seed=0)) == len(ds.test.y)
        True
    """
    scenario = SCENARIOS.get(name) if isinstance(name, str) else None
    if scenario is None:
        raise ValueError(
            f"unknown shift scenario {name!r}; expected one of: {', '.join(SCENARIOS)}"
        )
    return scenario(dataset, seed, **options)

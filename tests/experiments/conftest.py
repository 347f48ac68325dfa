"""Shared test data of the experiments tests: run records of the generality role's table."""

from __future__ import annotations

import pytest

from adaptable.experiments import benchmark
from adaptable.experiments.spec import ExperimentSpec

TABLE = benchmark.TABLES["generality"]


def _record(spec: ExperimentSpec, f1: float) -> dict:
    return {
        "key": spec.key,
        "spec": spec.to_dict(),
        "metrics": {"macro_f1": f1, "balanced_accuracy": f1, "accuracy": f1, "ece": 0.1},
        "timing": {"seconds_per_row": 1e-4, "adapt_seconds": 1.0},
    }


# Per-case F1 (two seeds each, mean in the comment) for two cases of the logreg source.
VALUES = {
    ("heloc", "natural"): {
        "Source": (0.50, 0.52),  # 51
        "Balanced": (0.60, 0.60),  # 60
        "EM": (0.55, 0.57),  # 56
        "AdapTable (default)": (0.58, 0.60),  # 59
    },
    ("heloc", "prior_0.1"): {
        "Source": (0.70, 0.70),  # 70
        "Balanced": (0.66, 0.68),  # 67
        "EM": (0.64, 0.66),  # 65
        "AdapTable (default)": (0.71, 0.71),  # 71
    },
}


def _records() -> list[dict]:
    rows = {r.label: r for r in TABLE.rows if r.model == "logreg"}
    out = []
    for (dataset, scenario), by_method in VALUES.items():
        for label, values in by_method.items():
            row = rows[label]
            for seed, value in enumerate(values):
                spec = ExperimentSpec(
                    dataset, scenario, "logreg", row.method, seed, row.option_dict
                )
                out.append(_record(spec, value))
    return out


@pytest.fixture
def generality_records() -> list[dict]:
    """Two seeds of four methods on two HELOC cases of the logreg source (:data:`VALUES`)."""
    return _records()

"""Every AdapTable parameter belongs to exactly one part, and the preset only picks the decider."""

from __future__ import annotations

import inspect
import itertools
from pathlib import Path

import pytest
from sklearn.base import clone

from adaptable import AdapTable
from adaptable.core import DECIDERS, PART_PARAMETERS, PaperDecider, RecommendedDecider
from adaptable.core.paper.graph_calibrator import GraphCalibrator
from adaptable.core.presets import ESTIMATOR_PARAMETERS, calibrator_name


def _estimator_parameters() -> dict[str, inspect.Parameter]:
    signature = inspect.signature(AdapTable.__init__).parameters
    return {name: p for name, p in signature.items() if name != "self"}


def test_the_parts_partition_the_estimators_parameters() -> None:
    for (a, first), (b, second) in itertools.combinations(PART_PARAMETERS.items(), 2):
        assert not set(first) & set(second), f"{a} and {b} both own {set(first) & set(second)}"
    owned = set().union(*PART_PARAMETERS.values())
    assert owned == set(_estimator_parameters())
    assert set(AdapTable().get_params(deep=False)) == owned  # what clone sees


def test_each_part_names_its_own_parameters() -> None:
    assert PART_PARAMETERS["calibrator"] is GraphCalibrator.parameter_constraints
    assert PART_PARAMETERS["decider[paper]"] is PaperDecider.parameter_constraints
    assert PART_PARAMETERS["decider[default]"] is RecommendedDecider.parameter_constraints
    assert PART_PARAMETERS["estimator"] is ESTIMATOR_PARAMETERS
    assert {"alpha", "q_low", "q_high"} <= set(PaperDecider.parameter_constraints)
    assert {"fallback", "stream_check", "objective"} <= set(
        RecommendedDecider.parameter_constraints
    )
    assert {"batch_size", "epochs", "adjacency"} <= set(GraphCalibrator.parameter_constraints)


@pytest.mark.parametrize("decider", [PaperDecider, RecommendedDecider])
def test_a_deciders_defaults_are_the_estimators(decider) -> None:
    estimator = _estimator_parameters()
    own = inspect.signature(decider.__init__).parameters
    assert set(own) - {"self"} == set(decider.parameter_constraints)
    for name in decider.parameter_constraints:
        assert own[name].default == estimator[name].default, name


def test_the_preset_picks_the_decider_and_the_auto_calibrator() -> None:
    assert DECIDERS == {"default": RecommendedDecider, "paper": PaperDecider}
    assert calibrator_name({"preset": "default", "calibrator": "auto"}) == "none"
    assert calibrator_name({"preset": "paper", "calibrator": "auto"}) == "gnn"
    assert calibrator_name({"preset": "default", "calibrator": "platt"}) == "platt"


def test_the_estimator_looks_the_preset_up_only_to_build_the_decider() -> None:
    source = Path(inspect.getsourcefile(AdapTable)).read_text()
    body = source[source.index("class AdapTable(") :]
    lookups = [line.strip() for line in body.splitlines() if "preset" in line and "[" in line]
    assert all("DECIDERS[" in line for line in lookups), lookups
    assert "self.preset ==" not in body and 'params["preset"] ==' not in body


@pytest.mark.parametrize(
    "options",
    [{}, {"preset": "paper"}, {"fallback": "plugin"}, {"preset": "paper", "q_low": 0.1}],
)
def test_get_params_set_params_and_clone_keep_working(options) -> None:
    method = AdapTable(**options)
    twin = clone(method)
    assert twin.get_params() == method.get_params()
    twin.set_params(epochs=3, stream_check="model")
    assert (twin.epochs, twin.stream_check) == (3, "model")
    with pytest.raises(ValueError, match="q_low <= q_high"):
        twin.set_params(q_low=0.9, q_high=0.1)
    assert twin.q_low == method.q_low  # nothing changed by a refused set_params

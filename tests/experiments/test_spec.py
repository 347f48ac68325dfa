"""The experiment key and the JSON-lines results store."""

from __future__ import annotations

import json

import pytest

from adaptable.experiments.spec import ExperimentSpec, grid


def test_key_is_stable_and_option_order_free() -> None:
    a = ExperimentSpec("heloc", "natural", "mlp", "adaptable", 0, {"q_low": 0.1, "alpha": 0.2})
    b = ExperimentSpec("heloc", "natural", "mlp", "adaptable", 0, {"alpha": 0.2, "q_low": 0.1})
    assert a == b and hash(a) == hash(b)
    assert a.key == 'heloc|natural|mlp|adaptable|seed=0|{"alpha":0.2,"q_low":0.1}'
    assert (
        ExperimentSpec("heloc", "natural", "mlp", "source", 1).key
        == "heloc|natural|mlp|source|seed=1"
    )
    assert a.key != ExperimentSpec("heloc", "natural", "mlp", "adaptable", 0, {"alpha": 0.3}).key
    assert ExperimentSpec.from_dict(json.loads(json.dumps(a.to_dict()))) == a
    assert a.label == "adaptable[alpha=0.2,q_low=0.1]"


def test_spec_rejects_bad_values() -> None:
    with pytest.raises(ValueError, match="seed"):
        ExperimentSpec("heloc", "natural", "mlp", "source", -1)
    with pytest.raises(ValueError, match="dataset"):
        ExperimentSpec("", "natural", "mlp", "source", 0)
    with pytest.raises(TypeError, match="JSON"):
        ExperimentSpec("heloc", "natural", "mlp", "source", 0, {"x": object()})


def test_grid_keeps_source_models_adjacent() -> None:
    specs = grid(
        ["a", "b"], ["natural"], ["mlp"], ["source", ("adaptable", {"alpha": 0.5})], [0, 1]
    )
    assert len(specs) == 8
    sources = [s.source_key for s in specs]
    # each (dataset, model, seed) forms one contiguous run
    runs = [k for i, k in enumerate(sources) if i == 0 or sources[i - 1] != k]
    assert len(runs) == len(set(sources)) == 4

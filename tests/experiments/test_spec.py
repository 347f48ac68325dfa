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


def test_recipe_and_shift_options_enter_the_key_only_when_given() -> None:
    plain = ExperimentSpec("heloc", "class_imbalance", "mlp", "source", 0)
    same = ExperimentSpec("heloc", "class_imbalance", "mlp", "source", 0, recipe="default")
    assert same == plain and same.key == "heloc|class_imbalance|mlp|source|seed=0"
    assert "recipe" not in plain.to_dict() and "shift_options" not in plain.to_dict()
    assert plain.source_key == ("heloc", "mlp", 0)
    authors = ExperimentSpec(
        "heloc", "class_imbalance", "mlp", "adaptable", 0, {"preset": "paper"},
        recipe="authors", shift_options={"convention": "authors_code"},
    )  # fmt: skip
    assert authors.key == (
        "heloc|class_imbalance|mlp|adaptable|seed=0|recipe=authors|"
        'shift={"convention":"authors_code"}|{"preset":"paper"}'
    )
    assert authors.source_key == ("heloc", "mlp", 0, "authors")
    assert ExperimentSpec.from_dict(json.loads(json.dumps(authors.to_dict()))) == authors
    assert authors.shift_option_dict == {"convention": "authors_code"}
    with pytest.raises(ValueError, match="recipe"):
        ExperimentSpec("heloc", "natural", "mlp", "source", 0, recipe="")
    with pytest.raises(TypeError, match="JSON"):
        ExperimentSpec("heloc", "natural", "mlp", "source", 0, shift_options={"x": object()})


def test_runner_trains_with_the_recipe_and_draws_with_the_shift_options(tmp_path) -> None:
    from dataclasses import replace

    from adaptable.experiments import testing
    from adaptable.experiments.components import RunContext, clear_memo
    from adaptable.experiments.store import ResultStore
    from adaptable.experiments.sweep import run_sweep

    calls: list[tuple[str, object]] = []

    def train(name, dataset, seed, cache_dir=None, device="auto", **extra):
        calls.append(("train", extra))
        return testing.train_model(name, dataset, seed, cache_dir, device)

    def shift(name, dataset, seed, **options):
        calls.append(("shift", options))
        return testing.apply_shift(name, dataset, seed)

    components = replace(testing.COMPONENTS, train_model=train, apply_shift=shift)
    context = RunContext(components=components)
    clear_memo()
    specs = [
        ExperimentSpec("toy", "natural", "softmax", "source", 0),
        ExperimentSpec(
            "toy", "natural", "softmax", "source", 0, recipe="authors",
            shift_options={"convention": "authors_code"},
        ),
    ]  # fmt: skip
    result = run_sweep(specs, ResultStore(tmp_path / "r.jsonl"), context=context,
                       progress=False)  # fmt: skip
    clear_memo()
    assert not result.failures and len(result.records) == 2
    # two source models (one per recipe); the default recipe is not passed at all
    assert [extra for kind, extra in calls if kind == "train"] == [{}, {"recipe": "authors"}]
    assert [o for kind, o in calls if kind == "shift"] == [{}, {"convention": "authors_code"}]


def test_an_option_at_its_default_leaves_the_key_as_without_it() -> None:
    plain = ExperimentSpec("heloc", "natural", "mlp", "adaptable", 0)
    spelled = ExperimentSpec("heloc", "natural", "mlp", "adaptable", 0, {"preset": "default"})
    assert spelled == plain and spelled.key == plain.key == "heloc|natural|mlp|adaptable|seed=0"
    assert spelled.label == "adaptable"
    # a default among other options: only it is dropped; keys without defaults are unchanged
    mixed = ExperimentSpec("heloc", "natural", "mlp", "adaptable", 0, {"preset": "paper"})
    assert mixed.key == 'heloc|natural|mlp|adaptable|seed=0|{"preset":"paper"}'
    alpha = ExperimentSpec("heloc", "natural", "mlp", "em", 0, {"alpha": 0.1, "tol": 1e-3})
    assert alpha.option_dict == {"tol": 1e-3}
    # a boolean is not a number's default; random_state=null is kept (the runner seeds it)
    assert ExperimentSpec("h", "n", "m", "em", 0, {"max_iter": True}).options != ()
    kept = ExperimentSpec("h", "n", "m", "adaptable", 0, {"random_state": None})
    assert kept.option_dict == {"random_state": None}
    # a name the registry lacks (a toy method) keeps every option
    assert ExperimentSpec("h", "n", "m", "toy_x", 0, {"preset": "default"}).options != ()


def test_grid_reads_the_cli_bracket_syntax_and_refuses_a_malformed_one_at_once() -> None:
    (bracket,) = grid(["heloc"], ["natural"], ["mlp"], ["adaptable[preset=paper]"], [0])
    (pair,) = grid(["heloc"], ["natural"], ["mlp"], [("adaptable", {"preset": "paper"})], [0])
    assert bracket == pair and bracket.method == "adaptable"
    assert grid(["h"], ["n"], ["m"], ["tent"], [0])[0].options == ()
    with pytest.raises(ValueError, match="key=value"):
        grid(["heloc"], ["natural"], ["mlp"], ["adaptable[preset]"], [0])

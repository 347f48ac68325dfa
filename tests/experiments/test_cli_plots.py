"""The ``adaptable`` command (with test doubles) and the figures."""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
import pytest

from adaptable import cli
from adaptable.experiments import plots, testing
from adaptable.experiments.runner import RunContext
from adaptable.experiments.store import ResultStore


def test_parse_method() -> None:
    assert cli.parse_method("tent") == ("tent", {})
    assert cli.parse_method("adaptable[calibrator=none,alpha=0.2]") == (
        "adaptable", {"calibrator": "none", "alpha": 0.2},
    )  # fmt: skip
    with pytest.raises(argparse.ArgumentTypeError, match="key=value"):
        cli.parse_method("adaptable[alpha]")


def test_run_prints_a_table_and_reuses_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "run", "--datasets", "toy", "missing", "--models", "softmax", "--methods", "source",
        "prior[alpha=0.2]", "--seeds", "0", "1", "--results", str(tmp_path / "r.jsonl"), "--no-progress",
    ]  # fmt: skip
    assert cli.main(argv, components=testing.COMPONENTS) == 0
    out = capsys.readouterr().out
    assert "| toy | natural | softmax | prior[alpha=0.2] | 2 |" in out
    assert "4 experiments run, 0 reused" in out
    assert "skipped dataset missing: toy data set 'missing' is absent" in out
    assert cli.main(argv, components=testing.COMPONENTS) == 0
    assert "0 experiments run, 4 reused" in capsys.readouterr().out


def test_reproduce_lists_skipped_datasets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "reproduce",
        "oracle",
        "--seeds",
        "0",
        "--out",
        str(tmp_path),
        "--results",
        str(tmp_path / "r.jsonl"),
        "--no-progress",
    ]
    # the toy providers know none of the paper's datasets: all skipped, nothing silently dropped
    assert cli.main(argv, components=testing.COMPONENTS) == 0
    text = (tmp_path / "oracle.md").read_text()
    assert "HELOC (`heloc`): toy data set 'heloc' is absent" in text
    assert "Voting (`voting`)" in text
    assert (tmp_path / "oracle.csv").exists()


def test_figures_from_the_toy_providers(tmp_path: Path) -> None:
    context = RunContext(components=testing.COMPONENTS)
    written = plots.make_figures(
        ["reliability", "label_distribution", "js_divergence", "temperature_mmd"],
        dataset="toy", model="softmax", seed=0, out_dir=tmp_path, store=ResultStore(tmp_path / "r.jsonl"),
        context=context, progress=False, method="prior",
    )  # fmt: skip
    for name, path in written.items():
        assert path.endswith(".png"), (name, path)
        assert Path(path).read_bytes()[:4] == b"\x89PNG"
    skipped = plots.make_figures(["reliability"], dataset="nowhere", model="softmax", seed=0, out_dir=tmp_path,
                                 store=ResultStore(tmp_path / "r.jsonl"), context=context, progress=False)  # fmt: skip
    assert skipped["reliability"].startswith("skipped: toy data set 'nowhere' is absent")


def test_sensitivity_and_efficiency_plots(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        [
            {"dataset": "heloc", "method": f"{p} = {v}", "metric": "macro_f1", "ours_mean": 60 + v, "ours_se": 0.5}
            for p in ("alpha", "q_low") for v in (0.1, 0.2)
        ]
    )  # fmt: skip
    assert plots.plot_sensitivity(frame, tmp_path / "s.png").exists()
    eff = pd.DataFrame(
        [
            {"method": m, "metric": k, "ours_mean": v}
            for m in ("A", "B")
            for k, v in (("macro_f1", 60.0), ("ms_per_row", 0.1))
        ]
    )
    assert plots.plot_efficiency(eff, tmp_path / "e.png").exists()


def test_reproduce_no_run_builds_tables_from_the_store(tmp_path: Path) -> None:
    from adaptable.experiments import paper
    from adaptable.experiments.runner import RunContext, run_experiment, stored_only
    from adaptable.experiments.spec import ExperimentSpec

    store = ResultStore(tmp_path / "r.jsonl")
    spec = ExperimentSpec("toy", "natural", "softmax", "source", 0)
    store.append(run_experiment(spec, RunContext(components=testing.COMPONENTS)))
    result = stored_only([spec, ExperimentSpec("toy", "natural", "softmax", "prior", 0)], store,
                         RunContext(components=testing.COMPONENTS))  # fmt: skip
    assert [r["key"] for r in result.records] == [spec.key] and result.ran == []
    argv = [
        "reproduce",
        "oracle",
        "--no-run",
        "--seeds",
        "0",
        "--out",
        str(tmp_path),
        "--results",
        str(store.path),
    ]
    assert cli.main(argv, components=testing.COMPONENTS) == 0
    assert "toy data set 'heloc' is absent" in (tmp_path / "oracle.md").read_text()
    assert paper.TABLES["oracle"].rows[2].option_dict == {"calibrator": "oracle_test_labels"}

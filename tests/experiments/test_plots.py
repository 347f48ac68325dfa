"""The figures: what each one draws (read back from the returned matplotlib Figure), and the
pass that gathers their data."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from adaptable.experiments import figures, plots, testing
from adaptable.experiments.components import RunContext
from adaptable.experiments.metrics import reliability_bins

CONTEXT = RunContext(components=testing.COMPONENTS)


def _legend(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_reliability_panels_show_bins_gap_and_ece() -> None:
    rng = np.random.default_rng(0)
    proba = rng.dirichlet([1, 1], size=400)
    y = (rng.random(400) < proba[:, 1]).astype(int)
    bins = reliability_bins(y, proba)
    fig = plots.plot_reliability({"before": bins, "after": bins}, "title")
    axes = fig.axes
    assert len(axes) == 2
    filled = int(np.count_nonzero(np.asarray(bins["count"]) > 0))
    for ax, name in zip(axes, ("before", "after"), strict=True):
        assert ax.get_title().startswith(f"{name}\nECE ")
        assert len(ax.patches) == 2 * filled  # an accuracy bar and a gap bar per filled bin
        assert (ax.get_xlabel(), ax.get_ylabel()) == ("confidence", "accuracy")
        assert len(ax.lines) == 1  # the diagonal
    assert fig.get_suptitle() == "title"


def test_label_distribution_bars_heights_and_legend() -> None:
    dists = {"source": [0.7, 0.2, 0.1], "target": [0.2, 0.3, 0.5]}
    fig = plots.plot_label_distributions(dists, ["a", "b", "c"], "labels")
    ax = fig.axes[0]
    heights = [p.get_height() for p in ax.patches]
    assert heights == pytest.approx([0.7, 0.2, 0.1, 0.2, 0.3, 0.5])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    assert _legend(ax) == ["source", "target"]


def test_js_divergence_one_line_per_series_with_its_mean() -> None:
    fig = plots.plot_js_divergence({"before": [0.1, 0.3], "after": [0.0, 0.1]})
    ax = fig.axes[0]
    assert len(ax.lines) == 2
    assert _legend(ax) == ["before (mean 0.200)", "after (mean 0.050)"]
    assert ax.get_xlabel() == "online batch index"


def test_temperature_vs_mmd_leaves_degenerate_scenarios_out_of_the_correlation() -> None:
    """A scenario whose stream repeats one row must not decide the correlation."""
    points = [{"scenario": "natural", "mmd": m, "temperature": 2.0 - m} for m in (0.1, 0.2, 0.3)]
    points += [{"scenario": "gaussian", "mmd": m, "temperature": 2.0 - m} for m in (0.4, 0.5)]
    # one far-away repeated row with a huge temperature: with it, r would be strongly positive
    points += [{"scenario": "numerical", "mmd": 5.0, "temperature": 9.0}] * 4
    everything = plots.pearson([p["mmd"] for p in points], [p["temperature"] for p in points])
    assert everything > 0.9
    fig = plots.plot_temperature_vs_mmd(points, "T", {"numerical": "stream repeats ~1 test row"})
    ax = fig.axes[0]
    assert "Pearson r = -1.00 over 5 batches (without numerical)" in ax.get_title()
    assert _legend(ax) == [
        "natural", "gaussian", "numerical (left out: stream repeats ~1 test row; at MMD 5.00, T 9.00)"
    ]  # fmt: skip
    assert ax.get_xlim()[1] < 5.0 and ax.get_ylim()[1] < 9.0  # the kept points fill the axes
    hollow = ax.collections[2]
    assert hollow.get_facecolors().size == 0 or hollow.get_facecolors()[0][3] == 0
    plain = plots.plot_temperature_vs_mmd(points)
    assert f"Pearson r = {everything:.2f} over 9 batches" in plain.axes[0].get_title()


def test_sensitivity_one_panel_per_parameter() -> None:
    frame = pd.DataFrame(
        [
            {"dataset": "heloc", "method": f"{p} = {v}", "metric": "macro_f1",
             "ours_mean": 60 + v, "ours_se": 0.5}
            for p in ("alpha", "q_low") for v in (0.1, 0.2, 0.3)
        ]
    )  # fmt: skip
    fig = plots.plot_sensitivity(frame, "S")
    assert [ax.get_xlabel() for ax in fig.axes] == ["alpha", "q_low"]
    line = fig.axes[0].lines[0]
    assert list(line.get_xdata()) == [0.1, 0.2, 0.3]
    assert list(line.get_ydata()) == pytest.approx([60.1, 60.2, 60.3])
    low, high = fig.axes[1].get_ylim()  # shared, and at least two points wide
    assert fig.axes[0].get_ylim() == (low, high) and high - low >= 2.0


def test_efficiency_labels_cannot_overlap() -> None:
    """Methods of equal speed and accuracy used to print their names on each other."""
    methods = ["AdapTable", "AdapTable w/o calibrator", "EM", "BBSE", "Source"]
    frame = pd.DataFrame(
        [{"method": m, "metric": k, "ours_mean": v}
         for m in methods for k, v in (("macro_f1", 60.0), ("ms_per_row", 0.1))]
        + [{"method": "LAME", "metric": "macro_f1", "ours_mean": math.nan},
           {"method": "LAME", "metric": "ms_per_row", "ours_mean": 2.0}]
    )  # fmt: skip
    fig = plots.plot_efficiency(frame, "E")
    ax = fig.axes[0]
    assert len(ax.texts) == 0  # no text next to the points
    assert _legend(ax) == methods  # LAME has no F1: not drawn
    assert ax.get_xscale() == "log"
    markers = {
        (c.get_paths()[0].vertices.tobytes(), tuple(c.get_facecolor()[0])) for c in ax.collections
    }
    assert len(markers) == len(methods)  # every method its own colour / marker


def test_save_figure_writes_a_png(tmp_path: Path) -> None:
    fig = plots.plot_js_divergence({"x": [0.1, 0.2]})
    path = plots.save_figure(fig, tmp_path / "sub" / "f.png")
    assert path.read_bytes()[:4] == b"\x89PNG"


def test_plots_module_runs_nothing_and_imports_no_private_name() -> None:
    """Plotting takes results; one softmax; no private imports across modules."""
    tree = ast.parse(Path(plots.__file__).read_text())
    functions = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    assert "_softmax" not in functions and "calibration_analysis" not in functions
    for module in (plots, figures):
        tree = ast.parse(Path(module.__file__).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and "adaptable" in node.module:
                assert not any(a.name.startswith("_") for a in node.names), (module, node.module)
        if module is plots:
            imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
            running = {"components", "experiment", "sweep", "runner"}
            assert not imported & {f"adaptable.experiments.{name}" for name in running}


def test_tsne_panels_colour_by_domain_and_by_class() -> None:
    points = np.arange(12, dtype=float).reshape(6, 2)
    fig = plots.plot_tsne(points, ["source"] * 3 + ["target"] * 3, [0, 1, 0, 1, 1, 1])
    assert _legend(fig.axes[0]) == ["source", "target"]
    assert _legend(fig.axes[1]) == ["class 0", "class 1"]
    with pytest.raises(ValueError, match="shape"):
        plots.plot_tsne(np.zeros((3, 3)), ["a"] * 3, [0] * 3)
    with pytest.raises(ValueError, match="length"):
        plots.plot_tsne(np.zeros((3, 2)), ["a"] * 2, [0] * 3)


def test_entropy_histograms_give_each_domain_its_mean() -> None:
    fig = plots.plot_entropy_histograms({"mlp": {"source": [0.2, 0.4], "target": [0.9, 0.9]}})
    assert _legend(fig.axes[0]) == ["source (mean 0.30)", "target (mean 0.90)"]


def test_method_bars_draw_one_bar_per_method_and_column() -> None:
    fig = plots.plot_method_bars({"A": {"x": 1.0, "y": 2.0}, "B": {"x": 3.0}})
    heights = [p.get_height() for p in fig.axes[0].patches]
    assert len(heights) == 4 and heights[:2] == [1.0, 3.0] and math.isnan(heights[3])


def test_efficiency_minor_ticks_are_unlabelled() -> None:
    """Below about two decades matplotlib labels the minor ticks (2x10^-2, 3x10^-2, ...), and
    those labels printed over each other."""
    frame = pd.DataFrame(
        [{"method": m, "metric": k, "ours_mean": v}
         for m, ms in (("fast", 0.018), ("slow", 0.68))
         for k, v in (("macro_f1", 60.0), ("ms_per_row", ms))]
    )  # fmt: skip
    fig = plots.plot_efficiency(frame, "E")
    fig.canvas.draw()
    ax = fig.axes[0]
    assert all(not t.get_text() for t in ax.get_xticklabels(minor=True))
    shown = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    low, high = ax.get_xlim()
    assert {"0.02", "0.05", "0.1", "0.2", "0.5"} <= set(shown), (shown, low, high)


def test_method_bars_give_up_to_twenty_methods_distinct_colours() -> None:
    values = {"A": {f"m{k}": float(k + 1) for k in range(12)}}
    fig = plots.plot_method_bars(values)
    colours = {tuple(p.get_facecolor()) for p in fig.axes[0].patches}
    assert len(colours) == 12

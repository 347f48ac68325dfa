"""The paper's figures, drawn from results (matplotlib, Agg backend). Nothing here runs an
experiment: :mod:`adaptable.experiments.figures` gathers the data and calls these.

* reliability diagrams of the source model before and after the calibrator's per-row
  temperatures (``softmax(z)`` vs ``softmax(z / T_i)``) on the natural test stream;
* label-distribution bars: source prior, true target prior, pseudo-label frequencies of the
  unadapted model and AdapTable's estimate (mean over batches);
* Jensen-Shannon divergence to the true batch label distribution, per batch, before (the
  unadapted model's mean prediction) and after the label distribution handler (its estimate);
* average temperature against the MMD between the source data and test batches (natural stream
  and corruptions), with degenerate scenarios drawn but left out of the correlation;
* hyperparameter sensitivity (macro-F1 against alpha, q_low, q_high);
* efficiency (time per test row against macro-F1);
* a t-SNE map of the source model's latent features, source (train) rows against target (test)
  rows, and the same points coloured by class;
* histograms of the source model's normalised prediction entropy (entropy / log C) on the
  source and target rows;
* grouped bars of a paper table's macro-F1, one group per column (a corruption or a backbone)
  averaged over its datasets, one bar per method (the paper's corruption and architecture
  figures);
* beyond the paper, for the benchmark tables with summary lines (``generality``,
  ``development``, ``confirmation``, ``holdout``): each method's per-case gain over the
  unadapted model, sorted, so that the cases won, the mean and the worst loss read off one
  curve per method; and each method's reach (cases as good as the better of the unadapted
  model and the balanced rule) against its risk (its worst loss), as one point.

Each ``plot_*`` function returns the matplotlib ``Figure``; :func:`save_figure` writes it.

>>> fig = plot_label_distributions({"source": [0.7, 0.3], "target": [0.4, 0.6]}, ["no", "yes"])
>>> len(fig.axes[0].patches)
4
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import adaptable.experiments.metrics as _metrics
from adaptable.optional import require

#: the smallest macro-F1 range (points) the sensitivity figure's y axis shows
SENSITIVITY_MIN_SPAN = 2.0
# Markers cycle with colours so that up to 40 methods stay distinguishable in one legend.
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def _pyplot() -> Any:
    matplotlib = require("matplotlib", feature="The figures (adaptable plot)", extra="plots")
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, path: str | Path) -> Path:
    """Write ``fig`` as a PNG (folders created) and free it; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    _pyplot().close(fig)
    return path


def plot_reliability(panels: Mapping[str, Mapping[str, Sequence[float]]], title: str = "") -> Any:
    """One reliability diagram per panel.

    Args:
        panels: panel title -> reliability bins (``count``, ``confidence``, ``accuracy``, as
            returned by :func:`adaptable.experiments.metrics.reliability_bins`).
    """
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4.2), squeeze=False)
    for ax, (name, bins) in zip(axes[0], panels.items(), strict=True):
        count = np.asarray(bins["count"], dtype=float)
        n_bins = len(count)
        edges = np.linspace(0.0, 1.0, n_bins + 1)
        shown = count > 0
        accuracy = np.where(shown, bins["accuracy"], 0.0)
        confidence = np.asarray(bins["confidence"], dtype=float)
        ax.bar(edges[:-1][shown], accuracy[shown], width=1.0 / n_bins, align="edge",
               edgecolor="black", label="accuracy")  # fmt: skip
        gap = np.abs(confidence - accuracy)
        ax.bar(edges[:-1][shown], gap[shown], bottom=np.minimum(accuracy, confidence)[shown],
               width=1.0 / n_bins, align="edge", color="tab:red", alpha=0.3, label="gap")  # fmt: skip
        ax.plot([0, 1], [0, 1], "k--", linewidth=1)
        ece = float((count * gap).sum() / max(count.sum(), 1.0))
        ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="confidence", ylabel="accuracy",
               title=f"{name}\nECE {100 * ece:.1f}%")  # fmt: skip
        ax.legend(loc="upper left")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_label_distributions(
    distributions: Mapping[str, Sequence[float]], classes: Sequence[str], title: str = ""
) -> Any:
    """Grouped bars: one group per class, one bar per distribution (source, target, ...)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(5.0, 1.2 + 1.5 * len(classes)), 4.0))
    width = 0.8 / max(1, len(distributions))
    x = np.arange(len(classes))
    for k, (name, values) in enumerate(distributions.items()):
        ax.bar(x + k * width - 0.4 + width / 2, values, width=width, label=name)
    ax.set_xticks(x, list(classes))
    ax.set(xlabel="class", ylabel="probability", ylim=(0, 1), title=title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def js_per_batch(traces: Mapping[str, Sequence[Any]], field: str) -> list[float]:
    """JS divergence between each batch's true label distribution and ``traces[field]``
    (``None`` entries give NaN)."""
    out = []
    for true, other in zip(traces["true"], traces[field], strict=True):
        out.append(
            math.nan
            if other is None
            else _metrics.js_divergence(np.asarray(true), np.asarray(other))
        )
    return out


def plot_js_divergence(series: Mapping[str, Sequence[float]], title: str = "") -> Any:
    """JS divergence per online batch, one line per series (legend gives each mean)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for name, values in series.items():
        ax.plot(np.arange(len(values)), values, linewidth=1,
                label=f"{name} (mean {np.nanmean(values):.3f})")  # fmt: skip
    ax.set(xlabel="online batch index", ylabel="JS divergence to true labels", title=title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson correlation, NaN when fewer than three points or either side is constant."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) < 3 or x.std() == 0 or y.std() == 0:
        return math.nan
    return float(np.corrcoef(x, y)[0, 1])


def plot_temperature_vs_mmd(
    points: Sequence[Mapping[str, Any]],
    title: str = "",
    degenerate: Mapping[str, str] | None = None,
) -> Any:
    """Scatter of ``temperature`` against ``mmd``, one colour per ``scenario``.

    Args:
        points: ``{"scenario", "mmd", "temperature"}`` per batch.
        degenerate: scenario -> why it is degenerate (e.g. its stream repeats one test row).
            Its points are drawn hollow, left out of the correlation in the title (which a
            handful of repeated rows would otherwise decide) and out of the axis limits (so
            that they do not squash the other points into a corner); the legend gives where
            they lie.
    """
    degenerate = dict(degenerate or {})
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9.0, 4.6))
    kept = [p for p in points if p["scenario"] not in degenerate]
    for scenario in dict.fromkeys(p["scenario"] for p in points):
        chosen = [p for p in points if p["scenario"] == scenario]
        mmd = [p["mmd"] for p in chosen]
        temperature = [p["temperature"] for p in chosen]
        if scenario in degenerate:
            where = f"at MMD {np.mean(mmd):.2f}, T {np.mean(temperature):.2f}"
            ax.scatter(mmd, temperature, s=18, facecolors="none", edgecolors="grey",
                       label=f"{scenario} (left out: {degenerate[scenario]}; {where})")  # fmt: skip
        else:
            ax.scatter(mmd, temperature, s=12, label=scenario)
    if kept and len(kept) < len(points):
        for axis, field in ((ax.set_xlim, "mmd"), (ax.set_ylim, "temperature")):
            values = np.array([p[field] for p in kept], dtype=float)
            pad = 0.1 * (values.max() - values.min()) or 0.05 * abs(values.max()) or 0.1
            axis(values.min() - pad, values.max() + pad)
    corr = pearson([p["mmd"] for p in kept], [p["temperature"] for p in kept])
    note = f"Pearson r = {corr:.2f} over {len(kept)} batches"
    if degenerate:
        note += f" (without {', '.join(degenerate)})"
    ax.set(xlabel="MMD to the source data", ylabel="average temperature",
           title=f"{title}\n{note}" if title else note)  # fmt: skip
    # Beside the axes: inside, it would hide points wherever it went.
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False)
    fig.tight_layout()
    return fig


def plot_sensitivity(frame: Any, title: str = "") -> Any:
    """Macro-F1 against each hyperparameter value (from ``tables.compare(TABLES['sensitivity'])``)."""
    plt = _pyplot()
    data = frame[frame["metric"] == "macro_f1"].copy()
    data["parameter"] = data["method"].str.split(" = ").str[0]
    data["value"] = data["method"].str.split(" = ").str[1].astype(float)
    parameters = list(dict.fromkeys(data["parameter"]))
    fig, axes = plt.subplots(
        1, len(parameters), figsize=(4.0 * len(parameters), 3.6), squeeze=False, sharey=True
    )
    for ax, parameter in zip(axes[0], parameters, strict=True):
        for dataset, group in data[data["parameter"] == parameter].groupby("dataset", sort=False):
            ax.errorbar(group["value"], group["ours_mean"], yerr=group["ours_se"].fillna(0),
                        marker="o", label=dataset, capsize=3)  # fmt: skip
        ax.set(xlabel=parameter)
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("macro-F1 (%)")
    # At least MIN_SPAN points of macro-F1 on the shared axis, so that differences of a few
    # hundredths of a point do not fill the panel and look like a strong effect.
    values = data["ours_mean"].dropna().to_numpy(dtype=float)
    if len(values):
        low, high = float(values.min()), float(values.max())
        half = max(high - low, SENSITIVITY_MIN_SPAN) / 2 * 1.15
        axes[0][0].set_ylim((low + high) / 2 - half, (low + high) / 2 + half)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_efficiency(frame: Any, title: str = "") -> Any:
    """Time per test row (log scale) against macro-F1, one point per method.

    Methods are told apart by colour and marker in a legend beside the axes rather than by
    text next to each point, because methods of similar speed and accuracy would print their
    names on top of each other.
    """
    plt = _pyplot()
    f1 = frame[frame["metric"] == "macro_f1"].set_index("method")["ours_mean"]
    ms = frame[frame["metric"] == "ms_per_row"].set_index("method")["ours_mean"]
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    drawn = 0
    for method in f1.index:
        if method in ms.index and not (math.isnan(ms[method]) or math.isnan(f1[method])):
            ax.scatter(ms[method], f1[method], s=40, marker=_MARKERS[drawn % len(_MARKERS)],
                       color=f"C{drawn % 10}", label=method)  # fmt: skip
            drawn += 1
    ax.set_xscale("log")
    # Ticks at 1, 2 and 5 per decade in plain numbers, minor ticks unlabelled: below about two
    # decades matplotlib's own minor labels (2x10^-2, 3x10^-2, ...) print over each other, and
    # its major ticks alone can leave a single label on the axis.
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.xaxis.set_major_locator(LogLocator(base=10.0, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set(xlabel="adaptation time per test row (ms, log scale)", ylabel="macro-F1 (%)",
           title=title)  # fmt: skip
    if drawn:
        ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False)
    fig.tight_layout()
    return fig


def plot_case_gains(
    gains: Mapping[str, Sequence[float]],
    *,
    reference: str = "Source",
    floor: float = -20.0,
    title: str = "",
) -> Any:
    """Each method's per-case gain over ``reference`` (points), sorted from worst to best.

    One line per method; x is the share of cases, so the point where a line crosses 0 says how
    many cases it loses, its left end its worst case and the area above 0 its gains. The y axis
    stops at ``floor`` (a method that falls below it is marked at the edge, with its worst case
    in the legend) so that one bad method does not squash the others.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    top = 1.0
    for i, (method, values) in enumerate(gains.items()):
        ordered = np.sort(np.asarray([v for v in values if not math.isnan(v)], dtype=float))
        if not len(ordered):
            continue
        share = (np.arange(len(ordered)) + 0.5) / len(ordered)
        won, lost = int(np.sum(ordered > 0)), int(np.sum(ordered < 0))
        label = (
            f"{method} (won {won}, lost {lost}, mean {ordered.mean():+.1f}, "
            f"worst {ordered[0]:+.1f})"
        )
        ax.plot(share, np.maximum(ordered, floor), color=f"C{i % 10}", label=label,
                marker=_MARKERS[i % len(_MARKERS)], markevery=max(len(ordered) // 8, 1),
                markersize=4)  # fmt: skip
        top = max(top, float(ordered[-1]))
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.axhline(-1.0, color="grey", linewidth=0.8, linestyle="--")
    ax.set_ylim(floor - 1.0, top + 1.0)
    ax.set(xlabel="share of cases, sorted by gain", ylabel=f"gain over {reference} (points)",
           title=title)  # fmt: skip
    ax.legend(fontsize=7, loc="upper left", frameon=False)
    fig.tight_layout()
    return fig


def plot_risk_and_reach(
    points: Mapping[str, tuple[float, float]],
    *,
    goal: tuple[float, float] | None = None,
    tolerance: float = 1.5,
    reference: str = "Source",
    simple_rule: str = "Balanced",
    floor: float = -20.0,
    title: str = "",
    style_order: Sequence[str] = (),
) -> Any:
    """Each method as one point: its reach against its risk, and the goal's corner shaded.

    ``points`` maps a method to (share of cases within ``tolerance`` points of the bar, 0-1;
    worst difference vs ``reference``, points). Up is a smaller worst loss, right is more cases
    as good as the better simple rule; a method in the shaded corner above and right of
    ``goal`` = (share, worst loss) meets both. A point below ``floor`` is drawn at the floor
    and its worst case is given in the legend, so one bad method does not squash the others.
    A method listed in ``style_order`` keeps the colour and marker of its place there, so that
    figures of tables with different methods draw the same method alike.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(10.0, 4.6))
    shown = {m: (share, worst) for m, (share, worst) in points.items()
             if not (math.isnan(share) or math.isnan(worst))}  # fmt: skip
    worst_cases = [max(worst, floor) for _, worst in shown.values()]
    # 0 always in view, and a method that never loses (worst case above 0) too
    edges = [0.0, *worst_cases, *([] if goal is None else [goal[1]])]
    bottom, top = min(edges) - 1.0, max(edges) + 1.0
    if goal is not None:
        reach, worst = goal
        ax.fill_between([100 * reach, 100.0], worst, top, color="tab:green", alpha=0.12,
                        label=f"goal: within {tolerance:g} of the bar in >= {100 * reach:.0f} % "
                        f"of cases, worst >= {worst:+.2f}")  # fmt: skip
    order = list(style_order) + [m for m in points if m not in style_order]
    for method, (share, worst) in shown.items():
        i = order.index(method)
        clipped = " (below the axis)" if worst < floor else ""
        ax.scatter(100 * share, max(worst, floor), s=48, marker=_MARKERS[i % len(_MARKERS)],
                   color=f"C{i % 10}", zorder=3,
                   label=f"{method}: {100 * share:.0f} %, worst {worst:+.2f}{clipped}")  # fmt: skip
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set_xlim(0.0, 100.0)
    ax.set_ylim(bottom, top)
    ax.set(xlabel=f"cases within {tolerance:g} points of max({reference}, {simple_rule}) (%)",
           ylabel=f"worst case vs {reference} (points)", title=title)  # fmt: skip
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False)
    fig.tight_layout()
    return fig


def plot_tsne(
    points: np.ndarray, domains: Sequence[str], labels: Sequence[int], title: str = ""
) -> Any:
    """Two panels of the same 2-D embedding: coloured by domain, then by class.

    Args:
        points: shape (n, 2), e.g. a t-SNE of latent features.
        domains: each point's domain (``"source"``, ``"target"``).
        labels: each point's class.

    Raises:
        ValueError: ``points`` is not (n, 2) or the lengths differ.
    """
    points = np.asarray(points, dtype=float)
    if points.ndim != 2 or points.shape[1] != 2:
        raise ValueError(f"points must have shape (n, 2); got {points.shape}")
    if not len(domains) == len(labels) == len(points):
        raise ValueError("points, domains and labels must have the same length")
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10.0, 4.6))
    domains = np.asarray(domains)
    labels = np.asarray(labels)
    for ax, values, name in ((axes[0], domains, "domain"), (axes[1], labels, "class")):
        for k, value in enumerate(dict.fromkeys(values.tolist())):
            chosen = values == value
            ax.scatter(points[chosen, 0], points[chosen, 1], s=5, alpha=0.5, color=f"C{k}",
                       label=f"{name} {value}" if name == "class" else str(value))  # fmt: skip
        ax.set(xticks=[], yticks=[], title=f"coloured by {name}")
        ax.legend(fontsize=8, markerscale=3, loc="best")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_entropy_histograms(
    entropies: Mapping[str, Mapping[str, Sequence[float]]], title: str = "", bins: int = 20
) -> Any:
    """One panel per model: histograms of normalised entropies (0..1), one per domain.

    Args:
        entropies: panel title (a model) -> domain (``"source"``, ``"target"``) -> entropies
            divided by log C.
    """
    plt = _pyplot()
    fig, axes = plt.subplots(
        1, len(entropies), figsize=(4.0 * len(entropies), 3.4), squeeze=False, sharey=True
    )
    edges = np.linspace(0.0, 1.0, bins + 1)
    for ax, (name, by_domain) in zip(axes[0], entropies.items(), strict=True):
        for domain, values in by_domain.items():
            values = np.asarray(values, dtype=float)
            ax.hist(values, bins=edges, alpha=0.5, density=True,
                    label=f"{domain} (mean {values.mean():.2f})")  # fmt: skip
        ax.set(xlabel="entropy / log C", title=name, xlim=(0, 1))
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("density")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_method_bars(
    values: Mapping[str, Mapping[str, float]], title: str = "", ylabel: str = "macro-F1 (%)"
) -> Any:
    """Grouped bars: one group per column (e.g. a corruption), one bar per method.

    Args:
        values: column -> method -> value (NaN or absent: no bar).
    """
    plt = _pyplot()
    columns = list(values)
    methods = list(dict.fromkeys(m for column in values.values() for m in column))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.4 * len(columns) + 2.5), 4.0))
    width = 0.8 / max(1, len(methods))
    x = np.arange(len(columns))
    # Ten default colours repeat from the eleventh method on; twenty distinct ones up to twenty.
    palette = plt.get_cmap("tab20").colors if len(methods) > 10 else [f"C{k}" for k in range(10)]
    for k, method in enumerate(methods):
        heights = [values[c].get(method, math.nan) for c in columns]
        ax.bar(x + k * width - 0.4 + width / 2, heights, width=width, label=method,
               color=palette[k % len(palette)])  # fmt: skip
    ax.set_xticks(x, columns)
    ax.set(ylabel=ylabel, title=title)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False)
    fig.tight_layout()
    return fig

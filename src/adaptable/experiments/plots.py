"""The paper's figures as PNG files (matplotlib, Agg backend).

* reliability diagrams of the source model before and after the calibrator's per-row
  temperatures (``softmax(z)`` vs ``softmax(z / T_i)``) on the natural test stream;
* label-distribution histograms: source prior, true target prior, pseudo-label frequencies of
  the unadapted model and AdapTable's estimate (mean over batches);
* Jensen-Shannon divergence to the true batch label distribution, per batch, before (the
  unadapted model's mean prediction) and after the label distribution handler (its estimate);
* average temperature against the MMD between the source data and test batches (natural stream
  and corruptions);
* hyperparameter sensitivity (macro-F1 against alpha, q_low, q_high);
* efficiency (time per test row against macro-F1).

Every function takes plain data and a path; :func:`make_figures` runs (or reuses from the
results store) the experiments the figures need.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from adaptable.experiments import metrics as _metrics

#: scenarios sampled for the temperature-vs-MMD figure (those the shift registry lacks are skipped)
MMD_SCENARIOS = (
    "natural",
    "gaussian",
    "uniform",
    "random_drop",
    "column_drop",
    "numerical",
    "categorical",
)


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    _pyplot().close(fig)
    return path


def plot_reliability(
    panels: Mapping[str, Mapping[str, Sequence[float]]], path: Path, title: str = ""
) -> Path:
    """One reliability diagram per panel.

    Args:
        panels: panel title -> reliability bins (``count``, ``confidence``, ``accuracy``, as
            returned by :func:`adaptable.experiments.metrics.reliability_bins`).
    """
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4.0), squeeze=False)
    for ax, (name, bins) in zip(axes[0], panels.items(), strict=True):
        count = np.asarray(bins["count"], dtype=float)
        n_bins = len(count)
        edges = np.linspace(0.0, 1.0, n_bins + 1)
        accuracy = np.where(count > 0, bins["accuracy"], 0.0)
        ax.bar(
            edges[:-1],
            accuracy,
            width=1.0 / n_bins,
            align="edge",
            edgecolor="black",
            label="accuracy",
        )
        shown = count > 0
        gap_bottom = np.minimum(accuracy, bins["confidence"])
        gap = np.abs(np.asarray(bins["confidence"]) - accuracy)
        ax.bar(edges[:-1][shown], gap[shown], bottom=gap_bottom[shown], width=1.0 / n_bins, align="edge",
               color="tab:red", alpha=0.3, label="gap")  # fmt: skip
        ax.plot([0, 1], [0, 1], "k--", linewidth=1)
        ece = float((count * gap).sum() / max(count.sum(), 1.0))
        ax.set(
            xlim=(0, 1),
            ylim=(0, 1),
            xlabel="confidence",
            ylabel="accuracy",
            title=f"{name}\nECE {100 * ece:.1f}%",
        )
        ax.legend(loc="upper left")
    if title:
        fig.suptitle(title)
    return _save(fig, path)


def plot_label_distributions(
    distributions: Mapping[str, Sequence[float]],
    classes: Sequence[str],
    path: Path,
    title: str = "",
) -> Path:
    """Grouped bars: one group per class, one bar per distribution (source, target, ...)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(1.6 + 1.4 * len(classes) * max(1, len(distributions)) / 2, 3.8))
    width = 0.8 / max(1, len(distributions))
    x = np.arange(len(classes))
    for k, (name, values) in enumerate(distributions.items()):
        ax.bar(x + k * width - 0.4 + width / 2, values, width=width, label=name)
    ax.set_xticks(x, classes)
    ax.set(ylabel="probability", ylim=(0, 1), title=title)
    ax.legend(fontsize=8)
    return _save(fig, path)


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


def plot_js_divergence(series: Mapping[str, Sequence[float]], path: Path, title: str = "") -> Path:
    """JS divergence per online batch, one line per series."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    for name, values in series.items():
        ax.plot(
            np.arange(len(values)),
            values,
            label=f"{name} (mean {np.nanmean(values):.3f})",
            linewidth=1,
        )
    ax.set(xlabel="online batch index", ylabel="JS divergence to true labels", title=title)
    ax.legend(fontsize=8)
    return _save(fig, path)


def plot_temperature_vs_mmd(
    points: Sequence[Mapping[str, Any]], path: Path, title: str = ""
) -> Path:
    """Scatter of ``mmd`` against ``temperature``, coloured by ``scenario``."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 4.0))
    for scenario in dict.fromkeys(p["scenario"] for p in points):
        chosen = [p for p in points if p["scenario"] == scenario]
        ax.scatter(
            [p["mmd"] for p in chosen], [p["temperature"] for p in chosen], s=10, label=scenario
        )
    mmd = np.array([p["mmd"] for p in points])
    temperature = np.array([p["temperature"] for p in points])
    corr = (
        float(np.corrcoef(mmd, temperature)[0, 1])
        if len(points) > 2 and mmd.std() > 0 and temperature.std() > 0
        else math.nan
    )
    ax.set(
        xlabel="MMD to the source data",
        ylabel="average temperature",
        title=f"{title}\nPearson r = {corr:.2f}",
    )
    ax.legend(fontsize=7)
    return _save(fig, path)


def plot_sensitivity(frame: Any, path: Path, title: str = "") -> Path:
    """Macro-F1 against each hyperparameter value (from ``tables.compare(TABLES['sensitivity'])``)."""
    plt = _pyplot()
    data = frame[frame["metric"] == "macro_f1"].copy()
    data["parameter"] = data["method"].str.split(" = ").str[0]
    data["value"] = data["method"].str.split(" = ").str[1].astype(float)
    parameters = list(dict.fromkeys(data["parameter"]))
    fig, axes = plt.subplots(
        1, len(parameters), figsize=(4.0 * len(parameters), 3.4), squeeze=False
    )
    for ax, parameter in zip(axes[0], parameters, strict=True):
        for dataset, group in data[data["parameter"] == parameter].groupby("dataset", sort=False):
            ax.errorbar(
                group["value"],
                group["ours_mean"],
                yerr=group["ours_se"].fillna(0),
                marker="o",
                label=dataset,
                capsize=3,
            )
        ax.set(xlabel=parameter, ylabel="macro-F1 (%)")
        ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    return _save(fig, path)


def plot_efficiency(frame: Any, path: Path, title: str = "") -> Path:
    """Time per test row (log scale) against macro-F1, one point per method."""
    plt = _pyplot()
    f1 = frame[frame["metric"] == "macro_f1"].set_index("method")["ours_mean"]
    ms = frame[frame["metric"] == "ms_per_row"].set_index("method")["ours_mean"]
    fig, ax = plt.subplots(figsize=(5.5, 4.0))
    for method in f1.index:
        if method in ms.index and not (math.isnan(ms[method]) or math.isnan(f1[method])):
            ax.scatter(ms[method], f1[method])
            ax.annotate(
                method,
                (ms[method], f1[method]),
                fontsize=7,
                xytext=(3, 3),
                textcoords="offset points",
            )
    ax.set_xscale("log")
    ax.set(
        xlabel="adaptation time per test row (ms, log scale)", ylabel="macro-F1 (%)", title=title
    )
    return _save(fig, path)


# --------------------------------------------------------------------------- analysis pass
def calibration_analysis(
    dataset_name: str,
    model_name: str,
    seed: int,
    context: Any,
    *,
    method: str = "adaptable",
    scenarios: Sequence[str] = MMD_SCENARIOS,
    max_batches: int = 25,
    source_rows: int = 256,
    batch_size: int = 64,
) -> dict[str, Any]:
    """Run the method over sampled test batches, recording what the calibrator does.

    Returns ``before`` / ``after`` reliability bins over the natural stream (``softmax(z)`` and
    ``softmax(z / T_i)`` with the method's per-row temperatures) and ``points``: one
    ``{"scenario", "mmd", "temperature"}`` per batch (at most ``max_batches`` per scenario).
    Raises ``ValueError`` when the method exposes no per-row temperatures.
    """
    from adaptable.core.model_adapter import as_logit_function
    from adaptable.datasets import fit_encoder
    from adaptable.experiments.runner import _dataset, method_state, source_model

    dataset = _dataset(dataset_name, context)
    model = source_model(dataset_name, model_name, seed, context)
    logits_of = as_logit_function(model)
    adapter = context.components.create_method(method)
    adapter.fit(model, dataset.train.X, dataset.train.y, dataset.valid.X, dataset.valid.y)
    encoder = fit_encoder(dataset)
    rng = np.random.default_rng(seed)
    rows = rng.choice(
        len(dataset.train.y), size=min(source_rows, len(dataset.train.y)), replace=False
    )
    source = encoder.transform(dataset.train.X.iloc[rows])
    # One kernel width for every batch (the source sample's median distance), so MMDs compare.
    sq = np.sum(source.astype(np.float64) ** 2, axis=1)
    dist = np.maximum(sq[:, None] + sq[None, :] - 2.0 * source @ source.T, 0.0)
    bandwidth = float(np.sqrt(np.median(dist[np.triu_indices(len(source), k=1)]))) or 1.0

    labels, before, after, points, skipped = [], [], [], [], {}
    for scenario in scenarios:
        try:
            stream = context.components.apply_shift(scenario, dataset, seed)
        except (KeyError, ValueError, NotImplementedError) as err:
            skipped[scenario] = str(err)
            continue
        adapter.reset()
        for index, (X_batch, y_batch) in enumerate(stream.batches(batch_size)):
            if index >= max_batches and scenario != "natural":
                break
            adapter.predict_proba(X_batch)
            _, temperature = method_state(adapter)
            if temperature is None or not np.isfinite(temperature).any():
                raise ValueError(f"method {method!r} exposes no per-row temperatures in its state")
            if scenario == "natural":
                z = np.asarray(logits_of(X_batch), dtype=np.float64)
                t = (
                    temperature.reshape(-1, 1)
                    if temperature.size == len(z)
                    else float(np.mean(temperature))
                )
                labels.append(np.asarray(y_batch))
                before.append(_softmax(z))
                after.append(_softmax(z / t))
            if index < max_batches:
                mmd = _metrics.mmd_rbf(encoder.transform(X_batch), source, bandwidth=bandwidth)
                points.append(
                    {"scenario": scenario, "mmd": mmd, "temperature": float(np.mean(temperature))}
                )
    if not labels:
        raise ValueError("the natural stream yielded no batches")
    y = np.concatenate(labels)
    return {
        "before": _metrics.reliability_bins(y, np.concatenate(before)),
        "after": _metrics.reliability_bins(y, np.concatenate(after)),
        "points": points,
        "skipped_scenarios": skipped,
    }


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def _mean_distribution(traces: Mapping[str, Sequence[Any]], field: str) -> list[float] | None:
    values = [(v, n) for v, n in zip(traces[field], traces["size"], strict=True) if v is not None]
    if not values:
        return None
    total = sum(n for _, n in values)
    return (sum(np.asarray(v) * n for v, n in values) / total).tolist()


def make_figures(
    figures: Sequence[str],
    *,
    dataset: str,
    model: str,
    seed: int,
    out_dir: Path,
    store: Any,
    context: Any,
    executor: Any = None,
    progress: bool = True,
    method: str = "adaptable",
) -> dict[str, str]:
    """Draw the requested figures; returns figure -> PNG path, or ``"skipped: reason"``."""
    from adaptable.experiments.paper import TABLES
    from adaptable.experiments.runner import run_sweep
    from adaptable.experiments.spec import ExperimentSpec
    from adaptable.experiments.tables import compare, table_specs

    out_dir = Path(out_dir)
    done: dict[str, str] = {}
    tag = f"{dataset}, {model}, seed {seed}"
    reason = context.components.dataset_status(dataset, context.data_dir)
    if reason is not None:
        return {name: f"skipped: {reason}" for name in figures}

    if {"label_distribution", "js_divergence"} & set(figures):
        specs = [ExperimentSpec(dataset, "natural", model, m, seed) for m in ("source", method)]
        result = run_sweep(specs, store, context=context, executor=executor, progress=progress)
        by_method = {r["spec"]["method"]: r for r in result.records}
        if len(by_method) < 2:
            for name in ("label_distribution", "js_divergence"):
                done[name] = f"skipped: experiments failed: {result.failures}"
        else:
            base, adapted = by_method["source"], by_method[method]
            if "label_distribution" in figures:
                estimate = _mean_distribution(adapted["traces"], "estimate")
                dists = {
                    "source prior": base["source_prior"],
                    "target (true)": base["target_prior"],
                    "pseudo-labels (source model)": _mean_distribution(base["traces"], "pseudo"),
                }
                if estimate is not None:
                    dists[f"{method} estimate"] = estimate
                classes = [str(k) for k in range(base["n_classes"])]
                done["label_distribution"] = str(
                    plot_label_distributions(
                        dists,
                        classes,
                        out_dir / f"label_distribution_{dataset}_{model}_s{seed}.png",
                        f"Label distributions ({tag})",
                    )
                )
            if "js_divergence" in figures:
                series = {
                    "before (model's mean prediction)": js_per_batch(base["traces"], "predicted")
                }
                if any(v is not None for v in adapted["traces"]["estimate"]):
                    series[f"after ({method}'s estimate)"] = js_per_batch(
                        adapted["traces"], "estimate"
                    )
                done["js_divergence"] = str(
                    plot_js_divergence(
                        series,
                        out_dir / f"js_divergence_{dataset}_{model}_s{seed}.png",
                        f"JS divergence per batch ({tag})",
                    )
                )

    if {"reliability", "temperature_mmd"} & set(figures):
        try:
            analysis = calibration_analysis(dataset, model, seed, context, method=method)
        except (ValueError, TypeError, KeyError) as err:
            for name in ("reliability", "temperature_mmd"):
                if name in figures:
                    done[name] = f"skipped: {err}"
        else:
            if "reliability" in figures:
                panels = {
                    "before calibration": analysis["before"],
                    "after calibration": analysis["after"],
                }
                done["reliability"] = str(
                    plot_reliability(
                        panels,
                        out_dir / f"reliability_{dataset}_{model}_s{seed}.png",
                        f"Reliability ({tag})",
                    )
                )
            if "temperature_mmd" in figures:
                done["temperature_mmd"] = str(
                    plot_temperature_vs_mmd(
                        analysis["points"],
                        out_dir / f"temperature_mmd_{dataset}_{model}_s{seed}.png",
                        f"Temperature vs MMD ({tag})",
                    )
                )

    for name in ("sensitivity", "efficiency"):
        if name not in figures:
            continue
        table = TABLES[name]
        specs = [
            s
            for s in table_specs(table, [seed], [dataset])
            if s.model == model or name == "sensitivity"
        ]
        result = run_sweep(specs, store, context=context, executor=executor, progress=progress)
        frame = compare(table, result.records, [seed], [dataset])
        if frame["n_seeds"].sum() == 0:
            done[name] = f"skipped: no experiment finished ({len(result.failures)} failed)"
            continue
        draw = plot_sensitivity if name == "sensitivity" else plot_efficiency
        title = "Hyperparameter sensitivity" if name == "sensitivity" else "Efficiency"
        done[name] = str(draw(frame, out_dir / f"{name}_{dataset}_s{seed}.png", f"{title} ({tag})"))
    return {name: done.get(name, "skipped: not drawn") for name in figures}

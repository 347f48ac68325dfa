"""What the paper's figures need, run through the runner, then drawn by :mod:`.plots`.

Three kinds of data feed the figures: stored experiments (label distributions, JS divergence,
sensitivity, efficiency; run or reused through :func:`~adaptable.experiments.sweep.run_sweep`
and the results store), one calibration pass per (dataset, model, seed) that records what the
calibrator does batch by batch (reliability, temperature vs MMD; :func:`calibration_analysis`),
and one look at the source model alone on source and target rows (t-SNE of its latent features,
its prediction entropies; :func:`latent_analysis`). The paper's corruption and architecture
figures are drawn from their tables (:func:`paper_table_figure`).

>>> [s.label for s in figure_specs(["label_distribution"], "hospital_readmission", "mlp", 0)]
['source', 'adaptable[preset=paper]']
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

import adaptable.experiments.metrics as _metrics
import adaptable.experiments.plots as plots
from adaptable.experiments.paper import TABLES
from adaptable.experiments.spec import BATCH_SIZE, ExperimentSpec
from adaptable.experiments.tables import compare, table_specs

#: every figure ``adaptable plot`` draws, in drawing order
FIGURES = (
    "reliability",
    "label_distribution",
    "js_divergence",
    "temperature_mmd",
    "sensitivity",
    "efficiency",
    "tsne",
    "entropy",
)
#: figures drawn from the source model alone (:func:`latent_analysis`)
LATENT_FIGURES = ("tsne", "entropy")
#: the paper tables drawn as grouped bars of macro-F1 (:func:`paper_table_figure`)
BAR_TABLES = ("corruptions", "architectures")
#: figures drawn from the calibration pass rather than from stored experiments
CALIBRATION_FIGURES = ("reliability", "temperature_mmd")
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


def method_options(method: str) -> tuple[tuple[str, Any], ...]:
    """The paper's figures show the paper's algorithm: AdapTable runs with ``preset="paper"``."""
    return (("preset", "paper"),) if method == "adaptable" else ()


def figure_specs(
    figures: Sequence[str], dataset: str, model: str, seed: int, method: str = "adaptable"
) -> list[ExperimentSpec]:
    """The stored experiments the figures read, without duplicates."""
    specs: list[ExperimentSpec] = []
    if {"label_distribution", "js_divergence"} & set(figures):
        specs += [
            ExperimentSpec(dataset, "natural", model, m, seed, method_options(m))
            for m in ("source", method)
        ]
    for name in ("sensitivity", "efficiency"):
        if name in figures:
            specs += [
                s
                for s in table_specs(TABLES[name], [seed], [dataset])
                if s.model == model or name == "sensitivity"
            ]
    return list({s.key: s for s in specs}.values())


def is_degenerate(effective_rows: float | None, rows: int, batch_size: int = BATCH_SIZE) -> bool:
    """Whether a resampled stream carries too few distinct rows to say anything about a shift:
    fewer than one batch, or under 1 % of its rows (the shifts module's own warning level).

    >>> is_degenerate(1.2, 51_000), is_degenerate(9_000.0, 51_000), is_degenerate(None, 50)
    (True, False, False)
    """
    if effective_rows is None:
        return False
    return effective_rows < max(batch_size, 0.01 * rows)


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
    batch_size: int = BATCH_SIZE,
    progress: bool | str = False,
) -> dict[str, Any]:
    """Run the method over sampled test batches, recording what the calibrator does.

    The method is fitted and streamed as every experiment is
    (:func:`~adaptable.experiments.experiment.fit_experiment`,
    :func:`~adaptable.experiments.experiment.predict_stream`), fitted once and reset before
    each scenario; nothing is stored.

    Returns:
        ``before`` / ``after`` reliability bins over the natural stream (``softmax(z)`` and
        ``softmax(z / T_i)`` with the method's per-row temperatures); ``points``: one
        ``{"scenario", "mmd", "temperature"}`` per batch (at most ``max_batches`` per scenario);
        ``degenerate``: scenario -> reason, for streams that repeat a handful of rows (see
        :func:`is_degenerate`); ``skipped_scenarios``: scenario -> why it could not be built.

    Raises:
        ValueError: the method exposes no per-row temperatures.
    """
    from adaptable.datasets import fit_encoder
    from adaptable.experiments.experiment import (
        fit_experiment,
        method_state,
        predict_stream,
        shifted_stream,
    )
    from adaptable.experiments.report import progress_bar, step_done
    from adaptable.framework.model_adapter import as_logit_function
    from adaptable.framework.probability import softmax

    # The runner fits the method as every experiment does (same seeding), once for all scenarios.
    spec = ExperimentSpec(dataset_name, "natural", model_name, method, seed, method_options(method))
    fitted = fit_experiment(spec, context)
    dataset, model, adapter = fitted.dataset, fitted.model, fitted.method
    logits_of = as_logit_function(model)
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

    labels, before, after, points = [], [], [], []
    skipped: dict[str, str] = {}
    degenerate: dict[str, str] = {}
    with progress_bar(len(scenarios), progress, "calibration pass", "scenario") as bar:
        for scenario in scenarios:
            bar.set_postfix_str(scenario, refresh=True)
            try:
                stream = shifted_stream(fitted, scenario, context)
            except (KeyError, ValueError, NotImplementedError) as err:
                skipped[scenario] = str(err)
                step_done(bar, f"calibration pass: {scenario} stream skipped")
                continue
            effective = dict(getattr(stream, "info", {}) or {}).get("effective_rows")
            if is_degenerate(effective, len(stream), batch_size):
                rows = round(effective)
                degenerate[scenario] = f"stream repeats ~{rows} test row{'' if rows == 1 else 's'}"
            adapter.reset()
            for index, batch in enumerate(predict_stream(fitted, stream, batch_size)):
                if index >= max_batches and scenario != "natural":
                    break
                X_batch, y_batch = batch.X, batch.y
                _, temperature = method_state(adapter)
                if temperature is None or not np.isfinite(temperature).any():
                    raise ValueError(
                        f"method {method!r} exposes no per-row temperatures in its state"
                    )
                if scenario == "natural":
                    z = np.asarray(logits_of(X_batch), dtype=np.float64)
                    t = (
                        temperature.reshape(-1)
                        if temperature.size == len(z)
                        else float(np.mean(temperature))
                    )
                    labels.append(np.asarray(y_batch))
                    before.append(softmax(z))
                    after.append(softmax(z, t))
                if index < max_batches:
                    mmd = _metrics.mmd_rbf(encoder.transform(X_batch), source, bandwidth=bandwidth)
                    points.append(
                        {
                            "scenario": scenario,
                            "mmd": mmd,
                            "temperature": float(np.mean(temperature)),
                        }
                    )
            step_done(bar, f"calibration pass: {scenario} stream done")
    if not labels:
        raise ValueError("the natural stream yielded no batches")
    y = np.concatenate(labels)
    return {
        "before": _metrics.reliability_bins(y, np.concatenate(before)),
        "after": _metrics.reliability_bins(y, np.concatenate(after)),
        "points": points,
        "degenerate": degenerate,
        "skipped_scenarios": skipped,
    }


def latent_analysis(
    dataset_name: str, model_name: str, seed: int, context: Any, rows: int = 600
) -> dict[str, Any]:
    """The source model on a sample of source (train) and target (test) rows: a 2-D t-SNE of
    its latent features (``model.features``; the encoded inputs for a model without them) and
    its normalised prediction entropies (entropy / log C). Nothing is stored.

    Args:
        rows: rows drawn (without replacement, seeded by ``seed``) from each domain for the
            t-SNE; the entropies use every row of both splits.

    Returns:
        ``points`` (2n, 2), ``domains`` (``"source"`` / ``"target"`` per point), ``labels``,
        ``entropy``: ``{"source": [...], "target": [...]}``.

    Example (the runner's test doubles):
        >>> from adaptable.experiments.components import RunContext
        >>> from adaptable.experiments.testing import COMPONENTS
        >>> out = latent_analysis("toy", "softmax", 0, RunContext(components=COMPONENTS), rows=40)
        >>> out["points"].shape, sorted(set(out["domains"]))
        ((80, 2), ['source', 'target'])
    """
    from sklearn.manifold import TSNE

    from adaptable.experiments.components import get_dataset, source_model

    dataset = get_dataset(dataset_name, context)
    model = source_model(dataset_name, model_name, seed, context)
    rng = np.random.default_rng(seed)
    latents, domains, labels = [], [], []
    entropy = {}
    for domain, split in (("source", dataset.train), ("target", dataset.test)):
        proba = np.clip(np.asarray(model.predict_proba(split.X), dtype=np.float64), 1e-12, 1.0)
        n_classes = proba.shape[1]
        entropy[domain] = (-(proba * np.log(proba)).sum(axis=1) / np.log(n_classes)).tolist()
        chosen = rng.choice(len(split.y), size=min(rows, len(split.y)), replace=False)
        X = split.X.iloc[chosen]
        if hasattr(model, "features"):
            latent = np.asarray(model.features(X), dtype=np.float64)
        else:
            latent = np.asarray(model.encoder.transform(X), dtype=np.float64)
        latents.append(latent.reshape(len(chosen), -1))
        domains += [domain] * len(chosen)
        labels += np.asarray(split.y)[chosen].tolist()
    stacked = np.concatenate(latents)
    perplexity = float(min(30.0, (len(stacked) - 1) / 3))
    points = TSNE(
        n_components=2, perplexity=perplexity, init="pca", random_state=seed
    ).fit_transform(stacked)
    return {"points": points, "domains": domains, "labels": labels, "entropy": entropy}


def paper_table_figure(frame: Any, table: Any, out_dir: str | Path) -> Path | None:
    """``<table>_bars.png`` for the paper's corruption and architecture tables
    (:data:`BAR_TABLES`): each method's macro-F1 averaged over the table's datasets, one group
    per corruption (or per backbone), as the paper's figures show them; ``None`` for other
    tables or when nothing ran.

    Args:
        frame: :func:`~adaptable.experiments.tables.compare`'s frame of the table.
    """
    from adaptable.experiments.tables import SCENARIO_TITLES

    if table.name not in BAR_TABLES:
        return None
    data = frame[(frame["metric"] == "macro_f1") & frame["ours_mean"].notna()]
    if data.empty:
        return None
    column = "model" if table.name == "architectures" else "scenario"
    values: dict[str, dict[str, float]] = {}
    for (group, method), lines in data.groupby([column, "method"], sort=False):
        name = SCENARIO_TITLES.get(group, group)
        values.setdefault(name, {})[method] = float(lines["ours_mean"].mean())
    datasets = ", ".join(dict.fromkeys(data["dataset"]))
    title = f"{table.name}: macro-F1 averaged over {datasets}"
    fig = plots.plot_method_bars(values, title)
    return plots.save_figure(fig, Path(out_dir) / f"{table.name}_bars.png")


def _mean_distribution(traces: dict[str, list[Any]], field: str) -> list[float] | None:
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
    out_dir: str | Path,
    store: Any,
    context: Any,
    executor: Any = None,
    progress: bool | str = True,
    method: str = "adaptable",
) -> dict[str, str]:
    """Run (or reuse) what the figures need and draw them.

    PNG files are named ``<figure>_<dataset>_<model>_s<seed>.png``; the figures that show the
    method (label distribution, JS divergence, reliability, temperature vs MMD) add its name
    before the seed when it is not ``adaptable`` (``js_divergence_heloc_mlp_em_s0.png``).

    Returns:
        figure -> PNG path, or ``"skipped: reason"``: e.g. the label-distribution and
        JS-divergence figures where the method records no label-distribution estimate (they
        would show the source model alone).
    """
    from adaptable.experiments.sweep import run_sweep

    out_dir = Path(out_dir)
    tag = f"{dataset}, {model}, seed {seed}"
    reason = context.components.dataset_status(dataset, context.data_dir)
    if reason is not None:
        return {name: f"skipped: {reason}" for name in figures}
    done: dict[str, str] = {}
    specs = figure_specs(figures, dataset, model, seed, method)
    result = run_sweep(specs, store, context=context, executor=executor, progress=progress)
    by_key = {r["key"]: r for r in result.records}

    def draw(name: str, fig: Any, stem: str) -> None:
        done[name] = str(plots.save_figure(fig, out_dir / f"{stem}.png"))

    # the figures that show the method name it in their file unless it is the default one, so
    # that ``--methods em`` draws beside ``adaptable``'s figure instead of over it
    shown = "" if method == "adaptable" else f"_{method}"

    if {"label_distribution", "js_divergence"} & set(figures):
        base = by_key.get(ExperimentSpec(dataset, "natural", model, "source", seed).key)
        adapted = by_key.get(
            ExperimentSpec(dataset, "natural", model, method, seed, method_options(method)).key
        )
        if base is None or adapted is None:
            for name in ("label_distribution", "js_divergence"):
                done[name] = f"skipped: experiments failed: {result.failures}"
        elif all(v is None for v in adapted["traces"]["estimate"]):
            # without the method's estimate both figures show the source model alone
            for name in ("label_distribution", "js_divergence"):
                done[name] = f"skipped: {method} records no label-distribution estimate"
        else:
            if "label_distribution" in figures:
                dists = {
                    "source prior": base["source_prior"],
                    "target (true)": base["target_prior"],
                    "pseudo-labels (source model)": _mean_distribution(base["traces"], "pseudo"),
                }
                estimate = _mean_distribution(adapted["traces"], "estimate")
                if estimate is not None:
                    dists[f"{method} estimate"] = estimate
                classes = [str(k) for k in range(base["n_classes"])]
                fig = plots.plot_label_distributions(dists, classes, f"Label distributions ({tag})")
                draw(
                    "label_distribution",
                    fig,
                    f"label_distribution_{dataset}_{model}{shown}_s{seed}",
                )
            if "js_divergence" in figures:
                series = {
                    "before (model's mean prediction)": plots.js_per_batch(
                        base["traces"], "predicted"
                    ),
                    f"after ({method}'s estimate)": plots.js_per_batch(
                        adapted["traces"], "estimate"
                    ),
                }
                fig = plots.plot_js_divergence(series, f"JS divergence per batch ({tag})")
                draw("js_divergence", fig, f"js_divergence_{dataset}_{model}{shown}_s{seed}")

    if set(CALIBRATION_FIGURES) & set(figures):
        try:
            # the reliability figure reads the natural stream alone: the shifted streams
            # (and their warnings) only where the temperature-vs-MMD figure is drawn too
            scenarios = MMD_SCENARIOS if "temperature_mmd" in figures else ("natural",)
            analysis = calibration_analysis(
                dataset, model, seed, context, method=method, scenarios=scenarios,
                progress=progress,
            )  # fmt: skip
        except (ValueError, TypeError, KeyError) as err:
            for name in CALIBRATION_FIGURES:
                if name in figures:
                    done[name] = f"skipped: {err}"
        else:
            if "reliability" in figures:
                panels = {
                    "before calibration": analysis["before"],
                    "after calibration": analysis["after"],
                }
                fig = plots.plot_reliability(panels, f"Reliability ({tag})")
                draw("reliability", fig, f"reliability_{dataset}_{model}{shown}_s{seed}")
            if "temperature_mmd" in figures:
                fig = plots.plot_temperature_vs_mmd(
                    analysis["points"], f"Temperature vs MMD ({tag})", analysis["degenerate"]
                )
                draw("temperature_mmd", fig, f"temperature_mmd_{dataset}_{model}{shown}_s{seed}")

    if set(LATENT_FIGURES) & set(figures):
        latent = latent_analysis(dataset, model, seed, context)
        if "tsne" in figures:
            fig = plots.plot_tsne(
                latent["points"],
                latent["domains"],
                latent["labels"],
                f"t-SNE of the source model's latent features ({tag})",
            )
            draw("tsne", fig, f"tsne_{dataset}_{model}_s{seed}")
        if "entropy" in figures:
            fig = plots.plot_entropy_histograms(
                {model: latent["entropy"]}, f"Prediction entropy ({tag})"
            )
            draw("entropy", fig, f"entropy_{dataset}_{model}_s{seed}")

    for name in ("sensitivity", "efficiency"):
        if name not in figures:
            continue
        frame = compare(TABLES[name], result.records, [seed], [dataset])
        if name == "efficiency":
            frame = frame[frame["model"] == model]
        if frame["n_seeds"].sum() == 0:
            done[name] = f"skipped: no experiment finished ({len(result.failures)} failed)"
            continue
        if name == "sensitivity":
            fig = plots.plot_sensitivity(frame, f"Hyperparameter sensitivity ({tag})")
        else:
            fig = plots.plot_efficiency(frame, f"Efficiency ({tag})")
        draw(name, fig, f"{name}_{dataset}_{model}_s{seed}")
    return {name: done.get(name, "skipped: not drawn") for name in figures}


def case_gains_figure(
    frame: Any, table: Any, out_dir: str | Path, metric: str = "macro_f1"
) -> Path | None:
    """``<table>_gains.png``: each method's sorted per-case gain over the table's reference
    (:func:`plots.plot_case_gains`), for a table with summary lines; ``None`` for others or
    when no case has the reference."""
    from adaptable.experiments.tables import case_means

    if table.summary is None:
        return None
    means = case_means(frame, metric)
    reference = table.summary.reference
    if reference not in means.columns or means[reference].isna().all():
        return None
    gains = {
        method: (means[method] - means[reference]).dropna().tolist()
        for method in means.columns
        if method != reference
    }
    names = {"macro_f1": "macro-F1", "balanced_accuracy": "balanced accuracy"}
    title = f"{table.name}: {names.get(metric, metric)} gain over {reference} per case"
    fig = plots.plot_case_gains(gains, reference=reference, title=title)
    return plots.save_figure(fig, Path(out_dir) / f"{table.name}_gains.png")


def _benchmark_method_labels() -> list[str]:
    """Every method label of the benchmark's tables, in table order (the generality role's
    first): one colour and marker per method across their figures."""
    from adaptable.experiments.benchmark import TABLES

    return list(dict.fromkeys(row.label for table in TABLES.values() for row in table.rows))


def risk_and_reach_figure(
    summary: Any, table: Any, out_dir: str | Path, metric: str = "macro_f1"
) -> Path | None:
    """``<table>_risk.png``: each method's share of cases within the tolerance of the bar
    against its worst case (:func:`plots.plot_risk_and_reach`), from the table's summary lines
    over all cases (:func:`~adaptable.experiments.tables.summarize`, or the
    ``<table>_summary.csv`` it writes); ``None`` for a table without summary lines or when no
    method has a case for ``metric``. The reference itself is left out (it sits at 0 by
    definition)."""
    spec = table.summary
    if spec is None:
        return None
    lines = summary[(summary["group"] == "all") & (summary["metric"] == metric)]
    lines = lines[(lines["cases"] > 0) & (lines["method"] != spec.reference)]
    if lines.empty:
        return None
    points = {
        str(line.method): (line.within_tolerance_of_bar / line.cases, line.worst_difference)
        for line in lines.itertuples()
    }
    names = {"macro_f1": "macro-F1", "balanced_accuracy": "balanced accuracy"}
    cases = int(lines["cases"].max())
    title = f"{table.name}: risk and reach, {names.get(metric, metric)}, {cases} cases"
    fig = plots.plot_risk_and_reach(
        points,
        goal=spec.goal,
        tolerance=spec.tolerance,
        reference=spec.reference,
        simple_rule=spec.simple_rule,
        title=title,
        style_order=_benchmark_method_labels(),
    )
    return plots.save_figure(fig, Path(out_dir) / f"{table.name}_risk.png")

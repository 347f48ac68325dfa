"""The drift report as one figure: what the adapter saw on a stream, and how it did.

:func:`plot_drift_report` draws :meth:`adaptable.AdapTable.report`'s DataFrame in four panels
over the stream's batches:

1. performance: the objective of the unadapted model and of the adapter over the stream so
   far, estimated from the posteriors (dashed), by the calibration-free estimate where the
   moment test accepts pure label shift (dash-dot, with a band of two standard deviations),
   realised on the labels that have arrived (solid), and from the posteriors corrected by
   those labels (dotted, with its band), these two from as many labelled rows as
   :meth:`adaptable.AdapTable.drift_summary` asks for (``MIN_LABELLED``); a thin dotted line at the unadapted model's objective
   on the held-out source rows, the reference of :meth:`adaptable.AdapTable.drift_summary`;
2. the estimated target label distribution with its 90 % interval, the calibration-free
   estimate (dash-dot), the share of each class among the labelled rows (dots) and, where
   given, the true share of the stream so far;
3. the shift tests against their thresholds: the moment test's z-score over its threshold and
   the likelihood-ratio statistic over its critical value (above 1: the test rejects);
4. the rule the adapter used on each batch (a change of rule is a step).

Each panel's legend lies under it, where it covers no line, each label once: in the second
panel the colour says the class and the line style the kind of line.

:func:`experiment_report` runs one experiment of the runner (its feedback protocol included)
in this process and returns the method's report with the stream's true label shares and its
drift summary; :func:`draw_experiment` does both and saves the figure (``adaptable run
--drift-figure``, which prints the summary).

>>> import pandas as pd
>>> report = pd.DataFrame({"batch": [0, 1], "rule": ["source", "balanced"],
...     "estimated_source_so_far": [0.7, 0.7], "estimated_adapter_so_far": [0.7, 0.72],
...     "realised_source_so_far": [float("nan"), 0.69], "realised_adapter_so_far": [float("nan"), 0.71],
...     "prior_0": [0.6, 0.55], "prior_0_low": [0.5, 0.5], "prior_0_high": [0.7, 0.6],
...     "prior_1": [0.4, 0.45], "prior_1_low": [0.3, 0.4], "prior_1_high": [0.5, 0.5],
...     "labelled_share_0": [float("nan"), 0.5], "labelled_share_1": [float("nan"), 0.5],
...     "shift_statistic": [1.0, 4.0], "shift_threshold": [3.0, 3.0],
...     "prior_statistic": [0.5, float("nan")], "prior_critical": [3.84, 3.84]})
>>> len(plot_drift_report(report).axes)
4
"""  # noqa: E501

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from adaptable.core.report.drift_log import report_classes
from adaptable.core.report.drift_summary import MIN_LABELLED
from adaptable.experiments.plots import save_figure
from adaptable.optional import require


def _pyplot() -> Any:
    matplotlib = require(
        "matplotlib",
        feature="The drift figure (--drift-figure, adaptable drift --figure)",
        extra="plots",
    )
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _legend(ax: Any, handles: list[Any] | None = None, columns: int = 2) -> None:
    """The panel's legend under it, outside the axes, where it covers no line (inside, the
    curves fill the panel wherever ``loc="best"`` would put it); each label once. Nothing
    where the panel has no labelled line (matplotlib warns on an empty legend)."""
    if handles is None:
        found, labels = ax.get_legend_handles_labels()
        handles = list(dict(zip(labels, found, strict=True)).values())  # the first of a label
    if handles:
        ax.legend(
            handles=handles, fontsize="small", ncol=min(columns, len(handles)),
            loc="upper center", bbox_to_anchor=(0.5, -0.04), frameon=False,
        )  # fmt: skip


def _prior_legend(shown: list[str], kinds: dict[str, dict[str, Any]]) -> list[Any]:
    """The label panel's legend: one entry per class (its colour, the estimate's line), then
    one per kind of line drawn for every class (``kinds``: label -> line style), in the class's
    colour where one class is shown and in grey where several are, so that no label repeats
    once per class."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles: list[Any] = [
        Line2D([], [], color=f"C{k}", label=f"estimate p_t({name})") for k, name in enumerate(shown)
    ]
    colour = "C0" if len(shown) == 1 else "0.35"
    for label, style in kinds.items():
        if style.get("band"):
            handles.append(Patch(color=colour, alpha=0.2, linewidth=0, label=label))
        else:
            handles.append(Line2D([], [], color=colour, label=label, **style))
    return handles


def stream_span(report: pd.DataFrame) -> str:
    """What stretch of the stream a report covers: ``"batches 0-796, 50,968 rows"`` (its
    first and last batch, the rows of its batches where it counts them).

    >>> stream_span(pd.DataFrame({"batch": [3, 4, 5], "rows": [64, 64, 10]}))
    'batches 3-5, 138 rows'
    """
    first, last = int(report["batch"].iloc[0]), int(report["batch"].iloc[-1])
    span = f"batch {first}" if first == last else f"batches {first}-{last}"
    if "rows" in report.columns:
        rows = int(report["rows"].sum())
        span += f", {rows:,} row{'' if rows == 1 else 's'}"
    return span


def _check_report(report: Any, true_shares: Any) -> None:
    """What :func:`plot_drift_report` needs, refused before any drawing in the report's words."""
    if not isinstance(report, pd.DataFrame):
        raise TypeError(
            "plot_drift_report: report must be the DataFrame AdapTable.report() returns; got "
            f"{type(report).__name__}."
        )
    needed = ["batch", "estimated_source_so_far", "estimated_adapter_so_far"]
    missing = [column for column in needed if column not in report.columns]
    if missing or report.empty:
        what = f"lacks the columns {missing}" if missing else "has no rows"
        raise ValueError(
            f"plot_drift_report: the report {what}; pass AdapTable.report() after at least "
            "one batch."
        )
    if true_shares is not None:
        shape = np.shape(true_shares)
        expected = (len(report), len(report_classes(report.columns)))
        if shape != expected:
            raise ValueError(
                f"plot_drift_report: true_shares must have shape {expected} (the report's rows, "
                f"its classes); got {shape}."
            )


def plot_drift_report(
    report: pd.DataFrame,
    *,
    title: str | None = None,
    true_shares: np.ndarray | None = None,
    objective: str = "macro-F1",
) -> Any:
    """The four panels of the module docstring; returns the matplotlib Figure.

    Args:
        report: :meth:`adaptable.AdapTable.report`'s DataFrame.
        title: what the stream is (its dataset, the method, the labels it got); the figure's
            title is it over the stretch of the stream the report covers
            (:func:`stream_span`), or ``"Drift report: "`` and that stretch without it.
        true_shares: the stream's true class shares so far after each of the report's
            batches, (rows of the report, C)
            (a reference line; only an experiment with labels at hand has it).
        objective: the performance axis' name.

    Raises:
        TypeError: ``report`` is not a DataFrame.
        ValueError: ``report`` has no rows or lacks the report's columns, or ``true_shares``
            is not (rows of the report, C).
    """
    plt = _pyplot()
    _check_report(report, true_shares)
    fig, axes = plt.subplots(
        4, 1, figsize=(8, 11.5), sharex=True, layout="constrained",
        gridspec_kw={"height_ratios": [1.4, 1, 1, 1]},
    )  # fmt: skip
    batch = report["batch"].to_numpy()
    performance, prior, tests, rules = axes
    # what rests on the labels is drawn from as many labelled rows as the summary asks for: a
    # score of four rows says little, and its band would promise more
    counted = report.get("realised_rows", pd.Series(0.0, index=report.index))
    few = np.cumsum(counted.to_numpy(dtype=float)) < MIN_LABELLED
    band_label = "band: 2 deviations"  # one legend entry says what every band is
    for who, colour in (("source", "tab:gray"), ("adapter", "tab:blue")):
        name = "unadapted model" if who == "source" else "adapter"
        estimated = report[f"estimated_{who}_so_far"].to_numpy(dtype=float)
        realised = np.where(few, np.nan, report[f"realised_{who}_so_far"].to_numpy(dtype=float))
        performance.plot(batch, 100 * estimated, "--", color=colour, label=f"{name}, estimated")
        for column, style, kind in (
            ("calibration_free", "-.", "calibration-free"),
            ("label_corrected", ":", "label-corrected"),
        ):
            value = report.get(f"{column}_{who}_so_far")
            if value is not None and column == "label_corrected":
                value = value.where(~few)
            if value is None or not np.isfinite(value.to_numpy(dtype=float)).any():
                continue
            performance.plot(batch, 100 * value, style, color=colour, label=f"{name}, {kind}")
            sd = report.get(f"{column}_{who}_sd")
            if sd is not None:
                # a score lies in [0, 100]: two deviations past either end say nothing more
                low, high = (
                    np.clip(100 * (value + sign * 2 * sd).to_numpy(dtype=float), 0.0, 100.0)
                    for sign in (-1, 1)
                )
                performance.fill_between(
                    batch, low, high, color=colour, alpha=0.12, linewidth=0, label=band_label
                )
                band_label = None
        if np.isfinite(realised).any():
            performance.plot(
                batch, 100 * realised, "-", color=colour, label=f"{name}, realised on labelled rows"
            )
    reference = report.get("heldout_source")
    if reference is not None and np.isfinite(reference.to_numpy(dtype=float)).any():
        performance.axhline(
            100 * float(reference.iloc[-1]), color="k", linewidth=0.8, linestyle=(0, (1, 3)),
            label="unadapted model, held-out source rows",
        )  # fmt: skip
    performance.set_ylabel(f"{objective} so far (%)")
    _legend(performance)
    classes = report_classes(report.columns)
    shown = classes if len(classes) > 2 else classes[1:]  # two classes: one says it all
    # the colour says the class, the line style what the line is (the legend: each kind once)
    kinds: dict[str, dict[str, Any]] = {"90 % interval": {"band": True}}
    for k, name in enumerate(shown):
        colour = f"C{k}"
        prior.plot(batch, report[f"prior_{name}"], color=colour)
        prior.fill_between(
            batch,
            report[f"prior_{name}_low"].to_numpy(dtype=float),
            report[f"prior_{name}_high"].to_numpy(dtype=float),
            color=colour,
            alpha=0.2,
            linewidth=0,
        )
        free_prior = report.get(f"calibration_free_prior_{name}")
        if free_prior is not None and np.isfinite(free_prior.to_numpy(dtype=float)).any():
            prior.plot(batch, free_prior, "-.", color=colour)
            kinds["calibration-free estimate"] = {"linestyle": "-."}
        share = report.get(f"labelled_share_{name}")
        if share is not None and np.isfinite(share.to_numpy(dtype=float)).any():
            prior.plot(batch, share, ".", color=colour, markersize=3)
            kinds["labelled share"] = {"linestyle": "none", "marker": ".", "markersize": 3}
        if true_shares is not None:
            index = classes.index(name)
            prior.plot(batch, true_shares[:, index], ":", color=colour)
            kinds["true share"] = {"linestyle": ":"}
    prior.set_ylabel("target label share")
    _legend(prior, _prior_legend(shown, kinds), columns=4)
    # ratios on a log axis, floored so that a statistic near 0 stays on it
    shift = np.maximum(report["shift_statistic"] / report["shift_threshold"], 1e-2)
    tests.plot(batch, shift, label="moment test z / threshold")
    prior_test = np.maximum(report["prior_statistic"] / report["prior_critical"], 1e-2)
    if np.isfinite(prior_test.to_numpy(dtype=float)).any():  # the test may never have run
        tests.plot(batch, prior_test, label="prior LR statistic / critical value (gaps: not run)")
    tests.axhline(1.0, color="k", linewidth=0.8)
    tests.set_yscale("log")
    tests.set_ylabel("statistic / threshold")
    _legend(tests, columns=2)
    names = list(dict.fromkeys(report["rule"]))
    rules.step(batch, [names.index(r) for r in report["rule"]], where="post")
    rules.set_yticks(range(len(names)), names, fontsize="small")
    rules.set_ylabel("rule")
    rules.set_xlabel("batch")
    span = stream_span(report)
    fig.suptitle(f"{title}\n{span}" if title else f"Drift report: {span}")
    return fig


def with_feedback(specs: list[Any], share: float, delay: float) -> list[Any]:
    """``specs`` with the feedback setting (``adaptable run --feedback SHARE DELAY``).

    Raises:
        ValueError: a share outside [0, 1] or a delay that is not a whole number >= 0.
    """
    import dataclasses

    if delay != int(delay):
        raise ValueError(f"the feedback delay is a whole number of batches; got {delay}")
    return [
        dataclasses.replace(s, feedback_share=float(share), feedback_delay=int(delay))
        for s in specs
    ]


class DriftRun(NamedTuple):
    """One experiment's drift report (:func:`experiment_report`): the report, the stream's true
    class shares since its start after each of the report's batches (rows of the report, C;
    the report may have forgotten the first batches of a long stream), and the method's
    :meth:`~adaptable.AdapTable.drift_summary` over the whole stream (None for an empty
    stream)."""

    report: pd.DataFrame
    true_shares: np.ndarray
    summary: Any


def experiment_report(spec: Any, context: Any = None) -> DriftRun:
    """Run ``spec`` (an :class:`~adaptable.experiments.spec.ExperimentSpec` whose method has a
    report, i.e. ``adaptable`` with the default preset) in this process, with its feedback
    setting, and return its :class:`DriftRun`.

    Raises:
        ValueError: the method keeps no report.
    """
    from adaptable.experiments.components import RunContext
    from adaptable.experiments.experiment import fit_experiment, predict_stream, shifted_stream

    context = context or RunContext()
    fitted = fit_experiment(spec, context)
    if not callable(getattr(fitted.method, "report", None)):
        raise ValueError(f"method {spec.method!r} keeps no drift report; use adaptable")
    counts = np.zeros(int(fitted.dataset.n_classes))
    shares = []
    for batch in predict_stream(fitted, shifted_stream(fitted, spec.scenario, context)):
        counts += np.bincount(batch.y, minlength=len(counts))
        shares.append(counts / counts.sum())
    method = fitted.method
    summary = method.drift_summary() if shares else None  # an empty stream has no summary
    report = method.report()
    kept = report["batch"].to_numpy(dtype=np.int64) if len(report) else np.zeros(0, np.int64)
    return DriftRun(report, np.array(shares).reshape(-1, len(counts))[kept], summary)


def draw_experiment(spec: Any, path: str | Path, context: Any = None) -> tuple[Path, Any]:
    """:func:`experiment_report` drawn by :func:`plot_drift_report` and saved to ``path``;
    returns the path and the run's drift summary."""
    run = experiment_report(spec, context)
    feedback = spec.feedback
    labels = (
        "no labels"
        if feedback is None
        else f"{100 * feedback['share']:g} % of labels, {feedback['delay']} batches late"
    )
    title = f"{spec.label} on {spec.dataset} ({spec.scenario}), {spec.model}, seed {spec.seed}"
    title += f"; {labels}"
    fig = plot_drift_report(run.report, title=title, true_shares=run.true_shares)
    path = Path(path)
    save_figure(fig, path)
    return path, run.summary

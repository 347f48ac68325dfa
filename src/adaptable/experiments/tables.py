"""Results tables: ours (mean +- standard error over seeds) beside the paper's, as Markdown / CSV.

>>> from adaptable.experiments.paper import TABLES
>>> spec = ExperimentSpec("heloc", "natural", "mlp", "adaptable", 0, {"preset": "paper"})
>>> record = {"key": spec.key, "spec": spec.to_dict(),
...           "metrics": {"macro_f1": 0.65, "balanced_accuracy": 0.66}}
>>> frame = compare(TABLES["main"], [record], seeds=[0], datasets=["heloc"])
>>> found = frame[frame["n_seeds"] > 0]
>>> found[["method", "metric", "ours_mean", "paper_mean"]].to_numpy().tolist()
[['AdapTable', 'macro_f1', 65.0, 64.5], ['AdapTable', 'balanced_accuracy', 66.0, 65.8]]
>>> "| mlp | AdapTable | 65.0 (paper 64.5, Δ +0.5) |" in to_markdown(frame, TABLES["main"])
True
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import adaptable.experiments.benchmark as benchmark
from adaptable.experiments.metrics import mean_and_se
from adaptable.experiments.paper import DATASET_TITLES, PAPER_EFFICIENCY, paper_value
from adaptable.experiments.paper import SCENARIO_TITLES as PAPER_SCENARIO_TITLES
from adaptable.experiments.spec import ExperimentSpec
from adaptable.experiments.table_def import Row, TableDef

#: scenario -> its display title (the paper's, then the benchmark's label shifts)
SCENARIO_TITLES = {**PAPER_SCENARIO_TITLES, **benchmark.SCENARIO_TITLES}
#: metric -> (column title, how to get it from a record in the table's unit)
METRICS: dict[str, tuple[str, Any]] = {
    "macro_f1": ("F1", lambda r: 100.0 * r["metrics"]["macro_f1"]),
    "balanced_accuracy": ("bAcc", lambda r: 100.0 * r["metrics"]["balanced_accuracy"]),
    "accuracy": ("Acc", lambda r: 100.0 * r["metrics"]["accuracy"]),
    "ece": ("ECE", lambda r: 100.0 * r["metrics"]["ece"]),
    "ms_per_row": ("ms/row", lambda r: 1000.0 * r["timing"]["seconds_per_row"]),
    "adapt_seconds": ("time (s)", lambda r: r["timing"]["adapt_seconds"]),
}


#: columns of :func:`compare`'s frame (and of the CSV files)
COLUMNS = [
    "table", "dataset", "scenario", "model", "method", "metric", "ours_mean", "ours_se",
    "n_seeds", "paper_mean", "paper_se", "difference",
]  # fmt: skip


def table_specs(
    table: TableDef,
    seeds: Iterable[int],
    datasets: Iterable[str] | None = None,
    models: Iterable[str] | None = None,
) -> list[ExperimentSpec]:
    """The experiments a table needs, grouped by source model (dataset, model, seed).

    ``models`` keeps only the rows of those source models (e.g. to leave out a slow one).

    Raises:
        ValueError: ``models`` names a model the table has no rows for, or ``datasets`` a
            dataset a table of fixed cases (a benchmark) does not cut.
    """
    chosen = list(datasets) if datasets is not None else list(table.datasets)
    if table.cases:
        absent = [d for d in dict.fromkeys(chosen) if d not in set(table.datasets)]
        if absent:
            raise ValueError(
                f"Table {table.name!r} has no cases for dataset(s) {absent}; "
                f"its datasets are {list(table.datasets)}."
            )
    table_models = list(dict.fromkeys(row.model for row in table.rows))
    if models is not None:
        unknown = sorted(set(models) - set(table_models))
        if unknown:
            raise ValueError(
                f"Table {table.name!r} has no rows for model(s) {unknown}; "
                f"its models are {table_models}."
            )
        table_models = [m for m in table_models if m in set(models)]
    cells = table.cells(chosen)
    out = []
    for dataset in chosen:
        scenarios = [s for d, s in cells if d == dataset]
        for model in table_models:
            for seed in seeds:
                for scenario in scenarios:
                    for row in table.rows:
                        if row.model == model:
                            out.append(table.spec(dataset, scenario, row, seed))
    return list({s.key: s for s in out}.values())


def _paper(
    table: TableDef, row: Row, dataset: str, scenario: str, metric: str
) -> tuple[float, float] | None:
    if table.name == "efficiency":
        # the paper's timing is of its own algorithm: only the row running the paper preset unchanged
        plain = not row.options or row.option_dict == {"preset": "paper"}
        found = PAPER_EFFICIENCY.get((dataset, row.model, row.method if plain else ""))
        return (found[metric], math.nan) if found and metric in found else None
    if table.paper_table is None or row.paper_model is None or row.paper_method is None:
        return None
    return paper_value(
        table.paper_table, scenario, row.paper_model, dataset, row.paper_method, metric
    )


def compare(
    table: TableDef,
    records: Iterable[Mapping[str, Any]],
    seeds: Sequence[int],
    datasets: Iterable[str] | None = None,
) -> pd.DataFrame:
    """One line per (dataset, scenario, row, metric): ours vs the paper.

    Columns: ``dataset``, ``scenario``, ``model``, ``method`` (the row label), ``metric``,
    ``ours_mean``, ``ours_se``, ``n_seeds``, ``paper_mean``, ``paper_se``, ``difference``
    (ours - paper). Values are percentages (times in ms per row or seconds); a cell with no run
    or no paper value holds NaN.
    """
    by_key = {r["key"]: r for r in records}
    lines = []
    for dataset, scenario in table.cells(datasets):
        for row in table.rows:
            found = []
            for seed in seeds:
                spec = table.spec(dataset, scenario, row, seed)
                if spec.key in by_key:
                    found.append(by_key[spec.key])
            for metric in table.metrics:
                values = [METRICS[metric][1](r) for r in found]
                mean, se = mean_and_se(values) if values else (math.nan, math.nan)
                paper = _paper(table, row, dataset, scenario, metric)
                paper_mean, paper_se = paper if paper else (math.nan, math.nan)
                lines.append(
                    {
                        "table": table.name,
                        "dataset": dataset,
                        "scenario": scenario,
                        "model": row.model,
                        "method": row.label,
                        "metric": metric,
                        "ours_mean": mean,
                        "ours_se": se,
                        "n_seeds": len(values),
                        "paper_mean": paper_mean,
                        "paper_se": paper_se,
                        "difference": mean - paper_mean,
                    }
                )
    return pd.DataFrame(lines, columns=COLUMNS)


def _fmt(value: float, digits: int = 1) -> str:
    return (
        "-"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else f"{value:.{digits}f}"
    )


def _cell(line: Mapping[str, Any], digits: int, wanted: int = 0) -> str:
    n = int(line["n_seeds"])
    if n == 0:
        ours = "not run"
    elif n == 1:
        ours = _fmt(line["ours_mean"], digits)
    else:
        ours = f"{_fmt(line['ours_mean'], digits)} ± {_fmt(line['ours_se'], digits)}"
    notes = []
    if 0 < n < wanted:
        notes.append(f"{n} of {wanted} seeds")
    if not math.isnan(line["paper_mean"]):
        notes.append(f"paper {_fmt(line['paper_mean'], digits)}")
        if n:
            notes.append(f"Δ {_signed(line['difference'], digits)}")
    return f"{ours} ({', '.join(notes)})" if notes else ours


def _signed(value: float, digits: int) -> str:
    return "-" if math.isnan(value) else f"{value:+.{digits}f}"


def markdown_grid(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-flavoured Markdown table."""
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def to_markdown(
    frame: pd.DataFrame,
    table: TableDef,
    *,
    skipped: Mapping[str, str] | None = None,
    failures: Mapping[str, str] | None = None,
    seeds: Sequence[int] = (),
) -> str:
    """The table as the paper lays it out: one row per method, one column per dataset (and
    scenario), one block per metric; each cell ``ours ± se (paper p, Δ d)``. A table with a
    :class:`~adaptable.experiments.table_def.Summary` is laid out by :func:`cases_markdown`."""
    if table.summary is not None:
        return cases_markdown(frame, table, skipped=skipped, failures=failures, seeds=seeds)
    parts = [f"## {table.title}", ""]
    if seeds:
        parts += [f"Ours: mean ± standard error over {_seed_words(seeds)}.", ""]
    for metric in table.metrics:
        subset = frame[frame["metric"] == metric]
        if subset.empty:
            continue
        digits = 3 if metric == "ms_per_row" else (2 if metric == "adapt_seconds" else 1)
        columns = list(dict.fromkeys(zip(subset["scenario"], subset["dataset"], strict=True)))
        multi_scenario = len({c[0] for c in columns}) > 1
        header = ["model", "method"] + [
            (f"{SCENARIO_TITLES.get(s, s)} / " if multi_scenario else "") + DATASET_TITLES.get(d, d)
            for s, d in columns
        ]
        rows = []
        for (model, method), group in subset.groupby(["model", "method"], sort=False):
            cells = {
                (g["scenario"], g["dataset"]): _cell(g, digits, len(seeds))
                for _, g in group.iterrows()
            }
            rows.append([model, method] + [cells.get(c, "") for c in columns])
        parts += [f"### {METRICS[metric][0]}", "", markdown_grid(header, rows), ""]
    return _finish(parts, table, skipped, failures)


def _finish(
    parts: list[str],
    table: TableDef,
    skipped: Mapping[str, str] | None,
    failures: Mapping[str, str] | None,
) -> str:
    if skipped:
        parts += ["Skipped datasets:", ""]
        parts += [
            f"- {DATASET_TITLES.get(d, d)} (`{d}`): {reason}" for d, reason in skipped.items()
        ]
        parts.append("")
    if failures:
        parts += ["Failed experiments (not stored; a rerun retries them):", ""]
        parts += _failure_lines(failures)
        parts.append("")
    parts += [f"Note: {note}" for note in table.notes]
    return "\n".join(parts).rstrip() + "\n"


def _failure_lines(failures: Mapping[str, str], listed: int = 3) -> list[str]:
    """One line per failure; an error shared by more than ``listed`` experiments (e.g. a method
    option that does not exist yet) is written once, with the count and one example key."""
    by_error: dict[str, list[str]] = {}
    for key, error in failures.items():
        by_error.setdefault(error, []).append(key)
    lines = []
    for error, keys in by_error.items():
        if len(keys) > listed:
            lines.append(f"- {len(keys)} experiments, e.g. `{keys[0]}`: {error}")
        else:
            lines += [f"- `{key}`: {error}" for key in keys]
    return lines


#: columns of :func:`summarize`'s frame (and of ``<name>_summary.csv``)
SUMMARY_COLUMNS = [
    "table", "group", "metric", "method", "cases", "won", "lost", "mean_difference",
    "worst_difference", "worst_difference_vs_bar", "within_tolerance_of_bar",
]  # fmt: skip


def case_means(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per-case means over seeds: index (dataset, scenario, model), one column per method label
    (NaN where a method has no run). A case is one (dataset, scenario, source model)."""
    subset = frame[(frame["metric"] == metric) & (frame["n_seeds"] > 0)]
    keys = ["dataset", "scenario", "model"]
    wide = subset.pivot_table(index=keys, columns="method", values="ours_mean", sort=False)
    order = list(dict.fromkeys(frame["method"]))
    cases = list(
        dict.fromkeys(zip(frame["dataset"], frame["scenario"], frame["model"], strict=True))
    )
    return wide.reindex(index=pd.MultiIndex.from_tuples(cases, names=keys), columns=order)


def summarize(frame: pd.DataFrame, table: TableDef) -> pd.DataFrame:
    """The summary lines of a benchmark table, per (case group, metric, method).

    Differences are taken between per-case means over seeds (points). For each method:
    ``cases`` (cases where both it and the reference ran), ``won`` / ``lost`` (strictly above /
    below the reference), ``mean_difference`` and ``worst_difference`` vs the reference,
    ``worst_difference_vs_bar`` vs max(reference, simple rule) and
    ``within_tolerance_of_bar`` (cases within ``tolerance`` points of that bar).

    Raises:
        ValueError: the table has no :class:`~adaptable.experiments.table_def.Summary`.
    """
    spec = table.summary
    if spec is None:
        raise ValueError(f"table {table.name!r} defines no summary")
    groups = [("all", None), *((title, set(scenarios)) for title, scenarios in spec.groups)]
    lines = []
    for metric in table.metrics:
        means = case_means(frame, metric)
        if spec.reference not in means.columns:
            continue
        for title, scenarios in groups:
            block = means
            if scenarios is not None:
                block = means[means.index.get_level_values("scenario").isin(scenarios)]
            block = block[block[spec.reference].notna()]  # a case needs its reference
            reference = block[spec.reference]
            simple = block[spec.simple_rule] if spec.simple_rule in block.columns else reference
            bar = np.fmax(reference, simple)  # the reference alone where the rule did not run
            for method in block.columns:
                difference = (block[method] - reference).dropna()
                versus_bar = (block[method] - bar).dropna()
                lines.append(
                    {
                        "table": table.name,
                        "group": title,
                        "metric": metric,
                        "method": method,
                        "cases": len(difference),
                        "won": int((difference > 0).sum()),
                        "lost": int((difference < 0).sum()),
                        "mean_difference": difference.mean() if len(difference) else math.nan,
                        "worst_difference": difference.min() if len(difference) else math.nan,
                        "worst_difference_vs_bar": (
                            versus_bar.min() if len(versus_bar) else math.nan
                        ),
                        "within_tolerance_of_bar": int((versus_bar >= -spec.tolerance).sum()),
                    }
                )
    return pd.DataFrame(lines, columns=SUMMARY_COLUMNS)


def cases_markdown(
    frame: pd.DataFrame,
    table: TableDef,
    *,
    skipped: Mapping[str, str] | None = None,
    failures: Mapping[str, str] | None = None,
    seeds: Sequence[int] = (),
) -> str:
    """A benchmark table: per metric, the summary per method (all cases, then each group) and
    one line per case (dataset, shift, source model) with each method's mean over seeds."""
    spec = table.summary
    if spec is None:
        raise ValueError(f"table {table.name!r} defines no summary")
    parts = [f"## {table.title}", ""]
    if seeds:
        parts += [
            f"Mean over {_seed_words(seeds)} per case; a case is one (dataset, "
            f"shift, source model). Δ: method minus {spec.reference}, in points, between the "
            f"per-case means. Bar: max({spec.reference}, {spec.simple_rule}).",
            "",
        ]
    lines = summarize(frame, table)
    header = [
        "method", "cases", f"won vs {spec.reference}", "lost", "mean Δ", "worst Δ",
        "worst Δ vs bar", f"within {spec.tolerance:g} of bar",
    ]  # fmt: skip
    for metric in table.metrics:
        title = METRICS[metric][0]
        for group, block in lines[lines["metric"] == metric].groupby("group", sort=False):
            rows = [
                [
                    line["method"],
                    str(line["cases"]),
                    str(line["won"]),
                    str(line["lost"]),
                    _signed(line["mean_difference"], 1),
                    _signed(line["worst_difference"], 1),
                    _signed(line["worst_difference_vs_bar"], 1),
                    f"{line['within_tolerance_of_bar']} of {line['cases']}",
                ]  # fmt: skip
                for _, line in block.iterrows()
            ]
            parts += [f"### Summary, {title}, {group}", "", markdown_grid(header, rows), ""]
    wanted = len(seeds)
    for metric in table.metrics:
        subset = frame[frame["metric"] == metric]
        if subset.empty:
            continue
        methods = list(dict.fromkeys(subset["method"]))
        rows = []
        for (dataset, scenario, model), group in subset.groupby(
            ["dataset", "scenario", "model"], sort=False
        ):
            cells = {line["method"]: _case_cell(line, wanted) for _, line in group.iterrows()}
            rows.append([dataset, SCENARIO_TITLES.get(scenario, scenario), model] + [
                cells.get(m, "") for m in methods
            ])  # fmt: skip
        header = ["dataset", "shift", "model", *methods]
        parts += [f"### Per case, {METRICS[metric][0]}", "", markdown_grid(header, rows), ""]
    return _finish(parts, table, skipped, failures)


def _case_cell(line: Mapping[str, Any], wanted: int) -> str:
    n = int(line["n_seeds"])
    if n == 0:
        return "not run"
    value = _fmt(line["ours_mean"])
    return f"{value} ({n} of {wanted} seeds)" if 0 < n < wanted else value


def write_table(
    frame: pd.DataFrame,
    table: TableDef,
    out_dir: str | Path,
    *,
    skipped: Mapping[str, str] | None = None,
    failures: Mapping[str, str] | None = None,
    seeds: Sequence[int] = (),
    latex: bool = False,
) -> list[Path]:
    """Write ``<name>.md`` and ``<name>.csv`` (and ``<name>.tex`` with ``latex=True``); a table
    with a summary also gets ``<name>_summary.csv`` (:func:`summarize`)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{table.name}.md", out / f"{table.name}.csv"]
    paths[0].write_text(to_markdown(frame, table, skipped=skipped, failures=failures, seeds=seeds))
    extra = frame.copy()
    extra["skipped_reason"] = extra["dataset"].map(lambda d: (skipped or {}).get(d, ""))
    extra.to_csv(paths[1], index=False, float_format="%.4f")
    if table.summary is not None:
        paths.append(out / f"{table.name}_summary.csv")
        summarize(frame, table).to_csv(paths[-1], index=False, float_format="%.4f")
    if latex:
        paths.append(out / f"{table.name}.tex")
        paths[-1].write_text(to_latex(frame, table))
    return paths


def to_latex(frame: pd.DataFrame, table: TableDef) -> str:
    """A plain ``tabular`` per metric with ``ours (paper)`` cells."""
    blocks = []
    for metric in table.metrics:
        subset = frame[frame["metric"] == metric]
        columns = list(dict.fromkeys(zip(subset["scenario"], subset["dataset"], strict=True)))
        lines = [
            "\\begin{tabular}{ll" + "c" * len(columns) + "}",
            "\\toprule",
            "Model & Method & "
            + " & ".join(DATASET_TITLES.get(d, d) for _, d in columns)
            + " \\\\ \\midrule",
        ]
        for (model, method), group in subset.groupby(["model", "method"], sort=False):
            cells = {}
            for _, g in group.iterrows():
                ours = _fmt(g["ours_mean"])
                if g["n_seeds"] > 1:
                    ours += f" $\\pm$ {_fmt(g['ours_se'])}"
                if not math.isnan(g["paper_mean"]):
                    ours += f" ({_fmt(g['paper_mean'])})"
                cells[(g["scenario"], g["dataset"])] = ours
            lines.append(
                f"{model} & {method} & " + " & ".join(cells.get(c, "") for c in columns) + " \\\\"
            )
        lines += ["\\bottomrule", "\\end{tabular}"]
        blocks.append(f"% {METRICS[metric][0]}\n" + "\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def summary(records: Iterable[Mapping[str, Any]]) -> str:
    """A Markdown table of any records: one row per (dataset, scenario, model, method label),
    metrics as mean ± se over the seeds present."""
    groups: dict[tuple[str, str, str, str], list[Mapping[str, Any]]] = {}
    for record in records:
        spec = ExperimentSpec.from_dict(record["spec"])
        groups.setdefault((spec.dataset, spec.scenario, spec.model, spec.label), []).append(record)
    header = ["dataset", "shift", "model", "method", "seeds", "F1", "bAcc", "Acc", "ECE", "ms/row"]
    rows = []
    for (dataset, scenario, model, label), found in groups.items():
        cells = []
        for metric in ("macro_f1", "balanced_accuracy", "accuracy", "ece", "ms_per_row"):
            mean, se = mean_and_se([METRICS[metric][1](r) for r in found])
            digits = 3 if metric == "ms_per_row" else 1
            cells.append(
                _fmt(mean, digits)
                if len(found) == 1
                else f"{_fmt(mean, digits)} ± {_fmt(se, digits)}"
            )
        rows.append([dataset, scenario, model, label, str(len(found)), *cells])
    return markdown_grid(header, rows)


def _seed_words(seeds: Sequence[int]) -> str:
    """``"seed 0"``, ``"seeds 0, 1, 2"``."""
    return f"seed{'s' * (len(seeds) != 1)} {', '.join(map(str, seeds))}"


#: the columns of :func:`paper_gaps`
GAP_COLUMNS = [
    "table", "dataset", "scenario", "model", "method", "metric", "ours_mean", "n_seeds",
    "paper_mean", "difference", "source_difference", "gain_difference",
]  # fmt: skip


def paper_gaps(
    frame: pd.DataFrame, threshold: float = 2.0, reference: str = "Source"
) -> pd.DataFrame:
    """The cells of :func:`compare` frames (or of the CSV files they are written to) that are
    more than ``threshold`` points from the paper, each beside its source row's gap.

    ``source_difference`` is the ``reference`` row's difference in the same table, dataset,
    scenario, model and metric (NaN where it has no paper value); ``gain_difference`` is
    ``difference - source_difference``, how far the method's gain over its source model is from
    the paper's. A cell whose gain difference is within ``threshold`` inherits its gap from the
    source model. Lines without our or the paper's value are ignored.

    >>> frame = pd.DataFrame({"table": "t", "dataset": "d", "scenario": "s", "model": "mlp",
    ...     "method": ["Source", "A", "B"], "metric": "macro_f1", "ours_mean": [40.0, 60.0, 52.0],
    ...     "n_seeds": 3, "paper_mean": [35.0, 56.0, 52.5], "difference": [5.0, 4.0, -0.5]})
    >>> columns = ["method", "difference", "source_difference", "gain_difference"]
    >>> paper_gaps(frame)[columns].to_numpy().tolist()
    [['Source', 5.0, 5.0, 0.0], ['A', 4.0, 5.0, -1.0]]
    """
    keys = ["table", "dataset", "scenario", "model", "metric"]
    known = frame.dropna(subset=["ours_mean", "paper_mean"])
    sources = known[known["method"] == reference].set_index(keys)["difference"]
    off = known[known["difference"].abs() > threshold].copy()
    off["source_difference"] = [
        sources.get(tuple(line[k] for k in keys), math.nan) for _, line in off.iterrows()
    ]
    off["gain_difference"] = off["difference"] - off["source_difference"]
    return off[GAP_COLUMNS].reset_index(drop=True)

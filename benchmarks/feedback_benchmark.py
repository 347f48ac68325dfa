"""Late labels on the benchmark: the default adapter with and without feedback, the label-only
anchors on the same labels, and the best fixed rule per case.

Every (case, scenario, source model, seed) cell of the chosen benchmark roles (each case's
natural domain split, and its pure label shifts) runs, through the experiment runner and a
results store (so a rerun resumes):

- ``source`` (the unadapted model), ``adaptable`` (the default, no labels), ``balanced`` and
  ``oracle_prior`` (the prior correction with the true target prior): the best fixed rule of
  a case is max(source, balanced, oracle prior) on its mean over seeds;
- for each share of labels and delay (``--shares``, ``--delays``): ``adaptable`` with
  feedback and the three anchors ``labelled_recalibration``, ``labelled_prior`` and
  ``labelled_online`` on the same labels (the runner's protocol: the same rows of each batch,
  their labels ``delay`` batches later, every row scored as predicted before its label came).

The table (Markdown, ``--out``) gives per role and kind (domain splits, label shifts), for
each row: cases, the mean gain over the unadapted model in macro-F1 points (mean over seeds
first), the worst case, cases won / lost by more than 0.5, and the same over the cases whose
streams are at least 20 batches long. A second table lists every case's gains.

Usage::

    python benchmarks/feedback_benchmark.py                      # every default role, 3 models
    python benchmarks/feedback_benchmark.py --roles generality --models logreg --seeds 0
    python benchmarks/feedback_benchmark.py --cases german_checking --models logreg
    python benchmarks/feedback_benchmark.py --variants fallback=plugin   # an opt-in setting too

``--variants`` adds the adapter with other options (``name=value``, several joined by ``,``),
without labels and at every share and delay, as rows named ``adaptable[options]``.

``--anchors`` names the anchors run at every share and delay (default: the three above), each
with options as ``name[option=value,...]``; the anchors that update the model are opt-in::

    python benchmarks/feedback_benchmark.py --roles development --models logreg \
        --shares 0.05 --delays 10 --scenarios natural \
        --anchors labelled_recalibration labelled_prior labelled_online labelled_refit \
        labelled_patch --better-of labelled_refit

``--scenarios`` keeps only those scenarios (``natural``: the domain splits), and
``--better-of NAME`` adds a row, per case the better of ``adaptable`` and the anchor ``NAME``
on the same labels (a per-case oracle choice between the two, a reference only).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from adaptable.datasets.benchmark_cases import CASES, SEALED_ROLES, by_role
from adaptable.experiments.benchmark import MODELS, role_cases
from adaptable.experiments.components import RunContext
from adaptable.experiments.executors import LocalExecutor
from adaptable.experiments.spec import ExperimentSpec
from adaptable.experiments.store import ResultStore
from adaptable.experiments.sweep import run_sweep

ANCHORS = ("labelled_recalibration", "labelled_prior", "labelled_online")
#: anchors that use the labels to update the model (``--anchors``; not run by default)
UPDATING_ANCHORS = ("labelled_refit", "labelled_patch")
REFERENCES = ("source", "adaptable", "balanced", "oracle_prior")
#: streams at least this many batches long receive enough labels to judge feedback on
LONG_STREAM = 20


def cells(roles: list[str], cases: list[str]) -> list[tuple[str, str, str]]:
    """(role, dataset, scenario) of the roles' tables, then of the named extra cases."""
    out = [(role, d, s) for role in roles for d, s in role_cases(by_role(role))]
    for name in cases:
        case = CASES[name]
        out += [(case.role, d, s) for d, s in role_cases([case]) if (case.role, d, s) not in out]
    return out


def specs_for(
    cell: tuple[str, str, str],
    model: str,
    seed: int,
    shares: list[float],
    delays: list[int],
    variants: list[dict[str, Any]] = (),
    anchors: list[tuple[str, dict[str, Any]]] | None = None,
) -> list[ExperimentSpec]:
    """Every experiment of one cell: the references and the variants without labels, then per
    (delay, share) the adapter with feedback, its variants and the anchors (``anchors``:
    (name, options) pairs; ``None``: :data:`ANCHORS` with their defaults)."""
    if anchors is None:
        anchors = [(a, {}) for a in ANCHORS]
    _, dataset, scenario = cell
    out = [ExperimentSpec(dataset, scenario, model, name, seed) for name in REFERENCES]
    out += [ExperimentSpec(dataset, scenario, model, "adaptable", seed, v) for v in variants]
    for delay in delays:
        for share in shares:
            if share == 0:
                continue
            labelled = [("adaptable", {})] + [("adaptable", v) for v in variants]
            for name, options in labelled + list(anchors):
                out.append(
                    ExperimentSpec(
                        dataset,
                        scenario,
                        model,
                        name,
                        seed,
                        options,
                        feedback_share=share,
                        feedback_delay=delay,
                    )  # fmt: skip
                )
    return out


def parse_variant(text: str) -> dict[str, Any]:
    """``"fallback=plugin,objective=accuracy"`` -> options (values read as JSON where they
    parse, else as strings)."""
    options: dict[str, Any] = {}
    for part in text.split(","):
        name, _, value = part.partition("=")
        try:
            options[name.strip()] = json.loads(value)
        except json.JSONDecodeError:
            options[name.strip()] = value.strip()
    return options


def parse_anchor(text: str) -> tuple[str, dict[str, Any]]:
    """``"labelled_refit[target_weight=plain]"`` -> (name, options); a bare name: no options."""
    name, _, inside = text.partition("[")
    options = parse_variant(inside.rstrip("]")) if inside.strip("]") else {}
    return name.strip(), options


def method_name(spec: dict[str, Any]) -> str:
    """The method with its options, ``adaptable[fallback=plugin]``; the bare name without."""
    options = dict(spec.get("options") or {})
    if not options:
        return spec["method"]
    inside = ",".join(f"{k}={v}" for k, v in sorted(options.items()))
    return f"{spec['method']}[{inside}]"


def row_name(record: dict[str, Any]) -> str:
    spec = record["spec"]
    feedback = spec.get("feedback")
    if feedback is None:
        return method_name(spec)
    return f"{method_name(spec)} {100 * feedback['share']:g}% d{feedback['delay']}"


def gains(records: list[dict[str, Any]], cell_role: dict[tuple[str, str], str]) -> dict:
    """{(role, kind, dataset, scenario, model): {row: (gain over source, rows)}}, in points,
    each method's macro-F1 averaged over the seeds first."""
    values: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    rows: dict[tuple, int] = {}
    for record in records:
        spec = record["spec"]
        role = cell_role.get((spec["dataset"], spec["scenario"]))
        if role is None:
            continue
        kind = "domain split" if spec["scenario"] == "natural" else "label shift"
        key = (role, kind, spec["dataset"], spec["scenario"], spec["model"])
        values[key][row_name(record)].append(100 * record["metrics"]["macro_f1"])
        rows[key] = record["rows"]
    out = {}
    for key, by_row in values.items():
        if "source" not in by_row:
            continue
        # rows run on fewer seeds than the unadapted model are left out (a partial run)
        seeds = len(by_row["source"])
        means = {name: float(np.mean(v)) for name, v in by_row.items() if len(v) == seeds}
        base = means["source"]
        fixed = [means[n] for n in ("source", "balanced", "oracle_prior") if n in means]
        means["best fixed rule"] = max(fixed)
        out[key] = ({name: value - base for name, value in means.items()}, rows[key])
    return out


def add_better_of(table: dict, anchor: str, shares: list[float], delays: list[int]) -> str:
    """Add to every case of ``table`` the row ``better of adaptable / anchor`` per share and
    delay: the larger of the two rows' gains (each a mean over seeds). Returns its base name."""
    name = f"better of adaptable / {anchor}"
    for row, _ in table.values():
        for delay in delays:
            for share in shares:
                tail = f" {100 * share:g}% d{delay}"
                if share and f"adaptable{tail}" in row and f"{anchor}{tail}" in row:
                    row[f"{name}{tail}"] = max(row[f"adaptable{tail}"], row[f"{anchor}{tail}"])
    return name


def summary_table(
    table: dict,
    shares: list[float],
    delays: list[int],
    variants: list[str] = (),
    anchors: list[str] = ANCHORS,
) -> str:
    """The per-role, per-kind summary (see the module docstring); ``variants``: the row names
    of the adapter's variants (``adaptable[...]``); ``anchors``: the anchors' row names (and
    any derived rows, such as :func:`add_better_of`'s)."""
    methods = ("adaptable", *variants, *anchors)
    order = ["adaptable", *variants, "best fixed rule"]
    for delay in delays:
        for share in shares:
            if share:
                order += [f"{m} {100 * share:g}% d{delay}" for m in methods]
    lines = [
        "| role | kind | row | cases | mean gain | worst | won / lost | long cases | "
        "long mean | long worst |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple[str, str], list] = defaultdict(list)
    for (role, kind, *_), (row, n_rows) in table.items():
        groups[(role, kind)].append((row, n_rows))
    for (role, kind), items in sorted(groups.items()):
        for name in order:
            values = [(row[name], n) for row, n in items if name in row]
            if not values:
                continue
            gain = np.array([v for v, _ in values])
            long = np.array([v for v, n in values if n >= LONG_STREAM * 64])
            long_part = (
                f"{len(long)} | {long.mean():+.2f} | {long.min():+.2f}" if len(long) else "0 | |"
            )
            lines.append(
                f"| {role} | {kind} | {name} | {len(gain)} | {gain.mean():+.2f} | "
                f"{gain.min():+.2f} | {(gain > 0.5).sum()} / {(gain < -0.5).sum()} | "
                f"{long_part} |"
            )
    return "\n".join(lines)


def case_table(table: dict, names: list[str]) -> str:
    """Every case's gains over the unadapted model for the named rows."""
    head = "| role | dataset | scenario | model | batches | " + " | ".join(names) + " |"
    lines = [head, "|" + "---|" * (5 + len(names))]
    for (role, _, dataset, scenario, model), (row, n_rows) in sorted(table.items()):
        cells = " | ".join(f"{row[n]:+.1f}" if n in row else "" for n in names)
        lines.append(f"| {role} | {dataset} | {scenario} | {model} | {n_rows / 64:.0f} | {cells} |")
    return "\n".join(lines)


def estimate_table(chosen: list, models: list[str], seeds: list[int], stored: dict) -> str:
    """How far the report's unlabelled estimate of the stream's macro-F1 (the expected metric
    under the posteriors, over the whole stream, without labels) is from the realised one, for
    the unadapted model and for the adapter; per role and kind: cases within 2 points."""
    from adaptable.experiments.drift_figure import experiment_report

    errors: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    lines = ["| role | dataset | scenario | model | seed | source est / real | adapter est / real |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    for role, dataset, scenario in chosen:
        kind = "domain split" if scenario == "natural" else "label shift"
        for model in models:
            for seed in seeds:
                keys = {n: ExperimentSpec(dataset, scenario, model, n, seed).key
                        for n in ("source", "adaptable")}  # fmt: skip
                if not all(k in stored for k in keys.values()):
                    continue
                spec = ExperimentSpec(dataset, scenario, model, "adaptable", seed)
                report = experiment_report(spec, RunContext()).report
                last = report.iloc[-1]
                real = {n: 100 * stored[k]["metrics"]["macro_f1"] for n, k in keys.items()}
                est = {"source": 100 * last["estimated_source_so_far"],
                       "adaptable": 100 * last["estimated_adapter_so_far"]}  # fmt: skip
                errors[(role, kind)].append(
                    (est["source"] - real["source"], est["adaptable"] - real["adaptable"])
                )
                lines.append(
                    f"| {role} | {dataset} | {scenario} | {model} | {seed} | "
                    f"{est['source']:.1f} / {real['source']:.1f} | "
                    f"{est['adaptable']:.1f} / {real['adaptable']:.1f} |"
                )
    head = ["| role | kind | runs | source within 2 | adapter within 2 | adapter mean abs error |",
            "|---|---|---|---|---|---|"]  # fmt: skip
    for (role, kind), pairs in sorted(errors.items()):
        e = np.abs(np.array(pairs))
        head.append(
            f"| {role} | {kind} | {len(e)} | {(e[:, 0] <= 2).mean():.0%} | "
            f"{(e[:, 1] <= 2).mean():.0%} | {e[:, 1].mean():.2f} |"
        )
    return "\n".join(head) + "\n\n" + "\n".join(lines)


def costs(batches: int = 200, repeats: int = 3) -> str:
    """Per-batch cost of ``predict_proba`` without labels and with 5 % of labels, and
    ``partial_fit``'s cost per row beside the model's own inference, on a two-class synthetic
    stream with a logistic-regression model (best of ``repeats``)."""
    from sklearn.linear_model import LogisticRegression

    from adaptable import AdapTable

    rng = np.random.default_rng(0)
    x = rng.normal(size=(5000 + batches * 64, 4))
    y = (x[:, 0] + rng.normal(size=len(x)) > 0.8).astype(int)
    model = LogisticRegression().fit(x[:4000], y[:4000])
    stream, labels = x[5000:], y[5000:]

    def run(share: float) -> tuple[float, float]:
        method = AdapTable(random_state=0).fit(model, x[:4000], y[:4000], x[4000:5000],
                                               y[4000:5000])  # fmt: skip
        predict = learn = 0.0
        learned = 0
        for t in range(batches):
            rows = np.arange(t * 64, (t + 1) * 64)
            tick = time.perf_counter()
            method.predict_proba(stream[rows])
            predict += time.perf_counter() - tick
            if share:
                chosen = rows[:: int(1 / share)]
                tick = time.perf_counter()
                method.partial_fit(stream[chosen], labels[chosen], rows=chosen)
                learn += time.perf_counter() - tick
                learned += len(chosen)
        return 1e3 * predict / batches, 1e6 * learn / max(learned, 1)

    def inference(rows: int) -> float:
        tick = time.perf_counter()
        for _ in range(500):
            model.predict_proba(stream[:rows])
        return 1e6 * (time.perf_counter() - tick) / 500 / rows

    plain = min(run(0.0)[0] for _ in range(repeats))
    fed = [run(0.05) for _ in range(repeats)]
    return (
        f"predict_proba without labels: {plain:.3f} ms per batch of 64\n"
        f"predict_proba with 5 % of labels: {min(f[0] for f in fed):.3f} ms per batch\n"
        f"partial_fit: {min(f[1] for f in fed):.1f} us per row (calls of 4 rows)\n"
        f"model inference: {inference(4):.1f} us per row in calls of 4 rows, "
        f"{inference(64):.1f} in calls of 64"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default_roles = ["generality", "development", "confirmation", "holdout"]
    parser.add_argument("--roles", nargs="*", default=default_roles)
    parser.add_argument("--cases", nargs="*", default=[], help="extra cases by name")
    parser.add_argument(
        "--only", nargs="*", default=None, help="run only these cases (dataset names)"
    )
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--shares", nargs="+", type=float, default=[0.01, 0.05, 0.2])
    parser.add_argument(
        "--variants",
        nargs="*",
        default=[],
        help="the adapter with other options too, e.g. fallback=plugin (name=value[,...])",
    )
    parser.add_argument("--delays", nargs="+", type=int, default=[10, 0])
    parser.add_argument(
        "--anchors",
        nargs="+",
        default=list(ANCHORS),
        help="anchors run on the labels, name[option=value,...] (default: the label-only ones;"
        f" the model-updating ones: {', '.join(UPDATING_ANCHORS)})",
    )
    parser.add_argument(
        "--better-of",
        default=None,
        help="add the per-case better of adaptable and this anchor (with its options) as a row",
    )
    parser.add_argument(
        "--scenarios", nargs="*", default=None, help="keep only these scenarios (e.g. natural)"
    )
    parser.add_argument("--results", default="feedback-results")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--out", default=None, help="write the tables to this Markdown file")
    parser.add_argument("--table-only", action="store_true", help="no runs: the stored records")
    parser.add_argument(
        "--estimates",
        action="store_true",
        help="also rerun the unlabelled adapter per cell for the report's performance estimate",
    )
    parser.add_argument("--costs", action="store_true", help="only measure the costs")
    args = parser.parse_args()
    if args.costs:
        print(costs())
        return
    if set(args.roles) & set(SEALED_ROLES):
        parser.error(f"the sealed roles {SEALED_ROLES} are kept for judging a design")
    started = time.perf_counter()
    variants = [parse_variant(text) for text in args.variants]
    variant_names = [method_name({"method": "adaptable", "options": v}) for v in variants]
    anchors = [parse_anchor(text) for text in args.anchors]
    anchor_names = [method_name({"method": n, "options": o}) for n, o in anchors]
    chosen = cells(args.roles, args.cases)
    if args.only is not None:
        chosen = [cell for cell in chosen if cell[1] in args.only]
    if args.scenarios is not None:
        chosen = [cell for cell in chosen if cell[2] in args.scenarios]
    store = ResultStore(args.results)
    specs = [
        spec
        for model in args.models
        for seed in args.seeds
        for cell in chosen
        for spec in specs_for(cell, model, seed, args.shares, args.delays, variants, anchors)
    ]
    if args.table_only:
        stored = store.completed()
        records = [stored[s.key] for s in specs if s.key in stored]
    else:
        print(f"{len(specs)} experiments over {len(chosen)} cells; store {store.path}", flush=True)
        executor = LocalExecutor(args.workers) if args.workers > 1 else None
        try:
            result = run_sweep(specs, store, context=RunContext(), executor=executor)
        finally:
            if executor is not None:
                executor.close()
        records = result.records
        for key, error in result.failures.items():
            print(f"FAILED {key}: {error.splitlines()[-1] if error else ''}")
    cell_role = {(d, s): role for role, d, s in chosen}
    table = gains(records, cell_role)
    if args.better_of:
        anchor_names.append(add_better_of(table, args.better_of, args.shares, args.delays))
    names = ["adaptable", *variant_names, "best fixed rule"] + [
        f"{m} {100 * share:g}% d{delay}"
        for delay in args.delays
        for share in args.shares
        if share
        for m in ("adaptable", *variant_names, *anchor_names)
    ]
    text = (
        f"{len(records)} records, {len(table)} cases (case = dataset, scenario, model; "
        f"seeds {args.seeds}); macro-F1 gain over the unadapted model, points\n\n"
        + summary_table(table, args.shares, args.delays, variant_names, anchor_names)
        + "\n\n"
        + case_table(table, names)
        + f"\n\nwall time {time.perf_counter() - started:.0f} s\n"
    )
    if args.estimates:
        stored = store.completed()
        text += "\n\n" + estimate_table(chosen, args.models, args.seeds, stored) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()

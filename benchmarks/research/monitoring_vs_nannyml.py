"""Monitoring without labels, beside NannyML's CBPE: how far each estimate of the unadapted
model's performance over a whole stream is from the realised one, and how often each says
that the model fell. Writes a Markdown file; asserts nothing.

Each (role, source model, case, scenario) of ``--roles`` x ``--models`` (the benchmark's domain
splits, ``natural``, and with ``--kinds label`` its pure label shifts) is adapted without
labels by the default ``AdapTable()`` twice, with ``objective="macro_f1"`` and
``objective="accuracy"`` (the runner's loop, seed ``--seed``). Over the whole stream, for the
unadapted model (argmax):

- ``report``: what the report gave before the covariate-weighted estimate, the
  ``calibration_free_source_so_far`` column where the moment test accepts pure label shift,
  else ``estimated_source_so_far`` (the posteriors');
- ``summary``: ``drift_summary().source_estimate`` (its ``estimate_kind``: calibration-free on
  label shifts the moment test accepts, covariate-weighted on the covariate shifts where the
  weights leave enough rows, the posteriors' otherwise);
- ``CBPE``: NannyML's confidence-based performance estimation, reference = the held-out
  rows (``dataset.valid``) with their labels and the model's probabilities, analysis = the
  stream's probabilities, one chunk (``problem_type="classification_multiclass"``: its F1 is
  the macro-F1, also on two classes).

NannyML runs in its own virtual environment (``--nannyml-python``; the project's is left
alone): this script writes each stream's probabilities to ``--work-dir`` and runs itself there
with ``--cbpe``, which imports only numpy, pandas and nannyml. Without that interpreter the
CBPE columns are left out, with a message.

Verdicts against the 5-point rule (``--tolerance``): a stream is truly degraded where the
realised objective fell more than the tolerance below the held-out level (the unadapted model's
on the held-out rows). A point estimate flags a stream where it lies more than the tolerance
below that level (CBPE's and the summary's source estimate, each against the unadapted model's
truth); ``drift_summary().verdict`` (about the adapter, against the adapter's truth) is
counted as degraded / holding / undetermined / unverified.

Usage:
    python -m venv /work/venv-nannyml && /work/venv-nannyml/bin/pip install nannyml statsmodels
    OMP_NUM_THREADS=1 python benchmarks/research/monitoring_vs_nannyml.py --data-dir DIR \\
        --cache-dir DIR [--roles development confirmation holdout] [--models logreg xgboost] \\
        [--kinds domain label] [--nannyml-python /work/venv-nannyml/bin/python] \\
        [--work-dir DIR] [--out docs/research/monitoring_vs_nannyml_tables.md]

A rerun with the same ``--work-dir`` skips the streams it holds (``--tables-only``: none
run, the tables of those held).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

TOLERANCE = 0.05


# ---------------------------------------------------------------------- CBPE (nannyml venv)
def run_cbpe(work_dir: Path) -> None:
    """In NannyML's environment: CBPE on every ``*.npz`` of ``work_dir``, its estimates (whole
    stream) and timings written to ``cbpe.json``."""
    import nannyml
    import pandas as pd

    out = {}
    for path in sorted(work_dir.glob("*.npz")):
        data = np.load(path)
        n_classes = data["heldout_proba"].shape[1]
        names = [f"p{k}" for k in range(n_classes)]

        def frame(proba: np.ndarray, labels: np.ndarray, names: list = names) -> pd.DataFrame:
            table = pd.DataFrame(proba, columns=names)
            table["y_pred"] = proba.argmax(axis=1)
            table["y_true"] = labels
            return table

        started = time.perf_counter()
        binary = n_classes == 2
        # NannyML's multiclass CBPE refuses two classes: the binary one, whose F1 is the
        # positive class's; its estimated confusion matrix gives the macro-F1
        estimator = nannyml.CBPE(
            y_pred_proba=names[1] if binary else dict(enumerate(names)),
            y_pred="y_pred",
            y_true="y_true",
            metrics=["confusion_matrix", "accuracy"] if binary else ["f1", "accuracy"],
            problem_type=f"classification_{'binary' if binary else 'multiclass'}",
            chunk_number=1,
        )
        estimator.fit(frame(data["heldout_proba"], data["heldout_labels"]))
        analysis = frame(data["stream_proba"], data["stream_labels"]).drop(columns="y_true")
        result = estimator.estimate(analysis).filter(period="analysis").to_df()
        seconds = time.perf_counter() - started

        def read(column: str, result: pd.DataFrame = result) -> float:
            return float(result[(column, "value")].iloc[-1])

        if binary:
            tp, fp = read("true_positive"), read("false_positive")
            fn, tn = read("false_negative"), read("true_negative")
            macro_f1 = (tp / (tp + (fp + fn) / 2) + tn / (tn + (fp + fn) / 2)) / 2
        else:
            macro_f1 = read("f1")
        out[path.stem] = {"macro_f1": macro_f1, "accuracy": read("accuracy"), "s": seconds}
    (work_dir / "cbpe.json").write_text(json.dumps(out))


# ---------------------------------------------------------------------- the package's side
def one_stream(spec_args: tuple, objective: str, context: Any) -> dict[str, Any]:
    """Adapt one stream with ``objective``; the estimates and truths of its whole stream."""
    from adaptable.core.decision.rules import confusion, score
    from adaptable.experiments.experiment import fit_experiment, predict_stream, shifted_stream
    from adaptable.experiments.spec import ExperimentSpec

    name, scenario, model, seed = spec_args
    spec = ExperimentSpec(name, scenario, model, "adaptable", seed, {"objective": objective})
    fitted = fit_experiment(spec, context)
    stream = shifted_stream(fitted, scenario, context)
    started = time.perf_counter()
    adapted, labels = [], []
    for batch in predict_stream(fitted, stream):
        adapted.append(batch.proba.argmax(axis=1))
        labels.append(batch.y)
    adapt_seconds = time.perf_counter() - started
    method, n_classes = fitted.method, int(fitted.dataset.n_classes)
    y = np.concatenate(labels)
    stream_proba = fitted.model.predict_proba(stream.X)
    started = time.perf_counter()
    summary = method.drift_summary(tolerance=TOLERANCE)
    summary_seconds = time.perf_counter() - started
    last = method.report().iloc[-1]
    free = float(last["calibration_free_source_so_far"])
    report = free if np.isfinite(free) else float(last["estimated_source_so_far"])

    def realised(predicted: np.ndarray) -> float:
        return float(score(confusion(y, predicted, n_classes), objective))

    return {
        "rows": len(y),
        "batches": len(adapted),
        "reference": summary.reference,
        "real_source": realised(stream_proba.argmax(axis=1)),
        "real_adapter": realised(np.concatenate(adapted)),
        "report": report,
        "summary": summary.source_estimate,
        "summary_adapter": summary.estimate,
        "kind": summary.estimate_kind,
        "verdict": summary.verdict,
        "effective_rows": summary.effective_rows,
        "note": summary.covariate_note,
        "adapt_s": adapt_seconds,
        "summary_s": summary_seconds,
        "arrays": {
            "heldout_proba": fitted.model.predict_proba(fitted.dataset.valid.X),
            "heldout_labels": np.asarray(fitted.dataset.valid.y),
            "stream_proba": stream_proba,
            "stream_labels": y,
        },
    }


def streams(args: argparse.Namespace) -> list[tuple[str, str, str, str]]:
    """(role, case, scenario, model) of the run, in the roles' table order."""
    from adaptable.datasets.benchmark_cases import by_role
    from adaptable.experiments.benchmark import role_cases

    chosen = []
    for role in args.roles:
        for name, scenario in role_cases(by_role(role)):
            kind = "domain" if scenario == "natural" else "label"
            if kind in args.kinds and (not args.only or name in args.only):
                chosen += [(role, name, scenario, model) for model in args.models]
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cbpe", default=None, help=argparse.SUPPRESS)  # the nannyml side
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--roles", nargs="+", default=["development", "confirmation", "holdout"])
    parser.add_argument("--models", nargs="+", default=["logreg", "xgboost"])
    parser.add_argument("--kinds", nargs="+", default=["domain", "label"])
    parser.add_argument("--only", nargs="+", default=None, help="only these cases")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--nannyml-python", default="/work/venv-nannyml/bin/python")
    parser.add_argument("--work-dir", default=None, help="where the probabilities go")
    parser.add_argument("--out", default="docs/research/monitoring_vs_nannyml_tables.md")
    parser.add_argument(
        "--tables-only", action="store_true", help="tabulate the streams --work-dir holds"
    )
    args = parser.parse_args()
    if args.cbpe:
        run_cbpe(Path(args.cbpe))
        return
    warnings.filterwarnings("ignore")
    from adaptable.experiments.components import RunContext

    context = RunContext(data_dir=args.data_dir, cache_dir=args.cache_dir, device="cpu")
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="monitoring_"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    done_file = work / "streams.jsonl"  # each stream's figures, as it finishes
    results = [json.loads(line) for line in done_file.open()] if done_file.exists() else []
    finished = {r["key"] for r in results}
    for role, name, scenario, model in [] if args.tables_only else streams(args):
        key = f"{role}__{name}__{scenario}__{model}"
        if key in finished:
            continue
        row: dict[str, Any] = {"role": role, "case": name, "scenario": scenario, "model": model}
        for objective in ("macro_f1", "accuracy"):
            one = one_stream((name, scenario, model, args.seed), objective, context)
            arrays = one.pop("arrays")
            row[objective] = one
        np.savez(work / f"{key}.npz", **arrays)
        row["key"] = key
        results.append(row)
        with done_file.open("a") as out:
            out.write(json.dumps(row) + "\n")
        m = row["macro_f1"]
        print(f"{role} {name} {scenario} {model}: rows {m['rows']}, macro-F1 real "
              f"{100 * m['real_source']:.1f} report {100 * m['report']:.1f} summary "
              f"{100 * m['summary']:.1f} ({m['kind']}, {m['verdict']})", flush=True)  # fmt: skip
    package_seconds = time.perf_counter() - started
    cbpe = cbpe_estimates(args.nannyml_python, work)
    text = tables(results, cbpe, package_seconds, args)
    Path(args.out).write_text(text)
    print(text)


def cbpe_estimates(python: str, work: Path) -> dict[str, dict[str, float]] | None:
    """CBPE's estimates by stream key from NannyML's environment; ``None`` (with a message)
    where that interpreter is missing or fails."""
    if not Path(python).exists():
        print(f"CBPE left out: no NannyML interpreter at {python} (--nannyml-python).")
        return None
    command = [python, __file__, "--cbpe", str(work)]
    quiet = {**os.environ, "NML_DISABLE_USAGE_LOGGING": "1"}  # nothing leaves the machine
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=quiet)
    if done.returncode:
        print(f"CBPE left out: NannyML's run failed:\n{done.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads((work / "cbpe.json").read_text())


# ---------------------------------------------------------------------- the tables
def tables(
    results: list[dict[str, Any]],
    cbpe: dict[str, dict[str, float]] | None,
    package_seconds: float,
    args: argparse.Namespace,
) -> str:
    """The Markdown: a summary per role and kind, then every stream."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in results:
        kind = "domain split" if row["scenario"] == "natural" else "label shift"
        groups[(row["role"], kind)].append(row)
        groups[("all", kind)].append(row)
    tolerance = TOLERANCE
    lines = [
        f"Command: `python benchmarks/research/monitoring_vs_nannyml.py --roles "
        f"{' '.join(args.roles)} --models {' '.join(args.models)} --kinds "
        f"{' '.join(args.kinds)} --seed {args.seed}`",
        "",
        "Mean absolute error (points) of the unadapted model's objective over the whole "
        "stream; `within 2`: the share of streams within 2 points. CBPE: NannyML's"
        f"{' (not run: no NannyML interpreter)' if cbpe is None else ''}.",
        "",
        "| role | kind | streams | macro-F1: report / summary / CBPE | within 2 | accuracy: "
        "report / summary / CBPE | within 2 |",
        "|---|---|---|---|---|---|---|",
    ]

    def cbpe_of(row: dict[str, Any], objective: str) -> float:
        return np.nan if cbpe is None else cbpe.get(row["key"], {}).get(objective, np.nan)

    for (role, kind), rows in groups.items():
        cells = []
        for objective in ("macro_f1", "accuracy"):
            errors = np.array([
                [100 * abs(r[objective][k] - r[objective]["real_source"])
                 for k in ("report", "summary")]
                + [100 * abs(cbpe_of(r, objective) - r[objective]["real_source"])]
                for r in rows
            ])  # fmt: skip
            cells.append(" / ".join(f"{e:.1f}" for e in np.nanmean(errors, axis=0)))
            cells.append(" / ".join(f"{m:.0%}" for m in np.nanmean(errors <= 2, axis=0)))
        lines.append(f"| {role} | {kind} | {len(rows)} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Verdicts, macro-F1, against the {100 * tolerance:.0f}-point rule. Point flags: "
        "streams whose estimate of the unadapted model lies more than the tolerance below the "
        "held-out level, against its realised fall (hits of truly degraded / false alarms "
        "among truly holding). Summary verdict: `drift_summary().verdict` (the adapter) "
        "against the adapter's realised fall: degraded (hits / false alarms), holding "
        "(right / wrong), undetermined, unverified.",
        "",
        "| role | kind | degraded / holding (model) | point flags: summary | CBPE | report | "
        "degraded / holding (adapter) | verdict degraded | holding | undetermined | "
        "unverified |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (role, kind), rows in groups.items():
        m = [r["macro_f1"] for r in rows]
        truth = np.array([x["reference"] - x["real_source"] > tolerance for x in m])
        truth_adapter = np.array([x["reference"] - x["real_adapter"] > tolerance for x in m])

        def flags(values: list[float], m: list = m, truth: np.ndarray = truth) -> str:
            flagged = np.array(
                [x["reference"] - v > tolerance for x, v in zip(m, values, strict=True)]
            )
            return f"{(flagged & truth).sum()} / {(flagged & ~truth).sum()}"

        cbpe_flags = flags([cbpe_of(r, "macro_f1") for r in rows]) if cbpe else "-"
        verdicts = np.array([x["verdict"] for x in m])
        lines.append(
            f"| {role} | {kind} | {truth.sum()} / {(~truth).sum()} | "
            f"{flags([x['summary'] for x in m])} | {cbpe_flags} | "
            f"{flags([x['report'] for x in m])} | "
            f"{truth_adapter.sum()} / {(~truth_adapter).sum()} | "
            f"{((verdicts == 'degraded') & truth_adapter).sum()} / "
            f"{((verdicts == 'degraded') & ~truth_adapter).sum()} | "
            f"{((verdicts == 'holding') & ~truth_adapter).sum()} / "
            f"{((verdicts == 'holding') & truth_adapter).sum()} | "
            f"{(verdicts == 'undetermined').sum()} | {(verdicts == 'unverified').sum()} |"
        )
    adapt = sum(r[o]["adapt_s"] for r in results for o in ("macro_f1", "accuracy"))
    summary = sum(r[o]["summary_s"] for r in results for o in ("macro_f1", "accuracy"))
    cbpe_s = sum(v["s"] for v in cbpe.values()) if cbpe else float("nan")
    lines += [
        "",
        f"Time: the package's side {package_seconds:.0f} s in all (fits, adapting "
        f"{adapt:.0f} s, `drift_summary()` {summary:.1f} s over {2 * len(results)} streams, "
        f"the covariate weights' fit included); CBPE fit + estimate {cbpe_s:.1f} s.",
        "",
        "Every stream (macro-F1, points): held-out level, realised (model / adapter), report, "
        "summary (kind, effective rows), CBPE, verdict; accuracy: realised, report, summary, "
        "CBPE.",
        "",
        "| role | case | scenario | model | rows | held-out | realised | report | summary "
        "(kind, effective rows) | CBPE | verdict | acc. realised | report | summary | CBPE |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        m, a = r["macro_f1"], r["accuracy"]
        effective = m["effective_rows"]
        lines.append(
            f"| {r['role']} | {r['case']} | {r['scenario']} | {r['model']} | {m['rows']} | "
            f"{100 * m['reference']:.1f} | {100 * m['real_source']:.1f} / "
            f"{100 * m['real_adapter']:.1f} | {100 * m['report']:.1f} | "
            f"{100 * m['summary']:.1f} ({m['kind']}"
            f"{'' if not np.isfinite(effective) else f', {effective:.0f}'}) | "
            f"{100 * cbpe_of(r, 'macro_f1'):.1f} | {m['verdict']} | "
            f"{100 * a['real_source']:.1f} | {100 * a['report']:.1f} | "
            f"{100 * a['summary']:.1f} | {100 * cbpe_of(r, 'accuracy'):.1f} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()

"""Golden outputs: record what the package computes, then check a later commit computes the same.

A refactoring that moves code must not change a single output. This script runs a fixed set of
cases (both presets, the labelled path, the report and summary, save / load and pickling
mid-stream, every registered method through the experiment runner) and stores every output; a
second run compares bit for bit and lists each difference.

Usage (from the repository root, with the data directory set as for the tests)::

    git stash; git checkout <recorded-commit>
    python tools/golden.py record golden.pkl          # a few minutes on 2 cores
    git checkout -; git stash pop
    python tools/golden.py compare golden.pkl         # prints "compared N differences 0"

Both runs must use the same source-model cache (``--cache-dir``, default ``.golden-cache``) so
that the deep source model is the same file. Timings are left out; everything else is compared
exactly (NaN equal to NaN).
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import pickle
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

BATCH = 64
#: fields of a runner record that differ from run to run by design (when, where, how fast)
VOLATILE = ("timing", "finished_at", "started_at", "pid", "host")
BATCHES = 40


def _sklearn_pipeline(kind: str, ds: Any) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from adaptable import datasets

    head = (
        LogisticRegression(max_iter=500)
        if kind == "logreg"
        else HistGradientBoostingClassifier(max_iter=60, random_state=0)
    )
    return make_pipeline(datasets.Encoder(ds.numerical, ds.categorical), head).fit(
        ds.train.X, ds.train.y
    )


def _batches(X: pd.DataFrame, n: int = BATCHES) -> Iterator[pd.DataFrame]:
    for i in range(n):
        yield X.iloc[i * BATCH : (i + 1) * BATCH]


def _stream(
    adapter: Any, X: pd.DataFrame, y: np.ndarray, share: float, delay: int, n: int = BATCHES
) -> list:
    """Predict ``BATCHES`` batches; with ``share`` > 0 hand that share of each batch's labels
    ``delay`` batches later by row id, as the benchmark's protocol does."""
    rng = np.random.default_rng(0)
    pending: list[tuple[int, np.ndarray]] = []
    out = []
    for b, batch in enumerate(_batches(X, n)):
        for _due, ids in [p for p in pending if p[0] <= b]:
            adapter.partial_fit(None, y[ids], rows=ids)
        pending = [p for p in pending if p[0] > b]
        out.append(adapter.predict_proba(batch))
        if share > 0:
            picked = np.flatnonzero(rng.random(len(batch)) < share) + b * BATCH
            pending.append((b + delay, picked))
    return out


def _adapter_outputs(
    tag: str,
    adapter: Any,
    model: Any,
    X: pd.DataFrame,
    y: np.ndarray,
    share: float,
    delay: int,
    out: dict[str, Any],
) -> None:
    from adaptable import AdapTable

    first = pickle.loads(pickle.dumps(adapter))
    out[f"{tag}/stream"] = _stream(adapter, X, y, share, delay)
    learns = getattr(adapter, "preset", "recommended") != "paper"
    if learns:
        out[f"{tag}/report"] = adapter.report()
        out[f"{tag}/summary"] = adapter.drift_summary()
    # mid-stream: pickle, and save / load, then continue
    _stream(first, X, y, share, delay, BATCHES // 2)
    copy = pickle.loads(pickle.dumps(first))
    out[f"{tag}/pickled_continue"] = [
        copy.predict_proba(b) for b in _batches(X.iloc[BATCHES // 2 * BATCH :], 10)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "adapter.safetensors"
        # (model updates that learnt are no tensors: the file holds the rest, loading without
        # them; the adapters of earlier versions had none)
        first.save(path, **({"drop_updates": True} if hasattr(first, "updates_") else {}))
        loaded = AdapTable.load(path, model)
    out[f"{tag}/loaded_continue"] = [
        loaded.predict_proba(b) for b in _batches(X.iloc[BATCHES // 2 * BATCH :], 10)
    ]
    out[f"{tag}/state"] = repr(first.state)


def library_cases(data_dir: str | None) -> dict[str, Any]:
    from adaptable import AdapTable, datasets

    out: dict[str, Any] = {}
    names = ["hospital_readmission"]
    if data_dir and (Path(data_dir) / "heloc").exists():
        names.append("heloc")
    for name in names:
        ds = datasets.load(name, data_dir=data_dir, seed=0)
        X, y = ds.test.X.reset_index(drop=True), ds.test.y
        for kind in ("logreg", "hgb"):
            model = _sklearn_pipeline(kind, ds)
            fit = (model, ds.train.X, ds.train.y, ds.valid.X, ds.valid.y)
            for share, delay in ((0.0, 0), (0.05, 10), (0.2, 0)):
                tag = f"{name}/{kind}/default/share{share}/delay{delay}"
                adapter = AdapTable(random_state=0).fit(*fit)
                _adapter_outputs(tag, adapter, model, X, y, share, delay, out)
            for objective in ("balanced_accuracy", "accuracy"):
                adapter = AdapTable(objective=objective, random_state=0).fit(*fit)
                _adapter_outputs(f"{name}/{kind}/{objective}", adapter, model, X, y, 0.05, 10, out)
            paper = AdapTable(preset="paper", epochs=3, random_state=0).fit(*fit)
            _adapter_outputs(f"{name}/{kind}/paper", paper, model, X, y, 0.0, 0, out)
            logits = np.log(np.clip(model.predict_proba(X.iloc[:BATCH]), 1e-12, None))
            adapter = AdapTable(random_state=0).fit(*fit)
            out[f"{name}/{kind}/adapt_logits"] = adapter.adapt_logits(logits, X.iloc[:BATCH])
    for classes in (2, 3):
        ds = datasets.make_shift_dataset(n_classes=classes, n_test=BATCHES * BATCH, seed=1)
        model = _sklearn_pipeline("logreg", ds)
        fit = (model, ds.train.X, ds.train.y, ds.valid.X, ds.valid.y)
        X, y = ds.test.X.reset_index(drop=True), ds.test.y
        for share in (0.0, 0.2):
            adapter = AdapTable(random_state=0).fit(*fit)
            _adapter_outputs(
                f"synthetic{classes}/default/share{share}", adapter, model, X, y, share, 2, out
            )
        paper = AdapTable(preset="paper", random_state=0).fit(*fit)
        _adapter_outputs(f"synthetic{classes}/paper", paper, model, X, y, 0.0, 0, out)
    return out


def runner_cases(data_dir: str | None, cache_dir: str) -> dict[str, Any]:
    from adaptable import methods

    try:
        from adaptable.experiments.components import RunContext
        from adaptable.experiments.experiment import run_experiment
    except ImportError:
        # a commit recorded before the runner was split: a module today's package does not
        # have, so imported by name (the script-resolution test checks today's names only)
        runner = importlib.import_module("adaptable.experiments.runner")
        RunContext, run_experiment = runner.RunContext, runner.run_experiment
    from adaptable.experiments.spec import ExperimentSpec

    context = RunContext(data_dir=data_dir, cache_dir=cache_dir, device="cpu")
    out: dict[str, Any] = {}
    specs = [
        ExperimentSpec("hospital_readmission", "natural", "mlp", name, 0)
        for name in methods.names()
        if not name.startswith("labelled_")
    ]
    specs += [
        ExperimentSpec(
            "hospital_readmission",
            "natural",
            "mlp",
            name,
            0,
            feedback_share=0.05,
            feedback_delay=10,
        )
        for name in ("adaptable", "labelled_recalibration", "labelled_prior", "labelled_online")
    ]
    specs += [
        ExperimentSpec("hospital_readmission", scenario, "mlp", "adaptable", 0)
        for scenario in ("gaussian", "prior_0.1", "categorical")
    ]
    specs.append(
        ExperimentSpec(
            "hospital_readmission", "natural", "mlp", "adaptable", 0, options={"preset": "paper"}
        )
    )
    for spec in specs:
        record = run_experiment(spec, context)
        for volatile in VOLATILE:
            record.pop(volatile, None)
        out[f"runner/{spec.key}"] = record
    return out


def _differences(a: Any, b: Any, where: str) -> Iterator[str]:
    if isinstance(a, pd.DataFrame) or isinstance(b, pd.DataFrame):
        if not (
            isinstance(a, pd.DataFrame)
            and isinstance(b, pd.DataFrame)
            and a.equals(b)
            and list(a.columns) == list(b.columns)
            and list(a.dtypes) == list(b.dtypes)
        ):
            yield where
        return
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a_, b_ = np.asarray(a), np.asarray(b)
        same = (
            a_.shape == b_.shape
            and a_.dtype == b_.dtype
            and (np.array_equal(a_, b_, equal_nan=a_.dtype.kind == "f"))
        )
        if not same:
            yield where
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted((set(a) | set(b)) - set(VOLATILE), key=str):
            if key not in a or key not in b:
                yield f"{where}/{key} (only in one)"
            else:
                yield from _differences(a[key], b[key], f"{where}/{key}")
        return
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            yield f"{where} (length {len(a)} != {len(b)})"
            return
        for i, (x, z) in enumerate(zip(a, b, strict=True)):
            yield from _differences(x, z, f"{where}[{i}]")
        return
    if hasattr(a, "__dataclass_fields__") and type(a).__name__ == type(b).__name__:
        yield from _differences(vars(a), vars(b), where)
        return
    if isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b):
        return
    if type(a).__name__ != type(b).__name__ or a != b:
        yield where


def collect(data_dir: str | None, cache_dir: str, quick: bool) -> dict[str, Any]:
    out = library_cases(data_dir)
    if not quick:
        out.update(runner_cases(data_dir, cache_dir))
    return out


def _dumps(value: dict[str, Any]) -> bytes:
    # dataclasses of the package are stored as plain dicts so that a file recorded before a
    # class moved still reads after it
    def plain(v: Any) -> Any:
        if hasattr(v, "__dataclass_fields__"):
            return {"__class__": type(v).__name__, **{k: plain(x) for k, x in vars(v).items()}}
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        return v

    buffer = io.BytesIO()
    pickle.dump(plain(value), buffer)
    return buffer.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("record", "compare"))
    parser.add_argument("file", type=Path)
    parser.add_argument("--data-dir", default=os.environ.get("ADAPTABLE_DATA_DIR"))
    parser.add_argument("--cache-dir", default=".golden-cache")
    parser.add_argument("--quick", action="store_true", help="library cases only (no runner)")
    parser.add_argument("--all", action="store_true", help="print every difference, not 50")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    outputs = pickle.loads(_dumps(collect(args.data_dir, args.cache_dir, args.quick)))
    if args.action == "record":
        args.file.write_bytes(pickle.dumps(outputs))
        print(f"recorded {len(outputs)} outputs in {args.file}")
        return 0
    reference = pickle.loads(args.file.read_bytes())
    differences = list(_differences(reference, outputs, ""))
    for line in differences if args.all else differences[:50]:
        print("differs:", line)
    print(f"compared {len(reference)} differences {len(differences)}")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())

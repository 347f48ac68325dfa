"""Hostile save files: does ``AdapTable.load`` refuse each edit naming a field, or load an
adapter that behaves exactly as the unedited file's?

A default-preset adapter (fitted on a scikit-learn pipeline over
``datasets.make_shift_dataset(seed=0)``) streams 15 batches of 64 rows, with the labels of half
the rows of the first 12 batches sent back by row id, and is saved. Each probe edits a copy of
the file and loads it:

* ``remove``: each tensor removed in turn;
* ``meta``: each metadata field removed, and each value (each entry of an object) changed to
  another plausible value;
* ``nan`` / ``inf``: NaN, then +inf, written into the first entry of each float tensor;
* ``flip``: one byte of each tensor's data flipped.

An adapter that loads streams 25 more batches (1,600 rows, a quarter of each batch's labels
sent back after it), then reads the report and sends a conflicting label for a row labelled
before the save; the outcome is ``identical`` where every output, the report and the refusal
equal the unedited file's, ``refused`` where load raised a ``ValueError`` naming a field, and
``other`` otherwise (an error of another kind, an error after load, or changed outputs).

``--digest strip`` removes the file's digest before each edit, so that the field checks alone
are measured (a file written before the digest existed). ``docs/research/hostile_input.md``
quotes the output.

Usage::

    python benchmarks/research/hostile_load_probe.py [--digest keep|strip] [--verbose]
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from adaptable import AdapTable, datasets

BATCH = 64
SAVED_BATCHES = 15
LABELLED_BATCHES = 12
LATER_BATCHES = 25
#: other values of the string fields where any other would simply be refused
STRING_ALTERNATIVES = {
    "objective": ["accuracy", "balanced_accuracy"],
    "preset": ["paper"],
    "calibrator": ["gnn", "temperature"],
    "fallback": ["plugin"],
    "stream_check": ["model"],
    "prior_reference": ["model"],
    "output": ["proba"],
    "rule": ["balanced"],
}


def _model_and_stream() -> tuple[Any, datasets.ShiftDataset, pd.DataFrame, np.ndarray]:
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    ds = datasets.make_shift_dataset(seed=0)
    columns = ColumnTransformer(
        [
            ("num", StandardScaler(), ds.numerical),
            ("cat", OneHotEncoder(handle_unknown="ignore"), ds.categorical),
        ]
    )
    model = make_pipeline(columns, LogisticRegression(max_iter=200))
    model.fit(ds.train.X, ds.train.y)
    X = pd.concat([ds.test.X] * 5, ignore_index=True)
    y = np.concatenate([ds.test.y] * 5)
    return model, ds, X, y


def _saved(folder: Path) -> tuple[Path, Any, pd.DataFrame, np.ndarray]:
    model, ds, X, y = _model_and_stream()
    method = AdapTable(random_state=0, update="none").fit(
        model, ds.train.X, ds.train.y, ds.valid.X, ds.valid.y
    )
    for b in range(SAVED_BATCHES):
        method.predict_proba(X.iloc[b * BATCH : (b + 1) * BATCH])
        if b < LABELLED_BATCHES:
            rows = np.arange(b * BATCH, (b + 1) * BATCH)[::2]
            method.partial_fit(X.iloc[rows], y[rows], rows=rows)
    path = folder / "saved.safetensors"
    method.save(path)
    return path, model, X, y


def _behaviour(method: AdapTable, X: pd.DataFrame, y: np.ndarray) -> dict[str, Any]:
    """Everything the probe compares: the later outputs, the report, the batches counted, and
    whether a conflicting label for a row labelled before the save is refused."""
    outputs = []
    start = SAVED_BATCHES * BATCH
    for b in range(LATER_BATCHES):
        rows = np.arange(start + b * BATCH, start + (b + 1) * BATCH)
        outputs.append(method.predict_proba(X.iloc[rows]))
        labelled = rows[::4]
        method.partial_fit(X.iloc[labelled], y[labelled], rows=labelled)
    report = method.report()
    try:
        method.partial_fit(X.iloc[[0]], 1 - y[[0]], rows=np.array([0]))
        conflict = "accepted"
    except ValueError:
        conflict = "refused"
    return {
        "outputs": np.concatenate(outputs),
        "report": report,
        "n_batches": method.state.n_batches,
        "conflict": conflict,
    }


def _read(path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    from safetensors import safe_open

    with safe_open(str(path), framework="numpy") as handle:
        tensors = {k: handle.get_tensor(k) for k in handle.keys()}  # noqa: SIM118
        meta = json.loads(handle.metadata()["adaptable"])
    return tensors, meta


def _write(path: Path, tensors: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
    from safetensors.numpy import save_file

    save_file(tensors, str(path), metadata={"adaptable": json.dumps(meta)})


Edit = Callable[[dict[str, np.ndarray], dict[str, Any]], None]


def _other_values(value: Any, key: str) -> list[Any]:
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [value + 1, value * 3 + 5]
    if isinstance(value, float):
        return [value * 1.5 + 0.01, -value - 1.0]
    if isinstance(value, str):
        return [v for v in STRING_ALTERNATIVES.get(key, []) if v != value] or [value + "x"]
    if value is None:
        return [0]
    if isinstance(value, list):
        changed = [*value]
        if value and isinstance(value[0], int | float) and not isinstance(value[0], bool):
            changed[0] = value[0] * 1.5 + 1
        elif value and isinstance(value[0], str):
            changed[0] = value[0] + "x"
        else:
            changed = list(reversed(value))
        return [value[:-1], changed] if value else [[0]]
    return []


def _set(meta: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        meta = meta[key]
    meta[path[-1]] = value


def _drop(meta: dict[str, Any], path: tuple[str, ...]) -> None:
    for key in path[:-1]:
        meta = meta[key]
    del meta[path[-1]]


def _meta_edits(meta: dict[str, Any], path: tuple[str, ...] = ()) -> Iterator[tuple[str, Edit]]:
    for key, value in meta.items():
        where = (*path, key)
        name = ".".join(where)
        if key == "digest":
            continue
        yield f"meta -{name}", lambda t, m, w=where: _drop(m, w)
        if isinstance(value, dict):
            yield from _meta_edits(value, where)
            continue
        for other in _other_values(value, key):
            yield (
                f"meta {name}={json.dumps(other)[:40]}",
                lambda t, m, w=where, v=other: _set(m, w, v),
            )


def _flip(array: np.ndarray) -> np.ndarray:
    raw = np.ascontiguousarray(array).view(np.uint8).copy()
    raw.reshape(-1)[raw.size // 2] ^= 0x10
    return raw.view(array.dtype).reshape(array.shape)


def _with_first(array: np.ndarray, value: float) -> np.ndarray:
    changed = array.copy()
    changed.reshape(-1)[0] = value
    return changed


def edits(tensors: dict[str, np.ndarray], meta: dict[str, Any]) -> Iterator[tuple[str, Edit]]:
    """Every probe: (family and name, edit of the tensors and metadata in place)."""
    for key in sorted(tensors):
        yield f"remove {key}", lambda t, m, k=key: t.pop(k)
    yield from _meta_edits(meta)
    for key in sorted(tensors):
        if tensors[key].dtype.kind == "f":
            for label, value in (("nan", np.nan), ("inf", np.inf)):
                yield (
                    f"{label} {key}",
                    lambda t, m, k=key, v=value: t.__setitem__(k, _with_first(t[k], v)),
                )
    for key in sorted(tensors):
        yield f"flip {key}", lambda t, m, k=key: t.__setitem__(k, _flip(t[k]))


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return (
        np.array_equal(a["outputs"], b["outputs"])
        and a["report"].equals(b["report"])
        and a["n_batches"] == b["n_batches"]
        and a["conflict"] == b["conflict"]
    )


def probe(strip_digest: bool, verbose: bool) -> collections.Counter[str]:
    """Run every probe; print one line per probe with ``verbose``; the outcome counts."""
    counts: collections.Counter[str] = collections.Counter()
    with tempfile.TemporaryDirectory() as folder:
        saved, model, X, y = _saved(Path(folder))
        tensors, meta = _read(saved)
        if strip_digest:
            meta.pop("digest", None)
            _write(saved, tensors, meta)
        reference = _behaviour(AdapTable.load(saved, model=model), X, y)
        for name, edit in edits(tensors, meta):
            copy_t, copy_m = dict(tensors), json.loads(json.dumps(meta))
            edit(copy_t, copy_m)
            path = Path(folder) / "edited.safetensors"
            _write(path, copy_t, copy_m)
            try:
                loaded = AdapTable.load(path, model=model)
            except ValueError as err:
                field = re.search(r"field '([^']*)'", str(err))
                outcome = "refused" if field else "other: unnamed ValueError"
                detail = field.group(1) if field else str(err)[:100]
            except Exception as err:  # noqa: BLE001 - a probe records every failure
                outcome, detail = "other: error at load", f"{type(err).__name__}: {err}"[:100]
            else:
                try:
                    behaviour = _behaviour(loaded, X, y)
                except Exception as err:  # noqa: BLE001
                    outcome, detail = "other: error after load", f"{type(err).__name__}"
                else:
                    same = _same(reference, behaviour)
                    outcome = "identical" if same else "other: changed outputs"
                    changed = int((behaviour["outputs"] != reference["outputs"]).any(1).sum())
                    detail = "" if same else f"{changed} rows differ, {behaviour['conflict']}"
            counts[name.split()[0] + " " + outcome] += 1
            counts[outcome] += 1
            if verbose or outcome.startswith("other"):
                print(f"{name:60s} {outcome:28s} {detail}", flush=True)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--digest", choices=("keep", "strip"), default="keep")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    counts = probe(args.digest == "strip", args.verbose)
    for key in sorted(counts):
        print(f"{key}: {counts[key]}")


if __name__ == "__main__":
    main()

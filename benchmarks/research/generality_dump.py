"""Research cache of the generality benchmark: one compressed .npz per case x model x seed.

Lets candidate decision rules be evaluated offline in seconds, on exactly what the experiment
runner would feed a method: the cached source models (``models.train`` with the on-disk cache,
through the runner's own ``source_model``) and the runner's test stream in its order
(``shifts.apply(scenario, dataset, seed)``, batches of 64).

Usage::

    nice -n 10 python benchmarks/research/generality_dump.py OUT_DIR [--cases heloc:natural ...]
        [--models logreg xgboost mlp] [--seeds 0 1 2] [--data-dir DIR] [--cache-dir DIR]
        [--overwrite]

A case is ``dataset:scenario`` (default: every case of ``adaptable reproduce generality``,
``adaptable.experiments.benchmark.TABLES["generality"].cases``, the natural HELOC / Readmission shifts and the
Adult / COMPAS splits first). Existing files are skipped unless ``--overwrite``. Each file is
written to a temporary name in OUT_DIR and renamed, so a reader never sees a partial file.

File name: ``<dataset>__<scenario>__<model>__seed<seed>.npz``. Load with
``np.load(path)`` (no pickle needed). Keys (C classes; "codes" are the Encoder's per-column
category codes, -1 = a category unseen in train + valid; "numerical" are the numerical
columns standardised by the experiments' Encoder, fitted on train + valid, NaN -> 0):

==================  =====================  ====================================================
key                 dtype, shape           content
==================  =====================  ====================================================
train_logits        float64 (n_tr, C)      source model logits on the train split
train_labels        int64 (n_tr,)          train labels
train_numerical     float32 (n_tr, n_num)  standardised numerical features of train
train_codes         int32 (n_tr, n_cat)    category codes of train
valid_logits        float64 (n_va, C)      logits on the (in-domain) validation split
valid_labels        int64 (n_va,)          validation labels
valid_numerical     float32 (n_va, n_num)  standardised numerical features of valid
valid_codes         int32 (n_va, n_cat)    category codes of valid
test_logits         float64 (n, C)         logits on the test STREAM, in stream order,
                                           computed batch by batch (64) as the runner does
test_labels         int64 (n,)             stream labels
test_numerical      float32 (n, n_num)     stream numerical features, standardised
test_codes          int32 (n, n_cat)       stream category codes
test_rows           int64 (n,)             position of each stream row in its split
                                           (``test``, or ``id_test`` for the prior_* cases)
source_prior        float64 (C,)           p_s: train + valid label frequencies
n_classes           int64 ()               C
numerical_names     str (n_num,)           numerical column names (order of *_numerical)
categorical_names   str (n_cat,)           categorical column names (order of *_codes)
meta                str ()                 JSON: dataset, scenario, model, seed, batch_size,
                                           classes, n_classes, numerical / categorical names,
                                           categories (levels per categorical column, code =
                                           index), source_prior, stream_split, stream_info,
                                           split sizes, model cache key, package version
==================  =====================  ====================================================

Prints one line per file and the total wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from adaptable.experiments.benchmark import MODELS, TABLES
from adaptable.experiments.components import RunContext, get_dataset, source_model
from adaptable.experiments.spec import BATCH_SIZE

#: datasets dumped first (the lead reads them while the rest is written): a name, or a prefix
#: ending in "_"
PRIORITY = ("heloc", "hospital_readmission", "adult_", "compas_")


def ordered_cases(cases: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Natural HELOC / Readmission, then Adult / COMPAS, then the other domain splits, then the
    label shifts; table order within each."""

    def rank(case: tuple[str, str]) -> int:
        dataset, scenario = case
        for i, key in enumerate(PRIORITY):
            matches = dataset.startswith(key) if key.endswith("_") else dataset == key
            if matches and scenario == "natural":
                return i
        return len(PRIORITY) + (0 if scenario == "natural" else 1)

    return sorted(cases, key=rank)  # stable: table order within a rank


def _features(encoder: Any, X: Any) -> tuple[np.ndarray, np.ndarray]:
    n_num = len(encoder.numerical_)
    numerical = encoder.transform(X)[:, :n_num].astype(np.float32)
    codes = encoder.category_codes(X).astype(np.int32)
    return numerical, codes


def _logits(logit_fn: Any, X: Any) -> np.ndarray:
    return np.asarray(logit_fn(X), dtype=np.float64)


def dump_one(
    dataset_name: str, scenario: str, model_name: str, seed: int, context: RunContext
) -> dict[str, np.ndarray]:
    """The arrays of one file (see the module docstring)."""
    from adaptable import datasets, shifts
    from adaptable.framework.model_adapter import as_logit_function

    dataset = get_dataset(dataset_name, context)  # the runner's per-process memo
    model = source_model(dataset_name, model_name, seed, context)
    logit_fn = as_logit_function(model)
    encoder = datasets.fit_encoder(dataset)
    stream = shifts.apply(scenario, dataset, seed)

    out: dict[str, np.ndarray] = {}
    for split_name in ("train", "valid"):
        split = getattr(dataset, split_name)
        out[f"{split_name}_logits"] = _logits(logit_fn, split.X)
        out[f"{split_name}_labels"] = np.asarray(split.y, dtype=np.int64)
        out[f"{split_name}_numerical"], out[f"{split_name}_codes"] = _features(encoder, split.X)
    batches = [_logits(logit_fn, X_batch) for X_batch, _ in stream.batches(BATCH_SIZE)]
    out["test_logits"] = np.concatenate(batches)
    out["test_labels"] = np.asarray(stream.y, dtype=np.int64)
    out["test_numerical"], out["test_codes"] = _features(encoder, stream.X)
    out["test_rows"] = np.asarray(stream.rows, dtype=np.int64)
    prior = dataset.source_prior()
    out["source_prior"] = np.asarray(prior, dtype=np.float64)
    out["n_classes"] = np.asarray(dataset.n_classes, dtype=np.int64)
    out["numerical_names"] = np.asarray([str(c) for c in encoder.numerical_], dtype=str)
    out["categorical_names"] = np.asarray([str(c) for c in encoder.categorical_], dtype=str)
    cache = getattr(model, "cache_info", {}) or {}
    meta = {
        "dataset": dataset_name,
        "scenario": scenario,
        "model": model_name,
        "seed": seed,
        "batch_size": BATCH_SIZE,
        "classes": list(dataset.classes),
        "n_classes": dataset.n_classes,
        "numerical": [str(c) for c in encoder.numerical_],
        "categorical": [str(c) for c in encoder.categorical_],
        "categories": [list(c) for c in encoder.categories_],
        "source_prior": prior.tolist(),
        "stream_split": str(stream.info.get("split", "test")),
        "stream_info": {k: v for k, v in stream.info.items() if _jsonable(v)},
        "sizes": {
            "train": len(dataset.train.y),
            "valid": len(dataset.valid.y),
            "id_test": None if dataset.id_test is None else len(dataset.id_test.y),
            "test": len(dataset.test.y),
            "stream": len(stream),
        },
        "domain_split": dataset.domain_split,
        "model_cache_key": cache.get("key"),
        "adaptable_version": _version(),
    }
    out["meta"] = np.asarray(json.dumps(meta))
    if out["test_logits"].shape != (len(stream), dataset.n_classes):
        raise ValueError(f"test logits have shape {out['test_logits'].shape}")
    return out


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except TypeError:
        return False
    return True


def _version() -> str:
    import adaptable

    return adaptable.__version__


def write_atomically(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """``np.savez_compressed`` to a temporary file in the same folder, then rename."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            np.savez_compressed(stream, **arrays)
        os.chmod(temporary, 0o644)  # mkstemp's 0600 would hide the file from other users
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def file_name(dataset: str, scenario: str, model: str, seed: int) -> str:
    """``<dataset>__<scenario>__<model>__seed<seed>.npz``."""
    return f"{dataset}__{scenario}__{model}__seed{seed}.npz"


def _parse_case(text: str) -> tuple[str, str]:
    dataset, _, scenario = text.partition(":")
    return dataset, scenario or "natural"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path, help="output folder (created)")
    parser.add_argument(
        "--cases", nargs="+", default=None, metavar="DATASET[:SCENARIO]",
        help="default: every generality case",
    )  # fmt: skip
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--cache-dir", default=None, help="source-model cache (default: shared)")
    parser.add_argument("--overwrite", action="store_true")
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    cases = [_parse_case(c) for c in args.cases] if args.cases else list(TABLES["generality"].cases)
    context = RunContext(data_dir=args.data_dir, cache_dir=args.cache_dir, threads=1)
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    written = skipped = 0
    failures: list[str] = []
    for dataset, scenario in ordered_cases(cases):
        for model in args.models:
            for seed in args.seeds:
                path = args.out / file_name(dataset, scenario, model, seed)
                if path.exists() and not args.overwrite:
                    skipped += 1
                    continue
                tick = time.perf_counter()
                try:
                    arrays = dump_one(dataset, scenario, model, seed, context)
                except Exception as err:  # noqa: BLE001 - one bad case must not end the dump
                    failures.append(f"{path.name}: {type(err).__name__}: {err}")
                    print(f"FAILED {path.name}: {type(err).__name__}: {err}", flush=True)
                    continue
                write_atomically(path, arrays)
                written += 1
                print(
                    f"{path.name}: stream {len(arrays['test_labels'])} rows, "
                    f"{time.perf_counter() - tick:.1f} s",
                    flush=True,
                )
    print(
        f"{written} written, {skipped} already there, {len(failures)} failed; wall time "
        f"{time.perf_counter() - started:.1f} s"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

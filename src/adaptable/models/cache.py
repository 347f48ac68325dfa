"""On-disk cache of trained source models, so that a sweep trains each one once.

Layout: ``<root>/<dataset>/<model>/seed<seed>-<digest>/`` holding ``meta.json`` (the encoder,
the hyper-parameters, the training record) plus the weights in a non-pickle format:
``weights.safetensors`` for torch modules, XGBoost UBJSON, CatBoost ``.cbm``, LogReg's
coefficients as JSON. kNN and RandomForest are refitted (deterministically) from the cached
hyper-parameters, which is cheap next to their search. Nothing is ever unpickled.

The digest covers the dataset's name and a fingerprint of its train / valid data, the model,
the seed, the code version (:data:`CODE_VERSION` and the package version) and every training
option, so that a change to any of them misses the cache instead of loading a stale model.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from adaptable.datasets import ShiftDataset

CACHE_ENV = "ADAPTABLE_CACHE_DIR"

#: Bump when a change to the models or the training routine changes what training produces.
CODE_VERSION = "1"

META_FILE = "meta.json"
WEIGHTS_FILE = "weights.safetensors"


def default_cache_dir() -> Path:
    """``$ADAPTABLE_CACHE_DIR``, else the per-user cache directory ``adaptable/models``."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("adaptable")) / "models"


def dataset_fingerprint(dataset: ShiftDataset) -> str:
    """SHA-256 over the train and valid splits (values, column names, dtypes, labels, classes).

    The test split is left out on purpose: training never sees it.
    """
    digest = hashlib.sha256()
    digest.update(json.dumps([dataset.name, list(dataset.classes)]).encode())
    for split in (dataset.train, dataset.valid):
        digest.update(json.dumps([str(c) for c in split.X.columns]).encode())
        digest.update(json.dumps([str(t) for t in split.X.dtypes]).encode())
        rows = pd.util.hash_pandas_object(split.X, index=False).to_numpy()
        digest.update(rows.tobytes())
        digest.update(np.ascontiguousarray(split.y, dtype=np.int64).tobytes())
    return digest.hexdigest()


def code_version() -> str:
    """The version string that enters the cache key."""
    from adaptable import __version__

    return f"{__version__}+models.{CODE_VERSION}"


def cache_key(
    dataset: ShiftDataset,
    model: str,
    seed: int,
    options: dict[str, Any],
    version: str | None = None,
) -> str:
    """Relative directory of one trained model in the cache."""
    payload = {
        "dataset": dataset.name,
        "fingerprint": dataset_fingerprint(dataset),
        "model": model,
        "seed": seed,
        "code_version": version or code_version(),
        "options": options,
    }
    digest = hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in dataset.name)
    return f"{safe}/{model}/seed{seed}-{digest[:16]}"


def read_meta(directory: Path) -> dict[str, Any] | None:
    """The entry's metadata, or ``None`` when the entry is absent or incomplete."""
    path = directory / META_FILE
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


class EntryWriter:
    """Write an entry into a temporary sibling directory and move it into place at the end,
    so that an interrupted run never leaves a half-written entry that looks complete."""

    def __init__(self, target: Path) -> None:
        self.target = target
        target.parent.mkdir(parents=True, exist_ok=True)
        self.directory = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))

    def commit(self, meta: dict[str, Any]) -> Path:
        """Write ``meta.json`` last and publish the entry."""
        (self.directory / META_FILE).write_text(json.dumps(meta, indent=1, default=_json_default))
        if self.target.exists():
            # Another process published the same entry first; theirs is as good as ours.
            shutil.rmtree(self.directory, ignore_errors=True)
        else:
            os.replace(self.directory, self.target)
        return self.target

    def abort(self) -> None:
        """Drop the temporary directory."""
        shutil.rmtree(self.directory, ignore_errors=True)


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"Not JSON-serialisable: {type(value)!r}")

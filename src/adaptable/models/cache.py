"""On-disk cache of trained source models, so that a sweep trains each one once.

Layout: ``<root>/<dataset>/<model>/seed<seed>-<digest>/`` holding ``meta.json`` (the encoder,
the hyper-parameters, the training record) plus the weights in a non-pickle format:
``weights.safetensors`` for torch modules, XGBoost UBJSON, CatBoost ``.cbm``, LogReg's
coefficients as JSON. kNN and RandomForest are refitted (deterministically) from the cached
hyper-parameters, which is cheap next to their search. Nothing is ever unpickled.

The digest covers the dataset's name and a fingerprint of its train / valid data, the model,
the seed, the code version (:data:`CODE_VERSION` and the package version) and every training
option, so that a change to any of them misses the cache instead of loading a stale model.

Integrity: ``sha256.json``, written last, holds the SHA-256 of every other file of the entry.
:func:`read_meta` checks them before anything is loaded; an entry that fails (a flipped byte in
the weights, an edited ``meta.json``, a file missing, metadata that is not UTF-8 JSON) gives a
:class:`CacheIntegrityWarning` naming the file and the cache, the model is retrained, and the new
entry replaces the broken one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import warnings
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
CHECKSUM_FILE = "sha256.json"


class CacheIntegrityWarning(UserWarning):
    """A cache entry failed its integrity check; the model is retrained and the entry replaced."""


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
    """The entry's metadata, or ``None`` when the entry is absent or fails its integrity check.

    A present but broken entry also gives a :class:`CacheIntegrityWarning` that names the file
    and the cache, and says that the model will be retrained.
    """
    if not directory.is_dir():
        return None
    try:
        return _verified_meta(directory)
    except _Broken as err:
        warnings.warn(
            f"Model cache entry {str(directory)!r} in the cache {str(_cache_root(directory))!r} "
            f"is broken: {err}. Retraining the model and replacing the entry.",
            CacheIntegrityWarning,
            stacklevel=3,
        )
        return None


class _Broken(Exception):
    """Why an entry cannot be trusted (message names the file)."""


def _cache_root(directory: Path) -> Path:
    # Entries live at <root>/<dataset>/<model>/<seed-digest>.
    return directory.parents[2] if len(directory.parents) > 2 else directory.parent


def _verified_meta(directory: Path) -> dict[str, Any]:
    """Check every file against ``sha256.json`` and parse ``meta.json``; raises :class:`_Broken`."""
    checksums = _read_json(directory / CHECKSUM_FILE)
    files = checksums.get("files") if isinstance(checksums, dict) else None
    if not isinstance(files, dict) or META_FILE not in files:
        raise _Broken(f"{CHECKSUM_FILE} does not list the entry's files")
    for name, expected in files.items():
        path = directory / str(name)
        if Path(str(name)).name != name or not path.is_file():
            raise _Broken(f"{name} is missing")
        if sha256_of(path) != expected:
            raise _Broken(f"{name} does not match its SHA-256 in {CHECKSUM_FILE} (changed on disk)")
    meta = _read_json(directory / META_FILE)
    if not isinstance(meta, dict):
        raise _Broken(f"{META_FILE} is not a JSON object")
    return meta


def _read_json(path: Path) -> Any:
    if not path.is_file():
        raise _Broken(f"{path.name} is missing (an incomplete entry, or one from an older version)")
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as err:
        raise _Broken(f"{path.name} is not UTF-8 text ({err.reason} at byte {err.start})") from err
    except json.JSONDecodeError as err:
        raise _Broken(f"{path.name} is not valid JSON (truncated?): {err}") from err
    except OSError as err:
        raise _Broken(f"{path.name} cannot be read: {err}") from err


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class EntryWriter:
    """Write an entry into a temporary sibling directory and move it into place at the end,
    so that an interrupted run never leaves a half-written entry that looks complete."""

    def __init__(self, target: Path) -> None:
        self.target = target
        target.parent.mkdir(parents=True, exist_ok=True)
        self.directory = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))

    def commit(self, meta: dict[str, Any]) -> Path:
        """Write ``meta.json``, then the checksums of every file, and publish the entry.

        An entry already in place is kept when it passes its integrity check (another process
        published the same model first; theirs is as good as ours) and replaced when it does not,
        so that a broken entry is repaired by the retraining it caused.
        """
        (self.directory / META_FILE).write_text(json.dumps(meta, indent=1, default=_json_default))
        files = {
            path.name: sha256_of(path)
            for path in sorted(self.directory.iterdir())
            if path.is_file()
        }
        (self.directory / CHECKSUM_FILE).write_text(json.dumps({"files": files}, indent=1))
        if self.target.exists():
            try:
                _verified_meta(self.target)
            except _Broken:
                self._replace_broken()
            else:
                shutil.rmtree(self.directory, ignore_errors=True)
                return self.target
        try:
            os.replace(self.directory, self.target)
        except OSError:
            # Another process published in between (a non-empty directory is in the way).
            shutil.rmtree(self.directory, ignore_errors=True)
        return self.target

    def _replace_broken(self) -> None:
        # Move the broken entry aside first: os.replace cannot overwrite a non-empty directory.
        trash = Path(tempfile.mkdtemp(prefix=".broken-", dir=self.target.parent))
        try:
            os.replace(self.target, trash / "entry")
        except OSError:
            pass  # someone else moved it already
        shutil.rmtree(trash, ignore_errors=True)

    def abort(self) -> None:
        """Drop the temporary directory."""
        shutil.rmtree(self.directory, ignore_errors=True)


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"Not JSON-serialisable: {type(value)!r}")

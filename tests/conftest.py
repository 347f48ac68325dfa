"""Shared fixtures. Real-data fixtures skip with a reason when the raw file is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from adaptable import datasets

# Two cores in CI: keep torch from oversubscribing them.
torch.set_num_threads(1)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The data directory CI points at ../shared/data (via $ADAPTABLE_DATA_DIR)."""
    value = os.environ.get(datasets.DATA_DIR_ENV)
    if not value or not Path(value).is_dir():
        pytest.skip(f"${datasets.DATA_DIR_ENV} is not set to an existing directory")
    return Path(value)


@pytest.fixture(scope="session")
def heloc(data_dir: Path) -> datasets.ShiftDataset:
    """HELOC from the data directory (skips when the FICO file is absent)."""
    try:
        return datasets.load("heloc", data_dir=data_dir)
    except datasets.DataFileError as err:
        pytest.skip(f"HELOC raw file absent: {err}")


@pytest.fixture(scope="session")
def readmission() -> datasets.ShiftDataset:
    """Hospital Readmission from the embedded copy (always present)."""
    return datasets.load("hospital_readmission")


@pytest.fixture(scope="session")
def synthetic() -> datasets.ShiftDataset:
    """A small mixed-type task with label and covariate shift."""
    return datasets.make_shift_dataset(seed=0)


def _frame_logreg(ds: datasets.ShiftDataset):
    """Logistic regression on a frame (numbers scaled, categories one-hot), fitted on ds.train."""
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    columns = ColumnTransformer(
        [
            ("num", StandardScaler(), ds.numerical),
            ("cat", OneHotEncoder(handle_unknown="ignore"), ds.categorical),
        ]
    )
    return make_pipeline(columns, LogisticRegression(max_iter=200)).fit(ds.train.X, ds.train.y)


@pytest.fixture(scope="session")
def frame_logreg():
    """The function ``dataset -> fitted frame logistic regression`` (a model any method takes)."""
    return _frame_logreg


def _edited_copy(path: Path, tmp_path: Path, edit) -> Path:
    """A copy of an AdapTable file with its tensors and metadata changed by
    ``edit(tensors, meta)``."""
    import json

    from safetensors import safe_open
    from safetensors.numpy import save_file

    with safe_open(str(path), framework="numpy") as handle:
        tensors = {k: handle.get_tensor(k) for k in handle.keys()}  # noqa: SIM118
        meta = json.loads(handle.metadata()["adaptable"])
    edit(tensors, meta)
    out = tmp_path / "edited.safetensors"
    save_file(tensors, str(out), metadata={"adaptable": json.dumps(meta)})
    return out


@pytest.fixture(scope="session")
def edited_copy():
    """The function ``(path, tmp_path, edit) -> path of an edited copy`` of an AdapTable file."""
    return _edited_copy


@pytest.fixture(scope="session")
def benchmark_script():
    """A function: a script of ``benchmarks/`` (the product benchmarks) or
    ``benchmarks/research/`` (the one-off research scripts) by name, imported as a module (the
    scripts are no package; each is loaded once per session)."""
    import functools
    import importlib.util

    benchmarks = Path(__file__).resolve().parents[1] / "benchmarks"
    folders = (benchmarks, benchmarks / "research")

    @functools.cache
    def load(name: str):
        found = [folder / f"{name}.py" for folder in folders if (folder / f"{name}.py").exists()]
        assert len(found) == 1, f"benchmark script {name!r}: found {found} in {folders}"
        spec = importlib.util.spec_from_file_location(name, found[0])
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load


@pytest.fixture(autouse=True)
def _close_figures():
    """Figures a test leaves open are closed after it (pyplot keeps every open figure, and
    warns past twenty of them)."""
    yield
    import sys

    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")

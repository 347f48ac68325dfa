"""Check a core install (``pip install adaptable-tta``, no extras) end to end.

Run it with the interpreter of the environment to check, from any folder::

    python tools/core_install_check.py

On the embedded Hospital Readmission data, with a scikit-learn pipeline on the raw DataFrame:
the default preset fits, adapts a stream of batches, takes late labels (``partial_fit`` with
rows and by row id), reports, summarises the drift, saves, loads and continues the stream
exactly where the saved adapter does; ``adaptable drift`` reads the saved file. Throughout,
none of the extras' libraries (torch, XGBoost, CatBoost, matplotlib, Ray, tqdm) may be
imported. Where torch is not installed, the features that need it must say which extra brings
them. Prints what it checked and ends with ``core install check: OK``; any failure raises.
"""

from __future__ import annotations

import importlib.util
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from adaptable.optional import EXTRA_MODULES

BATCH = 64
#: training rows of the scikit-learn model
MODEL_ROWS = 5000
#: batches of the stream before the save, and after it (each adapter continues the same rows)
BEFORE_SAVE, AFTER_SAVE = 20, 5


def extras_loaded() -> list[str]:
    return [name for name in EXTRA_MODULES if name in sys.modules]


def main() -> None:
    start = time.perf_counter()
    from adaptable import AdapTable, datasets

    assert not extras_loaded(), f"import adaptable loaded {extras_loaded()}"
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    ds = datasets.load("hospital_readmission")  # embedded: no data directory needed
    # The model on a share of the training rows (a few seconds rather than a minute); the
    # adapter sees them all.
    pipe = make_pipeline(
        datasets.Encoder(ds.numerical, ds.categorical), LogisticRegression(max_iter=1000)
    ).fit(ds.train.X.iloc[:MODEL_ROWS], ds.train.y[:MODEL_ROWS])
    adapter = AdapTable(random_state=0).fit(pipe, ds.train.X, ds.train.y, ds.valid.X, ds.valid.y)
    print(
        f"fit: AdapTable() on a scikit-learn Pipeline, {len(ds.train.y)} + {len(ds.valid.y)} rows"
    )

    X, y = ds.test.X, np.asarray(ds.test.y)

    def batch(i: int) -> tuple[object, np.ndarray]:
        return X.iloc[i * BATCH : (i + 1) * BATCH], y[i * BATCH : (i + 1) * BATCH]

    for i in range(BEFORE_SAVE):
        proba = adapter.predict_proba(batch(i)[0])
        assert proba.shape == (BATCH, len(adapter.classes_)), proba.shape
        np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-9)
        if i == 5:  # late labels: the first 64 rows with their features, the next 64 by row id
            adapter.partial_fit(batch(0)[0], batch(0)[1], rows=np.arange(BATCH))
            adapter.partial_fit(None, batch(1)[1], rows=np.arange(BATCH, 2 * BATCH))
    report = adapter.report()
    assert len(report) == BEFORE_SAVE, len(report)
    summary = adapter.drift_summary()
    print(f"stream: {BEFORE_SAVE} batches of {BATCH}, 128 late labels; report {report.shape}")
    print(f"drift summary: {summary}".splitlines()[0])

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "adapter.safetensors"
        # the model updates have learnt from the labels: a pickle keeps them, a save file the rest
        adapter.save(path, drop_updates=True)
        loaded = AdapTable.load(path, model=pipe)
        assert loaded.report().equals(adapter.report())
        restored = pickle.loads(pickle.dumps(adapter))
        for i in range(BEFORE_SAVE, BEFORE_SAVE + AFTER_SAVE):
            np.testing.assert_array_equal(
                restored.predict_proba(batch(i)[0]), adapter.predict_proba(batch(i)[0])
            )
        print(
            f"save / load: {path.stat().st_size} bytes (without the model updates); a pickled "
            "copy continues the stream identically"
        )
        # the monitoring command reads the file without the model
        drift = subprocess.run(
            [sys.executable, "-m", "adaptable", "drift", str(path), "--json"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert drift.returncode == 0 and '"verdict"' in drift.stdout, drift.stderr[-2000:]
        print("adaptable drift: read the saved adapter")

    assert not extras_loaded(), f"the core path loaded {extras_loaded()}"
    print("no extra's library imported:", ", ".join(EXTRA_MODULES))

    if importlib.util.find_spec("torch") is None:
        missing_torch_messages(AdapTable, ds)
    else:
        print("torch is installed: the missing-extra messages were not checked here")
    print(f"core install check: OK ({time.perf_counter() - start:.1f} s)")


def missing_torch_messages(AdapTable: type, ds: object) -> None:
    """What a core install says where a feature needs the ``torch`` extra."""
    from sklearn.dummy import DummyClassifier

    X = ds.train.X[ds.numerical]
    model = DummyClassifier(strategy="prior").fit(X, ds.train.y)
    attempts = {
        "AdapTable(preset='paper').fit": lambda: AdapTable(preset="paper").fit(
            model, X, ds.train.y
        ),
        "from adaptable import models": lambda: __import__("adaptable.models"),
    }
    for what, attempt in attempts.items():
        try:
            attempt()
        except ImportError as err:
            assert "pip install 'adaptable-tta[torch]'" in str(err), str(err)
            print(f"{what}: {err}")
        else:
            raise AssertionError(f"{what} worked without torch")


if __name__ == "__main__":
    main()

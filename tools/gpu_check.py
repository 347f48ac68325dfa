"""A check for a machine with a CUDA device (not part of CI, which has none).

Trains an MLP and an FT-Transformer on the synthetic shift task with ``device="cuda"``, adapts
their test stream with both presets batch by batch, and prints macro-F1 beside the CPU's
figures it should match to rounding. The default preset then adapts the stream again with 5 %
of each batch's labels arriving 10 batches late, half by row id alone
(``partial_fit(None, y, rows=ids)``: the kept scores) and half with their rows
(``partial_fit(X, y)``: the model on the device scores them again), saved and loaded half way.
Run the CUDA tests too::

    python -m pytest -q tests/core/test_model_adapter_contract.py -rs
    python tools/gpu_check.py            # DEVICE=cpu for the CPU reference
"""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np
from sklearn.metrics import f1_score

from adaptable import AdapTable, datasets
from adaptable.models import registry


def main() -> None:
    device = os.environ.get("DEVICE", "cuda")
    ds = datasets.make_shift_dataset(n_train=4000, n_valid=1000, n_test=4000, seed=0)
    y = ds.test.y
    with tempfile.TemporaryDirectory() as cache:
        for name in ("mlp", "ft_transformer"):
            start = time.perf_counter()
            model = registry.train(
                name, ds, seed=0, use_cache=False, quiet=True, device=device, cache_dir=cache
            )
            where = next(model.module.parameters()).device
            print(f"{name} trained on {where} in {time.perf_counter() - start:.1f} s")
            source = np.asarray(model.predict_proba(ds.test.X)).argmax(axis=1)
            for preset in ("default", "paper"):
                method = AdapTable(preset=preset, random_state=0)
                method.fit(model, ds.train.X, ds.train.y, ds.valid.X, ds.valid.y)
                out = np.concatenate(
                    [method.predict_proba(ds.test.X.iloc[i : i + 64]) for i in range(0, len(y), 64)]
                )
                assert np.allclose(out.sum(axis=1), 1.0) and np.isfinite(out).all()
                print(
                    f"  {preset}: source macro-F1 {100 * f1_score(y, source, average='macro'):.1f},"
                    f" adapted {100 * f1_score(y, out.argmax(axis=1), average='macro'):.1f}"
                )
            out = with_late_labels(model, ds, cache)
            print(f"  default, 5 % of labels 10 batches late: adapted {out:.1f}")


def with_late_labels(model, ds, folder: str, batch: int = 64, delay: int = 10) -> float:
    """Macro-F1 of the default preset with 5 % of each batch's labels ``delay`` batches late
    (even batches' labels by row id, odd batches' with their rows), saved and loaded half way."""
    method = AdapTable(random_state=0).fit(model, ds.train.X, ds.train.y, ds.valid.X, ds.valid.y)
    X, y = ds.test.X, np.asarray(ds.test.y)
    rng = np.random.default_rng(0)
    starts = list(range(0, len(y), batch))
    chosen = [start + rng.choice(min(batch, len(y) - start), 3, replace=False) for start in starts]
    predictions = []
    for b, start in enumerate(starts):
        if b == len(starts) // 2:
            path = os.path.join(folder, "late.adaptable")
            method.save(path)
            method = AdapTable.load(path, model=model)
        if b >= delay:
            rows = chosen[b - delay]
            if (b - delay) % 2 == 0:
                method.partial_fit(None, y[rows], rows=rows)
            else:
                method.partial_fit(X.iloc[rows], y[rows])
        predictions.append(method.predict_proba(X.iloc[start : start + batch]).argmax(axis=1))
    return 100 * f1_score(y, np.concatenate(predictions), average="macro")


if __name__ == "__main__":
    main()

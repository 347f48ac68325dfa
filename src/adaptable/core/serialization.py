"""Save / load a fitted AdapTable as one ``.safetensors`` file: tensors plus JSON metadata.

Nothing is pickled: the calibrator's weights, the source statistics and priors are tensors; the
Encoder, column layout, hyperparameters and package version are JSON in the file's metadata.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from adaptable.core.alternative_calibrators import (
    GraphCalibrator,
    IsotonicCalibrator,
    NoCalibrator,
    OracleCalibratorUsingTestLabels,
    PlattCalibrator,
)
from adaptable.core.calibrator import ShiftAwareCalibrator
from adaptable.core.model_adapter import as_logit_function
from adaptable.core.shift_trend import ColumnLayout, SourceStatistics

if TYPE_CHECKING:
    from adaptable.core.estimator import AdapTable

FORMAT = "adaptable.AdapTable/1"
_METADATA_KEY = "adaptable"
_SIMPLE = {
    "none": NoCalibrator,
    "platt": PlattCalibrator,
    "isotonic": IsotonicCalibrator,
    "oracle_test_labels": OracleCalibratorUsingTestLabels,
}


def save(method: AdapTable, path: str | os.PathLike[str]) -> None:
    """Write ``method`` (fitted) to ``path``; see :meth:`AdapTable.save`."""
    from safetensors.numpy import save_file

    from adaptable import __version__

    arrays: dict[str, np.ndarray] = {
        "source_prior": method.source_prior_,
        "online_prior": method._online.value,
    }
    for key, value in method._calibrator.arrays().items():
        arrays[f"calibrator.{key}"] = value
    meta: dict[str, Any] = {
        "format": FORMAT,
        "version": __version__,
        "params": method.get_params(),
        "n_classes": method.n_classes_,
        "temperature": method.temperature_,
        "calibrator": method._calibrator.name,
    }
    if method.encoder_ is not None:
        arrays["numeric_mean"] = method.source_statistics_.numeric_mean
        arrays["category_mean"] = method.source_statistics_.category_mean
        meta["encoder"] = method.encoder_.to_dict()
        meta["layout"] = method.layout_.to_dict()
    # safetensors refuses empty or non-contiguous arrays
    tensors = {k: np.ascontiguousarray(v) for k, v in arrays.items() if np.asarray(v).size}
    save_file(tensors, os.fspath(path), metadata={_METADATA_KEY: json.dumps(meta)})


def load(
    cls: type[AdapTable], path: str | os.PathLike[str], model: Any = None, output: str | None = None
) -> AdapTable:
    """Rebuild an AdapTable written by :func:`save`."""
    from safetensors import safe_open

    from adaptable.encoding import Encoder

    with safe_open(os.fspath(path), framework="numpy") as handle:
        raw = (handle.metadata() or {}).get(_METADATA_KEY)
        if raw is None:
            raise ValueError(f"{os.fspath(path)!r} is not a file written by AdapTable.save.")
        arrays = {k: handle.get_tensor(k) for k in handle.keys()}  # noqa: SIM118
    meta = json.loads(raw)
    if meta.get("format") != FORMAT:
        raise ValueError(
            f"Unknown AdapTable file format {meta.get('format')!r}; expected {FORMAT!r}."
        )
    params = dict(meta["params"])
    if output is not None:
        params["output"] = output
    method = cls(**params)
    calibrator_arrays = {
        k.removeprefix("calibrator."): v for k, v in arrays.items() if k.startswith("calibrator.")
    }
    encoder = layout = statistics = None
    if meta["calibrator"] == "gnn":
        encoder = Encoder.from_dict(meta["encoder"])
        layout = ColumnLayout.from_dict(meta["layout"])
        statistics = SourceStatistics(
            arrays.get("numeric_mean", np.zeros(layout.n_numeric)),
            arrays.get("category_mean", np.zeros(layout.categorical_width)),
        )
        net = ShiftAwareCalibrator(
            n_numeric=layout.n_numeric,
            block_sizes=layout.block_sizes.tolist(),
            n_classes=meta["n_classes"],
            width=params["batch_size"],
            hidden=params["hidden"],
            adjacency=params["adjacency"],
            category_mean=statistics.category_mean,
        )
        state = net.state_dict()
        for key in state:
            if key in calibrator_arrays:
                state[key] = torch.from_numpy(np.array(calibrator_arrays[key]))
        net.load_state_dict(state)
        calibrator: Any = GraphCalibrator(net)
    else:
        calibrator = _SIMPLE[meta["calibrator"]].from_arrays(calibrator_arrays)
    method._restore(
        logit_function=None if model is None else as_logit_function(model, params["output"]),
        n_classes=int(meta["n_classes"]),
        prior=np.asarray(arrays["source_prior"], dtype=np.float64),
        temperature=float(meta["temperature"]),
        online=np.asarray(arrays["online_prior"], dtype=np.float64),
        calibrator=calibrator,
        encoder=encoder,
        layout=layout,
        statistics=statistics,
    )
    return method

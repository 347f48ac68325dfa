"""AdapTable itself, the interface every test-time method shares, and the model adapter.

- ``adaptable.py``: the whole method in the order of the paper (source statistics and shift
  trend, the shift-aware calibrator, post-training, the label distribution handler, the
  :class:`AdapTable` estimator), with a table mapping each step of Algorithm 1 to a function;
- ``kernel.py``: the complete-graph calibrator as a numpy kernel for test-time inference;
- ``calibrators.py``: the ablation calibrators (none, Platt, isotonic, oracle);
- ``serialization.py``: save / load (safetensors, checked on load);
- ``interface.py``: :class:`TestTimeMethod`, labels handled once for every method;
- ``model_adapter.py``: any model (torch, predict_proba, callable) -> logits;
- ``probability.py``: the package's one softmax and norm;
- ``parameters.py``: constructor-parameter constraints.

Names are loaded on first use, so that ``from adaptable.core import softmax`` (the experiment
machinery, spawned workers) does not import torch or scikit-learn.

>>> from adaptable.core import AdapTable, smooth, source_prior
"""

from __future__ import annotations

import importlib
from typing import Any

#: public name -> the submodule that defines it
_EXPORTS = {
    "adaptable": (
        "CALIBRATORS",
        "AdapTable",
        "AdapTableState",
        "BatchResult",
        "ColumnLayout",
        "GraphCalibrator",
        "OnlinePrior",
        "PostTrainingReport",
        "ShiftAwareCalibrator",
        "ShiftTrendInput",
        "SourceStatistics",
        "adjust_batch",
        "calibration_loss",
        "debiased_estimate",
        "final_mixture",
        "focal_loss",
        "imbalance_temperature",
        "post_train",
        "recalibration_temperatures",
        "smooth",
        "source_prior",
        "uncertainty",
    ),
    "calibrators": (
        "IsotonicCalibrator",
        "NoCalibrator",
        "OracleCalibratorUsingTestLabels",
        "PlattCalibrator",
    ),
    "interface": ("SourceData", "TestTimeMethod"),
    "kernel": ("CompleteGraphKernel",),
    "model_adapter": ("LogitFunction", "as_logit_function"),
    "parameters": ("InvalidParameterError",),
    "probability": ("normalize", "softmax"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    if name not in _MODULE_OF:
        raise AttributeError(f"module 'adaptable.core' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"adaptable.core.{_MODULE_OF[name]}"), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

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

>>> from adaptable.core import AdapTable, smooth, source_prior
"""

from adaptable.core.adaptable import (
    CALIBRATORS,
    AdapTable,
    AdapTableState,
    BatchResult,
    ColumnLayout,
    GraphCalibrator,
    OnlinePrior,
    PostTrainingReport,
    ShiftAwareCalibrator,
    ShiftTrendInput,
    SourceStatistics,
    adjust_batch,
    calibration_loss,
    debiased_estimate,
    final_mixture,
    focal_loss,
    imbalance_temperature,
    post_train,
    recalibration_temperatures,
    smooth,
    source_prior,
    uncertainty,
)
from adaptable.core.calibrators import (
    IsotonicCalibrator,
    NoCalibrator,
    OracleCalibratorUsingTestLabels,
    PlattCalibrator,
)
from adaptable.core.interface import TestTimeMethod
from adaptable.core.kernel import CompleteGraphKernel
from adaptable.core.model_adapter import LogitFunction, as_logit_function
from adaptable.core.parameters import InvalidParameterError
from adaptable.core.probability import normalize, softmax

__all__ = [
    "CALIBRATORS",
    "AdapTable",
    "AdapTableState",
    "BatchResult",
    "ColumnLayout",
    "CompleteGraphKernel",
    "GraphCalibrator",
    "InvalidParameterError",
    "IsotonicCalibrator",
    "LogitFunction",
    "NoCalibrator",
    "OnlinePrior",
    "OracleCalibratorUsingTestLabels",
    "PlattCalibrator",
    "PostTrainingReport",
    "ShiftAwareCalibrator",
    "ShiftTrendInput",
    "SourceStatistics",
    "TestTimeMethod",
    "adjust_batch",
    "as_logit_function",
    "calibration_loss",
    "debiased_estimate",
    "final_mixture",
    "focal_loss",
    "imbalance_temperature",
    "normalize",
    "post_train",
    "recalibration_temperatures",
    "smooth",
    "softmax",
    "source_prior",
    "uncertainty",
]

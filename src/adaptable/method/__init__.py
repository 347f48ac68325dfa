"""AdapTable itself: the shift-aware calibrator, the label distribution handler, the estimator,
and the adapter that turns any model (torch, predict_proba, callable) into logits.

>>> from adaptable.method import AdapTable, smooth, source_prior
"""

from adaptable.method.alternative_calibrators import (
    GraphCalibrator,
    IsotonicCalibrator,
    NoCalibrator,
    OracleCalibratorUsingTestLabels,
    PlattCalibrator,
)
from adaptable.method.base import TestTimeMethod
from adaptable.method.calibrator import (
    PostTrainingReport,
    ShiftAwareCalibrator,
    calibration_loss,
    focal_loss,
    post_train,
)
from adaptable.method.estimator import CALIBRATORS, AdapTable, AdapTableState
from adaptable.method.label_handler import (
    BatchResult,
    OnlinePrior,
    adjust_batch,
    debiased_estimate,
    final_mixture,
    imbalance_temperature,
    recalibration_temperatures,
    smooth,
    softmax,
    source_prior,
    uncertainty,
)
from adaptable.method.model_adapter import as_logit_function
from adaptable.method.shift_trend import ColumnLayout, ShiftTrendInput, shift_trend

__all__ = [
    "CALIBRATORS",
    "AdapTable",
    "AdapTableState",
    "BatchResult",
    "ColumnLayout",
    "GraphCalibrator",
    "IsotonicCalibrator",
    "NoCalibrator",
    "OnlinePrior",
    "OracleCalibratorUsingTestLabels",
    "PlattCalibrator",
    "PostTrainingReport",
    "ShiftAwareCalibrator",
    "ShiftTrendInput",
    "TestTimeMethod",
    "adjust_batch",
    "as_logit_function",
    "calibration_loss",
    "debiased_estimate",
    "final_mixture",
    "focal_loss",
    "imbalance_temperature",
    "post_train",
    "recalibration_temperatures",
    "shift_trend",
    "smooth",
    "softmax",
    "source_prior",
    "uncertainty",
]

"""AdapTable itself: the shift-aware calibrator, the label distribution handler, the estimator,
and the adapter that turns any model (torch, predict_proba, callable) into logits.

>>> from adaptable.core import AdapTable, smooth, source_prior
"""

from adaptable.core.alternative_calibrators import (
    GraphCalibrator,
    IsotonicCalibrator,
    NoCalibrator,
    OracleCalibratorUsingTestLabels,
    PlattCalibrator,
)
from adaptable.core.calibrator import (
    PostTrainingReport,
    ShiftAwareCalibrator,
    calibration_loss,
    focal_loss,
    post_train,
)
from adaptable.core.estimator import CALIBRATORS, AdapTable, AdapTableState
from adaptable.core.interface import TestTimeMethod
from adaptable.core.label_handler import (
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
from adaptable.core.model_adapter import as_logit_function
from adaptable.core.shift_trend import ColumnLayout, ShiftTrendInput, shift_trend

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

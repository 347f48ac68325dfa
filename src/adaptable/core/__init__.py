"""AdapTable: a thin estimator holding two parts, a calibrator and a decider; the preset chooses
the decider. One folder per feature, lower ones never importing higher ones:

- ``estimator.py``: :class:`AdapTable` (fit, predict_proba, partial_fit, report, state,
  save / load), assembled from the objects of the modules beside it: ``fitted_parts.py`` (its
  fitted parts, and fitting them), ``batch_input.py`` (a batch read through the model and the
  Encoder), ``label_intake.py`` (labels that come back, checked and handed to the decider; the
  decider's report), ``adapter_state.py`` (its diagnostics, :class:`AdapTableState`);
  ``presets.py``: which decider each preset builds and which parameters each part owns;
- ``paper/``: the paper's method (the shift-aware calibrator g_phi, the ablation calibrators,
  the label distribution handler and the paper preset's decider);
- ``recommended/``: the default preset's decider (rule choice, label-shift tests and estimate,
  and what it does with labels that come back);
- ``labels/``: learning from labelled target rows (reservoir, target prior, rule choice on
  labelled rows, score correction);
- ``report/``: the drift report and its estimates, and the drift summary's verdict;
- ``decision/``: decision rules and scores for an objective, shared by the groups above;
- ``parts/``: what the estimator hands its parts, and the decider interface;
- ``persistence/``: save / load, and objects pickled by earlier versions.

What every method shares (the method interface, the model adapter, parameter constraints, the
one softmax) is in :mod:`adaptable.framework`.

Where each step of Algorithm 1 lives (read beside Section 3, Algorithm 1 and Appendix A of the
paper, in ``paper/``; ``docs/maintainer/method.md`` gives every deliberate difference, and the code marks each with a
"Deliberate difference:" comment). "Line" is the line number of Algorithm 1, counting every line
of the listing, Input and Parameters included.

==================  ===========================================  ====================================
Paper               Step                                         Here
==================  ===========================================  ====================================
Line 3              p_s(y): source label frequencies             label_handler.source_prior
Line 3              T = 1.5 rho / (rho - 1 + 1e-6)               label_handler.imbalance_temperature
Eq. 1, lines 4-6    shift trend s_u = x_u - mean_s(x_u)          shift_trend.ColumnLayout.shift_input
                    (source means over the training rows)        ColumnLayout.source_statistics
Sec. 3.2, App. A    shift trend graph, GCN, T_i = g_phi(z_i, s)  graph_network.ShiftAwareCalibrator
App. A              focal loss L_FL                              post_training.focal_loss
App. A              calibration loss L_CAL                       post_training.calibration_loss
App. A              post-training g_phi (f frozen)               post_training.post_train
Line 8              p_t(y|x_i) = softmax(f(x_i))                 label_handler.adjust_batch
Line 9              T_i = g_phi(f(x_i), s^t)                     GraphCalibrator.calibrate
Lines 10-11         delta_i = 1 / margin of softmax(z_i / T_i)   label_handler.uncertainty
Line 12             p_de_i = norm(p_i / p_s)                     label_handler.debiased_estimate
Line 14, Eq. 5      p_t(y) = (1 - a) mean_i p_de_i + a p_oe      label_handler.smooth
Lines 15-22, Eq. 4  T~_i from the uncertainty quantiles          recalibration_temperatures
Line 23             p~_i = softmax(z_i / T~_i)                   label_handler.adjust_batch
Line 24, Eq. 3      p_bar_i = (p~_i + norm(p~_i p_t / p_s)) / 2  label_handler.final_mixture
Line 26, Eq. 6      p_oe = (1 - a) mean_i p_bar_i + a p_oe       label_handler.OnlinePrior
Lines 7-26          one test batch                               PaperDecider.decide
Algorithm 1         fit once, then batch after batch             AdapTable(preset="paper")
==================  ===========================================  ====================================

Names are loaded on first use, so that ``from adaptable.core import softmax`` (the experiment
machinery, spawned workers) does not import torch or scikit-learn.

Example:
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from adaptable import AdapTable, datasets
    >>> ds = datasets.make_shift_dataset(seed=0)
    >>> X = ds.train.X[ds.numerical].to_numpy()
    >>> model = LogisticRegression().fit(X, ds.train.y)
    >>> Xv = ds.valid.X[ds.numerical].to_numpy()
    >>> method = AdapTable(random_state=0).fit(model, X, ds.train.y, Xv, ds.valid.y)
    >>> method.predict_proba(ds.test.X[ds.numerical].to_numpy()[:64]).shape
    (64, 2)
    >>> paper = AdapTable(preset="paper", epochs=2, random_state=0).fit(model, X, ds.train.y)
    >>> paper.predict_proba(ds.test.X[ds.numerical].to_numpy()[:64]).sum(axis=1).round(6).min()
    np.float64(1.0)
"""

from __future__ import annotations

import importlib
from typing import Any

from adaptable.core.parts.earlier_pickles import install as install_earlier_paths

#: public name -> the module that defines it
_EXPORTS = {
    "adaptable.core.estimator": ("AdapTable",),
    "adaptable.core.adapter_state": ("AdapTableState",),
    "adaptable.core.presets": ("DECIDERS", "PART_PARAMETERS", "PRESETS"),
    "adaptable.core.parts.decider": ("CalibratedBatch", "Decider", "Decision"),
    "adaptable.core.paper.paper_decider": ("PaperDecider",),
    "adaptable.core.recommended.recommended_decider": (
        "FALLBACKS",
        "STREAM_CHECKS",
        "RecommendedDecider",
    ),
    "adaptable.core.paper.label_handler": (
        "BatchResult",
        "OnlinePrior",
        "adjust_batch",
        "debiased_estimate",
        "final_mixture",
        "imbalance_temperature",
        "recalibration_temperatures",
        "smooth",
        "source_prior",
        "uncertainty",
    ),
    "adaptable.core.paper.shift_trend": (
        "ADJACENCIES",
        "ColumnLayout",
        "ShiftTrendInput",
        "SourceStatistics",
    ),
    "adaptable.core.paper.graph_network": ("ShiftAwareCalibrator",),
    "adaptable.core.paper.graph_calibrator": ("GraphCalibrator",),
    "adaptable.core.paper.post_training": (
        "PostTrainingReport",
        "calibration_loss",
        "focal_loss",
        "post_train",
    ),
    "adaptable.core.paper.calibrators": (
        "CALIBRATORS",
        "Calibrator",
        "IsotonicCalibrator",
        "NoCalibrator",
        "OracleCalibratorUsingTestLabels",
        "PlattCalibrator",
        "TemperatureCalibrator",
    ),
    "adaptable.framework.method": ("SourceData", "TestTimeMethod"),
    "adaptable.core.paper.graph_numpy_forward": ("CompleteGraphKernel",),
    "adaptable.framework.model_adapter": ("LogitFunction", "as_logit_function"),
    "adaptable.framework.parameters": ("InvalidParameterError",),
    "adaptable.framework.probability": ("normalize", "softmax"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(_MODULE_OF)


install_earlier_paths()


def __getattr__(name: str) -> Any:
    if name not in _MODULE_OF:
        raise AttributeError(f"module 'adaptable.core' has no attribute {name!r}")
    value = getattr(importlib.import_module(_MODULE_OF[name]), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

"""Test-time adaptation baselines and label-shift classics, one module per method.

All follow :class:`adaptable.framework.method.TestTimeMethod`; create them by name through the one
registry, :func:`adaptable.methods.create`.

- parameter-updating (torch source models only): :class:`PseudoLabel` (``pl``), :class:`Tent`
  (``tent``), :class:`SAR` (``sar``), :class:`EATA` (``eata``), :class:`TTTPlusPlus`
  (``ttt++``), sharing :class:`EpisodicTorchMethod`;
- output-only: :class:`SourceOnly` (``source``), :class:`LAME` (``lame``, needs features),
  :class:`EMPriorAdjustment` (``em``) and :class:`BBSE` (``bbse``), any model;
- later peers: :class:`FTAT` (``ftat``; torch models, or any model as ``ftat[ensemble=false]``)
  and the online label-shift methods :class:`FollowTheHistory` (``fth``),
  :class:`OnlineGradientDescent` (``ogd``) and :class:`FLHFTL` (``flh_ftl``), any model.
"""

# First (it sorts first too): on a core install, the error that names the extra.
from adaptable.baselines import _extra  # noqa: F401
from adaptable.baselines.bbse import BBSE, bbse_prior, confusion_joint, confusion_soft
from adaptable.baselines.bcts import BiasCorrectedTemperature, fit_bcts
from adaptable.baselines.eata import EATA
from adaptable.baselines.em import EMPriorAdjustment, em_prior
from adaptable.baselines.episodic import EpisodicTorchMethod
from adaptable.baselines.ftat import FTAT
from adaptable.baselines.lame import LAME, laplacian_optimisation, rbf_affinity
from adaptable.baselines.online_label_shift import (
    FLHFTL,
    FollowTheHistory,
    OnlineGradientDescent,
    OnlineLabelShiftMethod,
)
from adaptable.baselines.pl import PseudoLabel
from adaptable.baselines.prior_shift import PriorShiftMethod
from adaptable.baselines.sar import SAR
from adaptable.baselines.source import SourceOnly
from adaptable.baselines.tent import Tent
from adaptable.baselines.tttpp import TTTPlusPlus

__all__ = [
    "BBSE",
    "EATA",
    "FLHFTL",
    "FTAT",
    "LAME",
    "SAR",
    "BiasCorrectedTemperature",
    "EMPriorAdjustment",
    "EpisodicTorchMethod",
    "FollowTheHistory",
    "OnlineGradientDescent",
    "OnlineLabelShiftMethod",
    "PriorShiftMethod",
    "PseudoLabel",
    "SourceOnly",
    "TTTPlusPlus",
    "Tent",
    "bbse_prior",
    "confusion_joint",
    "confusion_soft",
    "em_prior",
    "fit_bcts",
    "laplacian_optimisation",
    "rbf_affinity",
]

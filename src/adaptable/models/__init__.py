"""Source models: the four deep backbones, their training routine, the supervised baselines,
and a cache of trained models.

>>> from adaptable import datasets, models
>>> ds = datasets.load("hospital_readmission")
>>> model = models.train("mlp", ds, seed=0)            # doctest: +SKIP
>>> model.predict_proba(ds.test.X[:64]).shape           # doctest: +SKIP
(64, 2)
"""

# First (it sorts first too): on a core install, the error that names the extra, rather than
# torch's bare ModuleNotFoundError from whichever module below imports it first.
from adaptable.models import _extra  # noqa: F401
from adaptable.models.autoint import AutoInt
from adaptable.models.base import Backbone
from adaptable.models.cache import CACHE_ENV, CODE_VERSION, default_cache_dir
from adaptable.models.ft_transformer import FTTransformer
from adaptable.models.mlp import MLP
from adaptable.models.registry import BACKBONES, NAMES, create, names, train
from adaptable.models.resnet import ResNet
from adaptable.models.source_model import TorchSourceModel
from adaptable.models.supervised import (
    KNN,
    SEARCH_SPACES,
    CatBoost,
    LogReg,
    RandomForest,
    SupervisedModel,
    XGBoost,
    random_search,
)
from adaptable.models.tokens import FeatureTokenizer
from adaptable.models.training import (
    RECIPES,
    TrainingConfig,
    TrainingHistory,
    fit_module,
    resolve_device,
    torch_threads,
)

__all__ = [
    "BACKBONES",
    "CACHE_ENV",
    "CODE_VERSION",
    "KNN",
    "MLP",
    "NAMES",
    "RECIPES",
    "SEARCH_SPACES",
    "AutoInt",
    "Backbone",
    "CatBoost",
    "FTTransformer",
    "FeatureTokenizer",
    "LogReg",
    "RandomForest",
    "ResNet",
    "SupervisedModel",
    "TorchSourceModel",
    "TrainingConfig",
    "TrainingHistory",
    "XGBoost",
    "create",
    "default_cache_dir",
    "fit_module",
    "names",
    "random_search",
    "resolve_device",
    "torch_threads",
    "train",
]

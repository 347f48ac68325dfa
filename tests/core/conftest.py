"""Helpers of the core tests: a decider's fit context on the synthetic task, its batches, a
part's state as the saved file would hold it, and a small torch source model."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from adaptable.core import CalibratedBatch, SourceData, softmax, source_prior
from adaptable.core.parts.contexts import FitContext, LoadContext, PartState
from adaptable.core.parts.saved_state import StateReader
from adaptable.encoding import Encoder
from adaptable.models import TorchSourceModel

FORMAT = "adaptable.AdapTable/2"


@pytest.fixture(scope="module")
def torch_source(synthetic) -> TorchSourceModel:
    """A torch source model packaged with its Encoder, as ``adaptable.models.train`` gives."""
    encoder = Encoder().fit(synthetic.train.X)
    torch.manual_seed(0)
    module = torch.nn.Sequential(
        torch.nn.Linear(encoder.n_features_out_, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)
    )
    return TorchSourceModel(module, encoder, n_classes=2, name="mlp")


def fit_context(ds, model, seed: int = 0) -> FitContext:
    """The synthetic task's source as a decider sees it (logits: the log of the model's p)."""
    source = SourceData(ds.train.X, ds.train.y, ds.valid.X, ds.valid.y)
    logits = np.log(model.predict_proba(ds.train.X))
    logits_valid = np.log(model.predict_proba(ds.valid.X))
    prior = source_prior(ds.train.y, ds.valid.y, n_classes=2)
    encoder = Encoder().fit(ds.train.X)
    return FitContext(source, logits, logits_valid, prior, encoder, seed)


def batches(ds, model, encoder, size: int = 64, count: int = 6) -> list[CalibratedBatch]:
    """Consecutive test batches, uncalibrated (q = softmax(z))."""
    out = []
    for i in range(count):
        rows = ds.test.X.iloc[i * size : (i + 1) * size]
        logits = np.log(model.predict_proba(rows))
        out.append(CalibratedBatch(logits, softmax(logits), encoder.encode(rows), True))
    return out


def load_context(
    state: PartState, params: dict, prior: np.ndarray, encoder=None, **meta
) -> LoadContext:
    """A LoadContext over ``state`` as a file would hold it (metadata through JSON)."""
    metadata = {"format": FORMAT, **state.metadata, **meta}
    arrays = {k: np.asarray(v) for k, v in state.arrays.items() if np.asarray(v).size}
    reader = StateReader("memory", json.dumps(metadata), arrays, (FORMAT,))
    return LoadContext(reader, params, len(prior), prior, encoder)


def unadapted_record(proba: np.ndarray, **extra) -> dict:
    """``DriftLog.record`` arguments of a batch the unadapted model decided (its argmax),
    with the posteriors believed, the model's and the output all ``proba`` (rows, 2), a
    uniform target prior and the moment test's threshold 3; ``extra`` adds or overrides."""
    return dict(
        rows=len(proba),
        predictions=proba.argmax(axis=1),
        posteriors=proba,
        source_proba=proba,
        output=proba,
        rule="source",
        target_prior=np.array([0.5, 0.5]),
        shift_threshold=3.0,
        **extra,
    )

"""Helpers of the core tests: a decider's fit context on the synthetic task, its batches, a
part's state as the saved file would hold it, a small torch source model, and a drift log's
state as earlier versions pickled it."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
import torch

from adaptable.core import CalibratedBatch, SourceData, softmax, source_prior
from adaptable.core.parts.contexts import FitContext, LoadContext, PartState
from adaptable.core.parts.saved_state import StateReader
from adaptable.core.report.drift_log import DriftLog
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


def earlier_drift_log_state(log: DriftLog) -> dict:
    """``log``'s state as a DriftLog pickled it while its window of records and its kept rows
    were mixins: their attributes on the log itself, the first row ids kept from the older of
    the first kept record and the first kept batch (``_start_base``)."""
    records, rows = log._records, log._rows
    base = min(rows.oldest, records.dropped)
    starts = [
        records.records[number - records.dropped].first_row
        if number >= records.dropped
        else int(rows._starts[number - rows._starts_from])
        for number in range(base, records.n_batches)
    ]
    buffer = np.zeros(max(64, 2 * len(starts)), dtype=np.int64)
    buffer[: len(starts)] = starts
    return {
        "n_classes": log.n_classes,
        "objective": log.objective,
        "prediction_rows": rows.prediction_rows,
        "max_batches": records.max_batches,
        "_heldout": log._heldout,
        "_residuals": log._residuals,
        "_batches": records.records,
        "_start_buffer": buffer,
        "_start_base": base,
        "_predictions": rows.codes,
        "_logits": rows.logits,
        "_believed": rows.believed,
        "_given": rows.given,
        "_oldest": rows.oldest,
        "_kept": rows.kept,
        "dropped": records.dropped,
        "n_rows": rows.n_rows,
        "unscored": log.unscored,
        "_pending": records.pending,
        "_pending_rows": records.pending_rows,
    }


def unpickled_from_state(state: dict) -> DriftLog:
    """A DriftLog pickled with the attributes ``state`` (whatever their layout), unpickled."""
    log = DriftLog.__new__(DriftLog)
    log.__dict__.update(state)  # as the version that wrote it held them
    return pickle.loads(pickle.dumps(log))

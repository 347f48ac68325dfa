"""Every baseline pickles and joblib-dumps mid-stream, and the copy continues the stream exactly.

A fitted method is shipped to worker processes and persisted the way scikit-learn users persist
models; the copy must hold the whole online state (model weights, optimiser, estimates), so
that the next batches give bit-identical outputs on the copy and on the original.
"""

from __future__ import annotations

import pickle

import joblib
import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from adaptable import methods

BASELINES = [name for name in methods.names() if name != "adaptable"]


def fitted(name, model, task, X=lambda part: part.X):
    method = methods.create(name).fit(
        model, X(task.train), task.train.y, X(task.valid), task.valid.y
    )
    if getattr(method, "needs_test_labels", False):  # oracle rows get the stream's labels
        method.receive_test_labels(task.test.y)
    return method


def batches(task, X=lambda part: part.X, size=32, count=4) -> list:
    rows = X(task.test)
    return [rows[i * size : (i + 1) * size] for i in range(count)]


def copies(method, tmp_path) -> dict:
    """The method through pickle and through joblib (a file on disk)."""
    path = tmp_path / "method.joblib"
    joblib.dump(method, path)
    return {"pickle": pickle.loads(pickle.dumps(method)), "joblib": joblib.load(path)}


def continues_identically(method, stream, tmp_path) -> None:
    method.predict_proba(stream[0])  # mid-stream: the online state has moved
    twins = copies(method, tmp_path)
    expected = [method.predict_proba(batch) for batch in stream[1:]]
    for how, twin in twins.items():
        for batch, want in zip(stream[1:], expected, strict=True):
            got = twin.predict_proba(batch)
            assert np.array_equal(got, want), f"{how} copy drifted"


@pytest.mark.parametrize("name", BASELINES)
def test_every_baseline_on_a_torch_model_continues_after_pickling(
    name, torch_source, tiny_task, tmp_path
):
    method = fitted(name, torch_source, tiny_task)
    continues_identically(method, batches(tiny_task), tmp_path)


#: every baseline that takes any model reading its outputs alone (LAME needs penultimate
#: features, FTAT's default ensemble a torch model)
ANY_MODEL = [
    name for name in BASELINES if name not in (*methods.PARAMETER_UPDATING, "lame", "ftat")
]


@pytest.mark.parametrize("name", ANY_MODEL)
def test_every_output_only_baseline_on_a_scikit_learn_model_continues_after_pickling(
    name, tiny_task, tmp_path
):
    def numeric(part):
        return part.X[tiny_task.numerical].to_numpy()

    model = LogisticRegression().fit(numeric(tiny_task.train), tiny_task.train.y)
    method = fitted(name, model, tiny_task, X=numeric)
    continues_identically(method, batches(tiny_task, X=numeric), tmp_path)

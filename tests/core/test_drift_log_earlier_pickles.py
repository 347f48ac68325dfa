"""A DriftLog pickled while its window of records and its kept rows were mixins (their attributes
on the log itself) unpickles into the log with its parts and goes on as it would have, alone or
inside an AdapTable; a state of the current layout passes unchanged."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from adaptable import AdapTable, datasets
from adaptable.core.parts.earlier_pickles import with_added_attributes
from adaptable.core.report.drift_log import REPORT_BATCHES, DriftLog
from adaptable.core.report.kept_rows import KeptRows
from adaptable.core.report.label_corrected_estimate import ResidualSums
from adaptable.core.report.record_window import BatchRecord, RecordWindow

from .conftest import earlier_drift_log_state, unadapted_record, unpickled_from_state

HELDOUT = (np.log(np.array([[0.8, 0.2], [0.3, 0.7], [0.6, 0.4], [0.1, 0.9]] * 5)),
           np.array([0, 1, 0, 1] * 5))  # fmt: skip


def _batch(rng: np.random.Generator) -> dict:
    rows = int(rng.integers(2, 6))
    proba = rng.dirichlet(np.ones(2), size=rows)
    return unadapted_record(proba, prior_total=50.0, shift_statistic=float(rng.normal()),
                            logits=np.log(proba))  # fmt: skip


def _go_on(log: DriftLog, seed: int, batches: int = 30) -> list:
    """Feed ``batches`` batches, with labels by row id for some earlier rows after each;
    everything the log answers along the way and at the end."""
    rng = np.random.default_rng(seed)
    out: list = []
    for _ in range(batches):
        log.record(**_batch(rng))
        ids = np.unique(rng.integers(max(0, log.n_rows - 25), log.n_rows, size=4))
        labels = ids % 2
        fresh = log.new_labels(ids, labels)
        log.learn(ids[fresh], labels[fresh], np.zeros(fresh.sum(), dtype=np.int64))
        try:
            out.append(log.kept_logits(ids))
        except ValueError as err:  # rows no longer kept, or recorded without logits
            out.append(str(err))
        out.append(fresh)
    out += [log.frame(), log.arrays(), (log.n_rows, log.unscored, log.dropped, len(log))]
    return out


def _same(first: list, second: list) -> None:
    assert len(first) == len(second)
    for a, b in zip(first, second, strict=True):
        if isinstance(a, dict):
            assert list(a) == list(b)
            for key in a:
                np.testing.assert_array_equal(a[key], b[key], err_msg=key)
        elif hasattr(a, "equals"):
            assert a.equals(b)
        elif isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)
        else:
            assert a == b


@pytest.mark.parametrize(
    "options",
    [{}, {"prediction_rows": 12, "max_batches": 8}, {"prediction_rows": 60, "max_batches": 3}],
)
def test_a_log_pickled_with_the_mixin_layout_goes_on_as_it_would_have(options) -> None:
    log = DriftLog(n_classes=2, objective="macro_f1", **options)
    log.use_heldout(*HELDOUT)
    _go_on(log, seed=0, batches=40)
    log.record(**_batch(np.random.default_rng(5)))  # one record left to settle
    earlier = unpickled_from_state(earlier_drift_log_state(log))
    assert isinstance(earlier._records, RecordWindow) and isinstance(earlier._rows, KeptRows)
    assert "_batches" not in vars(earlier) and "dropped" not in vars(earlier)
    _same(_go_on(earlier, seed=1), _go_on(log, seed=1))
    # and pickled again, now with the parts
    _same(_go_on(pickle.loads(pickle.dumps(earlier)), seed=2), _go_on(log, seed=2))


def _one_batch_state() -> dict:
    """A log of one batch of four rows (codes 0 1 1 0) given its expected matrices and no
    label, as the mixin layout pickled it."""
    eye = np.eye(2) * 2.0
    start_buffer = np.zeros(64, dtype=np.int64)
    record = BatchRecord(0, 4, "source", np.nan, np.nan, np.nan, np.nan, 0, np.nan,
                         np.array([0.5, 0.5]), np.zeros(2), np.stack([eye, eye]))  # fmt: skip
    return {
        "n_classes": 2,
        "objective": "accuracy",
        "prediction_rows": 6,
        "max_batches": REPORT_BATCHES,
        "_heldout": None,
        "_residuals": ResidualSums(2),
        "_batches": [record],
        "_start_buffer": start_buffer,
        "_start_base": 0,
        "_predictions": {0: np.array([0, 1, 1, 0], dtype=np.int16)},
        "_logits": {},
        "_believed": {},
        "_given": {},
        "_oldest": 0,
        "_kept": 4,
        "dropped": 0,
        "n_rows": 4,
        "unscored": 0,
        "_pending": [],
        "_pending_rows": 0,
    }


@pytest.mark.parametrize(
    "missing", [(), ("_given",), ("_given", "dropped", "max_batches", "_start_base")]
)
def test_an_earlier_state_written_out_reads_as_the_same_log(missing) -> None:
    state = {k: v for k, v in _one_batch_state().items() if k not in missing}
    earlier = unpickled_from_state(state)
    log = DriftLog(n_classes=2, objective="accuracy", prediction_rows=6)
    eye = np.eye(2) * 2.0
    log.record(rows=4, predictions=np.array([0, 1, 1, 0]), expected=np.stack([eye, eye]),
               rule="source", target_prior=np.array([0.5, 0.5]))  # fmt: skip
    assert (earlier.n_rows, earlier.dropped, earlier.max_batches) == (4, 0, REPORT_BATCHES)
    assert earlier.prediction_rows == 6
    _same([earlier.frame(), earlier.arrays()], [log.frame(), log.arrays()])
    for each in (earlier, log):
        each.learn(np.array([0, 1]), np.array([0, 0]), np.array([0, 0]))
        each.record(rows=4, predictions=np.array([1, 1, 0, 0]), expected=np.stack([eye, eye]),
                    rule="balanced", target_prior=np.array([0.4, 0.6]))  # fmt: skip
    # row 1's label is known, row 4's is new
    assert earlier.new_labels(np.array([1, 4]), np.array([0, 1])).tolist() == [False, True]
    _same(_go_on(earlier, seed=3, batches=6), _go_on(log, seed=3, batches=6))


def test_a_state_of_the_current_layout_passes_unchanged() -> None:
    log = DriftLog(n_classes=2, objective="accuracy")
    state = dict(vars(log))
    assert with_added_attributes("DriftLog", state) == state


def test_an_adapter_pickled_with_a_mixin_layout_log_goes_on_as_it_would_have() -> None:
    ds = datasets.make_shift_dataset(n_classes=2, n_test=30 * 64, seed=1)
    X, y = ds.train.X[ds.numerical].to_numpy(), ds.train.y
    model = LogisticRegression().fit(X, y)
    Xv, Xt = ds.valid.X[ds.numerical].to_numpy(), ds.test.X[ds.numerical].to_numpy()
    method = AdapTable(random_state=0, report_batches=5).fit(model, X, y, Xv, ds.valid.y)

    def stream(adapter: AdapTable, first: int, last: int) -> list:
        out = []
        for t in range(first, last):
            if t >= 2:  # labels of part of the batch two back, by row id
                ids = np.arange((t - 2) * 64, (t - 2) * 64 + 16)
                adapter.partial_fit(None, ds.test.y[ids], rows=ids)
            out.append(adapter.predict_proba(Xt[t * 64 : (t + 1) * 64]))
        return [*out, adapter.report()]

    stream(method, 0, 12)
    earlier = pickle.loads(pickle.dumps(method))
    log = earlier.decider_.drift_log
    state = earlier_drift_log_state(log)
    log.__dict__.clear()
    log.__dict__.update(state)  # the log as the mixin layout held it
    revived = pickle.loads(pickle.dumps(earlier))
    assert isinstance(revived.decider_.drift_log._records, RecordWindow)
    _same(stream(revived, 12, 24), stream(method, 12, 24))


def test_the_earlier_window_is_the_reports_window() -> None:
    """earlier_pickles sits below the report and cannot import its constant: the two must agree."""
    from adaptable.core.parts.earlier_pickles import EARLIER_REPORT_BATCHES
    from adaptable.core.report.drift_log import REPORT_BATCHES

    assert EARLIER_REPORT_BATCHES == REPORT_BATCHES

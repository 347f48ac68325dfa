"""Per-column drift (``AdapTable.feature_drift``): each column of the stream against the held-out
rows, in fixed memory.

- a shifted column comes first, with scipy's own statistic and p-value on the same rows (the
  Kolmogorov-Smirnov test, the chi-square test of homogeneity), while the other columns stay
  unflagged; unseen categories and missing values count;
- on streams drawn from the source, each column's test rejects at its level (within binomial
  error), and Holm's correction keeps the chance of flagging any column at the family level;
- the stream's record stays the same size however many batches come;
- the record survives pickling, save / load and reset, and is refused damaged.
"""

from __future__ import annotations

import json
import pickle

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest, chi2_contingency, ks_2samp

from adaptable import AdapTable
from adaptable.core.report.column_tests import holm
from adaptable.core.report.feature_drift import FRAME_COLUMNS, monitor_of
from adaptable.core.report.row_reservoir import RowReservoir

LEVEL = 0.05


def _table(rng: np.random.Generator, n: int, shift: str | None = None) -> pd.DataFrame:
    """Three numerical and two categorical columns; ``shift`` moves one of them."""
    table = pd.DataFrame(
        {
            "age": rng.normal(40, 10, n),
            "income": rng.lognormal(10, 1, n),
            "visits": rng.poisson(3.0, n).astype(float),
            "city": rng.choice(["north", "south", "east", "west"], n, p=[0.4, 0.3, 0.2, 0.1]),
            "plan": rng.choice(["basic", "plus"], n, p=[0.7, 0.3]),
        }
    )
    if shift == "income":
        table["income"] *= 1.5
    elif shift == "city":
        table["city"] = rng.choice(["north", "south", "east", "west"], n, p=[0.2, 0.3, 0.2, 0.3])
    return table


def _labels(table: pd.DataFrame) -> np.ndarray:
    return (table["age"] + 5 * (table["plan"] == "plus") > 42).astype(int).to_numpy()


def _model(table: pd.DataFrame, y: np.ndarray):
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    columns = ColumnTransformer(
        [
            ("num", StandardScaler(), ["age", "income", "visits"]),
            ("cat", OneHotEncoder(handle_unknown="ignore"), ["city", "plan"]),
        ]
    )
    return make_pipeline(columns, LogisticRegression(max_iter=300)).fit(table, y)


@pytest.fixture(scope="module")
def source():
    rng = np.random.default_rng(0)
    train, valid = _table(rng, 2000), _table(rng, 1500)
    return train, _labels(train), valid, _labels(valid), _model(train, _labels(train))


def _fitted(source, **options) -> AdapTable:
    train, y_train, valid, y_valid, model = source
    return AdapTable(random_state=0, **options).fit(model, train, y_train, valid, y_valid)


def _stream(seed: int, shift: str | None, batches: int = 12, size: int = 64) -> list:
    rng = np.random.default_rng(seed)
    return [_table(rng, size, shift) for _ in range(batches)]


@pytest.mark.parametrize("preset", ["default", "paper"])
def test_a_shifted_numerical_column_comes_first_with_scipys_statistic(source, preset) -> None:
    method = _fitted(source, preset=preset, calibrator="none")
    stream = _stream(1, "income")
    for batch in stream:
        method.predict_proba(batch)
    frame = method.feature_drift()
    assert list(frame.columns) == list(FRAME_COLUMNS)
    assert frame["column"].iloc[0] == "income" and frame["flagged"].tolist() == [True] + [False] * 4
    rows = pd.concat(stream)  # 768 rows: all kept, as the held-out rows (1,500) are
    expected = ks_2samp(source[2]["income"], rows["income"])
    top = frame.iloc[0]
    assert top["statistic_name"] == "kolmogorov_smirnov" and top["kind"] == "numerical"
    assert top["statistic"] == expected.statistic and top["distance"] == expected.statistic
    assert top["p_value"] == expected.pvalue
    assert top["rows_seen"] == top["rows_tested"] == 768 and top["reference_rows"] == 1500


def test_a_shifted_categorical_column_comes_first_with_scipys_statistic(source) -> None:
    method = _fitted(source)
    stream = _stream(2, "city")
    for batch in stream:
        method.predict(batch)
    frame = method.feature_drift()
    assert frame["column"].iloc[0] == "city" and frame["flagged"].sum() == 1
    rows, valid = pd.concat(stream), source[2]
    table = pd.crosstab(
        np.r_[np.zeros(len(valid)), np.ones(len(rows))], np.r_[valid["city"], rows["city"]]
    )
    expected = chi2_contingency(table.to_numpy(), correction=False)
    top = frame.iloc[0]
    assert top["statistic_name"] == "chi_square" and top["distance_name"] == "total_variation"
    assert top["statistic"] == pytest.approx(expected.statistic, rel=1e-12)
    assert top["p_value"] == pytest.approx(expected.pvalue, rel=1e-9)
    shares = table.to_numpy() / table.to_numpy().sum(axis=1, keepdims=True)
    assert top["distance"] == pytest.approx(0.5 * np.abs(shares[0] - shares[1]).sum())


@pytest.mark.parametrize("preset", ["default", "paper"])
def test_unseen_categories_and_missing_values_count(source, preset) -> None:
    method = _fitted(source, preset=preset, calibrator="none")
    for batch in _stream(3, None):
        batch = batch.copy()
        batch.loc[batch.index[:16], "plan"] = "premium"  # never among the source rows
        batch.loc[batch.index[:8], "visits"] = np.nan  # (the model refuses it: logits given)
        method.adapt_logits(np.zeros((len(batch), 2)), batch)
    frame = method.feature_drift().set_index("column")
    assert frame.loc["plan", "unseen_share"] == 0.25 and frame.loc["plan", "flagged"]
    assert np.isnan(frame.loc["visits", "unseen_share"])
    # a missing number is read as 0, as the Encoder reads it: 12.5 % more zeros than before
    assert frame.loc["visits", "flagged"] and frame.loc["visits", "distance"] > 0.1
    assert frame["flagged"].sum() == 2


def test_streams_from_the_source_are_flagged_at_the_level() -> None:
    """200 streams drawn as the held-out rows: each column's test rejects in about 5 % of them
    (a two-sided binomial test at 0.1 %; ``visits``, a count, at most that: the
    Kolmogorov-Smirnov p-value is conservative where values tie), and Holm's flags any column
    in at most about 5 %. Half the streams overrun the stream's sample, so the reservoir's
    rows are tested."""
    rng = np.random.default_rng(7)
    rejected, flagged = np.zeros(5, dtype=int), 0
    streams = 200
    for s in range(streams):
        held_out = _table(rng, 600)
        monitor = monitor_of(held_out, held_out, seed=s, sample_size=256)
        for _ in range(4 if s % 2 else 8):
            monitor.update(monitor.encode(_table(rng, 64)))
        frame = monitor.frame(LEVEL).sort_values("column")
        rejected += (frame["p_value"] <= LEVEL).to_numpy()
        flagged += bool(frame["flagged"].any())
    for name, count in zip(["age", "city", "income", "plan", "visits"], rejected, strict=True):
        side = "greater" if name == "visits" else "two-sided"
        assert binomtest(int(count), streams, LEVEL, alternative=side).pvalue > 1e-3, rejected
    assert binomtest(flagged, streams, LEVEL, alternative="greater").pvalue > 1e-3, flagged
    assert flagged <= rejected.sum()


def test_holm_adjusts_in_order_and_never_below_the_p_value() -> None:
    p = np.array([0.2, 0.001, 0.04, 0.03, 0.9])
    adjusted = holm(p)
    assert adjusted.tolist() == pytest.approx([0.4, 0.005, 0.12, 0.12, 0.9])
    assert np.all(adjusted >= p) and holm(np.array([0.5])).tolist() == [0.5]


def test_the_stream_record_stays_the_same_size_however_long_the_stream() -> None:
    rng = np.random.default_rng(0)
    held_out = _table(rng, 500)
    monitor = monitor_of(held_out, held_out, seed=0, sample_size=128)
    rows = _table(rng, 20_000)
    sizes = {}
    for b in range(10_000):  # batches of two rows: the sample fills after 64 batches
        monitor.update(monitor.encode(rows.iloc[2 * b : 2 * b + 2]))
        if b + 1 in (100, 1_000, 10_000):
            sizes[b + 1] = (monitor.nbytes, len(pickle.dumps(monitor)))
    assert monitor.rows_seen == 20_000
    assert sizes[100][0] == sizes[1_000][0] == sizes[10_000][0]
    # the pickle holds the counts' integers: a few bytes more as they grow, no row more
    assert abs(sizes[10_000][1] - sizes[100][1]) < 64
    assert monitor.frame()["rows_tested"].max() == 20_000  # the categorical columns: all rows


def test_the_reservoir_keeps_every_row_with_the_same_chance() -> None:
    inclusions = np.zeros(1000)
    for seed in range(300):
        reservoir = RowReservoir(width=1, size=100, seed=seed)
        for start in range(0, 1000, 64):
            reservoir.add(np.arange(start, min(start + 64, 1000), dtype=float)[:, None])
        kept = reservoir.sample[:, 0].astype(int)
        assert len(np.unique(kept)) == 100
        inclusions[kept] += 1
    # each row kept in 300 * 100 / 1000 = 30 of the runs, early rows as often as late ones
    by_tenth = inclusions.reshape(10, 100).sum(axis=1)
    assert binomtest(int(by_tenth[0]), int(by_tenth.sum()), 0.1).pvalue > 1e-3
    assert binomtest(int(by_tenth[-1]), int(by_tenth.sum()), 0.1).pvalue > 1e-3


@pytest.mark.parametrize("preset", ["default", "paper"])  # the adapter's Encoder, or its own
def test_the_record_survives_pickling_save_and_load(source, tmp_path, preset) -> None:
    method = _fitted(source, preset=preset, calibrator="none")
    stream = _stream(4, "income", batches=40)  # past the stream's sample of 2,048 rows
    for batch in stream[:36]:
        method.predict_proba(batch)
    twin = pickle.loads(pickle.dumps(method))
    method.save(tmp_path / "a.safetensors")
    loaded = AdapTable.load(tmp_path / "a.safetensors", source[4])
    frames = [m.feature_drift() for m in (method, twin, loaded)]
    assert frames[0].equals(frames[1]) and frames[0].equals(frames[2])
    for m in (method, twin, loaded):
        for batch in stream[36:]:
            m.predict_proba(batch)
    frames = [m.feature_drift() for m in (method, twin, loaded)]
    assert frames[0].equals(frames[1]) and frames[0].equals(frames[2])
    assert frames[0]["rows_seen"].iloc[0] == 40 * 64


def test_reset_starts_the_record_over(source) -> None:
    method = _fitted(source)
    stream = _stream(5, "income", batches=40)
    for batch in stream:
        method.predict_proba(batch)
    first = method.feature_drift()
    method.reset()
    with pytest.raises(ValueError, match="at least one batch"):
        method.feature_drift()
    for batch in stream:
        method.predict_proba(batch)
    assert method.feature_drift().equals(first)


def test_a_damaged_record_is_refused_naming_it(source, tmp_path, edited_copy) -> None:
    method = _fitted(source)
    for batch in _stream(6, None, batches=3):
        method.predict_proba(batch)
    method.save(tmp_path / "a.safetensors")

    def counts_off(tensors, meta):
        tensors["feature_drift.stream_counts"][0] += 1

    def rows_off(tensors, meta):
        meta["feature_drift"]["rows_seen"] += 1

    def encoder_off(tensors, meta):  # the adapter's Encoder is the one the batches come in
        meta["feature_drift"]["own_encoder"] = True

    def generator_off(tensors, meta):
        meta["feature_drift"]["generator"]["has_uint32"] = 7

    for edit, field in (
        (counts_off, "feature_drift.stream_counts"),
        (rows_off, "feature_drift.sample"),  # its rows are no longer the count's
        (encoder_off, "feature_drift"),
        (generator_off, "feature_drift"),
    ):
        with pytest.raises(ValueError, match=f"field '{field}'"):
            AdapTable.load(edited_copy(tmp_path / "a.safetensors", tmp_path, edit))


def test_a_file_or_pickle_from_before_per_column_drift_loads_without_it(
    source, tmp_path, edited_copy
) -> None:
    method = _fitted(source)
    for batch in _stream(7, None, batches=3):
        method.predict_proba(batch)
    method.save(tmp_path / "a.safetensors")

    def earlier(tensors, meta):
        del meta["feature_drift"]
        meta.pop("digest", None)  # (files written before the record had no digest either)
        for key in [k for k in tensors if k.startswith("feature_drift.")]:
            del tensors[key]

    loaded = AdapTable.load(edited_copy(tmp_path / "a.safetensors", tmp_path, earlier))
    state = {k: v for k, v in method.__getstate__().items() if k != "feature_monitor_"}
    unpickled = AdapTable.__new__(AdapTable)
    unpickled.__setstate__(state)
    for old in (loaded, unpickled):
        assert old.feature_monitor_ is None
        with pytest.raises(ValueError, match="no per-column record"):
            old.feature_drift()
    unpickled.predict_proba(_stream(8, None, batches=1)[0])  # and it still adapts


def test_the_level_and_an_adapter_before_any_batch_are_refused(source) -> None:
    method = _fitted(source)
    with pytest.raises(ValueError, match="at least one batch"):
        method.feature_drift()
    method.predict_proba(_stream(9, None, batches=1)[0])
    for level in (0.0, 1.0, float("nan")):
        with pytest.raises(ValueError, match="level"):
            method.feature_drift(level=level)


def test_arrays_are_read_by_position_and_texts_or_images_have_no_columns() -> None:
    rng = np.random.default_rng(3)
    held_out = np.column_stack([rng.normal(size=400), rng.choice(["a", "b"], 400)]).astype(object)
    held_out[:, 0] = held_out[:, 0].astype(float)
    monitor = monitor_of(held_out, held_out, numerical=[0], seed=0)  # (object: declared)
    batch = held_out[:64].copy()
    batch[:, 0] = batch[:, 0] + 3.0
    monitor.update(monitor.encode(batch))
    frame = monitor.frame()
    assert frame["column"].tolist() == [0, 1] and frame["kind"].tolist() == [
        "numerical",
        "categorical",
    ]
    assert frame["flagged"].tolist() == [True, False]
    texts, images = ["a text", "another"], np.zeros((2, 8, 8))
    assert monitor_of(texts, texts) is None and monitor_of(images, images) is None


def test_the_wrapped_classifier_reports_its_adapters_columns() -> None:
    from sklearn.linear_model import LogisticRegression

    from adaptable import AdaptedClassifier

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=600), "b": rng.normal(size=600)})
    y = (X["a"] > 0).astype(int).to_numpy()
    clf = AdaptedClassifier(LogisticRegression(), random_state=0).fit(X, y)
    clf.predict(X.assign(b=X["b"] + 2.0).iloc[:256])
    frame = clf.feature_drift()
    assert frame["column"].tolist() == ["b", "a"] and frame["flagged"].tolist() == [True, False]
    assert json.loads(frame.to_json(orient="records"))[0]["column"] == "b"


def test_a_batch_the_records_encoder_cannot_read_is_left_out_not_refused(source) -> None:
    """The paper preset without the graph calibrator reads no features: ``adapt_logits`` takes
    any rows beside the logits, as before; the record leaves out those it cannot read."""
    method = _fitted(source, preset="paper", calibrator="none")
    batch = _stream(10, None, batches=1)[0]
    for rows in (batch.drop(columns="city"), batch.to_numpy()[:, :2]):
        assert method.adapt_logits(np.zeros((len(batch), 2)), rows).shape == (64, 2)
    assert method.feature_monitor_.rows_seen == 0
    method.adapt_logits(np.zeros((len(batch), 2)), batch)
    assert method.feature_drift()["rows_seen"].iloc[0] == 64

"""Important-column shifts: column choice, inverse-likelihood probabilities, over-represented tails."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from adaptable import shifts
from adaptable.datasets import ShiftDataset


@pytest.fixture(scope="module")
def informative() -> ShiftDataset:
    """Label driven by numerical 'signal' and categorical 'grade'; the rest is noise.

    The test split spreads 'signal' uniformly over [-2.5, 2.5] source sd: bounded tails to
    over-sample (Gaussian test tails would hand the inverse likelihood to a handful of rows).
    """
    from adaptable.datasets import Split

    rng = np.random.default_rng(0)

    def draw(n: int, test: bool) -> tuple[pd.DataFrame, np.ndarray]:
        signal = rng.uniform(-2.5, 2.5, n) if test else rng.normal(0.0, 1.0, n)
        grade = rng.choice(["a", "b", "c", "d"], size=n, p=[0.4, 0.3, 0.2, 0.1])
        logit = 2.0 * signal + np.select([grade == "a", grade == "d"], [1.5, -1.5], 0.0)
        y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(np.int64)
        frame = pd.DataFrame(
            {
                "noise": rng.normal(size=n),
                "signal": signal,
                "colour": rng.choice(["red", "blue"], size=n).astype(object),
                "grade": grade.astype(object),
            }
        )
        return frame, y

    train, y_train = draw(800, test=False)
    test, y_test = draw(3000, test=True)
    return ShiftDataset(
        name="informative",
        train=Split(train, y_train),
        valid=Split(train, y_train),
        test=Split(test, y_test),
        numerical=["noise", "signal"],
        categorical=["colour", "grade"],
        classes=["no", "yes"],
        domain_split="wider test spread",
    )


def test_the_informative_columns_are_chosen(informative: ShiftDataset) -> None:
    numerical = shifts.most_important_column(informative, "numerical", seed=0)
    categorical = shifts.most_important_column(informative, "categorical", seed=0)
    assert numerical.column == "signal"
    assert numerical.gains["signal"] > numerical.gains["noise"]
    assert categorical.column == "grade"
    assert set(categorical.gains) == {"colour", "grade"}


def test_numerical_shift_over_represents_the_tails(informative: ShiftDataset) -> None:
    stream = shifts.apply("numerical", informative, 0)
    assert stream.info["column"] == "signal"
    source = informative.train.X["signal"]
    z_test = (informative.test.X["signal"] - source.mean()) / source.std(ddof=0)
    z_stream = (stream.X["signal"] - source.mean()) / source.std(ddof=0)
    assert np.mean(np.abs(z_stream) > 2) > 2 * np.mean(np.abs(z_test) > 2)
    assert np.mean(np.abs(z_stream)) > np.mean(np.abs(z_test))
    assert 0.1 * len(stream) < stream.info["effective_rows"] < len(stream)


def test_numerical_sampling_probabilities_are_inverse_gaussian_likelihoods(
    make_dataset,  # type: ignore[no-untyped-def]
) -> None:
    # Source column with mean 0 and population std 1: values -1 and +1.
    train = pd.DataFrame({"x": np.tile([-1.0, 1.0], 200)})
    y_train = np.tile([0, 1], 200)  # x decides the label: the only column, the top column
    test = pd.DataFrame({"x": np.tile([0.0, 1.0, 2.0], 2000)})
    ds = make_dataset(train, y_train, test, np.zeros(6000, dtype=int), ["x"], [])
    stream = shifts.apply("numerical", ds, 0)
    # 1 / N(x | 0, 1) is proportional to exp(x^2 / 2): weights 1, e^0.5, e^2.
    weights = np.exp(np.array([0.0, 0.5, 2.0]))
    expected = weights / weights.sum()
    observed = np.array([np.mean(stream.X["x"] == v) for v in (0.0, 1.0, 2.0)])
    np.testing.assert_allclose(observed, expected, atol=4 * np.sqrt(0.25 / 6000))
    assert stream.info["source_mean"] == pytest.approx(0.0)
    assert stream.info["source_std"] == pytest.approx(1.0)


def test_categorical_sampling_uses_plus_one_smoothed_source_frequencies(
    make_dataset,  # type: ignore[no-untyped-def]
) -> None:
    # Source counts a: 6, b: 3; level c occurs only in the test split (count 0).
    train = pd.DataFrame({"level": ["a"] * 6 + ["b"] * 3})
    y_train = np.array([0, 0, 0, 0, 0, 0, 1, 1, 1])
    test = pd.DataFrame({"level": ["a", "b", "c"] * 2000})
    ds = make_dataset(train, y_train, test, np.zeros(6000, dtype=int), [], ["level"])
    stream = shifts.apply("categorical", ds, 0)
    # p = (6+1, 3+1, 0+1) / (9 + 3); draw probability proportional to 1/p.
    probabilities = np.array([7.0, 4.0, 1.0]) / 12.0
    np.testing.assert_allclose(list(stream.info["source_probabilities"].values()), probabilities)
    expected = (1 / probabilities) / np.sum(1 / probabilities)
    observed = np.array([np.mean(stream.X["level"] == v) for v in ("a", "b", "c")])
    np.testing.assert_allclose(observed, expected, atol=4 * np.sqrt(0.25 / 6000))


def test_categorical_shift_over_represents_rare_source_levels(informative: ShiftDataset) -> None:
    stream = shifts.apply("categorical", informative, 0)
    assert stream.info["column"] == "grade"
    # 'd' is the rarest source level (10 %): it must gain share; 'a' (40 %) must lose it.
    test_share = informative.test.X["grade"].value_counts(normalize=True)
    stream_share = stream.X["grade"].value_counts(normalize=True)
    assert stream_share["d"] > 1.5 * test_share["d"]
    assert stream_share["a"] < test_share["a"]


def test_missing_kind_is_a_clear_error(make_dataset) -> None:  # type: ignore[no-untyped-def]
    frame = pd.DataFrame({"x": np.arange(10.0)})
    ds = make_dataset(frame, np.arange(10) % 2, frame, np.arange(10) % 2, ["x"], [])
    with pytest.raises(ValueError, match="no categorical columns"):
        shifts.apply("categorical", ds, 0)


def test_extreme_tails_warn_about_a_degenerate_stream(make_dataset) -> None:  # type: ignore[no-untyped-def]
    train = pd.DataFrame({"x": np.tile([-1.0, 1.0], 50)})
    test = pd.DataFrame({"x": np.r_[np.zeros(199), 40.0]})  # one row 40 sd out
    ds = make_dataset(train, np.tile([0, 1], 50), test, np.zeros(200, dtype=int), ["x"], [])
    with pytest.warns(UserWarning, match="concentrate on about 1.0 distinct test rows"):
        stream = shifts.apply("numerical", ds, 0)
    assert (stream.X["x"] == 40.0).all()

"""Supervised baselines: the seeded search, probabilities, margins, unseen categories."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax

from adaptable import models
from adaptable.models.supervised import (
    SEARCH_SPACES,
    SUPERVISED,
    random_search,
    sample_configurations,
    score_predictions,
)

TINY = {
    "knn": {"n_neighbors": [3, 7]},
    "logreg": {"C": [0.01, 1.0]},
    "random_forest": {"n_estimators": [10, 20], "max_depth": [3]},
    "xgboost": {"n_estimators": [10], "max_depth": [2, 3], "learning_rate": [0.3], "gamma": [0.0]},
    "catboost": {"iterations": [20], "depth": [3], "learning_rate": [0.1, 0.5]},
}


@pytest.mark.parametrize("name", list(SUPERVISED))
def test_tiny_search_fits_and_predicts_probabilities(name, task):
    model, trials = random_search(
        name, task.train.X, task.train.y, task.valid.X, task.valid.y,
        n_trials=2, seed=0, n_classes=3, space=TINY[name],
    )  # fmt: skip
    assert len(trials) == 2
    best = max(trials, key=lambda t: t["score"])
    assert model.params == best["params"]
    proba = model.predict_proba(task.test.X)
    assert proba.shape == (len(task.test.y), 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-9)
    assert (proba >= 0).all()
    # Learns something: well above the majority-class rate (0.45) on the in-domain split.
    assert (model.predict(task.valid.X) == task.valid.y).mean() > 0.55
    if model.has_margin:
        np.testing.assert_allclose(
            softmax(model.predict_logits(task.test.X), axis=1), proba, atol=1e-5
        )
    else:
        assert not hasattr(model, "predict_logits")


@pytest.mark.parametrize("name", list(SUPERVISED))
# One whole column unseen is most of this batch's categorical values: the Encoder warns.
@pytest.mark.filterwarnings("ignore::adaptable.encoding.UnseenCategoryWarning")
def test_unseen_categories_and_missing_values_predict(name, task):
    model = models.create(name, None, 3, **{k: v[0] for k, v in TINY[name].items()})
    model.fit(task.train.X, task.train.y, task.valid.X)
    frame = task.test.X.iloc[:5].copy()
    frame[task.categorical[0]] = "never-seen"
    frame.loc[frame.index[0], task.categorical[1]] = np.nan
    proba = model.predict_proba(frame)
    assert proba.shape == (5, 3) and np.isfinite(proba).all()


def test_binary_margins_become_two_column_logits(task):
    y = (task.train.y == 0).astype(np.int64)
    for name in ("logreg", "xgboost", "catboost"):
        model = models.create(name, None, 2, **{k: v[0] for k, v in TINY[name].items()})
        model.fit(task.train.X, y)
        logits = model.predict_logits(task.test.X)
        assert logits.shape == (len(task.test.y), 2)
        np.testing.assert_array_equal(logits[:, 0], 0.0)
        np.testing.assert_allclose(
            softmax(logits, axis=1), model.predict_proba(task.test.X), atol=1e-5
        )


def test_configurations_are_distinct_seeded_and_from_the_grid():
    grid = SEARCH_SPACES["xgboost"]
    first = sample_configurations(grid, 10, seed=0)
    assert first == sample_configurations(grid, 10, seed=0)
    assert first != sample_configurations(grid, 10, seed=1)
    assert len({tuple(sorted(c.items())) for c in first}) == 10
    for config in first:
        assert all(config[k] in grid[k] for k in grid)
    # A grid smaller than the budget is enumerated once.
    assert sorted(c["k"] for c in sample_configurations({"k": [1, 2, 3]}, 10, 0)) == [1, 2, 3]


def test_search_spaces_follow_the_paper():
    assert SEARCH_SPACES["knn"]["n_neighbors"] == list(range(2, 13))
    lr = SEARCH_SPACES["xgboost"]["learning_rate"]
    assert len(lr) == 20 and lr[0] == 0.01 and lr[-1] == 1.0
    assert lr[1] == pytest.approx(0.01 + 0.99 / 19, abs=1e-6)
    assert SEARCH_SPACES["xgboost"]["gamma"] == [
        0.0,
        0.05,
        0.1,
        0.15,
        0.2,
        0.25,
        0.3,
        0.35,
        0.4,
        0.45,
        0.5,
    ]
    assert SEARCH_SPACES["random_forest"]["n_estimators"] == [50, 100, 150, 200]
    assert SEARCH_SPACES["catboost"]["iterations"][:2] == [50, 100]
    assert SEARCH_SPACES["catboost"]["iterations"][-1] == 2000


def test_scores_match_hand_computed_values():
    y = np.array([0, 1, 1, 0])
    proba = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.5, 0.5]])
    expected_ll = np.mean(np.log([0.9, 0.8, 0.4, 0.5]))
    assert score_predictions("log_loss", y, proba) == pytest.approx(expected_ll)
    # argmax predictions: 0, 1, 0, 0 -> accuracy 3/4, recall per class 1 and 1/2.
    assert score_predictions("accuracy", y, proba) == pytest.approx(0.75)
    assert score_predictions("balanced_accuracy", y, proba) == pytest.approx(0.75)
    assert score_predictions("macro_f1", y, proba) == pytest.approx((0.8 + 2 / 3) / 2)


def test_bad_inputs_are_refused(task):
    with pytest.raises(ValueError, match="unknown hyper-parameter"):
        models.KNN({"k": 3})
    with pytest.raises(RuntimeError, match="not fitted"):
        models.KNN().predict_proba(task.test.X)
    with pytest.raises(ValueError, match="metric"):
        random_search("knn", task.train.X, task.train.y, task.valid.X, task.valid.y, metric="auc")
    with pytest.raises(ValueError, match="labels"):
        models.KNN().fit(task.train.X, task.train.y[:-1])
    with pytest.raises(ValueError, match="every class"):
        models.XGBoost(n_classes=4).fit(task.train.X, task.train.y)


@pytest.mark.parametrize("name", list(SUPERVISED))
def test_every_baseline_can_be_a_source_model_for_adaptable(name, task):
    adapter = pytest.importorskip("adaptable.core.model_adapter")
    model = models.create(name, None, 3, **{k: v[0] for k, v in TINY[name].items()})
    model.fit(task.train.X, task.train.y)
    logits = adapter.as_logit_function(model)(task.test.X.iloc[:9])
    assert logits.shape == (9, 3)
    np.testing.assert_allclose(
        softmax(logits, axis=1), model.predict_proba(task.test.X.iloc[:9]), atol=1e-5
    )

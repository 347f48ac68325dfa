"""Supervised baselines: the seeded search, probabilities, margins, unseen categories."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax

from adaptable import models
from adaptable.framework.model_adapter import as_logit_function
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
    model = models.create(name, None, 3, **{k: v[0] for k, v in TINY[name].items()})
    model.fit(task.train.X, task.train.y)
    logits = as_logit_function(model)(task.test.X.iloc[:9])
    assert logits.shape == (9, 3)
    np.testing.assert_allclose(
        softmax(logits, axis=1), model.predict_proba(task.test.X.iloc[:9]), atol=1e-5
    )


# --------------------------------------------------------------------------- early stopping, threads
BOOSTERS = {
    # learning rate 1 over many rounds: the validation loss turns up after a few rounds
    "xgboost": {"n_estimators": 200, "max_depth": 4, "learning_rate": 1.0, "gamma": 0.0},
    "catboost": {"iterations": 300, "depth": 3, "learning_rate": 1.0},
}


@pytest.mark.parametrize("name", list(BOOSTERS))
def test_boosters_stop_early_on_the_validation_loss(name, task):
    params = BOOSTERS[name]
    drawn = params.get("n_estimators", params.get("iterations"))
    stopped = models.create(name, None, 3, **params)
    stopped.fit(task.train.X, task.train.y, task.valid.X, task.valid.y)
    assert stopped.rounds is not None and stopped.rounds < drawn
    plain = models.create(name, None, 3, **params)
    plain.early_stopping = False
    plain.fit(task.train.X, task.train.y, task.valid.X, task.valid.y)
    assert plain.rounds is None
    # The kept rounds are the better ones on the validation split.
    valid = (task.valid.y, task.valid.X)
    assert score_predictions("log_loss", valid[0], stopped.predict_proba(valid[1])) > (
        score_predictions("log_loss", valid[0], plain.predict_proba(valid[1]))
    )


def test_catboost_trials_are_capped(task, monkeypatch):
    from adaptable.models import supervised

    monkeypatch.setattr(supervised, "CATBOOST_MAX_ITERATIONS", 7)
    model = models.create("catboost", None, 3, iterations=50, depth=2, learning_rate=0.01)
    model.fit(task.train.X, task.train.y, task.valid.X, task.valid.y)
    assert model.estimator.tree_count_ <= 7


def test_search_records_the_rounds_kept_and_refits_nothing_on_load(task, tmp_path):
    space = {"iterations": [100], "depth": [3], "learning_rate": [0.9, 1.0]}
    model = models.train("catboost", task, cache_dir=tmp_path, n_trials=2, search_space=space)
    assert all(0 < t["rounds"] < 100 for t in model.trials)
    again = models.train("catboost", task, cache_dir=tmp_path, n_trials=2, search_space=space)
    assert again.cache_info["hit"]
    np.testing.assert_array_equal(
        again.predict_logits(task.test.X), model.predict_logits(task.test.X)
    )
    # The plain search is another model: another cache entry.
    plain = models.train(
        "catboost", task, cache_dir=tmp_path, n_trials=2, search_space=space, early_stopping=False
    )
    assert plain.cache_info["key"] != model.cache_info["key"] and not plain.cache_info["hit"]
    assert all("rounds" not in t for t in plain.trials)


@pytest.mark.parametrize("name", ["random_forest", "xgboost", "catboost"])
def test_training_threads_do_not_change_the_model(name, task):
    params = {k: v[0] for k, v in TINY[name].items()}
    probas = []
    for threads in (1, 2):
        model = models.create(name, None, 3, **params)
        model.threads = threads
        model.fit(task.train.X, task.train.y, task.valid.X, task.valid.y)
        probas.append(model.predict_proba(task.test.X))
    np.testing.assert_array_equal(probas[0], probas[1])
    with pytest.raises(ValueError, match="threads"):
        SUPERVISED[name](params, threads=0)


@pytest.mark.parametrize("name", ["xgboost", "catboost"])
def test_boosters_read_integer_categories_like_the_fitted_strings(name, task):
    # Fitted on the loaders' form ("3.0"), asked with integers (3): the Encoder's rule.
    column = task.categorical[0]
    as_loaded = lambda X: X.assign(**{column: X[column].str[1:] + ".0"})  # noqa: E731  "c3" -> "3.0"
    model = models.create(name, None, 3, **{k: v[0] for k, v in TINY[name].items()})
    model.fit(as_loaded(task.train.X), task.train.y)
    X = as_loaded(task.test.X)
    integers = X.assign(**{column: X[column].astype(float).astype(int)})
    assert integers[column].dtype.kind == "i"
    np.testing.assert_array_equal(model.predict_proba(integers), model.predict_proba(X))


def test_knn_search_from_shared_neighbours_scores_like_one_query_per_trial(task):
    space = {"n_neighbors": [2, 3, 5, 8, 12]}
    args = (task.train.X, task.train.y, task.valid.X, task.valid.y)
    shared, shared_trials = random_search("knn", *args, n_trials=5, space=space)
    plain, plain_trials = random_search(
        "knn", *args, n_trials=5, space=space, shared_neighbours=False
    )
    assert [t["params"] for t in shared_trials] == [t["params"] for t in plain_trials]
    np.testing.assert_allclose(
        [t["score"] for t in shared_trials], [t["score"] for t in plain_trials], rtol=0, atol=1e-12
    )
    assert shared.params == plain.params
    np.testing.assert_array_equal(
        shared.predict_proba(task.test.X), plain.predict_proba(task.test.X)
    )

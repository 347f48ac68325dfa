"""The anchors that update the model on late labels (``adaptable.baselines.labelled_update``):
the refit and the patch on a concept shift, the refit's schedule, weights and kept rows, the
fallback for models that cannot be refitted, and the usual contract (shapes, determinism,
errors)."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from adaptable import methods
from adaptable.baselines.labelled_update import LabelledPatch, LabelledRefit
from adaptable.core import softmax


def draw(n: int, centre: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Three features; p(y|x) changes along the third: below 0 the label follows the first
    feature, above 0 the second. The source lies mostly below, the target mostly above."""
    X = rng.normal(size=(n, 3))
    X[:, 2] += centre
    logit = np.where(X[:, 2] < 0, 4 * X[:, 0], 4 * X[:, 1] + 1.0)
    return X, (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)


def boosted() -> HistGradientBoostingClassifier:
    return HistGradientBoostingClassifier(max_iter=60, random_state=0)


@pytest.fixture(scope="module")
def concept_shift():
    rng = np.random.default_rng(0)
    Xs, ys = draw(3000, -2.5, rng)
    Xt, yt = draw(3000, 2.5, rng)
    return boosted().fit(Xs, ys), Xs, ys, Xt, yt


def macro_f1(method_or_model, X, y) -> float:
    return 100 * f1_score(y, method_or_model.predict(X), average="macro")


def recovered_share(cls, concept_shift, **params) -> float:
    """The share of the macro-F1 gap between the source model and a model trained on the same
    1,000 labelled target rows that the method recovers on other target rows."""
    model, Xs, ys, Xt, yt = concept_shift
    labelled, test = slice(0, 1000), slice(1000, 3000)
    method = cls(**params).fit(model, Xs, ys)
    method.partial_fit(Xt[labelled], yt[labelled])
    source = macro_f1(model, Xt[test], yt[test])
    target = macro_f1(boosted().fit(Xt[labelled], yt[labelled]), Xt[test], yt[test])
    assert target - source > 20  # a real gap to recover
    return (macro_f1(method, Xt[test], yt[test]) - source) / (target - source)


@pytest.mark.parametrize("target_weight", ["plain", "ramp"])
def test_the_refit_recovers_most_of_a_concept_shift(target_weight, concept_shift) -> None:
    assert recovered_share(LabelledRefit, concept_shift, target_weight=target_weight) >= 0.8
    # the refit does it, not the decision rule: without the refit (no label reaches the
    # schedule's first step) nothing is recovered
    assert recovered_share(LabelledRefit, concept_shift, min_labelled=5000) < 0.2


def test_the_patch_recovers_a_clear_share_and_needs_the_features(concept_shift) -> None:
    assert recovered_share(LabelledPatch, concept_shift) >= 0.5
    assert recovered_share(LabelledPatch, concept_shift, use_features=False) < 0.2


def test_the_refit_is_the_refitted_model_under_accuracy(concept_shift) -> None:
    model, Xs, ys, Xt, yt = concept_shift
    method = LabelledRefit(objective="accuracy").fit(model, Xs, ys)
    np.testing.assert_allclose(method.predict_proba(Xt[:64]), model.predict_proba(Xt[:64]))
    method.partial_fit(Xt[:300], yt[:300])
    assert isinstance(method.refitted_, HistGradientBoostingClassifier)
    assert method.refitted_ is not model and method.n_source_rows_ == 3000
    np.testing.assert_allclose(
        method.predict_proba(Xt[300:364]), method.refitted_.predict_proba(Xt[300:364]), atol=1e-9
    )


def test_updates_at_20_then_each_doubling_and_none_in_between(concept_shift) -> None:
    _, Xs, ys, Xt, yt = concept_shift
    model = LogisticRegression().fit(Xs, ys)
    for cls in (LabelledRefit, LabelledPatch):
        method = cls(objective="accuracy").fit(model, Xs, ys)
        batch = Xt[2000:2064]
        outputs = []
        for i in range(170):
            method.partial_fit(Xt[i : i + 1], yt[i : i + 1])
            outputs.append(method.predict_proba(batch))
        assert method.update_labels_ == [20, 40, 80, 160]
        assert len(method.update_seconds_) == 4
        changed = [i + 1 for i in range(1, 170) if not np.array_equal(outputs[i], outputs[i - 1])]
        assert changed == [20, 40, 80, 160], cls.name
        # labels in larger calls: at most one update per call, the schedule from its count
        method.reset()
        assert method.update_labels_ == [] and method.n_labelled_ == 0
        np.testing.assert_allclose(method.predict_proba(batch), model.predict_proba(batch))
        for start in (0, 50, 100, 110):
            stop = {0: 50, 50: 100, 100: 110, 110: 250}[start]
            method.partial_fit(Xt[start:stop], yt[start:stop])
        assert method.update_labels_ == [50, 100, 250]


class WeightRecorder(LogisticRegression):
    """A logistic regression that remembers the row weights of its last fit."""

    def fit(self, X, y, sample_weight=None):
        self.seen_weights_ = sample_weight
        return super().fit(X, y, sample_weight=sample_weight)


@pytest.mark.parametrize(
    "target_weight, expected",
    [("ramp", 3000 / 1000), ("plain", 1.0), ("balanced", 3000 / 40)],
)
def test_target_rows_weigh_as_the_weighting_says(target_weight, expected, concept_shift) -> None:
    _, Xs, ys, Xt, yt = concept_shift
    model = WeightRecorder().fit(Xs, ys)
    method = LabelledRefit(target_weight=target_weight).fit(model, Xs, ys)
    method.partial_fit(Xt[:40], yt[:40])
    weights = method.refitted_.seen_weights_
    np.testing.assert_allclose(weights[:3000], 1.0)
    np.testing.assert_allclose(weights[3000:], expected)
    assert model.seen_weights_ is None  # the user's model is never refitted


def test_a_pipeline_gets_the_weights_through_its_last_step(concept_shift) -> None:
    _, Xs, ys, Xt, yt = concept_shift
    model = make_pipeline(StandardScaler(), WeightRecorder()).fit(Xs, ys)
    method = LabelledRefit(target_weight="ramp", ramp_labels=100).fit(model, Xs, ys)
    method.partial_fit(Xt[:40], yt[:40])
    np.testing.assert_allclose(method.refitted_[-1].seen_weights_[3000:], 3000 / 100)


def test_a_model_without_row_weights_gets_repeated_rows(concept_shift) -> None:
    _, Xs, ys, Xt, yt = concept_shift
    model = KNeighborsClassifier(n_neighbors=5).fit(Xs, ys)
    method = LabelledRefit(target_weight="ramp", ramp_labels=1000).fit(model, Xs, ys)
    method.partial_fit(Xt[:40], yt[:40])
    # w = 3000 / 1000 = 3: each of the 40 target rows three times beside the 3000 source rows
    assert method.refitted_.n_samples_fit_ == 3000 + 3 * 40


def test_the_source_rows_kept_are_capped_seeded_and_hold_every_class() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 2))
    y = np.zeros(3000, dtype=int)
    y[:3] = 1  # a rare class, easily missed by a sample
    y[3:1500] = 2
    model = LogisticRegression(max_iter=500).fit(X, y)
    method = LabelledRefit(max_source_rows=100).fit(model, X, y)
    assert method.n_source_rows_ in (100, 101)
    assert set(np.unique(method._source_y)) == {0, 1, 2}
    again = LabelledRefit(max_source_rows=100).fit(model, X, y)
    np.testing.assert_array_equal(method._source_X, again._source_X)
    other = LabelledRefit(max_source_rows=100, seed=1).fit(model, X, y)
    assert not np.array_equal(method._source_X[:100], other._source_X[:100])


def test_package_supervised_models_are_refitted_with_their_hyper_parameters() -> None:
    from adaptable.models.supervised import LogReg, XGBoost

    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"a": rng.normal(size=900), "b": rng.choice(["x", "y", "z"], 900)})
    y = ((frame["a"] + (frame["b"] == "x") + rng.normal(size=900)) > 0.5).to_numpy().astype(int)
    target = frame.iloc[600:].reset_index(drop=True)
    yt = 1 - y[600:]  # the concept flipped
    logreg = LogReg({"C": 0.1}, threads=1).fit(frame[:500], y[:500])
    method = LabelledRefit(objective="accuracy").fit(
        logreg, frame[:500], y[:500], frame[500:600], y[500:600]
    )
    method.partial_fit(target[:100], yt[:100])
    refitted = method.refitted_
    assert isinstance(refitted, LogReg) and refitted.params == {"C": 0.1}
    assert refitted.encoder is logreg.encoder and refitted is not logreg
    assert refitted.estimator.n_features_in_ == logreg.estimator.n_features_in_
    np.testing.assert_allclose(
        method.predict_proba(target[100:]), refitted.predict_proba(target[100:]), atol=1e-6
    )  # float32 features
    assert not np.allclose(refitted.predict_proba(target[100:]), logreg.predict_proba(target[100:]))

    booster = XGBoost({"n_estimators": 200, "max_depth": 2}, threads=1).fit(
        frame[:500], y[:500], frame[500:600], y[500:600]
    )
    method = LabelledRefit().fit(booster, frame[:500], y[:500], frame[500:600], y[500:600])
    method.partial_fit(target[:40], yt[:40])
    # the rounds it kept after early stopping, no early stopping in the refit
    assert method.refitted_.params["n_estimators"] == booster.rounds
    assert method.refitted_.rounds is None


def test_a_model_that_cannot_be_refitted_falls_back_to_the_patch_with_one_warning(
    concept_shift,
) -> None:
    model, Xs, ys, Xt, yt = concept_shift

    class Frozen:
        """A model that predicts and nothing more."""

        def predict_proba(self, X):
            return model.predict_proba(X)

    frozen = Frozen()
    with pytest.warns(UserWarning, match="cannot be refitted.*labelled_patch") as caught:
        refit = methods.create("labelled_refit", seed=3).fit(frozen, Xs, ys)
    assert len([w for w in caught if "cannot be refitted" in str(w.message)]) == 1
    assert not refit.refittable_
    patch = LabelledPatch(seed=3).fit(frozen, Xs, ys)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no further warning on the stream
        for method in (refit, patch):
            method.partial_fit(Xt[:100], yt[:100])
    np.testing.assert_allclose(
        refit.predict_proba(Xt[100:164]), patch.predict_proba(Xt[100:164]), atol=1e-9
    )
    with pytest.warns(UserWarning, match="no training rows"):
        without_rows = LabelledRefit().fit(model, None, ys)
    without_rows.partial_fit(Xt[:40], yt[:40])  # the patch, its encoder fitted on these rows
    assert without_rows.predict_proba(Xt[40:50]).shape == (10, 2)


def test_probabilities_determinism_and_string_labels(concept_shift) -> None:
    model, Xs, ys, Xt, yt = concept_shift
    names = np.array(["no", "yes"])
    named = LogisticRegression().fit(Xs, names[ys])
    for cls in (LabelledRefit, LabelledPatch):
        runs = []
        for _ in range(2):
            method = cls().fit(named, Xs, names[ys])
            outputs = []
            for start in range(0, 1280, 64):
                proba = method.predict_proba(Xt[start : start + 64])
                assert proba.shape == (64, 2) and np.all(proba >= 0)
                np.testing.assert_allclose(proba.sum(axis=1), 1.0)
                outputs.append(proba)
                method.partial_fit(Xt[start : start + 8], names[yt[start : start + 8]])
            runs.append(np.concatenate(outputs))
            assert method.update_labels_ == [24, 48, 96]
            assert set(method.predict(Xt[:10])) <= {"no", "yes"}
        np.testing.assert_array_equal(runs[0], runs[1])


def test_bad_calls_are_refused_clearly(concept_shift) -> None:
    model, Xs, ys, Xt, yt = concept_shift
    method = LabelledRefit().fit(model, Xs, ys)
    with pytest.raises(ValueError, match="labels unseen at fit \\[7\\]"):
        method.partial_fit(Xt[:3], [0, 7, 1])
    with pytest.raises(ValueError, match="3 rows but y has 2 labels"):
        method.partial_fit(Xt[:3], [0, 1])
    with pytest.raises(ValueError, match="growth"):
        LabelledRefit(growth=1.0)
    with pytest.raises(ValueError, match="target_weight"):
        LabelledRefit(target_weight="half")
    assert method.n_labelled_ == 0  # nothing was taken from the refused calls
    method.partial_fit(Xt[:0], yt[:0])  # no labels: nothing happens
    assert method.update_labels_ == []


def test_the_patch_starts_from_the_model(concept_shift) -> None:
    """An overwhelming ridge leaves the model up to the per-class offset b, which the labels
    alone decide: the patch is then softmax(log p + b)."""
    model, Xs, ys, Xt, yt = concept_shift
    method = LabelledPatch(strength=1e9, objective="accuracy").fit(model, Xs, ys)
    method.partial_fit(Xt[:200], yt[:200])
    log_p = np.log(model.predict_proba(Xt[300:400]))
    shift = np.log(method.predict_proba(Xt[300:400])) - log_p
    offset = shift[:, 1] - shift[:, 0]  # b1 - b0 on every row
    np.testing.assert_allclose(offset, offset[0], atol=1e-5)
    assert abs(offset[0]) > 0.1  # the target's classes are not the source's
    np.testing.assert_allclose(
        softmax(log_p + np.array([0.0, offset[0]])), method.predict_proba(Xt[300:400]), atol=1e-5
    )


def test_a_refitted_method_pickles_mid_stream_and_continues_identically(concept_shift) -> None:
    model, Xs, ys, Xt, yt = concept_shift
    for cls in (LabelledRefit, LabelledPatch):
        method = cls().fit(model, Xs, ys)
        method.predict_proba(Xt[:64])
        method.partial_fit(Xt[:40], yt[:40])
        twin = pickle.loads(pickle.dumps(method))
        for method_now in (method, twin):
            method_now.partial_fit(Xt[40:80], yt[40:80])  # the next update, on both
        for start in (100, 164):
            batch = Xt[start : start + 64]
            np.testing.assert_array_equal(twin.predict_proba(batch), method.predict_proba(batch))

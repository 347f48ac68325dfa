"""The recommended adapter, AdapTable(preset="default"), end to end on synthetic shifts whose
truth is known: a pure label shift (p(x|y) fixed) and a covariate shift (p(y|x) fixed)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, f1_score
from sklearn.pipeline import make_pipeline

from adaptable import AdapTable
from adaptable.core.labels.rule_choice import resolved
from adaptable.encoding import Encoder

MEANS = np.array([[0.0, 0.0, 0.0], [1.0, 0.6, 0.3]])  # class-conditional means, unit variance
LEVELS = np.array([["a", "b", "c"], ["c", "b", "a"]])  # the categorical feature's favourites


def draw(labels: np.ndarray, rng: np.random.Generator, shift: float = 0.0) -> pd.DataFrame:
    """Rows of the given classes; ``shift`` moves every row's first feature (both classes)."""
    x = MEANS[labels] + rng.normal(size=(len(labels), 3))
    x[:, 0] += shift
    favourite = rng.random(len(labels)) < 0.6
    level = np.where(favourite, LEVELS[labels, 0], LEVELS[labels, rng.integers(1, 3, len(labels))])
    frame = pd.DataFrame(x, columns=["u", "v", "w"])
    frame["k"] = level
    return frame


def posterior_one(frame: pd.DataFrame, prior_one: float) -> np.ndarray:
    """The true p(y=1|x) of the generating model (Gaussian part only: the categorical part is
    the same for every covariate-shift row below, which keeps the levels' distribution)."""
    x = frame[["u", "v", "w"]].to_numpy()
    log_odds = (
        x @ (MEANS[1] - MEANS[0])
        - 0.5 * (MEANS[1] @ MEANS[1])
        + np.log(prior_one / (1 - prior_one))
    )
    return 1.0 / (1.0 + np.exp(-log_odds))


@pytest.fixture(scope="module")
def source():
    rng = np.random.default_rng(0)
    y = (rng.random(6000) < 0.2).astype(int)
    X = draw(y, rng)
    model = make_pipeline(Encoder(), LogisticRegression(max_iter=500)).fit(X[:4000], y[:4000])
    return model, X, y


def fitted(source, **options) -> AdapTable:
    model, X, y = source
    return AdapTable(random_state=0, **options).fit(model, X[:4000], y[:4000], X[4000:], y[4000:])


def stream(method: AdapTable, X: pd.DataFrame, size: int = 64) -> np.ndarray:
    return np.concatenate(
        [method.predict_proba(X.iloc[i : i + size]) for i in range(0, len(X), size)]
    )


def test_pure_label_shift_estimates_the_prior_and_beats_the_source(source) -> None:
    model, *_ = source
    rng = np.random.default_rng(1)
    y = (rng.random(4000) < 0.7).astype(int)  # from 20 % to 70 % class 1, p(x|y) unchanged
    X = draw(y, rng)
    method = fitted(source)
    proba = stream(method, X)
    state = method.state
    assert state.decision_rule == "label_shift"
    assert state.prior_shift_statistic > 100  # 4,000 rows from 20 % to 70 %: no doubt
    assert state.shift_statistic <= method.shift_test_threshold
    assert abs(state.online_prior[1] - 0.7) < 0.05
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    adapted = f1_score(y, proba.argmax(axis=1), average="macro")
    unadapted = f1_score(y, model.predict(X), average="macro")
    assert adapted >= unadapted + 0.05


def test_covariate_shift_keeps_the_decision_of_the_source_rule(source) -> None:
    model, *_ = source
    rng = np.random.default_rng(2)
    # Covariate shift: the first feature moves, labels drawn from the unchanged p(y|x).
    X = draw(np.zeros(4000, dtype=int), rng, shift=1.5)
    X["k"] = draw((rng.random(4000) < 0.2).astype(int), rng)["k"]
    y = (rng.random(4000) < posterior_one(X, 0.2)).astype(int)
    method = fitted(source)
    pred = stream(method, X).argmax(axis=1)
    assert method.state.decision_rule != "label_shift"
    assert method.state.shift_statistic > method.shift_test_threshold
    assert method.state.prior_shift_statistic is None  # the moment test decided alone
    source_f1 = f1_score(y, model.predict(X), average="macro")
    assert f1_score(y, pred, average="macro") >= source_f1 - 0.005
    # With the accuracy objective nothing is re-weighted on a covariate shift: argmax stays.
    accurate = fitted(source, objective="accuracy")
    pred = stream(accurate, X).argmax(axis=1)
    assert accuracy_score(y, pred) >= accuracy_score(y, model.predict(X)) - 0.01


def test_without_any_shift_label_shift_correction_waits_for_evidence(source) -> None:
    # In-domain rows: consistent with pure label shift (the moment test accepts), but the
    # label distribution did not move, so the likelihood-ratio test keeps the correction off
    # and the adapter decides as without label shift (the balanced rule chosen on the
    # held-out rows, which the stream's expected confusion also favours).
    model, X, y = source
    rng = np.random.default_rng(5)
    rows = draw((rng.random(1280) < 0.2).astype(int), rng)
    method = fitted(source)
    rules = []
    for i in range(0, len(rows), 64):
        method.predict_proba(rows.iloc[i : i + 64])
        rules.append(method.state.decision_rule)
        assert method.state.shift_statistic <= method.shift_test_threshold
    assert "label_shift" not in rules
    assert method.state.prior_shift_statistic < 3.84
    assert method.state.prior_shift_statistic == method.decider_.prior_estimate.likelihood_ratio()
    # The previous default (no likelihood-ratio test) corrects from the first batch.
    ungated = fitted(source, label_shift_level=1.0)
    ungated.predict_proba(rows.iloc[:64])
    assert ungated.state.decision_rule == "label_shift"


def test_imbalanced_source_without_shift_chooses_the_balanced_rule_for_macro_f1(source) -> None:
    method = fitted(source)
    assert method.decider_.rule.name == "balanced"  # a 20 % minority under-called by argmax
    assert method.decider_.rule.balanced_score > method.decider_.rule.source_score
    assert fitted(source, objective="accuracy").decider_.rule.name == "source"


def test_predict_proba_is_the_decision_of_the_chosen_rule(source) -> None:
    model, X, _ = source
    rng = np.random.default_rng(3)
    batch = draw(np.zeros(64, dtype=int), rng, shift=3.0)  # far from any label shift
    method = fitted(source)
    method.predict_proba(draw(np.zeros(640, dtype=int), rng, shift=3.0))  # the test decides
    assert method.decider_.rule.name == "balanced"
    # On this covariate shift the model's own view of the stream says argmax serves macro-F1
    # better, so the balanced rule chosen on the source rows is not used.
    assert method.state.decision_rule == "source"
    p = model.predict_proba(batch)
    np.testing.assert_allclose(method.predict_proba(batch), p, rtol=1e-6)
    # Where the stream's expected confusions favour the balanced rule, it is used.
    method.decider_.expected_confusion[1] = np.diag([1000.0, 1000.0])
    balanced = p / method.source_prior_
    np.testing.assert_allclose(
        method.predict_proba(batch), balanced / balanced.sum(axis=1, keepdims=True), rtol=1e-6
    )
    assert method.state.decision_rule == "balanced"


def test_plugin_fallback_decides_by_the_expected_objective_over_the_stream(
    source, tmp_path
) -> None:
    from adaptable.core.decision.rules import plugin_weights
    from adaptable.framework.probability import normalize

    model, *_ = source
    rng = np.random.default_rng(3)
    method = fitted(source, fallback="plugin")
    method.predict_proba(draw(np.zeros(640, dtype=int), rng, shift=3.0))  # the test rejects
    batch = draw(np.zeros(64, dtype=int), rng, shift=3.0)
    out = method.predict_proba(batch)
    # Where the default falls back to argmax ("source"), this one uses the class weights that
    # maximise expected macro-F1 under the model's posteriors of every stream row so far.
    assert method.state.decision_rule == "plugin"
    weights = plugin_weights(method.decider_.prior_estimate.reservoir, "macro_f1")
    np.testing.assert_allclose(out, normalize(model.predict_proba(batch) * weights), rtol=1e-6)
    assert not np.allclose(weights[0] / weights[1], 1.0)  # not argmax in disguise
    method.save(tmp_path / "plugin.safetensors")
    assert AdapTable.load(tmp_path / "plugin.safetensors", model=model).fallback == "plugin"


def test_between_fallback_holds_the_plugin_decision_between_the_two_rules(source, tmp_path) -> None:
    from adaptable.core.decision.rules import between_weights
    from adaptable.framework.probability import normalize

    model, *_ = source
    rng = np.random.default_rng(3)
    # Rows without any shift: the moment test accepts, so the held-out choice stands.
    calm = fitted(source, fallback="between")
    quiet = draw((rng.random(640) < 0.2).astype(int), rng)
    rules = set()
    for i in range(0, 640, 64):
        calm.predict_proba(quiet.iloc[i : i + 64])
        rules.add(calm.state.decision_rule)
    assert "between" not in rules
    # A covariate shift: once the test rejects, the weights 1 / p_s^beta with the best
    # expected macro-F1 under the model's posteriors of every stream row so far.
    method = fitted(source, fallback="between")
    method.predict_proba(draw((rng.random(640) < 0.2).astype(int), rng, shift=1.0))
    assert method.state.shift_statistic > method.shift_test_threshold
    batch = draw((rng.random(64) < 0.2).astype(int), rng, shift=1.0)
    out = method.predict_proba(batch)
    assert method.state.decision_rule == "between"
    weights = between_weights(
        method.decider_.prior_estimate.reservoir, method.source_prior_, "macro_f1"
    )
    np.testing.assert_allclose(out, normalize(model.predict_proba(batch) * weights), rtol=1e-6)
    prior = method.source_prior_
    beta = np.log(weights[1] / weights[0]) / np.log(prior[0] / prior[1])
    assert 0.05 < beta < 0.95  # neither argmax nor the balanced rule in disguise
    method.save(tmp_path / "between.safetensors")
    assert AdapTable.load(tmp_path / "between.safetensors", model=model).fallback == "between"


def test_reset_replays_the_stream_and_save_load_continues_it(source, tmp_path) -> None:
    model, *_ = source
    rng = np.random.default_rng(4)
    X = draw((rng.random(1024) < 0.6).astype(int), rng)
    method = fitted(source)
    first = stream(method, X)
    method.reset()
    np.testing.assert_array_equal(stream(method, X), first)
    method.reset()
    stream(method, X.iloc[:512])
    method.save(tmp_path / "default.safetensors")
    loaded = AdapTable.load(tmp_path / "default.safetensors", model=model)
    assert loaded.preset == "default" and loaded.decider_.rule == method.decider_.rule
    np.testing.assert_allclose(stream(loaded, X.iloc[512:]), stream(method, X.iloc[512:]))


def test_files_from_before_the_presets_load_as_the_paper_algorithm(source, tmp_path) -> None:
    import json

    from safetensors.numpy import load_file, save_file

    model, X, y = source
    paper = AdapTable(preset="paper", calibrator="none").fit(model, X[:4000], y[:4000])
    path = tmp_path / "paper.safetensors"
    paper.save(path)
    from safetensors import safe_open

    with safe_open(str(path), framework="numpy") as handle:
        meta = json.loads(handle.metadata()["adaptable"])
    meta["format"] = "adaptable.AdapTable/1"
    del meta["digest"]  # written before the digest too
    del meta["params"]["preset"], meta["params"]["objective"]
    save_file(load_file(str(path)), str(path), metadata={"adaptable": json.dumps(meta)})
    old = AdapTable.load(path, model)
    assert old.preset == "paper"
    batch = X.iloc[:64]
    np.testing.assert_array_equal(old.predict_proba(batch), paper.predict_proba(batch))


def test_files_from_before_the_likelihood_ratio_test_load_without_it(source, tmp_path) -> None:
    import json

    from safetensors import safe_open
    from safetensors.numpy import load_file, save_file

    model, *_ = source
    method = fitted(source, label_shift_level=1.0)
    path = tmp_path / "before.safetensors"
    method.save(path)
    with safe_open(str(path), framework="numpy") as handle:
        meta = json.loads(handle.metadata()["adaptable"])
    del meta["params"]["label_shift_level"]  # what a file of the previous version holds
    del meta["digest"]  # written before the digest too
    save_file(load_file(str(path)), str(path), metadata={"adaptable": json.dumps(meta)})
    assert AdapTable.load(path, model).label_shift_level == 1.0
    fitted(source, label_shift_level=0.01).save(path)
    assert AdapTable.load(path, model).label_shift_level == 0.01


def covariate_shifted_stream(rng: np.random.Generator, n: int = 1280) -> pd.DataFrame:
    """Rows whose first feature moved by -1 (p(y|x) unchanged): the moment test rejects, and
    the model's expected confusion on them favours the balanced rule (0.67 vs 0.58)."""
    X = draw(np.zeros(n, dtype=int), rng, shift=-1.0)
    X["k"] = draw((rng.random(n) < 0.2).astype(int), rng)["k"]
    return X


def test_a_plain_held_out_win_lets_the_stream_check_decide_under_covariate_shift(source) -> None:
    """Where the balanced rule beat argmax on the held-out rows without the bootstrap margin
    (evidence 0.47, as on Hospital Readmission), it is considered only once the moment test
    has rejected pure label shift, and then the stream's expected confusion decides."""
    from adaptable.core.decision.rules import RuleChoice

    weak = RuleChoice(beta=0.0, source_score=0.625, balanced_score=0.626, evidence=0.47)
    shifted = covariate_shifted_stream(np.random.default_rng(7))
    rules = {}
    # This stream holds class 0 alone: read as a label shift it favours argmax, so the default
    # stream check ("both") vetoes the balanced rule whatever the evidence (checked below); the
    # evidence thresholds are checked on the model's reading alone.
    for evidence in (0.0, 0.47, 0.48, 0.8):
        method = fitted(source, covariate_rule_evidence=evidence, stream_check="model")
        method.decider_.rule = weak
        stream(method, shifted)
        assert method.state.shift_statistic > method.shift_test_threshold
        rules[evidence] = method.state.decision_rule
    # the stream favours the balanced rule here (the same stream with the strong held-out rule)
    assert rules == {0.0: "balanced", 0.47: "balanced", 0.48: "source", 0.8: "source"}
    strong = fitted(source, stream_check="model")
    stream(strong, shifted)
    assert strong.decider_.rule.beta == 1.0 and strong.state.decision_rule == "balanced"
    vetoed = fitted(source)
    stream(vetoed, shifted)
    assert vetoed.decider_.rule.beta == 1.0 and vetoed.state.decision_rule == "source"
    # Where the stream favours argmax (the same covariate shift the other way: 0.74 vs 0.68),
    # the plain held-out win is not enough: the stream check has to be fed and read.
    rightwards = draw(np.zeros(1280, dtype=int), np.random.default_rng(7), shift=1.5)
    rightwards["k"] = covariate_shifted_stream(np.random.default_rng(8))["k"]
    method = fitted(source)
    method.decider_.rule = weak
    stream(method, rightwards)
    assert method.state.shift_statistic > method.shift_test_threshold
    assert method.state.decision_rule == "source"
    # A held-out loss of the balanced rule is never enough, whatever the threshold.
    method = fitted(source)
    method.decider_.rule = RuleChoice(
        beta=0.0, source_score=0.626, balanced_score=0.626, evidence=0.0
    )
    stream(method, shifted)
    assert method.state.decision_rule == "source"
    # In-domain rows pass the moment test: there the bootstrap margin (rule_evidence) stands,
    # although the stream check favours the balanced rule on these three batches.
    rng = np.random.default_rng(5)
    in_domain = draw((rng.random(1280) < 0.2).astype(int), rng).iloc[:192]
    rules = {}
    for evidence in (0.8, 0.47):
        # (the model's reading alone: on these 192 rows the two readings nearly tie, and the
        # label-shift reading, whose estimate sits a little below p_s, keeps argmax)
        method = fitted(source, rule_evidence=evidence, stream_check="model")
        method.decider_.rule = weak
        stream(method, in_domain)
        assert method.state.shift_statistic <= method.shift_test_threshold
        rules[evidence] = method.state.decision_rule
    assert rules == {0.8: "source", 0.47: "balanced"}


def moved_away_stream(rate: float, n: int = 2560) -> tuple[pd.DataFrame, np.ndarray]:
    """The source's classes at a new rate, every row's category "b" (a level that says nothing
    of the class): the moment test rejects pure label shift, and the model's posteriors keep
    the source's 20 % belief about the rows the category no longer tells apart."""
    rng = np.random.default_rng(11)
    y = (rng.random(n) < rate).astype(int)
    X = draw(y, rng)
    X["k"] = "b"
    return X, y


def test_the_label_shift_reading_vetoes_the_balanced_rule_on_a_stream_that_left_its_class(
    source, tmp_path
) -> None:
    """Adult's married / not-married split in small: the target has far fewer of the class the
    balanced rule boosts, the model over-states it, and its posteriors alone favour the
    balanced rule. Read as a label shift (EM re-weighting, prior centred at p_s), the stream
    favours argmax, and ``stream_check="both"`` keeps it."""
    model, *_ = source
    for rate in (0.05, 0.1):
        X, y = moved_away_stream(rate)
        source_f1 = f1_score(y, model.predict(X), average="macro")
        f1, rules = {}, {}
        for check in ("model", "both"):
            method = fitted(source, stream_check=check)
            f1[check] = f1_score(y, stream(method, X).argmax(axis=1), average="macro")
            rules[check] = method.state.decision_rule
            assert method.state.shift_statistic > method.shift_test_threshold
        assert rules == {"model": "balanced", "both": "source"}
        assert f1["model"] < source_f1 - 0.05  # what the model's reading alone costs
        assert f1["both"] > f1["model"] + 0.02
        assert f1["both"] >= source_f1 - 0.035  # only the first batches, before the veto
    # Where the label mix did not move, both readings agree on the balanced rule.
    X, _ = moved_away_stream(0.2)
    for check in ("model", "both"):
        method = fitted(source, stream_check=check)
        stream(method, X)
        assert method.state.decision_rule == "balanced"
    # The reading's estimate is warm-started from the last one (a cache, not saved): a loaded
    # adapter starts it again from p_s and reaches the same decisions.
    X, _ = moved_away_stream(0.05)
    method = fitted(source, stream_check="both")
    stream(method, X.iloc[:1280])
    method.save(tmp_path / "both.safetensors")
    loaded = AdapTable.load(tmp_path / "both.safetensors", model=model)
    np.testing.assert_allclose(stream(loaded, X.iloc[1280:]), stream(method, X.iloc[1280:]))


def test_the_label_shift_reading_scores_both_rules_on_the_reweighted_reservoir(source) -> None:
    """The veto recomputed by hand: MAP-EM on the reservoir with a prior centred at p_s worth
    ``prior_strength`` rows, posteriors re-weighted by p_t / p_s, each rule's expected
    macro-F1 from the expected confusion of its predictions on the reservoir."""
    X, _ = moved_away_stream(0.05)
    method = fitted(source, stream_check="both")
    stream(method, X.iloc[:640])
    reservoir = method.decider_.prior_estimate.reservoir
    p_s = method.source_prior_
    prior = p_s.copy()
    for _ in range(2000):  # EM to its fixed point, from p_s
        resp = reservoir / p_s * prior
        resp /= resp.sum(axis=1, keepdims=True)
        prior = (resp.sum(axis=0) + method.prior_strength * p_s) / (
            len(reservoir) + method.prior_strength
        )
    np.testing.assert_allclose(method.decider_.reading_prior, prior, atol=1e-5)
    assert method.decider_.reading_prior[1] < p_s[1] - 0.05  # the stream moved away from class 1
    weighted = reservoir * prior / p_s
    weighted /= weighted.sum(axis=1, keepdims=True)
    scores = []
    for pred in (reservoir.argmax(axis=1), (reservoir / p_s).argmax(axis=1)):
        f1 = []
        for k in (0, 1):
            tp = weighted[pred == k, k].sum()
            f1.append(2 * tp / (weighted[:, k].sum() + (pred == k).sum()))
        scores.append(np.mean(f1))
    assert scores[1] < scores[0]  # the balanced rule loses under this reading...
    running = method.decider_.prior_estimate.prior.copy()
    # ...and the adapter says so
    assert method.decider_.label_shift_reading_favours_balanced() is False
    # the running estimate of the label-shift branch is left as it was
    np.testing.assert_array_equal(method.decider_.prior_estimate.prior, running)


def test_label_shift_decision_is_the_plugin_rule_under_the_estimated_prior(source) -> None:
    """In the label-shift branch the output is the EM-re-weighted posteriors times the class
    weights that maximise expected macro-F1 over the reservoir (recomputed here by hand)."""
    from adaptable.core.decision.rules import plugin_weights
    from adaptable.framework.probability import normalize

    model, *_ = source
    rng = np.random.default_rng(1)
    X = draw((rng.random(1024) < 0.7).astype(int), rng)
    method = fitted(source)
    stream(method, X[:-64])
    last = X[-64:]
    proba = method.predict_proba(last)
    assert method.state.decision_rule == "label_shift"
    estimate = method.decider_.prior_estimate
    weights = plugin_weights(estimate.target_posteriors(), "macro_f1")
    assert not np.allclose(weights, weights[0])  # a threshold other than argmax q
    expected = normalize(estimate.target_posteriors(model.predict_proba(last)) * weights)
    np.testing.assert_allclose(proba, expected, atol=1e-10)


def test_a_calibrator_informs_the_check_but_the_output_keeps_the_model_posteriors(source) -> None:
    """With a calibrator, outside label-shift correction the decision re-weights the model's
    own softmax (the calibrated posteriors feed the stream check only)."""
    model, *_ = source
    rng = np.random.default_rng(5)
    rows = draw((rng.random(640) < 0.2).astype(int), rng)
    method = fitted(source, calibrator="temperature")
    assert method.calibrator_name_ == "temperature"
    for i in range(0, len(rows), 64):
        batch = rows.iloc[i : i + 64]
        proba = method.predict_proba(batch)
        rule = method.state.decision_rule
        assert rule in ("source", "balanced")
        raw = model.predict_proba(batch)
        weights = np.ones(2) if rule == "source" else 1.0 / method.source_prior_
        expected = raw * weights
        np.testing.assert_allclose(
            proba, expected / expected.sum(axis=1, keepdims=True), atol=1e-10
        )


def test_files_from_before_covariate_rule_evidence_keep_one_threshold(source, tmp_path) -> None:
    import json

    from safetensors import safe_open
    from safetensors.numpy import load_file, save_file

    model, *_ = source
    method = fitted(source, rule_evidence=0.7)
    path = tmp_path / "before.safetensors"
    method.save(path)
    assert AdapTable.load(path, model).covariate_rule_evidence == 0.0
    with safe_open(str(path), framework="numpy") as handle:
        meta = json.loads(handle.metadata()["adaptable"])
    del meta["params"]["covariate_rule_evidence"]  # what a file of the previous version holds
    del meta["digest"]  # written before the digest too
    save_file(load_file(str(path)), str(path), metadata={"adaptable": json.dumps(meta)})
    assert AdapTable.load(path, model).covariate_rule_evidence == 0.7


def test_files_from_before_stream_check_keep_the_model_reading(source, tmp_path) -> None:
    import json

    from safetensors import safe_open
    from safetensors.numpy import load_file, save_file

    model, *_ = source
    method = fitted(source, stream_check="both")
    path = tmp_path / "both.safetensors"
    method.save(path)
    assert AdapTable.load(path, model).stream_check == "both"
    with safe_open(str(path), framework="numpy") as handle:
        meta = json.loads(handle.metadata()["adaptable"])
    del meta["params"]["stream_check"]  # what a file of the previous version holds
    del meta["digest"]  # written before the digest too
    save_file(load_file(str(path)), str(path), metadata={"adaptable": json.dumps(meta)})
    assert AdapTable.load(path, model).stream_check == "model"


def test_bad_default_parameters_name_themselves() -> None:
    with pytest.raises(ValueError, match="label_shift_level"):
        AdapTable(label_shift_level=0.0)
    with pytest.raises(ValueError, match="objective"):
        AdapTable(objective="f2")
    with pytest.raises(ValueError, match="preset"):
        AdapTable(preset="fast")
    with pytest.raises(ValueError, match="oracle"):
        AdapTable(calibrator="oracle_test_labels")
    with pytest.raises(ValueError, match="rule_evidence"):
        AdapTable(rule_evidence=1.5)
    with pytest.raises(ValueError, match="covariate_rule_evidence"):
        AdapTable(covariate_rule_evidence=-0.1)
    with pytest.raises(ValueError, match="fallback"):
        AdapTable(fallback="balanced")
    with pytest.raises(ValueError, match="stream_check"):
        AdapTable(stream_check="label_shift")


def test_logits_alone_are_refused_by_the_default_preset(source) -> None:
    method = fitted(source)
    with pytest.raises(ValueError, match="X_batch is needed"):
        method.adapt_logits(np.zeros((4, 2)))


def test_accuracy_objective_keeps_the_source_accuracy_on_a_short_stream(source) -> None:
    """A short stream whose class balance moved *towards* the source majority (20 % -> 8 %
    class 1): for accuracy the prior estimate starts at p_s, so a few batches cannot pull the
    decisions towards the minority class (a uniform-centred prior did: -14 points on HELOC)."""
    model, *_ = source
    rng = np.random.default_rng(5)
    y = (rng.random(230) < 0.08).astype(int)
    X = draw(y, rng)
    method = fitted(source, objective="accuracy")
    assert method.decider_.prior_estimate.prior.tolist() == pytest.approx(
        method.source_prior_.tolist()
    )
    adapted = accuracy_score(y, stream(method, X).argmax(axis=1))
    assert adapted >= accuracy_score(y, model.predict(X)) - 0.01
    uniform = fitted(source)  # macro-F1: centred at uniform, leaning towards the balanced rule
    assert uniform.decider_.prior_estimate.prior.tolist() == [0.5, 0.5]


@pytest.mark.xfail(
    strict=True,
    reason="known limitation: a pure label shift much longer than the source is rejected "
    "(docs/maintainer/method.md, section 7)",
)
def test_a_pure_label_shift_stream_longer_than_the_source_keeps_being_corrected(
    frame_logreg,
) -> None:
    # 2,500 source rows, 6,000 stream rows of a pure label shift (covariate_shift=0). The
    # label-shift test counts the source means' own estimation error as evidence against label
    # shift: its statistic grows like n / n_y and it gives up the correction after about 1,000
    # rows (z 17.6 at the end). Discounting that error (branch ls-neff, n_eff = 1 / (1/n +
    # sum pi_y^2 / n_y)) fixes this case but made the generality benchmark worse (COMPAS charge
    # split -4 to -5 F1: long domain-shift streams then passed as label shifts; measured again
    # with today's default: -2.9 to -4.4), so the conservative statistic stays; this test marks
    # the limitation.
    from adaptable import datasets

    ds = datasets.make_shift_dataset(
        n_train=2000, n_valid=500, n_test=6000, covariate_shift=0.0, seed=1
    )
    model = frame_logreg(ds)
    method = AdapTable(random_state=0).fit(model, ds.train.X, ds.train.y, ds.valid.X, ds.valid.y)
    rules = []
    for start in range(0, 6000, 64):
        method.predict_proba(ds.test.X.iloc[start : start + 64])
        rules.append(method.state.decision_rule)
    assert set(rules) == {"label_shift"}
    assert method.state.shift_statistic < 3.0
    truth = np.bincount(ds.test.y, minlength=2) / len(ds.test.y)
    np.testing.assert_allclose(method.state.online_prior, truth, atol=0.05)


# ------------------------------------------------------------------ the decider on its own
def _decider(synthetic, frame_logreg, **params):
    from adaptable.core import RecommendedDecider

    from .conftest import batches, fit_context

    model = frame_logreg(synthetic)
    context = fit_context(synthetic, model)
    decider = RecommendedDecider(**params).fit(context)
    return decider, context, batches(synthetic, model, context.encoder)


def test_the_decider_reports_each_batchs_statistics_and_rule(synthetic, frame_logreg) -> None:
    decider, context, stream_ = _decider(synthetic, frame_logreg)
    assert decider.shift_statistic == 0.0  # no row seen
    np.testing.assert_array_equal(decider.online_prior, [0.5, 0.5])  # macro-F1: uniform centre
    for batch in stream_:
        decision = decider.decide(batch)
        assert decision.rule in ("source", "balanced", "label_shift")
        assert decision.shift_statistic == decider.shift_statistic
        np.testing.assert_allclose(decision.proba.sum(axis=1), 1.0)
        np.testing.assert_array_equal(decision.target_prior, decider.online_prior)
        assert np.isnan(decision.uncertainty).all() and len(decision.uncertainty) == len(batch)
    assert decider.prior_estimate.n_seen == sum(len(b) for b in stream_)
    decider.reset()
    assert decider.prior_estimate.n_seen == 0 and decider.shift_statistic == 0.0
    assert not decider.expected_confusion.any()


def test_the_deciders_state_restores_mid_stream_and_continues_identically(
    synthetic, frame_logreg
) -> None:
    from adaptable.core import RecommendedDecider
    from adaptable.core.decision.rules import RuleChoice

    from .conftest import load_context

    decider, context, stream_ = _decider(synthetic, frame_logreg, fallback="plugin")
    # a held-out win of the balanced rule, so that the stream check is fed
    decider.rule = RuleChoice(beta=1.0, source_score=0.5, balanced_score=0.6, evidence=1.0)
    for batch in stream_[:3]:
        decider.decide(batch)
    params = AdapTable(fallback="plugin").get_params()
    twin = RecommendedDecider.from_state(
        load_context(decider.state(), params, context.source_prior)
    )
    assert twin.rule == decider.rule and twin.fallback == "plugin"
    # the stream's state travels: the expected confusions (fed while the balanced rule is a
    # candidate), the reservoir and the estimate, the moment test's sums
    assert decider.expected_confusion.sum() > 0
    np.testing.assert_array_equal(twin.expected_confusion, decider.expected_confusion)
    np.testing.assert_array_equal(twin.prior_estimate.reservoir, decider.prior_estimate.reservoir)
    np.testing.assert_array_equal(twin.online_prior, decider.online_prior)
    assert twin.shift_statistic == decider.shift_statistic
    for batch in stream_[3:]:
        a, b = twin.decide(batch), decider.decide(batch)
        np.testing.assert_array_equal(a.proba, b.proba)
        assert a.rule == b.rule


def test_from_state_refuses_a_temperature_or_negative_counts(synthetic, frame_logreg) -> None:
    from adaptable.core import RecommendedDecider

    from .conftest import load_context

    decider, context, _ = _decider(synthetic, frame_logreg)
    params = AdapTable().get_params()
    with pytest.raises(ValueError, match="'temperature'"):
        RecommendedDecider.from_state(
            load_context(decider.state(), params, context.source_prior, temperature=2.0)
        )
    state = decider.state()
    state.arrays["expected_confusion"] = -np.ones((2, 2, 2))
    with pytest.raises(ValueError, match="'expected_confusion'"):
        RecommendedDecider.from_state(load_context(state, params, context.source_prior))


def test_the_balanced_rule_is_a_candidate_by_the_held_out_evidence(synthetic, frame_logreg):
    from adaptable.core.decision.rules import RuleChoice

    decider, *_ = _decider(synthetic, frame_logreg, rule_evidence=0.8, covariate_rule_evidence=0.4)
    decider.rule = RuleChoice(beta=1.0, source_score=0.6, balanced_score=0.7, evidence=0.5)
    assert decider.balanced_is_candidate(covariate=True)
    assert not decider.balanced_is_candidate(covariate=False)
    decider.rule = RuleChoice(beta=0.0, source_score=0.7, balanced_score=0.7, evidence=1.0)
    assert not decider.balanced_is_candidate(covariate=True)  # a tie on the held-out rows


def _five_class_source(seed: int, n_train: int, n_valid: int, objective: str = "macro_f1"):
    """A 5-class Gaussian source, a logistic regression on it and the default adapter fitted
    on the same rows (for ``objective``); with the generator and the row maker for the
    stream."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=1.6, size=(5, 6))

    def rows(labels: np.ndarray) -> np.ndarray:
        return centres[labels] + rng.normal(size=(len(labels), 6))

    y_train, y_valid = rng.integers(0, 5, n_train), rng.integers(0, 5, n_valid)
    X_train, X_valid = rows(y_train), rows(y_valid)
    model = LogisticRegression(max_iter=1000).fit(X_train, y_train)
    adapter = AdapTable(random_state=0, objective=objective).fit(
        model, X_train, y_train, X_valid, y_valid
    )
    return rng, rows, model, adapter


def test_a_multiclass_label_shift_sends_no_more_rows_to_absent_classes_than_the_model() -> None:
    # five classes at the source, two of them in the stream: the label-shift estimate keeps a
    # few rows' worth of each absent class, and a boost of rare classes for macro-F1 sent rows
    # there, each of which adds a class scored 0 to scikit-learn's macro-F1
    rng, rows, model, adapter = _five_class_source(0, 3000, 1000)
    y_stream = rng.choice([1, 3], 320)
    X_stream = rows(y_stream)
    predictions = np.concatenate(
        [adapter.predict(X_stream[i : i + 64]) for i in range(0, len(y_stream), 64)]
    )
    assert adapter.state.decision_rule == "label_shift"
    absent = [0, 2, 4]
    unadapted = model.predict(X_stream)
    # (the boost of rare classes sent 39 rows there; the model sends 52, the adapter 29)
    assert np.isin(predictions, absent).sum() <= 0.65 * np.isin(unadapted, absent).sum()
    assert f1_score(y_stream, predictions, average="macro") >= f1_score(
        y_stream, unadapted, average="macro"
    )


def test_the_labelled_rows_label_shift_candidate_has_no_rare_class_boost_on_many_classes() -> None:
    # with labels back, the rules the labelled rows choose among: their label-shift rule is
    # the plain re-weighting log(p_t / p_s) on five classes (the boost of rare classes went)
    rng, rows, _, adapter = _five_class_source(1, 2000, 600)
    feedback = adapter.decider_.feedback
    seen: list = []
    original = feedback.decide

    def recording(rules, *args, **kwargs):
        seen.append((tuple(rules), kwargs["target_prior"]))
        return original(rules, *args, **kwargs)

    feedback.decide = recording
    y_stream = rng.choice([1, 3], 256)
    X_stream = rows(y_stream)
    adapter.predict(X_stream[:128])
    adapter.partial_fit(X_stream[:40], y_stream[:40], rows=np.arange(40))
    adapter.predict(X_stream[128:])
    assert seen, "the labelled rows were never asked"
    rules, target = seen[-1]
    label_shift = resolved(next(rule for rule in rules if rule.name == "label_shift"))
    source = adapter.decider_.source_prior_
    np.testing.assert_allclose(label_shift.offset, np.log(target / source))


@pytest.mark.filterwarnings("ignore:y_pred contains classes not in y_true")
def test_balanced_accuracy_stops_boosting_classes_a_label_shifted_stream_never_holds() -> None:
    # two of five classes in the stream: balanced accuracy's weights 1 / mean(q) cancel the
    # share the estimate gives each class, so without the chance that a class occurs at all
    # the decision is the balanced rule p / p_s and keeps sending rows to the absent three
    from sklearn.metrics import balanced_accuracy_score

    rng, rows, model, adapter = _five_class_source(0, 3000, 1000, "balanced_accuracy")
    y_stream = rng.choice([1, 3], 640)
    X_stream = rows(y_stream)

    def stream() -> np.ndarray:
        adapter.reset()
        return np.concatenate(
            [adapter.predict(X_stream[i : i + 64]) for i in range(0, len(y_stream), 64)]
        )

    predictions = stream()
    assert adapter.state.decision_rule == "label_shift"
    chances = adapter.decider_.class_presence()
    assert chances[[1, 3]].min() > 0.99 and chances[[0, 2, 4]].max() < 0.5
    decider = type(adapter.decider_)
    original = decider.class_presence
    decider.class_presence = lambda self: np.ones(5)
    try:
        without = stream()
    finally:
        decider.class_presence = original
    absent = [0, 2, 4]
    assert np.isin(predictions, absent).sum() < 0.5 * np.isin(without, absent).sum()
    score = balanced_accuracy_score(y_stream, predictions)
    assert score > balanced_accuracy_score(y_stream, without)
    assert score >= balanced_accuracy_score(y_stream, model.predict(X_stream))


def test_a_class_among_the_labelled_rows_occurs_whatever_the_posteriors_say() -> None:
    rng, rows, _, adapter = _five_class_source(2, 2000, 600, "balanced_accuracy")
    y_stream = rng.choice([1, 3], 320)
    X_stream = rows(y_stream)
    adapter.predict(X_stream[:256])
    assert adapter.decider_.class_presence()[0] < 0.5
    labels = y_stream[:40].copy()
    labels[0] = 0  # one labelled row of class 0
    adapter.partial_fit(X_stream[:40], labels, rows=np.arange(40))
    assert adapter.decider_.class_presence()[0] == 1.0


def _biased_three_class_source(seed: int):
    """A 3-class Gaussian source and a logistic regression whose logits are shifted towards
    class 0 (a model that misstates its own class mix); the row maker and generator."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=1.2, size=(3, 4))

    def rows(labels: np.ndarray) -> np.ndarray:
        return centres[labels] + rng.normal(size=(len(labels), 4))

    y_train, y_valid = rng.integers(0, 3, 1500), rng.integers(0, 3, 400)
    X_train, X_valid = rows(y_train), rows(y_valid)
    fitted = LogisticRegression(max_iter=1000).fit(X_train, y_train)

    def logits(X: np.ndarray) -> np.ndarray:
        return fitted.decision_function(X) + np.array([1.5, 0.0, 0.0])

    return rng, rows, logits, (X_train, y_train, X_valid, y_valid)


def test_the_model_reference_keeps_a_biased_model_from_reading_a_label_shift() -> None:
    # the model's posteriors put too much on class 0 on its own held-out rows: a stream drawn
    # from the source looks like a shift towards class 0 against p_s, not against the model's
    # mean held-out posterior (macro-F1: unadapted 71.8, p_s reference 51.1, model's 71.2)
    rng, rows, logits, (X_train, y_train, X_valid, y_valid) = _biased_three_class_source(0)
    y_stream = rng.integers(0, 3, 640)
    X_stream = rows(y_stream)
    unadapted = logits(X_stream).argmax(axis=1)
    results = {}
    for reference in ("labels", "model"):
        adapter = AdapTable(random_state=0, output="logits", prior_reference=reference)
        adapter.fit(logits, X_train, y_train, X_valid, y_valid)
        predictions = np.concatenate(
            [adapter.predict(X_stream[i : i + 64]) for i in range(0, 640, 64)]
        )
        results[reference] = (adapter, predictions)
    labels_adapter, by_labels = results["labels"]
    model_adapter, by_model = results["model"]
    np.testing.assert_array_equal(
        labels_adapter.decider_.reference_prior_, labels_adapter.source_prior_
    )
    expected = np.exp(logits(X_valid) - logits(X_valid).max(axis=1, keepdims=True))
    expected = (expected / expected.sum(axis=1, keepdims=True)).mean(axis=0)
    np.testing.assert_allclose(model_adapter.decider_.reference_prior_, expected, atol=1e-6)
    assert labels_adapter.state.decision_rule == "label_shift"
    # against the model's own mix the stream holds no shift: the estimate stays at it
    np.testing.assert_allclose(model_adapter.decider_.online_prior, expected, atol=0.05)
    f1 = {
        k: f1_score(y_stream, p, average="macro")
        for k, p in (("labels", by_labels), ("model", by_model))
    }
    assert f1["model"] >= f1_score(y_stream, unadapted, average="macro") - 0.01
    assert f1["model"] > f1["labels"]


def test_the_model_reference_survives_save_and_load_mid_stream(tmp_path) -> None:
    rng, rows, logits, (X_train, y_train, X_valid, y_valid) = _biased_three_class_source(1)
    adapter = AdapTable(random_state=0, output="logits", prior_reference="model")
    adapter.fit(logits, X_train, y_train, X_valid, y_valid)
    X_stream = rows(rng.integers(0, 3, 256))
    adapter.predict_proba(X_stream[:128])
    path = tmp_path / "adapter.safetensors"
    adapter.save(path)
    twin = AdapTable.load(path, model=logits)
    assert twin.prior_reference == "model"
    np.testing.assert_array_equal(twin.decider_.reference_prior_, adapter.decider_.reference_prior_)
    np.testing.assert_array_equal(
        twin.predict_proba(X_stream[128:]), adapter.predict_proba(X_stream[128:])
    )


def test_the_score_correction_weighs_classes_by_their_presence_for_multiclass_bacc(
    monkeypatch,
) -> None:
    # balanced accuracy on more than two classes: the correction's plug-in rule gets the same
    # chance of each class occurring as the unlabelled rules (it would boost absent classes)
    import adaptable.core.labels.labelled_choice as learner

    fitted = []
    original = learner.fit_correction

    def recording(*args, **kwargs):
        fitted.append(kwargs.get("class_factor"))
        return original(*args, **kwargs)

    monkeypatch.setattr(learner, "fit_correction", recording)
    for objective in ("balanced_accuracy", "macro_f1"):
        rng, rows, _, adapter = _five_class_source(0, 1500, 500, objective)
        assert adapter.decider_.feedback.likelihood_incumbent is True
        y_stream = rng.choice([1, 3], 640)
        X_stream = rows(y_stream)
        fitted.clear()
        for start in range(0, 640, 64):
            adapter.predict(X_stream[start : start + 64])
            picked = np.arange(start, start + 8)
            adapter.partial_fit(X_stream[picked], y_stream[picked], rows=picked)
        assert fitted, "no correction was fitted"
        if objective == "macro_f1":
            assert all(factor is None for factor in fitted)
        else:
            # each class's chance of occurring: 1 for the labelled classes, and the stream
            # rules absent ones out (each fit's factor as the decider gave it then)
            factor = fitted[-1]
            assert factor.shape == (5,) and factor[[1, 3]].min() == 1.0
            assert factor[[0, 2, 4]].min() < 0.2

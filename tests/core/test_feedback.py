"""The labelled-rows parts (``adaptable.core.labels``): reservoir, target prior, rule choice,
score correction, and the four together driven as a decider would drive them."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from adaptable.core.decision.rules import confusion, score
from adaptable.core.labels import (
    LabelledFeedback,
    LabelledReservoir,
    RuleComparison,
    ScoreRule,
    choose_labelled_rule,
    combine_prior,
    compare_rules,
    fit_affine,
    fit_correction,
    standard_rules,
    unlabelled_worth,
)


@pytest.fixture(scope="module")
def synthetic(benchmark_script):
    return benchmark_script("feedback_synthetic")


def _rows(n: int, seed: int = 0, n_classes: int = 2) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, n_classes, n)
    return np.log(rng.dirichlet(np.ones(n_classes), size=n)), labels


# ---------------------------------------------------------------------- reservoir
def test_reservoir_does_not_depend_on_how_the_rows_were_split_into_calls() -> None:
    scores, labels = _rows(500)
    whole = LabelledReservoir(2, capacity=64, seed=3)
    whole.add(scores, labels)
    pieces = LabelledReservoir(2, capacity=64, seed=3)
    for start, stop in [(0, 1), (1, 50), (50, 64), (64, 65), (65, 300), (300, 500)]:
        pieces.add(scores[start:stop], labels[start:stop])
    for key, value in whole.arrays().items():
        np.testing.assert_array_equal(pieces.arrays()[key], value)


def test_reservoir_keeps_rows_whole_and_counts_every_label() -> None:
    scores, labels = _rows(1000, seed=1)
    store = LabelledReservoir(2, capacity=100, seed=0)
    store.add(scores, labels)
    assert (store.size, store.n_seen, store.row_weight) == (100, 1000, 10.0)
    np.testing.assert_array_equal(store.counts, np.bincount(labels, minlength=2))
    # each kept row is the row added at its position, scores and label together
    assert len(np.unique(store.positions)) == 100
    np.testing.assert_array_equal(store.scores, scores[store.positions])
    np.testing.assert_array_equal(store.labels, labels[store.positions])
    # a uniform sample: later rows are kept as often as early ones (mean position ~ 500)
    assert 350 < store.positions.mean() < 650
    assert store.positions.max() > 900


def test_reservoir_restore_and_pickle_continue_identically() -> None:
    scores, labels = _rows(300, seed=2)
    store = LabelledReservoir(2, capacity=50, seed=1)
    store.add(scores[:120], labels[:120])
    restored = LabelledReservoir(2, capacity=50, seed=1)
    restored.restore(store.arrays())
    pickled = pickle.loads(pickle.dumps(store))
    for each in (store, restored, pickled):
        each.add(scores[120:], labels[120:])
    for key, value in store.arrays().items():
        np.testing.assert_array_equal(restored.arrays()[key], value)
        np.testing.assert_array_equal(pickled.arrays()[key], value)
    store.reset()
    assert (store.size, store.n_seen, store.counts.tolist()) == (0, 0, [0.0, 0.0])
    # a file format that drops empty arrays (safetensors) loses nothing before the first label
    written = {key: value for key, value in store.arrays().items() if value.size}
    restored.restore(written)
    assert (restored.size, restored.n_seen) == (0, 0)


def test_reservoir_refuses_bad_rows_and_bad_state() -> None:
    store = LabelledReservoir(3, capacity=4)
    with pytest.raises(ValueError, match=r"\(n, 3\)"):
        store.add(np.zeros((2, 2)), np.array([0, 1]))
    with pytest.raises(ValueError, match="0..2"):
        store.add(np.zeros((2, 3)), np.array([0, 3]))
    with pytest.raises(ValueError, match="integer"):
        store.add(np.zeros((1, 3)), np.array([0.5]))
    with pytest.raises(ValueError, match="NaN"):
        store.add(np.full((1, 3), np.nan), np.array([0]))
    assert store.n_seen == 0  # nothing half-added
    store.add(np.zeros((5, 3)), np.array([0, 1, 2, 0, 1]))
    state = store.arrays()
    with pytest.raises(ValueError, match="counts"):
        LabelledReservoir(3, capacity=4).restore({**state, "counts": np.array([1.0, 1.0, 1.0])})
    with pytest.raises(ValueError, match="rows"):
        LabelledReservoir(3, capacity=4).restore({**state, "n_seen": np.array([3])})
    with pytest.raises(ValueError, match="missing"):
        LabelledReservoir(3, capacity=4).restore({"scores": state["scores"]})
    with pytest.raises(ValueError, match="capacity"):
        LabelledReservoir(3, capacity=0)


# ---------------------------------------------------------------------- target prior
def test_combined_prior_is_the_dirichlet_posterior_by_hand() -> None:
    found = combine_prior(np.array([20.0, 30.0]), np.array([0.4, 0.6]), worth=50.0)
    # alpha = counts + worth * centre + 1/2 = (20 + 20 + 0.5, 30 + 30 + 0.5)
    np.testing.assert_allclose(found.mean, [40.5 / 101, 60.5 / 101])
    assert found.compatible and found.worth == 50.0 and found.n_labelled == 50.0
    assert np.all(found.lower < found.mean) and np.all(found.mean < found.upper)
    # a 90 % interval of Beta(40.5, 60.5): about +- 1.645 sd
    sd = np.sqrt(found.mean[0] * found.mean[1] / 102)
    assert found.upper[0] - found.lower[0] == pytest.approx(2 * 1.645 * sd, rel=0.02)
    nothing = combine_prior(np.zeros(3), None, 0.0)
    np.testing.assert_allclose(nothing.mean, [1 / 3] * 3)


def test_combined_prior_drops_an_estimate_the_labels_contradict() -> None:
    counts = np.array([60.0, 40.0])
    kept = combine_prior(counts, np.array([0.55, 0.45]), worth=400.0)
    assert kept.compatible and kept.mean[0] == pytest.approx((60 + 220 + 0.5) / 501)
    dropped = combine_prior(counts, np.array([0.2, 0.8]), worth=400.0)
    assert not dropped.compatible and dropped.worth == 0.0
    np.testing.assert_allclose(dropped.mean, [60.5 / 101, 40.5 / 101])
    with pytest.raises(ValueError, match="worth"):
        combine_prior(counts, None, -1.0)


def test_unlabelled_worth_by_hand() -> None:
    certain = np.array([[1.0, 0.0]] * 30 + [[0.0, 1.0]] * 70)
    # posteriors that are the labels: worth as many rows as there are, less the Dirichlet's 1
    assert unlabelled_worth(certain, np.array([0.5, 0.5]), np.array([0.3, 0.7])) == (
        pytest.approx(99.0)
    )
    assert unlabelled_worth(certain, np.array([0.5, 0.5]), np.array([0.3, 0.7]), 2.0) == (
        pytest.approx(199.0)
    )
    # posteriors equal to p_s carry no information about p_t
    flat = np.tile([0.8, 0.2], (50, 1))
    assert unlabelled_worth(flat, np.array([0.8, 0.2]), np.array([0.5, 0.5])) == 0.0
    assert unlabelled_worth(np.zeros((0, 2)), np.array([0.5, 0.5]), np.array([0.5, 0.5])) == 0.0


def test_labelled_rows_bring_the_prior_within_003_on_a_pure_label_shift(synthetic) -> None:
    for kind in ("label", "label_biased"):
        result = synthetic.run(
            synthetic.make_stream(kind, 100 * 64, 0), 0.05, 10, 0, with_anchors=False
        )
        assert result["prior_error"] < 0.03, (kind, result)
    # the miscalibrated model's MAP-EM estimate alone is far off: the labels fixed it
    assert result["em_error"] > 0.1


# ---------------------------------------------------------------------- rules
def test_score_rule_decides_by_affine_scores() -> None:
    log_p = np.log(np.array([[0.7, 0.3], [0.9, 0.1], [0.55, 0.45]]))
    balanced = ScoreRule("balanced", -np.log([0.8, 0.2]))
    assert balanced.predict(log_p).tolist() == [1, 0, 1]  # 0.3 / 0.2 > 0.7 / 0.8
    np.testing.assert_allclose(balanced.proba(log_p)[0], [0.875 / 2.375, 1.5 / 2.375])
    sharper = ScoreRule("t", np.array([0.0, 0.0]), scale=2.0)
    np.testing.assert_allclose(sharper.proba(log_p)[0], [0.49 / 0.58, 0.09 / 0.58])
    names = [r.name for r in standard_rules(np.array([0.8, 0.2]), None, None, np.ones(2))]
    assert names == ["argmax", "balanced", "plugin"]


def test_compare_rules_point_scores_are_the_pooled_confusion_by_hand() -> None:
    labels = np.array([0, 0, 1, 1, 1])
    predictions = np.array([[0, 0, 0, 1, 1], [0, 1, 1, 1, 1]])
    found = compare_rules(predictions, labels, 2, "macro_f1", row_weight=3.0)
    for r in range(2):
        expected = score(confusion(labels, predictions[r], 2), "macro_f1")
        assert found.scores[r] == pytest.approx(expected)
    assert found.n_labelled == 15.0 and found.draws.shape == (200, 2)
    # held-out rows moved to the target's class mix: rows of class 1 weighted 0.5 / 0.25 = 2,
    # of class 0 0.5 / 0.75; the pair then counts as 'worth' rows in all
    held = np.array([0, 0, 0, 1])
    held_predictions = np.array([[0, 0, 1, 0], [0, 1, 1, 1]])
    pooled = compare_rules(
        predictions,
        labels,
        2,
        "accuracy",
        heldout_predictions=held_predictions,
        heldout_labels=held,
        heldout_worth=4.0,
        target_prior=np.array([0.5, 0.5]),
        compatibility_level=1e-12,
    )
    # per-row weights 2/3 (class 0) and 2 (class 1): total 2 + 2 = 4 rows
    correct_held = np.array([2 * 2 / 3, 2 / 3 + 2])  # rule 0: rows 0, 1; rule 1: rows 0, 3
    correct_lab = np.array([4.0, 4.0])
    np.testing.assert_allclose(pooled.scores, (correct_lab + correct_held) / (5 + 4))
    assert pooled.heldout_worth == 4.0 and pooled.compatible
    # each labelled row standing for 3 stream rows: the held-out rows' 4 weigh less
    weighted = compare_rules(
        predictions,
        labels,
        2,
        "accuracy",
        row_weight=3.0,
        heldout_predictions=held_predictions,
        heldout_labels=held,
        heldout_worth=4.0,
        target_prior=np.array([0.5, 0.5]),
        compatibility_level=1e-12,
    )
    np.testing.assert_allclose(weighted.scores, (3 * correct_lab + correct_held) / (15 + 4))


def test_held_out_rows_that_contradict_the_labels_are_left_out() -> None:
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 400)
    # on the target rule 1 is right and rule 0 wrong on a third of the rows; held out, the reverse
    noisy = np.where(rng.random(400) < 0.33, 1 - labels, labels)
    held = rng.integers(0, 2, 1000)
    held_noisy = np.where(rng.random(1000) < 0.33, 1 - held, held)
    found = compare_rules(
        np.stack([noisy, labels]),
        labels,
        2,
        "macro_f1",
        heldout_predictions=np.stack([held, held_noisy]),
        heldout_labels=held,
        heldout_worth=100.0,
    )
    assert not found.compatible and found.heldout_worth == 0.0
    assert found.scores[1] == pytest.approx(1.0)


def _comparison(draws: list[list[float]], n_labelled: float = 100.0) -> RuleComparison:
    values = np.array(draws, dtype=float)
    return RuleComparison(values.mean(axis=0), values, n_labelled, 0.0)


def test_choose_labelled_rule_keeps_the_anchor_until_strong_evidence() -> None:
    tied = _comparison([[0.7, 0.7, 0.7]] * 10)
    assert choose_labelled_rule(tied, anchor=0) == 0
    assert choose_labelled_rule(tied, anchor=2) == 2  # no lean towards argmax: the anchor stands
    assert choose_labelled_rule(_comparison([[0.7, 0.9, 0.5]] * 10, n_labelled=0.0), anchor=2) == 2
    # rule 1 wins 7 of 10 draws: short of the 0.8 asked
    mixed = _comparison([[0.7, 0.8, 0.6]] * 7 + [[0.7, 0.6, 0.6]] * 3)
    assert choose_labelled_rule(mixed, anchor=0) == 0
    assert choose_labelled_rule(mixed, anchor=0, evidence=0.7) == 1
    # the anchor (rule 2) loses to argmax on most draws: back to argmax, which 1 cannot beat
    assert choose_labelled_rule(mixed, anchor=2) == 0
    # argmax beats the anchor on 6 of 10 draws: a lean is enough to fall back to it
    lean = _comparison([[0.7, 0.6]] * 6 + [[0.6, 0.7]] * 4)
    assert choose_labelled_rule(lean, anchor=1) == 0
    # several rules beat the incumbent: the best pooled score
    strong = _comparison([[0.5, 0.8, 0.9]] * 10)
    assert choose_labelled_rule(strong, anchor=0) == 2
    assert choose_labelled_rule(strong, anchor=0, candidates=[0, 1]) == 1


# ---------------------------------------------------------------------- correction
def test_fit_affine_recovers_scale_and_offsets_and_a_strong_penalty_holds_the_base() -> None:
    rng = np.random.default_rng(1)
    z = rng.normal(size=(20000, 3)) * 1.5
    truth = 0.5 * z + np.array([0.0, 1.0, -1.0])
    q = np.exp(truth - truth.max(axis=1, keepdims=True))
    q /= q.sum(axis=1, keepdims=True)
    labels = (rng.random(20000)[:, None] > q.cumsum(axis=1)).sum(axis=1)
    scale, offset = fit_affine(z, labels, np.zeros(3), strength=1.0)
    assert scale == pytest.approx(0.5, abs=0.03)
    np.testing.assert_allclose(offset - offset[0], [0.0, 1.0, -1.0], atol=0.06)
    base = np.array([0.2, -0.1, 0.0])
    scale, offset = fit_affine(z[:50], labels[:50], base, strength=1e7)
    assert scale == pytest.approx(1.0, abs=1e-3)
    np.testing.assert_allclose(offset, base, atol=1e-3)


def test_fit_affine_minimises_the_penalised_log_loss() -> None:
    rng = np.random.default_rng(3)
    z = rng.normal(size=(200, 2)) * 2
    labels = rng.integers(0, 2, 200)
    base = np.array([0.3, -0.3])
    spread = np.mean((z - z.mean(axis=1, keepdims=True)) ** 2)

    def objective(parameters: np.ndarray) -> float:
        u = parameters[0] * z + parameters[1:]
        lse = np.logaddexp(u[:, 0], u[:, 1])
        penalty = spread * (parameters[0] - 1) ** 2 + np.sum((parameters[1:] - base) ** 2)
        return float(np.sum(lse - u[np.arange(200), labels]) + 0.5 * 10.0 * penalty)

    scale, offset = fit_affine(z, labels, base, strength=10.0)
    found = np.concatenate([[scale], offset])
    for k in range(3):
        for step in (1e-3, -1e-3):
            moved = found.copy()
            moved[k] += step
            assert objective(moved) > objective(found)


def test_fit_correction_decides_out_of_fold_and_needs_five_rows() -> None:
    rng = np.random.default_rng(2)
    z = rng.normal(size=300) * 2
    labels = (rng.random(300) < 1 / (1 + np.exp(-(z - 2)))).astype(int)  # threshold moved
    log_p = -np.logaddexp(0, -np.stack([-z, z], axis=1))
    found = fit_correction(log_p, labels, np.zeros(2), "accuracy", seed=0)
    assert found.out_of_fold.shape == (300,) and found.strength in (1.0, 4.0, 16.0, 64.0, 256.0)
    assert found.cv_log_loss < found.base_log_loss
    # the corrected rule predicts 1 only above the moved threshold (z about 2)
    predicted = found.rule.predict(log_p)
    assert predicted[z < 1].sum() == 0 and predicted[z > 3].all()
    assert np.mean(found.out_of_fold == predicted) > 0.9
    with pytest.raises(ValueError, match="at least 5"):
        fit_correction(log_p[:4], labels[:4], np.zeros(2), "accuracy")


# ---------------------------------------------------------------------- together
def _feedback() -> LabelledFeedback:
    feedback = LabelledFeedback(np.array([0.75, 0.25]), "macro_f1", seed=0)
    held_scores, held_labels = _rows(300, seed=9)
    return feedback.fit_heldout(held_scores, held_labels)


def test_the_correction_is_judged_on_rows_it_was_not_fitted_on() -> None:
    feedback = LabelledFeedback(np.array([0.5, 0.5]), "accuracy", heldout_worth=0.0, seed=0)
    rng = np.random.default_rng(5)
    z = rng.normal(size=60) * 2
    log_p = -np.logaddexp(0, -np.stack([-z, z], axis=1))
    labels = (rng.random(60) < 1 / (1 + np.exp(-(z - 1.5)))).astype(np.int64)
    rules = [ScoreRule("argmax", np.zeros(2))]
    feedback.add(log_p[:40], labels[:40])
    decision = feedback.decide(rules, 0)
    correction = feedback.correction()
    assert decision.rules[-1] is correction.rule
    # the fitted rows: their out-of-fold decisions, not the fit's own (in-sample) ones
    expected = score(confusion(labels[:40], correction.out_of_fold, 2), "accuracy")
    assert decision.comparison.scores[-1] == pytest.approx(expected)
    # two rows more (no refit below 44): the fit, which did not see them, decides them
    feedback.add(log_p[40:42], labels[40:42])
    assert feedback.decide(rules, 0).rules[-1] is correction.rule
    both = np.concatenate([correction.out_of_fold, correction.rule.predict(log_p[40:42])])
    expected = score(confusion(labels[:42], both, 2), "accuracy")
    assert feedback.decide(rules, 0).comparison.scores[-1] == pytest.approx(expected)


def test_without_labels_the_anchor_decides_exactly() -> None:
    feedback = _feedback()
    rules = standard_rules(np.array([0.75, 0.25]), np.array([0.5, 0.5]))
    for anchor in range(3):
        decision = feedback.decide(rules, anchor)
        assert decision.rule is rules[anchor] and decision.comparison is None
    feedback.add(*_rows(9))  # below min_labelled (10): still the anchor
    assert feedback.decide(rules, 1).rule is rules[1]


def test_the_rules_are_compared_again_only_when_the_rows_have_grown() -> None:
    """Between comparisons the last choice stands: a new one is due once the labelled rows or
    the stream's rows grew by ``recheck_growth`` (10 %), or the candidates changed; the
    schedule survives ``arrays`` / ``restore``. Without ``stream_rows`` every call compares."""
    feedback = _feedback()
    rules = standard_rules(np.array([0.75, 0.25]), np.array([0.5, 0.5]))
    feedback.add(*_rows(20, seed=3))
    compared = []
    for rows in range(1000, 1200, 20):  # the stream grows, the labels do not
        compared.append(feedback.decide(rules, 0, stream_rows=rows).comparison is not None)
    assert compared == [True] + [False] * 4 + [True] + [False] * 4  # 1000, then 1100 rows
    chosen = feedback.decide(rules, 0, stream_rows=1200).rule
    feedback.add(*_rows(1, seed=4))  # 21 labels: below 22
    assert feedback.decide(rules, 0, stream_rows=1200).comparison is None
    feedback.add(*_rows(1, seed=5))  # 22: grown by 10 %
    assert feedback.decide(rules, 0, stream_rows=1200).comparison is not None
    fewer = rules[:2] if chosen is not rules[2] else [rules[0], rules[2]]
    assert feedback.decide(fewer, 0, stream_rows=1200).comparison is not None  # other rules
    restored = _feedback()
    restored.restore(feedback.arrays())
    for follower in (feedback, restored):
        assert follower.decide(fewer, 0, stream_rows=1210).comparison is None
    assert feedback.decide(fewer, 0).comparison is not None  # stream_rows=0: every call


def test_a_label_never_changes_its_own_rows_prediction() -> None:
    feedback = _feedback()
    rules = [ScoreRule("argmax", np.zeros(2)), ScoreRule("always_1", np.array([0.0, 50.0]))]
    log_p, _ = _rows(64, seed=4)
    decision = feedback.decide(rules, anchor=1)
    before = decision.rule.predict(log_p)
    assert before.tolist() == [1] * 64
    # the batch's labels arrive (all class 0, so 'always_1' is plainly wrong)
    feedback.add(log_p, np.zeros(64, dtype=np.int64))
    # the batch's predictions stand: the rule that made them is unchanged
    np.testing.assert_array_equal(decision.rule.predict(log_p), before)
    np.testing.assert_array_equal(decision.rule.offset, [0.0, 50.0])
    # only the next batch is decided with the labels
    later = feedback.decide(rules, anchor=1)
    assert later.rule.name != "always_1" and later.rule.predict(log_p).sum() < 8


def test_save_restore_and_pickle_continue_identically_with_labels_pending(synthetic) -> None:
    stream = synthetic.make_stream("concept", 40 * 64, 1)
    model = synthetic.LogisticRegression().fit(stream.x_train, stream.y_train)
    logits = synthetic.BiasedModel(model, stream.logit_bias).predict_logits
    p_s = np.array([0.75, 0.25])
    driver = synthetic.Driver(logits(stream.x_valid), stream.y_valid, p_s, seed=0)
    batches = np.array_split(np.arange(len(stream.y_stream)), 40)

    def step(d, t: int) -> np.ndarray:
        rows = batches[t]
        if t >= 3:  # the labels of batch t - 3 arrive (a delay of 2 batches)
            d.learn(logits(stream.x_stream[batches[t - 3]]), stream.y_stream[batches[t - 3]])
        return d.decide(logits(stream.x_stream[rows]))[0]

    for t in range(25):
        step(driver, t)
    # The stand-in decider is copied whole (its labels pending are the stream's batches); its
    # feedback parts once through pickle and once through their arrays, as a save / load would.
    copies = [copy.deepcopy(driver), copy.deepcopy(driver)]
    copies[0].feedback = pickle.loads(pickle.dumps(driver.feedback))
    restored = LabelledFeedback(p_s, "macro_f1", seed=0)
    restored.restore(driver.feedback.arrays())
    copies[1].feedback = restored
    assert driver.feedback.n_labelled > driver.feedback.correction_rows  # a correction is held
    fresh = LabelledFeedback(p_s, "macro_f1", seed=0).fit_heldout(
        np.zeros((3, 2)), np.arange(3) % 2
    )
    fresh.restore({k: v for k, v in fresh.arrays().items() if v.size})  # as safetensors writes
    assert fresh.n_labelled == 0
    for t in range(25, 40):
        expected = step(driver, t)
        for other in copies:
            np.testing.assert_array_equal(step(other, t), expected)


def test_feedback_recovers_half_the_gap_where_p_y_given_x_moved(synthetic) -> None:
    # 5 % of the labels, 10 batches late; the unlabelled decision cannot see this shift
    result = synthetic.run(
        synthetic.make_stream("concept", 150 * 64, 0), 0.05, 10, 0, with_anchors=False
    )
    assert result["refit"] - result["source"] > 3.0  # a real gap
    assert result["unlabelled"] == pytest.approx(result["source"])
    assert result["recovered"] >= 0.5, result


def test_three_classes_where_the_labels_call_for_a_corrected_rule() -> None:
    rng = np.random.default_rng(7)
    p_s = np.array([0.6, 0.3, 0.1])
    feedback = LabelledFeedback(p_s, "macro_f1", heldout_worth=50.0, seed=1)
    held = rng.integers(0, 3, 600)
    held_scores = np.log(np.full((600, 3), 0.1) + 0.7 * np.eye(3)[held])
    feedback.fit_heldout(held_scores, held)
    # On the target the model's class 2 column reads as class 1 (p(y|x) moved): no class
    # weights can fix that, a per-class offset on its scores can in part, the labels show it.
    labels = rng.integers(0, 3, 400)
    shown = np.where(labels == 2, 1, labels)
    log_p = np.log(np.full((400, 3), 0.15) + 0.55 * np.eye(3)[shown])
    log_p[labels == 2, 2] += 0.5  # a trace of the truth in the scores
    rules = standard_rules(p_s, p_s)
    feedback.add(log_p[:300], labels[:300])
    decision = feedback.decide(rules, anchor=0, target_prior=feedback.prior().mean)
    assert decision.comparison.scores.shape == (len(rules) + 1,)
    assert decision.rule.name == "corrected"
    later = decision.rule.predict(log_p[300:])
    before = rules[0].predict(log_p[300:])
    assert score(confusion(labels[300:], later, 3), "macro_f1") > score(
        confusion(labels[300:], before, 3), "macro_f1"
    )


# ---------------------------------------------------------------------- stream evidence
def test_stream_rows_count_as_their_expected_confusion_by_hand() -> None:
    # no labelled rows: the stream rows alone, each split into its classes by its posteriors
    posteriors = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
    predictions = np.array([[0, 1, 0], [0, 0, 0]])
    found = compare_rules(
        np.zeros((2, 0)),
        np.zeros(0, dtype=int),
        2,
        "accuracy",
        stream_predictions=predictions,
        stream_posteriors=posteriors,
        stream_worth=30.0,
    )
    # expected accuracy: (0.9 + 0.8 + 0.6) / 3 for rule 0, (0.9 + 0.2 + 0.6) / 3 for rule 1
    assert found.scores == pytest.approx([2.3 / 3, 1.7 / 3])
    assert found.stream_worth == 30.0 and found.n_labelled == 0.0


def _threshold_stream(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Calibrated two-class posteriors where the minority class 1 is often likely but rarely
    the argmax: log-posteriors, posteriors and labels drawn from them (4000 rows)."""
    rng = np.random.default_rng(seed)
    p1 = rng.beta(1.0, 3.0, 4000)
    posteriors = np.column_stack([1 - p1, p1])
    return np.log(posteriors), posteriors, (rng.random(4000) < p1).astype(int)


THRESHOLD_RULES = [ScoreRule("argmax", np.zeros(2)), ScoreRule("threshold", np.log([0.3, 0.7]))]


def _chosen_on_20_labels(seed: int, stream_worth: float) -> str:
    scores, posteriors, labels = _threshold_stream(seed)
    feedback = LabelledFeedback(np.array([0.75, 0.25]), "macro_f1", heldout_worth=0.0,
                                stream_worth=stream_worth, evidence=0.9, seed=0)  # fmt: skip
    feedback.add(scores[:20], labels[:20])
    stream = (scores[1000:1512], posteriors[1000:1512])
    return feedback.decide(THRESHOLD_RULES, 0, stream=stream).rule.name


def test_stream_evidence_settles_what_a_few_labels_cannot_and_is_dropped_when_refuted() -> None:
    """20 labelled rows rarely tell argmax from a rule that lowers class 1's threshold; the
    stream's (calibrated) posteriors can. Labels that contradict the posteriors drop them."""
    scores, posteriors, labels = _threshold_stream(0)
    gain = [score(confusion(labels, r.predict(scores), 2), "macro_f1") for r in THRESHOLD_RULES]
    assert gain[1] - gain[0] > 0.02  # the threshold rule is the better one
    alone = [_chosen_on_20_labels(seed, 0.0) for seed in range(20)]
    pooled = [_chosen_on_20_labels(seed, 1000.0) for seed in range(20)]
    assert alone.count("threshold") <= 10  # 7 of 20 samples of labels are enough alone
    assert pooled.count("threshold") >= 16  # 18 of 20 with the stream's evidence
    # labels that say class 1 never occurs refute the stream's posteriors: left out
    stream = (scores[1000:1512], posteriors[1000:1512])
    never = np.zeros(400, dtype=int)
    for correction_rows, kept in ((10_000, False), (30, True)):
        feedback = LabelledFeedback(np.array([0.75, 0.25]), "macro_f1", heldout_worth=0.0,
                                    stream_worth=1000.0, correction_rows=correction_rows,
                                    seed=0)  # fmt: skip
        feedback.add(scores[:400], never)
        decision = feedback.decide(THRESHOLD_RULES, 0, stream=stream)
        # with a score correction the stream rows are read through it, which agrees with the
        # labels: they stay, and the corrected rule (class 1 all but never) wins
        assert (decision.comparison.stream_worth == 1000.0) == kept
        assert decision.rule.name == ("corrected" if kept else "argmax")


def _chosen_with_labels(
    labels: np.ndarray, seed: int, *, with_stream: bool, alone: int | None, anchor: int = 0
) -> tuple[str, float]:
    """The rule and the stream evidence's worth after ``labels`` on the threshold stream's
    first rows (min_labelled 10, labels alone from ``alone`` rows)."""
    scores, posteriors, _ = _threshold_stream(seed)
    feedback = LabelledFeedback(np.array([0.75, 0.25]), "macro_f1", heldout_worth=0.0,
                                stream_worth=1000.0, evidence=0.9, min_labelled=10,
                                min_labelled_alone=alone, correction_rows=10_000,
                                seed=0)  # fmt: skip
    feedback.add(scores[: len(labels)], labels)
    stream = (scores[1000:1512], posteriors[1000:1512]) if with_stream else None
    decision = feedback.decide(THRESHOLD_RULES, anchor, stream=stream)
    worth = 0.0 if decision.comparison is None else decision.comparison.stream_worth
    return decision.rule.name, worth


def test_labels_the_stream_does_not_back_wait_for_min_labelled_alone() -> None:
    """20 labels alone switch argmax to the threshold rule on a third of the samples (noise:
    see the test above); held to ``min_labelled_alone`` they change nothing, while with the
    stream's posteriors behind them they act from ``min_labelled``."""
    first_20 = {seed: _threshold_stream(seed)[2][:20] for seed in range(20)}

    def count(with_stream: bool, alone: int | None) -> int:
        chosen = [_chosen_with_labels(y, s, with_stream=with_stream, alone=alone)[0]
                  for s, y in first_20.items()]  # fmt: skip
        return chosen.count("threshold")

    assert count(with_stream=False, alone=None) >= 3
    assert count(with_stream=False, alone=50) == 0
    assert count(with_stream=True, alone=50) >= 16
    # 30 labels that say class 1 never occurs refute the stream's posteriors: the labels are
    # then alone, and below 50 rows they do not move the threshold rule the anchor chose
    never = np.zeros(30, dtype=int)
    assert _chosen_with_labels(never, 0, with_stream=True, alone=None, anchor=1) == (
        "argmax",
        0.0,
    )
    assert _chosen_with_labels(never, 0, with_stream=True, alone=50, anchor=1) == (
        "threshold",
        0.0,
    )
    # from 50 labelled rows on they act by themselves
    never = np.zeros(60, dtype=int)
    assert _chosen_with_labels(never, 0, with_stream=True, alone=50, anchor=1)[0] == "argmax"


def test_rule_patterns_are_numpys_row_wise_unique() -> None:
    from adaptable.core.labels import rule_choice as rules

    rng = np.random.default_rng(0)
    for _ in range(100):
        n, n_classes, n_rules = int(rng.integers(1, 60)), int(rng.integers(2, 5)), 5
        labels = rng.integers(0, n_classes, n)
        predictions = rng.integers(0, n_classes, (n_rules, n))
        patterns, counts = rules._patterns(labels, predictions)
        keys = np.column_stack([labels, predictions.T])
        want, want_counts = np.unique(keys, axis=0, return_counts=True)
        np.testing.assert_array_equal(patterns, want)
        np.testing.assert_array_equal(counts, want_counts)


def test_deferred_plug_in_rules_are_built_only_where_used_and_decide_the_same() -> None:
    """Weights given as functions: a batch that compares builds every rule; one that keeps
    the last choice builds that rule alone; the decisions are those of the weights given."""
    source, target = np.array([0.75, 0.25]), np.array([0.5, 0.5])
    built: list[str] = []

    def weights(name: str, value: np.ndarray):
        def give() -> np.ndarray:
            built.append(name)
            return value

        return give

    # a model that under-rates class 1: the plug-in rule wins (no score correction here)
    rng = np.random.default_rng(0)
    z = rng.normal(size=300) * 1.5
    log_p = -np.logaddexp(0, -np.stack([-z, z], axis=1))
    labels = (rng.random(300) < 1 / (1 + np.exp(-(z + 2.5)))).astype(np.int64)
    eager, lazy = (
        LabelledFeedback(source, "macro_f1", seed=0, correction_rows=10**6).fit_heldout(
            *_rows(300, seed=9)
        )
        for _ in range(2)
    )
    for feedback in (eager, lazy):
        feedback.add(log_p, labels)
    target_w, model_w = np.array([0.5, 0.5]), np.array([0.15, 0.85])
    chosen = set()
    for rows in range(1000, 1300, 20):
        want = eager.decide(standard_rules(source, target, target_w, model_w), 0, stream_rows=rows)
        built.clear()
        rules = standard_rules(
            source, target, weights("target", target_w), weights("model", model_w)
        )
        got = lazy.decide(rules, 0, stream_rows=rows)
        assert got.index == want.index and got.rule.name == want.rule.name
        chosen.add((got.rule.name, got.comparison is None))
        np.testing.assert_array_equal(got.rule.offset, want.rule.offset)
        if got.comparison is not None:
            assert sorted(built) == ["model", "target"]
        else:  # only the rule in use, where it is a deferred one
            assert built == {"label_shift": ["target"], "plugin": ["model"]}.get(got.rule.name, [])
    assert ("plugin", True) in chosen  # a batch kept the deferred plug-in rule without comparing


def _labels_after(seed: int, moved: bool) -> tuple[np.ndarray, np.ndarray]:
    """A calibrated model's two-class log-posteriors on 2,030 rows and labels drawn from it
    (``moved=False``) or from a steeper, shifted truth, logit 2.5 z - 1.5 (``moved=True``)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=2030) * 1.5
    log_p = -np.logaddexp(0, -np.stack([-z, z], axis=1))
    truth = 2.5 * z - 1.5 if moved else z
    return log_p, (rng.random(2030) < 1 / (1 + np.exp(-truth))).astype(np.int64)


def _after_30_labels(seed: int, moved: bool, likelihood_incumbent: bool) -> tuple[str, float]:
    """The rule 30 labelled rows choose over argmax, and its macro-F1 on the next 2,000."""
    log_p, labels = _labels_after(seed, moved)
    feedback = LabelledFeedback(np.array([0.5, 0.5]), "macro_f1", heldout_worth=0.0,
                                evidence=0.9, correction_rows=20,
                                likelihood_incumbent=likelihood_incumbent, seed=0)  # fmt: skip
    feedback.add(log_p[:30], labels[:30])
    rule = feedback.decide([ScoreRule("argmax", np.zeros(2))], 0).rule
    return rule.name, score(confusion(labels[30:], rule.predict(log_p[30:]), 2), "macro_f1")


def test_a_correction_the_labels_likelihood_backs_is_the_incumbent() -> None:
    """Where p(y|x) moved, 30 labels rarely show the correction's better macro-F1 on 90 % of
    bootstrap draws, but its out-of-fold log-loss beats the unlabelled reading's: as the
    incumbent it is used on most samples and gains; where nothing moved it costs nothing."""
    runs = {
        (moved, on): [_after_30_labels(seed, moved, on) for seed in range(20)]
        for moved in (True, False)
        for on in (True, False)
    }
    chosen = {key: [name for name, _ in found].count("corrected") for key, found in runs.items()}
    f1 = {key: np.mean([value for _, value in found]) for key, found in runs.items()}
    assert chosen[True, False] <= 5 and chosen[True, True] >= 10  # 3 and 12 of 20
    assert f1[True, True] - f1[True, False] > 0.008  # +1.2 points
    assert abs(f1[False, True] - f1[False, False]) < 0.002  # -0.01 points


def test_a_class_factor_multiplies_the_corrections_plug_in_weights() -> None:
    """A factor of 0 for a class (it never occurs) keeps every decision of the correction out
    of it, its fitted rule's and the out-of-fold ones; without the factor some rows go there."""
    scores, labels = _rows(300, seed=4, n_classes=3)
    plain = fit_correction(scores, labels, np.zeros(3), "balanced_accuracy", seed=0)
    assert (plain.rule.predict(scores) == 2).any() and (plain.out_of_fold == 2).any()
    factor = np.array([1.0, 1.0, 0.0])
    kept = fit_correction(scores, labels, np.zeros(3), "balanced_accuracy",
                          class_factor=factor, seed=0)  # fmt: skip
    assert not (kept.rule.predict(scores) == 2).any()
    assert not (kept.out_of_fold == 2).any()
    assert kept.scale == plain.scale  # the fit itself does not change, only the decision


def test_presence_factor_applies_to_balanced_accuracy_on_more_than_two_classes_only() -> None:
    from adaptable.core.decision.rules import presence_factor

    chances = np.array([1.0, 0.2, 0.9])
    assert presence_factor("balanced_accuracy", 3, lambda: chances).tolist() == [1.0, 0.2, 0.9]
    assert presence_factor("balanced_accuracy", 2, lambda: chances[:2]) is None
    assert presence_factor("macro_f1", 3, lambda: chances) is None
    assert presence_factor("balanced_accuracy", 3, None) is None

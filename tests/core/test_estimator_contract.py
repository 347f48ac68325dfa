"""What AdapTable promises beyond its numbers: one encoding per batch when the model shares the
Encoder, seeded determinism, progress reports, argument checks, and the default preset's file
fields (found by mutation testing, docs/maintainer/mutation.md)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors import safe_open
from sklearn.linear_model import LogisticRegression

from adaptable import AdapTable
from adaptable.core import source_prior
from adaptable.encoding import EncodedBatch


@pytest.fixture(scope="module")
def lr_pipeline(synthetic, frame_logreg):
    return frame_logreg(synthetic)


def _fit(model, synthetic, **params) -> AdapTable:
    return AdapTable(random_state=0, **params).fit(
        model, synthetic.train.X, synthetic.train.y, synthetic.valid.X, synthetic.valid.y
    )


class _Spy:
    """Counts the calls of one method of an object and records their first argument."""

    def __init__(self, monkeypatch, target, name: str) -> None:
        self.calls: list = []
        original = getattr(target, name)

        def spy(*args, **kwargs):
            self.calls.append(args[0] if args else None)
            return original(*args, **kwargs)

        monkeypatch.setattr(target, name, spy)


def test_a_model_sharing_the_encoder_gets_the_batch_encoded_once(
    synthetic, torch_source, monkeypatch
) -> None:
    own = _Spy(monkeypatch, torch_source, "predict_logits")
    shared = _Spy(monkeypatch, torch_source, "logits_from_encoded")
    method = _fit(torch_source, synthetic)
    reference = _fit(torch_source, synthetic)
    assert method.encoder_ is torch_source.encoder
    batch = synthetic.test.X.iloc[:64]
    own.calls.clear()
    shared.calls.clear()
    proba = method.predict_proba(batch)
    assert own.calls == []  # the model did not encode the batch itself
    assert len(shared.calls) == 1 and isinstance(shared.calls[0], EncodedBatch)
    np.testing.assert_array_equal(shared.calls[0].codes, torch_source.encoder.encode(batch).codes)
    # ... and the answer is the one of the model's own path.
    logits = torch_source.encoder.transform(batch)
    with torch.no_grad():
        logits = torch_source.module(torch.from_numpy(logits)).numpy()
    np.testing.assert_allclose(proba, reference.adapt_logits(logits, batch), atol=1e-6)


def test_explicit_columns_do_not_share_the_models_encoder(
    synthetic, torch_source, monkeypatch
) -> None:
    numerical = synthetic.numerical[:2]
    own = _Spy(monkeypatch, torch_source, "predict_logits")
    method = _fit(torch_source, synthetic, numerical=numerical, categorical=[])
    assert method.encoder_ is not torch_source.encoder
    assert list(method.encoder_.numerical_) == numerical
    own.calls.clear()
    method.predict_proba(synthetic.test.X.iloc[:16])
    assert len(own.calls) == 1


def test_a_model_without_logits_from_encoded_is_called_on_the_raw_batch(
    synthetic, torch_source
) -> None:
    class EncoderOnly:
        """Exposes an Encoder but no logits_from_encoded: cannot take an EncodedBatch."""

        encoder = torch_source.encoder

        def predict_logits(self, X):
            return torch_source.predict_logits(X)

    method = _fit(EncoderOnly(), synthetic)
    proba = method.predict_proba(synthetic.test.X.iloc[:16])
    assert proba.shape == (16, 2)


def test_the_same_random_state_gives_the_same_fitted_state(synthetic, lr_pipeline) -> None:
    first, second = _fit(lr_pipeline, synthetic), _fit(lr_pipeline, synthetic)
    assert first.decider_.rule == second.decider_.rule
    assert first.decider_.shift_test.null_mean == second.decider_.shift_test.null_mean
    batch = synthetic.test.X.iloc[:128]
    np.testing.assert_array_equal(first.predict_proba(batch), second.predict_proba(batch))


def test_the_rule_bootstrap_is_seeded_by_random_state(synthetic, lr_pipeline, monkeypatch) -> None:
    from adaptable.core.recommended import recommended_decider as module

    seeds = []
    original = module.choose_rule

    def spy(*args, **kwargs):
        seeds.append(kwargs["seed"])
        return original(*args, **kwargs)

    monkeypatch.setattr(module, "choose_rule", spy)
    _fit(lr_pipeline, synthetic)
    with pytest.warns(UserWarning, match="no validation rows"):
        AdapTable(random_state=7).fit(lr_pipeline, synthetic.train.X, synthetic.train.y)
    assert seeds == [0, 7]


def test_fit_without_labels_names_what_is_missing(synthetic, lr_pipeline) -> None:
    with pytest.raises(ValueError, match="X_source and labels y_source"):
        AdapTable().fit(lr_pipeline, synthetic.train.X, None)


def test_source_prior_without_labels_says_so() -> None:
    with pytest.raises(ValueError, match="at least one label"):
        source_prior(np.array([], dtype=np.int64))


def test_verbose_post_training_prints_every_epoch_and_marks_the_best(
    synthetic, lr_pipeline, capsys
) -> None:
    reports = []
    method = _fit(
        lr_pipeline,
        synthetic,
        preset="paper",
        epochs=3,
        patience=3,
        verbose=True,
        progress=lambda *report: reports.append(report),
    )
    printed = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in printed] == ["0", "1", "2"]
    assert printed[0].endswith("  *")  # the first epoch is always the best so far
    assert [r[0] for r in reports] == [0, 1, 2]
    best = method.post_training_.best_epoch
    assert [r[3] for r in reports][best] is True
    assert all(not math.isnan(r[2]) for r in reports)


def test_progress_reports_nan_validation_loss_without_validation_rows(
    synthetic, lr_pipeline
) -> None:
    reports = []
    AdapTable(preset="paper", epochs=2, random_state=0, progress=lambda *r: reports.append(r)).fit(
        lr_pipeline, synthetic.train.X, synthetic.train.y
    )
    assert len(reports) == 2 and all(math.isnan(r[2]) for r in reports)


def test_adapt_logits_passes_the_oracle_labels_to_the_oracle_calibrator(
    synthetic, lr_pipeline
) -> None:
    method = _fit(lr_pipeline, synthetic, preset="paper", calibrator="oracle_test_labels")
    batch, labels = synthetic.test.X.iloc[:32], synthetic.test.y[:32]
    logits = np.log(lr_pipeline.predict_proba(batch))
    proba = method.adapt_logits(logits, batch, oracle_labels=labels)
    assert proba.shape == (32, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


# ---------------------------------------------------------------- the default preset's file


@pytest.fixture(scope="module")
def default_file(synthetic, lr_pipeline, tmp_path_factory) -> Path:
    """A default-preset AdapTable saved right after fit: every expected count is zero."""
    method = _fit(lr_pipeline, synthetic)
    path = tmp_path_factory.mktemp("default") / "fresh.safetensors"
    method.save(path)
    return path


def test_a_fresh_default_preset_file_loads_and_continues_like_the_original(
    synthetic, lr_pipeline, default_file
) -> None:
    loaded = AdapTable.load(default_file, model=lr_pipeline)
    original = _fit(lr_pipeline, synthetic)
    for start in range(0, 192, 64):
        batch = synthetic.test.X.iloc[start : start + 64]
        np.testing.assert_array_equal(loaded.predict_proba(batch), original.predict_proba(batch))


def test_a_table_without_categories_saves_and_loads_before_and_after_batches(
    synthetic, tmp_path
) -> None:
    # A fresh reservoir holds no rows: an empty array, which safetensors cannot hold as a tensor
    # (such files used to fail to load: "missing array 'reservoir'").
    columns = synthetic.numerical
    model = LogisticRegression().fit(synthetic.train.X[columns], synthetic.train.y)
    method = AdapTable(random_state=0).fit(
        model,
        synthetic.train.X[columns],
        synthetic.train.y,
        synthetic.valid.X[columns],
        synthetic.valid.y,
    )
    batches = [synthetic.test.X[columns].iloc[i : i + 64] for i in range(0, 256, 64)]
    for when in ("fresh", "streamed"):
        method.save(tmp_path / f"{when}.safetensors")
        loaded = AdapTable.load(tmp_path / f"{when}.safetensors", model=model)
        for batch in batches[:2]:
            np.testing.assert_array_equal(loaded.predict_proba(batch), method.predict_proba(batch))
    with safe_open(str(tmp_path / "fresh.safetensors"), framework="numpy") as handle:
        assert "prior_estimate.reservoir" not in handle.keys()  # noqa: SIM118


def _set_seen(n_seen: int):
    return lambda t, m: t.__setitem__("prior_estimate.n_seen", np.array([n_seen]))


@pytest.mark.parametrize("n_seen", [5, -1])
def test_a_reservoir_that_disagrees_with_the_rows_seen_is_refused(
    default_file, tmp_path, edited_copy, n_seen
) -> None:
    # The fresh file has no reservoir rows: only n_seen 0 agrees with it.
    with pytest.raises(ValueError, match=r"field 'prior_estimate'.*min\(n_seen, 4096\)"):
        AdapTable.load(edited_copy(default_file, tmp_path, _set_seen(n_seen)))


def _set_negative_count(tensors: dict, meta: dict) -> None:
    tensors["expected_confusion"] = tensors["expected_confusion"] - 1.0


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t, m: m["rule"].pop("beta"), r"field 'rule' cannot be read"),
        (_set_negative_count, r"field 'expected_confusion' holds negative counts"),
        (
            lambda t, m: m.__setitem__("n_classes", 1),
            r"field 'n_classes' must be at least 2; got 1",
        ),
        (
            lambda t, m: m.__setitem__("encoder", {"broken": True}),
            r"field 'encoder' cannot be read",
        ),
        (
            lambda t, m: t.__setitem__("stray", np.zeros(1)),
            r"field 'stray' is not part of an AdapTable file",
        ),
        (
            lambda t, m: m.__setitem__("format", "adaptable.AdapTable/99"),
            r"unknown AdapTable file format 'adaptable.AdapTable/99'",
        ),
    ],
)
def test_default_preset_file_damage_is_named(
    default_file, tmp_path, edited_copy, edit, message
) -> None:
    with pytest.raises(ValueError, match=message):
        AdapTable.load(edited_copy(default_file, tmp_path, edit))

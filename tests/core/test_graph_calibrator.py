"""g_phi as AdapTable's calibrator part: fit on the source, calibrate, save and restore."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from adaptable import AdapTable
from adaptable.core import GraphCalibrator, ShiftAwareCalibrator, softmax

from .conftest import fit_context, load_context

PARAMS = {**AdapTable(preset="paper").get_params(), "epochs": 2, "batch_size": 16}


@pytest.fixture(scope="module")
def fitted(synthetic, frame_logreg):
    model = frame_logreg(synthetic)
    context = fit_context(synthetic, model)
    return GraphCalibrator.fit_source(context, PARAMS), context, model


def test_fit_post_trains_a_network_of_the_tables_layout(fitted) -> None:
    calibrator, context, _ = fitted
    assert calibrator.net.width == 16 and calibrator.net.n_classes == 2
    assert calibrator.layout.names == tuple(context.encoder.feature_names_in_)
    assert len(calibrator.report.train_losses) <= 2
    assert calibrator.kernel is not None  # the complete graph runs in numpy


def test_calibrate_divides_each_rows_logits_by_its_temperature(synthetic, fitted) -> None:
    calibrator, context, model = fitted
    rows = synthetic.test.X.iloc[:40]
    logits = np.log(model.predict_proba(rows))
    trend = calibrator.shift_trend(context.encoder.encode(rows))
    q, temperatures = calibrator.calibrate(logits, trend)
    assert temperatures.shape == (40,) and np.all(temperatures > 0)
    np.testing.assert_allclose(q, softmax(logits, temperatures))
    with pytest.raises(ValueError, match="X_batch"):
        calibrator.calibrate(logits)


def test_state_restores_the_same_temperatures(synthetic, fitted) -> None:
    calibrator, context, model = fitted
    state = calibrator.state()
    assert {"numeric_mean", "category_mean", "calibrator.gcn.weight"} <= set(state.arrays)
    twin = GraphCalibrator.from_state(
        load_context(state, PARAMS, context.source_prior, encoder=context.encoder)
    )
    rows = synthetic.test.X.iloc[:40]
    logits = np.log(model.predict_proba(rows))
    encoded = context.encoder.encode(rows)
    np.testing.assert_array_equal(
        twin.temperatures(logits, twin.shift_trend(encoded)),
        calibrator.temperatures(logits, calibrator.shift_trend(encoded)),
    )
    # a network whose layout-derived buffers disagree with the saved statistics is refused
    state.arrays["calibrator.category_mean"] = state.arrays["calibrator.category_mean"] + 0.1
    with pytest.raises(ValueError, match="'calibrator.category_mean'"):
        GraphCalibrator.from_state(
            load_context(state, PARAMS, context.source_prior, encoder=context.encoder)
        )


def test_a_network_alone_calibrates_given_trends_but_has_no_shift_trend() -> None:
    torch.manual_seed(0)
    calibrator = GraphCalibrator(ShiftAwareCalibrator(n_numeric=1, block_sizes=[], n_classes=2))
    with pytest.raises(ValueError, match="layout"):
        calibrator.shift_trend(None)

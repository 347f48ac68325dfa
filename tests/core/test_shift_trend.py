"""Shift trend (Eq. 1), the compact categorical projection, and the column graph."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from adaptable.core import ColumnLayout, ShiftAwareCalibrator
from adaptable.core.paper.shift_trend import correlation_adjacency, normalized_adjacency
from adaptable.encoding import Encoder


@pytest.fixture()
def table() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "a": [0.0, 2.0, 4.0, 6.0],
            "c": ["x", "y", "x", "z"],
            "b": [1.0, 1.0, 3.0, 3.0],
            "d": ["p", "q", "q", "q"],
        }
    )


def test_shift_input_hand_computed(table: pd.DataFrame) -> None:
    encoder = Encoder().fit(table)
    layout = ColumnLayout.from_encoder(encoder)
    assert layout.names == ("a", "b", "c", "d")
    assert layout.block_sizes.tolist() == [3, 2]
    stats = layout.source_statistics(encoder.encode(table))
    np.testing.assert_allclose(stats.category_mean, [0.5, 0.25, 0.25, 0.25, 0.75])
    batch = pd.DataFrame({"a": [6.0], "c": ["new"], "b": [1.0], "d": ["p"]})
    trend = layout.shift_input(encoder.encode(batch), stats)
    # a: standardised 6 = (6 - 3) / std(0, 2, 4, 6) = 3 / sqrt(5); source mean 0
    np.testing.assert_allclose(trend.numeric, [[3 / np.sqrt(5), -1.0]], rtol=1e-6)
    # unseen category -> index W_cat (5); "p" is column 3 of the categorical block
    assert trend.category_index.tolist() == [[5, 3]]


def test_node_features_equal_projected_dense_shift_trend(table: pd.DataFrame) -> None:
    encoder = Encoder().fit(table)
    layout = ColumnLayout.from_encoder(encoder)
    encoded = encoder.transform(table)
    stats = layout.source_statistics(encoder.encode(table))
    torch.manual_seed(0)
    net = ShiftAwareCalibrator(
        n_numeric=2, block_sizes=[3, 2], n_classes=2, width=4, category_mean=stats.category_mean
    )
    trend = layout.shift_input(encoder.encode(table), stats)
    nodes = (
        net.node_features(
            torch.as_tensor(trend.numeric)[None], torch.as_tensor(trend.category_index)[None]
        )[0]
        .detach()
        .numpy()
    )
    # Eq. 1 on the whole encoded row, then each one-hot block projected by its weights.
    dense = encoded.astype(np.float64) - encoded.mean(axis=0, dtype=np.float64)
    w = net.category_projection.detach().numpy()
    expected = np.column_stack(
        [dense[:, 0], dense[:, 1], dense[:, 2:5] @ w[:3], dense[:, 5:] @ w[3:]]
    )
    np.testing.assert_allclose(nodes, expected, rtol=1e-5, atol=1e-6)
    row_sum = net.row_node_sum(
        torch.as_tensor(trend.numeric)[None], torch.as_tensor(trend.category_index)[None]
    )
    np.testing.assert_allclose(
        row_sum[0].detach().numpy(), expected.sum(axis=1), rtol=1e-5, atol=1e-6
    )


def test_complete_graph_shortcut_equals_dense_gcn() -> None:
    torch.manual_seed(1)
    net = ShiftAwareCalibrator(n_numeric=3, block_sizes=[2], n_classes=2, width=5)
    numeric = torch.randn(2, 5, 3)
    index = torch.randint(0, 3, (2, 5, 1))
    mask = torch.ones(2, 5, dtype=torch.bool)
    mask[1, 3:] = False
    fast = net.batch_representation(numeric, index, mask)
    nodes = net.node_features(numeric, index) * mask.unsqueeze(-1)  # (B, N, D)
    ones = torch.ones(4, 4)
    a_hat = ones / ones.sum(dim=1).sqrt().outer(ones.sum(dim=0).sqrt())  # all-ones: 1 / D
    dense = torch.relu(net.gcn(a_hat @ nodes.transpose(1, 2))).mean(dim=1)
    torch.testing.assert_close(fast, dense)


def test_correlation_adjacency_matches_numpy() -> None:
    rng = np.random.default_rng(0)
    values = rng.normal(size=(1, 6, 3))
    values[0, :, 2] = 0.5 * values[0, :, 0] + 0.1 * rng.normal(size=6)
    mask = torch.ones(1, 6, dtype=torch.bool)
    adj = correlation_adjacency(torch.as_tensor(values), mask)[0].numpy()
    expected = np.abs(np.corrcoef(values[0].T))
    np.fill_diagonal(expected, 0.0)
    np.testing.assert_allclose(adj, expected, rtol=1e-10)
    # padding rows are ignored, constant columns give 0 instead of NaN
    padded = np.concatenate([values, np.full((1, 2, 3), 99.0)], axis=1)
    padded[..., 1] = 1.0
    mask = torch.tensor([[True] * 6 + [False] * 2])
    adj = correlation_adjacency(torch.as_tensor(padded), mask)[0].numpy()
    assert adj[0, 2] == pytest.approx(expected[0, 2])
    assert adj[0, 1] == 0.0 and adj[1, 2] == 0.0


def test_normalized_adjacency_hand_computed() -> None:
    a = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
    # A + I = all ones, degrees 2 -> every entry 1/2
    torch.testing.assert_close(normalized_adjacency(a), torch.full((2, 2), 0.5))
    a = torch.tensor([[0.0, 0.5], [0.5, 0.0]])
    # degrees 1.5: diagonal 1/1.5, off-diagonal 0.5/1.5
    torch.testing.assert_close(
        normalized_adjacency(a), torch.tensor([[2 / 3, 1 / 3], [1 / 3, 2 / 3]])
    )

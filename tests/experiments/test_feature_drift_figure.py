"""The per-column drift figure: the top columns' distances as bars, the flagged ones filled."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from adaptable.experiments.feature_drift_figure import plot_feature_drift


def _frame(n: int) -> pd.DataFrame:
    distances = np.linspace(0.4, 0.01, n)
    return pd.DataFrame(
        {
            "column": [f"c{i}" for i in range(n)],
            "kind": ["numerical" if i % 2 else "categorical" for i in range(n)],
            "distance_name": [
                "kolmogorov_smirnov" if i % 2 else "total_variation" for i in range(n)
            ],
            "distance": distances,
            "p_value": np.linspace(1e-9, 0.9, n),
            "flagged": [i < 3 for i in range(n)],
        }
    )


def test_the_top_columns_are_drawn_largest_first_flagged_ones_filled() -> None:
    fig = plot_feature_drift(_frame(30), top=10, title="stream")
    ax = fig.axes[0]
    bars = ax.patches
    assert len(bars) == 10
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[-1] == "c0" and labels[0] == "c9"  # the first row at the top
    widths = [bar.get_width() for bar in bars]
    assert widths == sorted(widths) and widths[-1] == pytest.approx(0.4)
    filled = [bar.get_facecolor()[3] > 0 for bar in bars]
    assert filled == [False] * 7 + [True] * 3
    assert ax.get_title() == "stream"


def test_what_is_no_feature_drift_frame_is_refused_in_its_words() -> None:
    with pytest.raises(TypeError, match="feature_drift"):
        plot_feature_drift(np.zeros(3))
    with pytest.raises(ValueError, match="lacks the columns"):
        plot_feature_drift(_frame(3).drop(columns="distance"))
    with pytest.raises(ValueError, match="has no rows"):
        plot_feature_drift(_frame(0))
    with pytest.raises(ValueError, match="top"):
        plot_feature_drift(_frame(3), top=0)

"""The columns that moved most, as one figure: :meth:`adaptable.AdapTable.feature_drift` drawn.

:func:`plot_feature_drift` draws the distance of the ``top`` columns of the per-column drift
(the Kolmogorov-Smirnov D of a numerical column, the total variation of a categorical one, both
in [0, 1]) as horizontal bars, largest at the top, a flagged column's bar filled and the others
hollow, each labelled with its kind and p-value.

>>> import pandas as pd
>>> frame = pd.DataFrame({"column": ["age", "city"], "kind": ["numerical", "categorical"],
...     "distance_name": ["kolmogorov_smirnov", "total_variation"], "distance": [0.3, 0.05],
...     "p_value": [1e-9, 0.4], "flagged": [True, False]})
>>> len(plot_feature_drift(frame).axes)
1
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from adaptable.optional import require

#: the columns :func:`plot_feature_drift` reads
NEEDED = ("column", "kind", "distance_name", "distance", "p_value", "flagged")


def plot_feature_drift(frame: pd.DataFrame, *, top: int = 15, title: str | None = None) -> Any:
    """The distances of the ``top`` columns that moved most; returns the matplotlib Figure.

    Args:
        frame: :meth:`adaptable.AdapTable.feature_drift`'s DataFrame (its order kept: the
            flagged columns first, then by distance).
        top: the columns drawn, at least 1.
        title: the figure's title.

    Raises:
        TypeError: ``frame`` is not a DataFrame.
        ValueError: ``frame`` has no rows or lacks the columns of :data:`NEEDED`, or ``top``
            is below 1.
    """
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(
            "plot_feature_drift: frame must be the DataFrame AdapTable.feature_drift() returns; "
            f"got {type(frame).__name__}."
        )
    missing = [c for c in NEEDED if c not in frame.columns]
    if missing or frame.empty:
        what = f"lacks the columns {missing}" if missing else "has no rows"
        raise ValueError(
            f"plot_feature_drift: the frame {what}; pass AdapTable.feature_drift() after at "
            "least one batch."
        )
    if top < 1:
        raise ValueError(f"plot_feature_drift: top must be at least 1; got {top}.")
    matplotlib = require("matplotlib", feature="The per-column drift figure", extra="plots")
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    shown = frame.head(top).iloc[::-1]  # the first row at the top
    flagged = shown["flagged"].to_numpy(dtype=bool)
    colours = np.where(shown["kind"] == "numerical", "tab:blue", "tab:orange")
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.35 * len(shown)), layout="constrained")
    positions = np.arange(len(shown))
    distances = shown["distance"].to_numpy(dtype=float)
    ax.barh(positions, distances, color=np.where(flagged, colours, "none"), edgecolor=colours)
    ax.set_yticks(positions, [str(c) for c in shown["column"]], fontsize="small")
    for y, (distance, row) in enumerate(zip(distances, shown.itertuples(index=False), strict=True)):
        name = "D" if row.distance_name == "kolmogorov_smirnov" else "TV"
        ax.annotate(f" {name}, p {row.p_value:.2g}", (distance, y), va="center", fontsize="x-small")
    ax.set_xlim(0, min(1.0, 1.3 * float(distances.max()) + 0.05))
    ax.set_xlabel(
        "distance to the held-out rows (numerical: Kolmogorov-Smirnov D, blue; categorical: "
        "total variation, orange; filled: flagged)",
        fontsize="small",
    )
    if title:
        ax.set_title(title)
    return fig

"""The paper's shift-aware calibrator g_phi as a part of AdapTable (Algorithm 1, line 9).

:class:`GraphCalibrator` fits g_phi on the source data (the source statistics of Eq. 1, then
post-training, Appendix A), calibrates a test batch (q_i = softmax(z_i / T_i) with
T_i = g_phi(z_i, s^t)) and saves / restores its own state. It owns the network's and
post-training's constructor parameters (:attr:`GraphCalibrator.parameter_constraints`).
"""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Integral, Real
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from adaptable.core.paper.graph_numpy_forward import CompleteGraphKernel
from adaptable.core.paper.shift_trend import (
    ADJACENCIES,
    ColumnLayout,
    ShiftTrendInput,
    SourceStatistics,
)
from adaptable.core.parts.contexts import FitContext, LoadContext, PartState
from adaptable.encoding import EncodedBatch
from adaptable.framework.parameters import Constraint, Interval, StrOptions
from adaptable.framework.probability import softmax
from adaptable.optional import require

if TYPE_CHECKING:
    from adaptable.core.paper.graph_network import ShiftAwareCalibrator
    from adaptable.core.paper.post_training import PostTrainingReport

# The network, its post-training and its loading are torch; the class itself (its name and
# parameters, which the calibrator registry and AdapTable's parameter checks read) is not, so
# that the default preset imports and runs without torch. Every way to a GraphCalibrator
# (fit_source, from_state, or a network in hand) goes through torch.

#: network tensors derived from the layout and the source statistics (checked on load)
_DERIVED = ("block_of_column", "code_of_column", "category_mean")


class GraphCalibrator:
    """g_phi at test time: q_i = softmax(z_i / T_i), T_i = g_phi(z_i, s^t).

    Deliberate difference (the paper fixes N = 64 and says nothing of other sizes): a batch wider
    than the network's node width is cut into consecutive graphs of ``width`` rows (the last one
    zero-padded), each with its own shift trend graph; a narrower batch is zero-padded, as the
    authors do.

    Args:
        net: the trained network (put in eval mode).
        layout, statistics: the encoded columns' layout and the source means (Eq. 1), which
            :meth:`shift_trend` needs; a calibrator built from a network alone calibrates given
            shift trends only.

    Parameters owned (``AdapTable(...)`` arguments):
        adjacency: ``"complete"`` (paper, default) or ``"correlation"`` (authors' final commit).
        batch_size: N, the node width and post-training batch (64 in the paper).
        hidden: GCN width (128).
        epochs, patience, lr, weight_decay: post-training (Adam, cosine schedule, early stopping).
        gamma: focal-loss gamma (2).
        cal_weight: lambda_CAL (0.1).
        graphs_per_step: graphs of ``batch_size`` rows per optimiser step; 1 as the authors;
            ``None`` applies :func:`~adaptable.core.paper.post_training.automatic_graphs_per_step`.
    """

    name: ClassVar[str] = "gnn"
    needs_shift_trend: ClassVar[bool] = True
    needs_labels: ClassVar[bool] = False
    #: q is not softmax(z) itself
    is_softmax: ClassVar[bool] = False
    parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "adjacency": [StrOptions(ADJACENCIES)],
        "batch_size": [Interval(Integral, 1, None)],
        "hidden": [Interval(Integral, 1, None)],
        "epochs": [Interval(Integral, 1, None)],
        "patience": [Interval(Integral, 0, None)],
        "lr": [Interval(Real, 0, None, closed="neither")],
        "weight_decay": [Interval(Real, 0, None)],
        "gamma": [Interval(Real, 0, None)],
        "cal_weight": [Interval(Real, 0, None)],
        "graphs_per_step": [Interval(Integral, 1, None), None],
    }

    def __init__(
        self,
        net: ShiftAwareCalibrator,
        layout: ColumnLayout | None = None,
        statistics: SourceStatistics | None = None,
        report: PostTrainingReport | None = None,
    ) -> None:
        self.net = net.eval()
        self.layout = layout
        self.statistics = statistics
        #: what post-training did (``None`` for a loaded or hand-built calibrator)
        self.report = report
        # The complete graph runs as a numpy kernel at test time (no torch overhead per batch).
        self.kernel = complete_graph_kernel(net) if net.adjacency == "complete" else None

    @classmethod
    def fit_source(cls, context: FitContext, params: Mapping[str, Any]) -> GraphCalibrator:
        """Source statistics (Eq. 1's means over the training rows), then post-training g_phi.

        Args:
            context: the source data; ``context.encoder`` must be fitted.
            params: at least the parameters this part owns.

        Raises:
            MissingExtraError: torch is not installed (the ``torch`` extra).
        """
        torch = _torch()  # first: a core install fails before the inputs are built
        from adaptable.core.paper.post_training import class_weights, post_train

        source = context.source
        layout = ColumnLayout.from_encoder(context.encoder)
        encoded_source = context.encoder.encode(source.X)
        statistics = layout.source_statistics(encoded_source)
        train = (layout.shift_input(encoded_source, statistics), context.logits, source.y)
        valid = None
        if source.X_valid is not None:
            trend = layout.shift_input(context.encoder.encode(source.X_valid), statistics)
            valid = (trend, context.logits_valid, source.y_valid)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(context.seed)
            net = _network(layout, statistics, context.n_classes, params)
        report = post_train(
            net,
            train,
            valid,
            class_weights=class_weights(context.source_prior),
            epochs=params["epochs"],
            patience=params["patience"],
            lr=params["lr"],
            weight_decay=params["weight_decay"],
            gamma=params["gamma"],
            cal_weight=params["cal_weight"],
            graphs_per_step=params["graphs_per_step"],
            seed=context.seed,
            progress=context.progress,
        )
        return cls(net, layout, statistics, report)

    def shift_trend(self, encoded: EncodedBatch) -> ShiftTrendInput:
        """Eq. 1 for a batch encoded by the adapter's Encoder."""
        if self.layout is None or self.statistics is None:
            raise ValueError("This GraphCalibrator was built without a layout and statistics.")
        return self.layout.shift_input(encoded, self.statistics)

    def temperatures(self, logits: np.ndarray, trend: ShiftTrendInput) -> np.ndarray:
        """T_i for every row, (n,)."""
        if self.kernel is not None:
            return self.kernel(trend.numeric, trend.category_index, logits)
        import torch  # loaded: the network is a torch module

        from adaptable.core.paper.post_training import Rows

        graphs = Rows.from_arrays(trend, logits).pack(self.net.width)
        with torch.inference_mode():
            t = self.net(graphs.numeric, graphs.category_index, graphs.logits, graphs.mask)
        return t.reshape(-1)[: len(logits)].to(torch.float64).numpy()

    def calibrate(
        self, logits: np.ndarray, trend: ShiftTrendInput | None = None, labels: Any = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(softmax(z_i / T_i), T_i): the calibrated probabilities whose margin is delta_i."""
        if trend is None:
            raise ValueError("The shift-aware calibrator needs the batch's features X_batch.")
        temperatures = self.temperatures(logits, trend)
        return softmax(logits, temperatures), temperatures

    def arrays(self) -> dict[str, np.ndarray]:
        """The network's tensors by state-dict key."""
        return {k: v.detach().cpu().numpy() for k, v in self.net.state_dict().items()}

    def state(self) -> PartState:
        """The network (``calibrator.*``), the source means and the column layout."""
        arrays = {f"calibrator.{key}": value for key, value in self.arrays().items()}
        metadata: dict[str, Any] = {}
        if self.statistics is not None:
            arrays["numeric_mean"] = self.statistics.numeric_mean
            arrays["category_mean"] = self.statistics.category_mean
        if self.layout is not None:
            metadata["layout"] = self.layout.to_dict()
        return PartState(arrays, metadata)

    @classmethod
    def from_state(cls, context: LoadContext) -> GraphCalibrator:
        """Rebuild from :meth:`state`, checked against the saved Encoder and parameters.

        Raises:
            ValueError: naming the field that is missing, malformed or disagrees.
            MissingExtraError: torch is not installed (the ``torch`` extra).
        """
        torch = _torch()
        reader, params = context.reader, context.params
        try:
            layout = ColumnLayout.from_dict(reader.field("layout", dict))
        except (KeyError, TypeError, ValueError) as err:
            raise reader.error("layout", f"cannot be read ({err})") from err
        if layout.to_dict() != ColumnLayout.from_encoder(context.encoder).to_dict():
            raise reader.error("layout", "disagrees with the encoder's schema")
        category_mean = reader.tensor("category_mean", (layout.categorical_width,))
        # category frequencies of the source rows: none negative, each feature's summing to 1
        # at most (less where a shared encoder did not see some of the rows' categories)
        per_feature = np.bincount(
            layout.block_of_column, weights=category_mean, minlength=layout.n_categorical
        )
        if np.any(category_mean < 0) or np.any(per_feature > 1 + 1e-9):
            raise reader.error(
                "category_mean", "must hold category frequencies (each feature's summing to 1)"
            )
        statistics = SourceStatistics(
            reader.tensor("numeric_mean", (layout.n_numeric,)), category_mean
        )
        net = _network(layout, statistics, context.n_classes, params)
        state = net.state_dict()
        for key, expected in state.items():
            dtype = str(expected.numpy().dtype)
            value = reader.tensor(f"calibrator.{key}", tuple(expected.shape), dtype)
            if key in _DERIVED and not np.array_equal(value, expected.numpy()):
                raise reader.error(f"calibrator.{key}", "disagrees with the layout or statistics")
            state[key] = torch.from_numpy(np.array(value)).to(expected.dtype)
        net.load_state_dict(state)
        return cls(net, layout, statistics)


def _torch() -> ModuleType:
    """torch, or the error naming the feature and the extra that installs it."""
    return require(
        "torch",
        feature="The paper preset's shift-aware graph calibrator (AdapTable(preset='paper') or "
        "calibrator='gnn'; fitting it, or loading an adapter saved with it)",
        extra="torch",
    )


def complete_graph_kernel(net: ShiftAwareCalibrator) -> CompleteGraphKernel:
    """The numpy kernel of a complete-graph network: its weights copied out in float64.

    Raises:
        ValueError: the network's adjacency is not the complete graph.
    """
    if net.adjacency != "complete":
        raise ValueError(f"Only the complete graph has a numpy kernel; got {net.adjacency!r}.")
    import torch  # loaded: the network is a torch module

    with torch.no_grad():
        projection = net.category_projection.double().numpy()
        weight = net.head.weight[0].double().numpy()
        return CompleteGraphKernel(
            category_weights=np.append(projection, 0.0),
            offset=float(projection @ net.category_mean.double().numpy()),
            n_nodes=net.n_nodes,
            gcn=net.gcn.weight.double().numpy().T.copy(),
            head_summary=weight[: net.hidden].copy(),
            head_logits=weight[net.hidden :].copy(),
            bias=float(net.head.bias.double()),
            softplus_beta=net.softplus_beta,
            min_temperature=net.min_temperature,
        )


def _network(
    layout: ColumnLayout, statistics: SourceStatistics, n_classes: int, params: dict[str, Any]
) -> ShiftAwareCalibrator:
    """g_phi for ``layout``, shaped by the calibrator's parameters (fit and load build the same)."""
    from adaptable.core.paper.graph_network import ShiftAwareCalibrator

    return ShiftAwareCalibrator.for_layout(
        layout,
        statistics,
        n_classes,
        width=params["batch_size"],
        hidden=params["hidden"],
        adjacency=params["adjacency"],
    )

"""How :class:`~adaptable.core.estimator.AdapTable` reads a batch: the fit's columns put back in
order, the rows encoded once where a part reads features, and the model's logits checked.

:class:`BatchInput` serves ``predict_proba`` (rows), ``adapt_logits`` (logits the caller has,
beside the rows where a part reads them) and the labelled rows of ``partial_fit``
(:mod:`~adaptable.core.label_intake`). The estimator hands it, with each batch, the checks
every method makes of a batch (:data:`RowCount`), which it makes before reading the batch.

Example:
    >>> import numpy as np
    >>> reading = BatchInput(
    ...     logit_function=lambda X: np.asarray(X, dtype=float), encoded_logits=None,
    ...     encoder=None, columns=None, n_classes=2, needs_features=False,
    ... )
    >>> logits, encoded, rows = reading.read([[0.0, 1.0], [2.0, 0.5]], len)
    >>> logits.shape, encoded is None
    ((2, 2), True)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from adaptable.framework.model_adapter import checked_logits
from adaptable.framework.rows import as_table

if TYPE_CHECKING:
    from adaptable.encoding import EncodedBatch, Encoder
    from adaptable.framework.fitted_columns import FittedColumns
    from adaptable.framework.model_adapter import LogitFunction


#: the checks every method makes of a batch (``TestTimeMethod._check_batch``): its row count
RowCount = Callable[[Any], int]


class BatchInput:
    """A batch's logits and encoded rows, from the model and the Encoder the estimator holds.

    Args:
        logit_function: the model's logits of rows, or ``None`` (loaded without a model).
        encoded_logits: the model's logits of rows encoded by ``encoder`` (a model sharing
            the Encoder, which then encodes each batch once for both), or ``None``.
        encoder: the Encoder the parts read the rows through, or ``None``.
        columns: the columns of a DataFrame fit, put back in order before the model reads
            rows; ``None`` after a fit on arrays.
        n_classes: C.
        needs_features: whether a part (the calibrator or the decider) reads the features.
    """

    def __init__(
        self,
        *,
        logit_function: LogitFunction | None,
        encoded_logits: LogitFunction | None,
        encoder: Encoder | None,
        columns: FittedColumns | None,
        n_classes: int,
        needs_features: bool,
    ) -> None:
        self.logit_function = logit_function
        self.encoded_logits = encoded_logits
        self.encoder = encoder
        self.columns = columns
        self.n_classes = n_classes
        self.needs_features = needs_features

    def require_model(self, instead: str) -> None:
        """``RuntimeError`` where there is no model to read rows with (``instead``: the call
        that takes logits)."""
        if self.logit_function is None:
            raise RuntimeError(
                "This AdapTable was loaded without a model; pass model= to AdapTable.load, or "
                f"call {instead}."
            )

    def conform(self, X: Any, what: str) -> Any:
        """``X`` with the fit's columns in the fit's order (``what`` names it in a refusal)."""
        return X if self.columns is None else self.columns.conform(X, what)

    def rows_beside(self, X_batch: Any) -> Any:
        """The rows given beside logits, the fit's columns in order, for the parts that keep
        rows (the model updates, the per-column record); ``None`` where there are none or they
        cannot be put in order (a preset that reads no features takes any rows there)."""
        if X_batch is None:
            return None
        try:
            return self.conform(as_table(X_batch), "X_batch")
        except (TypeError, ValueError, KeyError, IndexError):
            return None

    def read(self, X_batch: Any, count: RowCount) -> tuple[np.ndarray, EncodedBatch | None, Any]:
        """A batch's checked logits (n, C), its encoded rows where a part reads features (else
        ``None``), and the rows as the model read them (the fit's columns in order).

        The rows are encoded before the model sees them: a wrong table fails with the
        Encoder's message rather than deep inside the model; a model sharing the Encoder
        reuses the encoding.

        Raises:
            RuntimeError: no model (loaded without one).
            ValueError: a batch ``count`` or :func:`refuse_sparse` refuses, a column of the
                fit missing, or logits of the wrong shape.
        """
        self.require_model("adapt_logits(logits, X_batch)")
        n_rows = count(X_batch)
        refuse_sparse(X_batch)
        X_batch = self.conform(X_batch, "X_batch")
        encoded = self.encoder.encode(X_batch) if self.needs_features else None
        if encoded is not None and self.encoded_logits is not None:
            logits = self.encoded_logits(encoded)
        else:
            logits = self.logit_function(X_batch)
        return checked_logits(logits, self.n_classes, n_rows), encoded, X_batch

    def model_logits(self, X: Any, n_rows: int) -> np.ndarray:
        """The model's checked logits (n, C) of ``n_rows`` rows already conformed (the
        Encoder encodes them only for a model sharing it)."""
        if self.encoded_logits is not None:
            logits = self.encoded_logits(self.encoder.encode(X))
        else:
            logits = self.logit_function(X)
        return checked_logits(logits, self.n_classes, n_rows)

    def beside(self, logits: np.ndarray, X_batch: Any, count: RowCount) -> EncodedBatch | None:
        """The encoded rows of ``X_batch`` that go with the caller's ``logits``, where a part
        reads features; else ``None`` (``X_batch`` is not read).

        Raises:
            ValueError: a part reads features and ``X_batch`` is ``None``, a batch ``count``
                or :func:`refuse_sparse` refuses, or ``X_batch`` has another number of rows
                than ``logits``.
        """
        X_batch = as_table(X_batch)  # one row alone, as a dict or a Series
        if not self.needs_features:
            return None
        if X_batch is None:
            raise ValueError(
                "adaptable: X_batch is needed next to the logits (by the shift-aware "
                "calibrator, or the default preset's label-shift test). Only "
                "AdapTable(preset='paper', calibrator='none' / 'platt' / 'isotonic') works "
                "on logits alone."
            )
        n_rows = count(X_batch)
        refuse_sparse(X_batch)
        if n_rows != len(logits):
            raise ValueError(f"X_batch has {n_rows} rows but the logits have {len(logits)}.")
        return self.encoder.encode(X_batch)


def refuse_sparse(X_batch: Any) -> None:
    """``ValueError`` for a scipy sparse matrix or array, which the Encoder does not read."""
    if is_sparse(X_batch):
        raise ValueError(
            "adaptable: X_batch is a scipy sparse matrix; pass its dense rows "
            "(X_batch.toarray()) or a DataFrame, as at fit."
        )


def is_sparse(rows: Any) -> bool:
    """A scipy sparse matrix or array (scipy is not imported to find out)."""
    return type(rows).__module__.startswith("scipy.sparse")

"""Turn any source classifier into a function ``X -> logits`` (docs/maintainer/ARCHITECTURE.md, "core").

AdapTable only needs logits, so it works with any model. Detection order:

1. a ``torch.nn.Module``: called on a tensor made from X (array or all-numeric frame) in the
   precision of its parameters (float32 where they mix), in eval mode and without gradients;
2. an object with ``predict_logits(X)`` (the package's own source models);
3. an object with ``predict_proba(X)``: raw margins where the library exposes them (XGBoost,
   LightGBM, CatBoost), otherwise log-probabilities (softmax of log p gives p back);
4. a plain callable: say what it returns with ``output="logits"`` or ``output="proba"``.

The model always receives X exactly as the caller passed it. Column j of the logits is the
model's column j; :class:`~adaptable.framework.method.TestTimeMethod` checks that a model naming
its classes (``classes_``) names the labels' classes in that order.

Example:
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]]); y = np.array([0, 0, 1, 1])
    >>> logits = as_logit_function(LogisticRegression().fit(X, y))(X)
    >>> logits.shape
    (4, 2)
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from adaptable.optional import loaded

if TYPE_CHECKING:
    import torch

#: what a model gives, for ``output=``: detect, logits, or probabilities
OUTPUTS = ("auto", "logits", "proba")

#: how a :class:`LogitFunction` reads its model
READERS = (
    "torch",
    "torch_proba",
    "predict_logits",
    "xgboost_margin",
    "lightgbm_margin",
    "catboost_margin",
    "predict_proba",
    "callable_logits",
    "callable_proba",
)


class LogitFunction:
    """``X -> logits``: a model and how to read it, checked on every call; picklable where the
    model is (a fitted method holding one can be pickled and shipped to a worker).

    Args:
        model: the source model.
        reader: one of :data:`READERS` (:func:`as_logit_function` chooses it).
        source: what the model is, for messages.

    Raises (on call):
        ValueError: the model gave no (n, C) array with C >= 2, or non-finite values.
    """

    def __init__(self, model: Any, reader: str, source: str) -> None:
        if reader not in READERS:
            raise ValueError(f"reader must be one of {READERS}; got {reader!r}.")
        self.model = model
        self.reader = reader
        self.source = source

    def __call__(self, X: Any) -> np.ndarray:
        out = self._read(X)
        if out.ndim != 2 or out.shape[1] < 2:
            raise ValueError(
                f"The model ({self.source}) must give an (n, C) array with C >= 2; got shape "
                f"{out.shape}."
            )
        if not np.all(np.isfinite(out)):
            raise ValueError(
                f"The model ({self.source}) returned non-finite logits (NaN or inf); check the "
                "batch for missing or infinite values the model cannot handle."
            )
        return out

    def _read(self, X: Any) -> np.ndarray:
        model, reader = self.model, self.reader
        if reader == "torch":
            return _torch_call(model, X)
        if reader == "torch_proba":
            return _log(_torch_call(model, X), self.source)
        if reader == "predict_logits":
            return _to_numpy(model.predict_logits(X))
        if reader == "xgboost_margin":
            return _binary_margin(_to_numpy(model.predict(X, output_margin=True)))
        if reader == "lightgbm_margin":
            return _binary_margin(_to_numpy(model.predict(X, raw_score=True)))
        if reader == "catboost_margin":
            return _binary_margin(_to_numpy(model.predict(X, prediction_type="RawFormulaVal")))
        if reader == "predict_proba":
            return _log(_to_numpy(model.predict_proba(X)), self.source)
        if reader == "callable_logits":
            return _to_numpy(model(X))
        return _log(_to_numpy(model(X)), self.source)

    def __repr__(self) -> str:
        return f"LogitFunction({type(self.model).__name__}, reader={self.reader!r})"


def as_logit_function(model: Any, output: str = "auto") -> LogitFunction:
    """Wrap ``model`` as ``X -> logits``, a float64 array of shape (n, C).

    Args:
        model: a torch module, an object with ``predict_logits`` or ``predict_proba``, or a
            callable.
        output: ``"auto"`` (detect), ``"logits"`` or ``"proba"``; required for plain callables.
            For objects, ``"proba"`` forces log-probabilities from ``predict_proba``.

    Returns:
        a :class:`LogitFunction`.

    Raises:
        TypeError: the model is none of the supported kinds.
        ValueError: ``output`` is unknown, or a plain callable came with ``output="auto"``.
    """
    if output not in OUTPUTS:
        raise ValueError(f"output must be one of {OUTPUTS}; got {output!r}.")
    if _is_torch(model, "nn.Module"):
        reader = "torch_proba" if output == "proba" else "torch"
        return LogitFunction(model, reader, "torch module")
    if output != "proba" and callable(getattr(model, "predict_logits", None)):
        return LogitFunction(model, "predict_logits", "predict_logits")
    if callable(getattr(model, "predict_proba", None)):
        margin = None if output == "proba" else _margin_reader(model)
        if margin is not None:
            return LogitFunction(model, margin, f"{type(model).__name__} raw margin")
        return LogitFunction(model, "predict_proba", "predict_proba")
    if callable(model):
        if output == "auto":
            raise ValueError(
                "A plain callable needs output='logits' or output='proba' to say what it returns."
            )
        return LogitFunction(model, f"callable_{output}", "callable")
    raise TypeError(
        "model must be a torch.nn.Module, an object with predict_logits or predict_proba, or a "
        f"callable; got {type(model).__name__}."
    )


def _is_torch(value: Any, kind: str) -> bool:
    """Whether ``value`` is a ``torch.<kind>`` (``"Tensor"``, ``"nn.Module"``), without importing
    torch: an object can only be one where torch is imported already, and the callers without
    torch (any other model) should not pay its import."""
    torch = loaded("torch")
    if torch is None:
        return False
    cls: Any = torch
    for part in kind.split("."):
        cls = getattr(cls, part)
    return isinstance(value, cls)


def _torch_call(module: torch.nn.Module, X: Any) -> np.ndarray:
    """Eval mode for the forward pass (the source model is frozen), then the caller's mode back."""
    import torch  # loaded: the caller holds a torch module

    was_training = module.training
    # the rows go where the weights are, in their precision where they all share one (a
    # .double() or bfloat16 module); float32 for a module of mixed precisions
    floating = [p for p in module.parameters() if p.is_floating_point()]
    device = floating[0].device if floating else torch.device("cpu")
    dtypes = {p.dtype for p in floating}
    dtype = dtypes.pop() if len(dtypes) == 1 else torch.float32
    tensor = _as_float_tensor(X, torch.float64 if dtype == torch.float64 else torch.float32)
    module.eval()
    try:
        with torch.inference_mode():
            out = module(tensor.to(device, dtype))
    finally:
        module.train(was_training)
    if isinstance(out, tuple | list):
        out = out[0]
    if not isinstance(out, torch.Tensor):
        raise TypeError(
            f"The torch module returned a {type(out).__name__}; AdapTable needs its logits as "
            "a tensor (n, C) (or a tuple whose first item is one): wrap the module so that "
            "forward returns them."
        )
    return out.detach().to("cpu", torch.float64).numpy()


def _as_float_tensor(X: Any, dtype: torch.dtype) -> torch.Tensor:
    """``X`` as a tensor of ``dtype`` (float32 or float64), made without a float32 detour."""
    import torch  # loaded: only a torch module's rows become a tensor

    if isinstance(X, torch.Tensor):
        return X.to(dtype)
    numpy_dtype = np.float64 if dtype == torch.float64 else np.float32
    try:
        array = (
            X.to_numpy(dtype=numpy_dtype) if hasattr(X, "to_numpy") else np.asarray(X, numpy_dtype)
        )
    except (TypeError, ValueError) as err:
        raise TypeError(
            "A torch module is called on a float tensor made from X, but X could not be "
            f"converted ({err}). Encode categorical columns first, or pass an object with "
            "predict_logits / predict_proba that does its own preprocessing."
        ) from err
    return torch.from_numpy(np.ascontiguousarray(array))


def _margin_reader(model: Any) -> str | None:
    """The reader of the library's raw score where one exists (boosters), else None."""
    module = type(model).__module__.split(".")[0]
    if module == "xgboost" and hasattr(model, "get_booster"):
        return "xgboost_margin"
    if module in ("lightgbm", "catboost"):
        return f"{module}_margin"
    return None


def _binary_margin(margin: np.ndarray) -> np.ndarray:
    """Boosters give one margin per row for binary tasks: logits (0, m) have the same softmax."""
    if margin.ndim == 1:
        return np.stack([np.zeros_like(margin), margin], axis=1)
    return margin


def _to_numpy(values: Any) -> np.ndarray:
    if _is_torch(values, "Tensor"):
        return values.detach().cpu().double().numpy()
    return np.asarray(values, dtype=np.float64)


#: how far a row of probabilities may sum from one (float32 softmax rounding stays far below)
PROBABILITY_SUM_TOLERANCE = 1e-4


def _log(proba: np.ndarray, source: str) -> np.ndarray:
    """Log-probabilities of a table of probabilities; refuses one that is not, rather than
    clipping it into some.

    Raises:
        ValueError: a negative value, or a row that does not sum to one (within
            :data:`PROBABILITY_SUM_TOLERANCE`).
    """
    # Another shape, or NaN / inf: LogitFunction.__call__ says what is wrong with those.
    checkable = proba.ndim == 2 and proba.shape[0] > 0 and proba.shape[1] >= 2
    if checkable and np.all(np.isfinite(proba)):
        if np.any(proba < 0):
            raise ValueError(
                f"The model ({source}) returned negative probabilities (smallest "
                f"{proba.min():.3g}); it must give probabilities (rows of non-negative numbers "
                "summing to one), or use output='logits' for scores."
            )
        sums = proba.sum(axis=1)
        off = np.abs(sums - 1.0) > PROBABILITY_SUM_TOLERANCE
        if np.any(off):
            raise ValueError(
                f"The model ({source}) returned probability rows that do not sum to one "
                f"({int(off.sum())} of {len(sums)} rows; sums from {sums.min():.4g} to "
                f"{sums.max():.4g}); it must give probabilities, or use output='logits' for "
                "scores."
            )
    # Only zeros are clipped (valid probabilities): a large negative logit instead of -inf.
    return np.log(np.clip(proba, 1e-12, None))


def rows_checked(scores: Any, n_rows: int, what: str) -> Any:
    """``scores`` where the model returned ``n_rows`` rows of them, one per row it was handed
    (``what`` names those rows in the message); else a ValueError."""
    if len(scores) != n_rows:
        raise ValueError(
            f"adaptable: the model returned {len(scores)} rows of scores for {what}; it must "
            "return one row per input row."
        )
    return scores


def checked_logits(
    logits: np.ndarray | torch.Tensor, n_classes: int, n_rows: int | None = None
) -> np.ndarray:
    """``logits`` as float64 (n, C), n >= 1, all finite, and n == ``n_rows`` where given (the
    rows the model was handed); or a ValueError saying what is wrong."""
    if _is_torch(logits, "Tensor"):
        logits = logits.detach().cpu().numpy()
    logits = np.asarray(logits, dtype=np.float64)
    if logits.ndim != 2 or logits.shape[1] != n_classes:
        raise ValueError(f"Expected logits of shape (n, {n_classes}); got {logits.shape}.")
    if n_rows is not None:
        rows_checked(logits, n_rows, f"{n_rows} rows of input")
    if len(logits) == 0:
        raise ValueError("adaptable: Empty batch: the logits have no rows.")
    # NaN propagates into both extremes, +inf shows in the max, -inf in the min: two
    # reductions without the boolean array of a value-by-value test.
    if not (math.isfinite(logits.max()) and math.isfinite(logits.min())):
        raise ValueError("The logits hold NaN or inf values.")
    return logits

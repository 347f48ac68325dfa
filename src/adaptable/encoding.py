"""The one preprocessing step shared by the method and the deep models.

Numerical columns: NaN -> 0, then standardised. Categorical columns: one-hot, with categories
never seen at fit time encoded as an all-zero block. Fitted on train + valid in the experiments,
as the authors do. The encoder is plain data (JSON-serialisable), so saved adapters never pickle.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd


def kinds_by_dtype(frame: pd.DataFrame) -> tuple[list[str], list[str]]:
    """The authors' rule: object / bool / category / string columns are categorical."""
    categorical = [
        c
        for c in frame.columns
        if frame[c].dtype == object
        or isinstance(frame[c].dtype, pd.CategoricalDtype)
        or pd.api.types.is_bool_dtype(frame[c])
        or pd.api.types.is_string_dtype(frame[c])
    ]
    numerical = [c for c in frame.columns if c not in categorical]
    return numerical, categorical


@dataclass(frozen=True)
class FeatureBlock:
    """One original feature and the encoded columns ``[start, stop)`` it maps to."""

    name: str
    kind: str  # "numerical" or "categorical"
    start: int
    stop: int
    categories: tuple[str, ...] = ()

    @property
    def width(self) -> int:
        return self.stop - self.start


class Encoder:
    """Fitted preprocessing: a float32 matrix plus a schema of feature -> encoded columns.

    Args:
        numerical: numerical column names; ``None`` infers kinds from dtypes (object, bool,
            category and string columns are categorical, everything else numerical).
        categorical: categorical column names; ``None`` infers as above.

    Layout of the output: all numerical columns (table order) first, then one one-hot block per
    categorical column (table order). Arrays without column names are treated as all-numerical.

    Example:
        >>> import pandas as pd
        >>> X = pd.DataFrame({"age": [30.0, 50.0], "job": ["a", "b"]})
        >>> enc = Encoder().fit(X)
        >>> enc.transform(X).shape
        (2, 3)
    """

    def __init__(
        self,
        numerical: Sequence[str] | None = None,
        categorical: Sequence[str] | None = None,
    ) -> None:
        self.numerical = None if numerical is None else list(numerical)
        self.categorical = None if categorical is None else list(categorical)
        self._fitted = False

    # ------------------------------------------------------------------ fitting
    def fit(self, X: pd.DataFrame | np.ndarray, y: object = None) -> Encoder:
        """Learn means, scales and category lists from ``X``."""
        frame = _as_frame(X)
        if len(frame) == 0:
            raise ValueError("Encoder.fit needs at least one row; got an empty table.")
        if self.numerical is None or self.categorical is None:
            inferred_num, inferred_cat = kinds_by_dtype(frame)
            numerical = self.numerical if self.numerical is not None else inferred_num
            categorical = self.categorical if self.categorical is not None else inferred_cat
            if self.numerical is None and self.categorical is not None:
                numerical = [c for c in frame.columns if c not in categorical]
            if self.categorical is None and self.numerical is not None:
                categorical = [c for c in frame.columns if c not in numerical]
        else:
            numerical, categorical = self.numerical, self.categorical
        overlap = set(numerical) & set(categorical)
        if overlap:
            raise ValueError(f"Columns declared both numerical and categorical: {sorted(overlap)}")
        _require(frame, [*numerical, *categorical], "fit")
        # Keep table order within each kind so the layout follows the data.
        order = {c: i for i, c in enumerate(frame.columns)}
        self.numerical_ = sorted(numerical, key=order.__getitem__)
        self.categorical_ = sorted(categorical, key=order.__getitem__)
        self.columns_is_positional_ = not isinstance(X, pd.DataFrame)

        num = _numeric_block(frame, self.numerical_)
        self.mean_ = num.mean(axis=0) if num.shape[1] else np.zeros(0)
        scale = num.std(axis=0) if num.shape[1] else np.zeros(0)
        # StandardScaler's convention: a constant column keeps scale 1 instead of dividing by 0.
        self.scale_ = np.where(scale > 0, scale, 1.0)
        self.categories_ = [
            tuple(sorted(set(_category_strings(frame[c])))) for c in self.categorical_
        ]
        blocks: list[FeatureBlock] = []
        for i, name in enumerate(self.numerical_):
            blocks.append(FeatureBlock(str(name), "numerical", i, i + 1))
        start = len(self.numerical_)
        for name, cats in zip(self.categorical_, self.categories_, strict=True):
            blocks.append(FeatureBlock(str(name), "categorical", start, start + len(cats), cats))
            start += len(cats)
        self.schema_ = blocks
        self.n_features_out_ = start
        self._lookup = [{c: j for j, c in enumerate(cats)} for cats in self.categories_]
        self._fitted = True
        return self

    # ------------------------------------------------------------------ transforming
    def transform(self, X: pd.DataFrame | np.ndarray) -> np.ndarray:
        """Encode ``X`` as a float32 matrix of width ``n_features_out_``."""
        self._check_fitted()
        frame = _as_frame(
            X, positional_width=self.n_features_in_ if self.columns_is_positional_ else None
        )
        _require(frame, self.feature_names_in_, "transform")
        out = np.zeros((len(frame), self.n_features_out_), dtype=np.float32)
        if self.numerical_:
            num = _numeric_block(frame, self.numerical_)
            out[:, : len(self.numerical_)] = (num - self.mean_) / self.scale_
        codes = self._codes(frame)
        if codes.shape[1]:
            starts = np.array([b.start for b in self.categorical_blocks], dtype=np.int64)
            rows, features = np.nonzero(codes >= 0)
            out[rows, starts[features] + codes[rows, features]] = 1.0
        return out

    def fit_transform(self, X: pd.DataFrame | np.ndarray, y: object = None) -> np.ndarray:
        return self.fit(X).transform(X)

    def category_codes(self, X: pd.DataFrame | np.ndarray) -> np.ndarray:
        """Per-categorical-feature integer codes (``-1`` for categories unseen at fit time)."""
        self._check_fitted()
        frame = _as_frame(
            X, positional_width=self.n_features_in_ if self.columns_is_positional_ else None
        )
        _require(frame, self.categorical_, "category_codes")
        return self._codes(frame)

    def _codes(self, frame: pd.DataFrame) -> np.ndarray:
        # One object-array extraction and plain dict lookups: per-column pandas ``map`` calls
        # cost ~0.5 ms each, which dominated adaptation time on 64-row batches.
        n = len(frame)
        codes = np.full((n, len(self.categorical_)), -1, dtype=np.int64)
        if not self.categorical_ or n == 0:
            return codes
        values = frame[self.categorical_].to_numpy(dtype=object)
        for j, lookup in enumerate(self._lookup):
            column = values[:, j]
            codes[:, j] = np.fromiter(
                (lookup.get(v if type(v) is str else _category_string(v), -1) for v in column),
                dtype=np.int64,
                count=n,
            )
        return codes

    # ------------------------------------------------------------------ schema views
    @property
    def schema(self) -> list[FeatureBlock]:
        """One block per original feature, numerical ones first."""
        self._check_fitted()
        return list(self.schema_)

    @property
    def numerical_blocks(self) -> list[FeatureBlock]:
        return [b for b in self.schema if b.kind == "numerical"]

    @property
    def categorical_blocks(self) -> list[FeatureBlock]:
        return [b for b in self.schema if b.kind == "categorical"]

    @property
    def feature_names_in_(self) -> list[str]:
        self._check_fitted()
        return [*self.numerical_, *self.categorical_]

    @property
    def n_features_in_(self) -> int:
        return len(self.feature_names_in_)

    @property
    def cardinalities(self) -> list[int]:
        """Number of known categories of each categorical feature."""
        return [len(c) for c in self.categories_]

    # ------------------------------------------------------------------ serialisation
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-compatible state."""
        self._check_fitted()
        return {
            "numerical": [_jsonable(c) for c in self.numerical_],
            "categorical": [_jsonable(c) for c in self.categorical_],
            "mean": self.mean_.tolist(),
            "scale": self.scale_.tolist(),
            "categories": [list(c) for c in self.categories_],
            "positional": self.columns_is_positional_,
            "schema": [asdict(b) for b in self.schema_],
        }

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> Encoder:
        """Rebuild a fitted encoder from :meth:`to_dict` output."""
        enc = cls(state["numerical"], state["categorical"])
        enc.numerical_ = list(state["numerical"])
        enc.categorical_ = list(state["categorical"])
        enc.mean_ = np.asarray(state["mean"], dtype=np.float64)
        enc.scale_ = np.asarray(state["scale"], dtype=np.float64)
        enc.categories_ = [tuple(c) for c in state["categories"]]
        enc.columns_is_positional_ = bool(state["positional"])
        enc.schema_ = [
            FeatureBlock(b["name"], b["kind"], b["start"], b["stop"], tuple(b["categories"]))
            for b in state["schema"]
        ]
        enc.n_features_out_ = enc.schema_[-1].stop if enc.schema_ else 0
        enc._lookup = [{c: j for j, c in enumerate(cats)} for cats in enc.categories_]
        enc._fitted = True
        return enc

    def _check_fitted(self) -> None:
        if not self._fitted:
            raise RuntimeError("This Encoder is not fitted yet; call fit(X) first.")

    def __repr__(self) -> str:
        if not self._fitted:
            return "Encoder(unfitted)"
        return (
            f"Encoder(numerical={len(self.numerical_)}, categorical={len(self.categorical_)}, "
            f"width={self.n_features_out_})"
        )


def _as_frame(X: pd.DataFrame | np.ndarray, positional_width: int | None = None) -> pd.DataFrame:
    if isinstance(X, pd.DataFrame):
        return X
    array = np.asarray(X)
    if array.ndim != 2:
        raise ValueError(
            f"Expected a 2-D table (rows x features); got an array of shape {array.shape}."
        )
    if positional_width is not None and array.shape[1] != positional_width:
        raise ValueError(
            f"Expected {positional_width} columns, as at fit time; got {array.shape[1]}."
        )
    return pd.DataFrame(array)


def _require(frame: pd.DataFrame, columns: Sequence[object], where: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(
            f"Encoder.{where}: {len(missing)} column(s) missing from the input: "
            f"{', '.join(map(str, missing[:10]))}{' ...' if len(missing) > 10 else ''}."
        )


def _numeric_block(frame: pd.DataFrame, columns: Sequence[object]) -> np.ndarray:
    if not columns:
        return np.zeros((len(frame), 0))
    try:
        values = frame[list(columns)].to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError) as err:
        raise ValueError(f"Numerical columns must hold numbers: {err}") from err
    if np.isinf(values).any():
        bad = [columns[j] for j in np.flatnonzero(np.isinf(values).any(axis=0))]
        raise ValueError(f"Numerical column(s) hold infinite values: {', '.join(map(str, bad))}.")
    # The authors fill numerical NaN with 0 before scaling (method.md, section 3).
    return np.nan_to_num(values, nan=0.0)


def _category_strings(values: pd.Series) -> pd.Series:
    """Category values compared as strings, NaN as ``"nan"``, as the loaders produce them."""
    if values.dtype == object and values.map(type).eq(str).all():
        return values
    return values.map(lambda v: "nan" if _missing(v) else str(v))


def _category_string(v: object) -> str:
    return "nan" if _missing(v) else str(v)


def _missing(v: object) -> bool:
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def _jsonable(name: object) -> object:
    if isinstance(name, np.integer):
        return int(name)
    return name

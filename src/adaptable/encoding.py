"""The one preprocessing step shared by the method and the deep models.

Numerical columns: NaN -> 0, then standardised. Categorical columns: one-hot, with categories
never seen at fit time encoded as an all-zero block. Fitted on train + valid in the experiments,
as the authors do. The encoder is plain data (JSON-serialisable), so saved adapters never pickle.

A batch can be encoded once into its standardised numbers and integer category codes
(:meth:`Encoder.encode` -> :class:`EncodedBatch`); the dense one-hot matrix is built from the
codes only when a model needs it (:meth:`Encoder.transform_from`), so that a caller that needs
both (AdapTable's calibrator and the model) pays for the table lookups once.

How category values are matched (the same rule at fit and at transform):

- At fit, every value becomes a string: strings stay as they are, a missing value (None, NaN,
  NaT, ``pd.NA``) becomes ``"nan"``, anything else becomes ``str(value)``. The dataset loaders
  store categorical columns this way already (numbers narrowed to float32 first, so an integer
  code 6 is stored as ``"6.0"``).
- At transform, a string matches the fitted category equal to it, and a missing value matches
  ``"nan"``. A number (int, float or their numpy types; not bool) matches ``str(value)`` when
  that is a fitted category, else the fitted category that reads as the same number
  (``float(category) == value``, or equal once both are rounded to float32, the loaders'
  precision). So 6, 6.0 and ``np.int64(6)`` all match a category stored as ``"6.0"`` or
  ``"6"``. Strings are never read as numbers (``"06"`` and ``"6"`` stay different labels).
- Dates and times (a ``datetime64`` column, or ``Timestamp`` / ``datetime`` / ``date`` values
  in an object column) are neither: :meth:`Encoder.fit` refuses every column it would read that
  holds one, and a batch refuses a ``datetime64`` column where the fit had numbers, naming the
  columns (a date read as nanoseconds since 1970, or as one category per day, would say nothing
  a later batch could match). Convert them first, or declare both kinds without them.
- Anything else is unseen: code -1, an all-zero one-hot block. When more than half of a
  categorical column's values in a batch are unseen, :class:`UnseenCategoryWarning` says so: for numbers
  that is almost always a type or format mismatch; for text it may also be a real shift (a
  target domain with categories the source never had); a missing value in a column that had
  none at fit time is reported as such.

The warning is shown once per Encoder and cause (the column it names and the kind of value:
text, missing, or a type) under the filters that show a warning once (Python's default),
because libraries that enter ``warnings.catch_warnings()`` on every call (pandas,
scikit-learn) reset Python's own once-per-location memory. Inside a ``catch_warnings()`` block
of the caller's (pytest's ``recwarn``, a loop that records warnings) the memory starts afresh,
as Python's does there. Filters that show every warning (``"always"``) or turn it into an error
still see every batch's. The memory is not part of the
Encoder's state: :meth:`Encoder.to_dict` leaves it out, and a copy or a pickled and reloaded
Encoder starts with none (it may warn once more).
"""

from __future__ import annotations

import datetime
import numbers
import sys
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from adaptable.values import python_value

#: a batch warns when more than this share of a categorical column's values were never seen at
#: fit time
UNSEEN_WARNING_SHARE = 0.5
#: batches with fewer rows are described by counts ("1 of the 1 categorical value in this batch
#: of 1 row"), not as "more than 50% of this batch": a share of one or two rows says little.
UNSEEN_WARNING_MIN_ROWS = 20
# Warning filter actions that show a warning once (per location, module or process): under
# these the Encoder's own memory of the causes it warned about stands in for Python's.
_ONCE_ACTIONS = frozenset({"default", "module", "once"})
# Batches with at most this many cells are read with one whole-frame conversion to an object
# array, faster on small batches than one column selection per kind
# (docs/research/design_notes.md#encoding); larger ones select their columns first, which
# avoids boxing every numeric cell into a Python object.
_SMALL_BATCH_CELLS = 65_536


class UnseenCategoryWarning(UserWarning):
    """Most of a categorical column's values in a batch were never seen when the Encoder was
    fitted."""


@dataclass(frozen=True)
class EncodedBatch:
    """A batch encoded once: standardised numbers and category codes.

    Attributes:
        numeric: numerical columns standardised (NaN -> 0 before scaling), float32
            ``(n, D_num)``, in the encoder's ``numerical_`` order.
        codes: per categorical feature, the index of the row's category in that feature's
            ``categories_`` (``-1`` for one unseen at fit time), int64 ``(n, D_cat)``.
    """

    numeric: np.ndarray
    codes: np.ndarray

    def __len__(self) -> int:
        return len(self.numeric)


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
        categorical: categorical column names; ``None`` infers as above. Where only one of
            the two is given, its columns take that kind and every other column the kind
            its dtype says.

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
        declared = [*(self.numerical or []), *(self.categorical or [])]
        _require_unique(frame, declared if self._declared() else frame.columns, "fit")
        if self.numerical is None or self.categorical is None:
            inferred_num, inferred_cat = kinds_by_dtype(frame)
            numerical = self.numerical if self.numerical is not None else inferred_num
            categorical = self.categorical if self.categorical is not None else inferred_cat
            # one kind declared: its columns take it, every other column the kind its dtype
            # says (declaring some columns says nothing of the others)
            if self.numerical is not None:
                declared = set(numerical)
                numerical = [*numerical, *(c for c in inferred_num if c not in declared)]
                categorical = [c for c in inferred_cat if c not in declared]
            if self.categorical is not None:
                declared = set(categorical)
                categorical = [*categorical, *(c for c in inferred_cat if c not in declared)]
                numerical = [c for c in inferred_num if c not in declared]
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
        _refuse_dates(frame, [*self.numerical_, *self.categorical_])

        num = _numeric_block(frame, self.numerical_)
        self.mean_ = num.mean(axis=0) if num.shape[1] else np.zeros(0)
        scale = num.std(axis=0) if num.shape[1] else np.zeros(0)
        # StandardScaler's convention: a constant column keeps scale 1 instead of dividing by 0.
        self.scale_ = np.where(scale > 0, scale, 1.0)
        self.categories_ = [
            tuple(sorted(pd.unique(_category_strings(frame[c]).to_numpy(dtype=object))))
            for c in self.categorical_
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
        self._prepare()
        return self

    def _declared(self) -> bool:
        """Both kinds given: only those columns are read, other columns may be anything."""
        return self.numerical is not None and self.categorical is not None

    def _prepare(self) -> None:
        """Lookup structures derived from the fitted state (rebuilt by :meth:`from_dict`)."""
        # One vocabulary over every feature's categories, and a table (feature, word) -> code:
        # a batch's categorical cells are coded with one hash lookup for all of them.
        words = sorted(set().union(*self.categories_)) if self.categories_ else []
        self._vocabulary = pd.Index(words, dtype=object)
        self._word_of = {word: i for i, word in enumerate(words)}
        self._feature_index = np.arange(len(self.categories_))
        # Two extra columns: a word not in the vocabulary (-1), and a missing value (the code
        # of the feature's "nan" category, -1 when it has none).
        self._lookup = [{c: j for j, c in enumerate(cats)} for cats in self.categories_]
        self._code_table = np.full((len(self.categories_), len(words) + 2), -1, dtype=np.int64)
        for j, cats in enumerate(self.categories_):
            self._code_table[j, self._vocabulary.get_indexer(list(cats))] = np.arange(len(cats))
            self._code_table[j, -1] = self._lookup[j].get("nan", -1)
        self._by_number: list[tuple[dict[float, int], dict[float, int]] | None] = [
            None for _ in self.categories_
        ]
        starts = [b.start for b in self.schema_ if b.kind == "categorical"]
        self._block_starts = np.asarray(starts, dtype=np.int64) - len(self.numerical_)
        self._positions: tuple[pd.Index, np.ndarray, np.ndarray] | None = None
        # (categorical feature, kind of value) of each UnseenCategoryWarning shown: a new fit
        # starts afresh, its categories being new
        self._warned_causes: set[tuple[int, str]] = set()
        #: the warning filter list those causes were shown under
        self._warned_under: list[Any] | None = None
        self._fitted = True

    # ------------------------------------------------------------------ transforming
    def transform(self, X: pd.DataFrame | np.ndarray) -> np.ndarray:
        """Encode ``X`` as a float32 matrix of width ``n_features_out_``.

        The same as ``transform_from(encode(X))``.
        """
        return self.transform_from(self._encode(X))

    def fit_transform(self, X: pd.DataFrame | np.ndarray, y: object = None) -> np.ndarray:
        return self.fit(X).transform(X)

    def encode(self, X: pd.DataFrame | np.ndarray) -> EncodedBatch:
        """Standardised numerical columns and category codes of ``X``, computed once.

        Example:
            >>> import pandas as pd
            >>> enc = Encoder().fit(pd.DataFrame({"age": [30.0, 50.0], "job": ["a", "b"]}))
            >>> batch = enc.encode(pd.DataFrame({"age": [40.0], "job": ["b"]}))
            >>> batch.numeric.tolist(), batch.codes.tolist()
            ([[0.0]], [[1]])
        """
        return self._encode(X)

    def _encode(self, X: pd.DataFrame | np.ndarray) -> EncodedBatch:
        # Called only by the public methods, so that a warning's stack level is the caller's.
        self._check_fitted()
        frame = self._frame(X)
        numeric_pos, category_pos = self._column_positions(frame, "transform")
        num, category_values = _from_blocks(frame, numeric_pos, category_pos)
        values = None
        if num is None or category_values is None:
            values = _small_frame_values(frame)
        if num is None and values is not None and numeric_pos.size:
            num = _numbers_or_none(values[:, numeric_pos])
        if num is None:
            num = _numeric_block(frame, self.numerical_)
        numeric = _standardised(num, self.mean_, self.scale_, self.numerical_)
        if category_values is None:
            if values is not None:
                category_values = values[:, category_pos]
            else:
                category_values = _object_block(frame, self.categorical_)
        return EncodedBatch(numeric, self._codes(category_values, stacklevel=5))

    def transform_from(self, encoded: EncodedBatch) -> np.ndarray:
        """The float32 matrix of :meth:`transform` from an :class:`EncodedBatch`."""
        self._check_fitted()
        numeric = np.asarray(encoded.numeric)
        if numeric.ndim != 2 or numeric.shape[1] != len(self.numerical_):
            raise ValueError(
                f"EncodedBatch.numeric must have shape (n, {len(self.numerical_)}); "
                f"got {numeric.shape}"
            )
        out = np.zeros((len(numeric), self.n_features_out_), dtype=np.float32)
        out[:, : len(self.numerical_)] = numeric
        self._scatter_onehot(encoded.codes, out, offset=len(self.numerical_))
        return out

    def onehot(self, codes: np.ndarray) -> np.ndarray:
        """The one-hot blocks of category ``codes`` (``-1``: all-zero block), float32
        ``(n, n_features_out_ - D_num)``: the columns of :meth:`transform` after the numbers."""
        self._check_fitted()
        codes = np.asarray(codes)
        out = np.zeros((len(codes), self.n_features_out_ - len(self.numerical_)), np.float32)
        self._scatter_onehot(codes, out, offset=0)
        return out

    def _scatter_onehot(self, codes: np.ndarray, out: np.ndarray, offset: int) -> None:
        codes = np.asarray(codes)
        if codes.ndim != 2 or codes.shape != (len(out), len(self.categorical_)):
            raise ValueError(
                f"category codes must have shape ({len(out)}, {len(self.categorical_)}); "
                f"got {codes.shape}"
            )
        if not codes.shape[1]:
            return
        if (codes >= np.asarray(self.cardinalities)).any() or (codes < -1).any():
            raise ValueError("category codes must lie in [-1, cardinality) for every feature")
        rows, features = np.nonzero(codes >= 0)
        out[rows, offset + self._block_starts[features] + codes[rows, features]] = 1.0

    def category_codes(self, X: pd.DataFrame | np.ndarray) -> np.ndarray:
        """Per-categorical-feature integer codes (``-1`` for categories unseen at fit time)."""
        self._check_fitted()
        frame = self._frame(X)
        self._require_columns(frame, self.categorical_, "category_codes")
        values = _small_frame_values(frame)
        if values is not None and all(c in frame.columns for c in self.numerical_):
            values = values[:, self._column_positions(frame, "category_codes")[1]]
        else:
            values = _object_block(frame, self.categorical_)
        return self._codes(values, stacklevel=4)

    def _frame(self, X: pd.DataFrame | np.ndarray) -> pd.DataFrame:
        frame = _as_frame(
            X, positional_width=self.n_features_in_ if self.columns_is_positional_ else None
        )
        if not self.columns_is_positional_ and not isinstance(X, pd.DataFrame):
            # An array has no column names: say what was expected, not which names are absent.
            if any(c not in frame.columns for c in self.feature_names_in_):
                names = ", ".join(map(repr, self.feature_names_in_[:10]))
                more = " ..." if len(self.feature_names_in_) > 10 else ""
                raise ValueError(
                    f"Fitted on a DataFrame, so a pandas DataFrame with the columns "
                    f"({names}{more}) is expected; got {type(X).__name__} of shape "
                    f"{tuple(frame.shape)}, which has no column names."
                )
        return frame

    def _require_columns(self, frame: pd.DataFrame, columns: Sequence[object], where: str) -> None:
        """Refuse a ``frame`` without ``columns`` (or with them repeated). An encoder fitted on
        an array reads columns by position (named 0, 1, ...): a DataFrame with other names is
        told so rather than that columns 0, 1, ... are missing."""
        if self.columns_is_positional_ and any(c not in frame.columns for c in columns):
            width = self.n_features_in_
            names = ", ".join(map(repr, frame.columns[:10])) + (
                " ..." if len(frame.columns) > 10 else ""
            )
            raise ValueError(
                f"Fitted on an array, so an array of {width} columns, read by position, is "
                f"expected; got DataFrame of shape {tuple(frame.shape)} with the columns "
                f"({names}), which are not the positions 0 .. {width - 1}. Pass its values "
                "(X.to_numpy()) in the fitted column order, or fit on a DataFrame to read "
                "columns by name."
            )
        _require(frame, columns, where)

    def _column_positions(self, frame: pd.DataFrame, where: str) -> tuple[np.ndarray, np.ndarray]:
        """Positions of the numerical and categorical columns in ``frame``.

        Batches cut from one table have the same columns, so the positions for the last column
        index seen are kept and its checks are not repeated.
        """
        cached = self._positions
        if cached is not None and (cached[0] is frame.columns or cached[0].equals(frame.columns)):
            return cached[1], cached[2]
        self._require_columns(frame, self.feature_names_in_, where)
        columns = frame.columns
        if columns.is_unique:
            numeric = np.asarray(columns.get_indexer(self.numerical_), dtype=np.intp)
            category = np.asarray(columns.get_indexer(self.categorical_), dtype=np.intp)
        else:  # repeated names among columns the encoder does not read (_require checked)
            numeric = np.array([columns.get_loc(c) for c in self.numerical_], dtype=np.intp)
            category = np.array([columns.get_loc(c) for c in self.categorical_], dtype=np.intp)
        self._positions = (columns, numeric, category)
        return numeric, category

    def _codes(self, values: np.ndarray, stacklevel: int) -> np.ndarray:
        """Codes of an object array ``(n, D_cat)`` of raw category values; ``stacklevel`` of
        the unseen-category warning counts from ``_warn_if_mostly_unseen``."""
        n, width = values.shape
        if not width or n == 0:
            return np.full((n, width), -1, dtype=np.int64)
        # Hash every cell once (factorize), look the few distinct values up in the vocabulary,
        # then read each cell's code from the (feature, word) table.
        cells = values.ravel()
        try:
            found, uniques = pd.factorize(cells)  # missing values (None, NaN, NaT, NA) -> -1
        except TypeError:  # an unhashable cell (a list, say): every cell by the rule
            found = np.arange(len(cells))
            uniques = np.full(len(cells), None, dtype=object)
        # the few distinct values looked up one by one (a dict: no index built per batch)
        unknown, missing = len(self._vocabulary), len(self._vocabulary) + 1
        word_of = self._word_of
        listed = uniques.tolist()
        words = np.array(
            [word_of.get(u, unknown) if type(u) is str else unknown for u in listed] + [missing],
            dtype=np.intp,
        )  # index -1: the missing values
        codes = self._code_table[self._feature_index[:width], words[found].reshape(n, width)]
        # Values that are not strings (numbers, bools, other objects) follow the matching rule
        # of the module docstring, cell by cell: factorize merges 6, 6.0 and True.
        special = np.flatnonzero([type(u) is not str for u in listed])
        if special.size:
            rows, features = np.nonzero(np.isin(found, special).reshape(n, width))
            memo: dict[tuple[int, type, object], int] = {}
            for i, j in zip(rows.tolist(), features.tolist(), strict=True):
                value = values[i, j]
                try:
                    key = (j, type(value), value)
                    code = memo.get(key)
                except TypeError:  # unhashable
                    key, code = None, None
                if code is None:
                    code = self._normalised_code(j, value)
                    if key is not None:
                        memo[key] = code
                codes[i, j] = code
        if (codes < 0).any():
            self._warn_if_mostly_unseen(codes, values, stacklevel)
        return codes

    def _normalised_code(self, feature: int, value: object) -> int:
        """The code of one value that is not a fitted category string (module docstring)."""
        lookup = self._lookup[feature]
        if _missing(value):
            return lookup.get("nan", -1)
        code = lookup.get(str(value), -1)
        if code >= 0 or isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
            return code
        exact, single = self._numeric_lookups(feature)
        number = float(value)
        if number in exact:
            return exact[number]
        return single.get(float(np.float32(number)), -1)

    def _numeric_lookups(self, feature: int) -> tuple[dict[float, int], dict[float, int]]:
        """The feature's categories that read as numbers: by value, and by float32 value.

        A value two categories share (``"6"`` and ``"6.0"``) is left out: it would be a guess.
        """
        built = self._by_number[feature]
        if built is not None:
            return built
        tables: tuple[dict[float, int], dict[float, int]] = ({}, {})
        ambiguous: tuple[set[float], set[float]] = (set(), set())
        for code, category in enumerate(self.categories_[feature]):
            try:
                number = float(category)
            except ValueError:
                continue
            if not np.isfinite(number):
                continue
            for table, clash, key in zip(
                tables, ambiguous, (number, float(np.float32(number))), strict=True
            ):
                if key in table:
                    clash.add(key)
                table[key] = code
        for table, clash in zip(tables, ambiguous, strict=True):
            for key in clash:
                del table[key]
        self._by_number[feature] = tables
        return tables

    def _warn_if_mostly_unseen(
        self, codes: np.ndarray, values: np.ndarray, stacklevel: int
    ) -> None:
        """Warn when more than ``UNSEEN_WARNING_SHARE`` of a categorical column's values in the
        batch are unseen, naming the column with the largest such share and the kind of its
        first one; once per cause (that column and kind) under the filters that show a warning once
        (module docstring)."""
        unseen = codes < 0
        # a column's unseen count is at most the batch's: most batches stop at one count
        if np.count_nonzero(unseen) <= UNSEEN_WARNING_SHARE * len(unseen):
            return
        # per column: one column of many that the stream fills with new values is worth a
        # warning though most of the batch's cells are known
        by_column = unseen.mean(axis=0)
        worst = int(by_column.argmax())
        if by_column[worst] <= UNSEEN_WARNING_SHARE:
            return
        example = values[int(np.flatnonzero(unseen[:, worst])[0]), worst]
        if _missing(example):
            kind = "missing"
        elif isinstance(example, str):
            kind = "text"
        else:
            kind = type(example).__name__
        text = self._unseen_message(unseen, worst, kind)
        # the action Python's filters give this warning, looked up as warnings.warn will
        action = _filter_action(UnseenCategoryWarning, text, stacklevel)
        cause = (worst, kind)
        if self._warned_under is not warnings.filters:
            # Another filter list: a catch_warnings block (pytest's recwarn, a monitoring
            # loop that records warnings) starts one, and Python shows its warnings afresh.
            self._warned_under, self._warned_causes = warnings.filters, set()
        if action in _ONCE_ACTIONS and cause in self._warned_causes:
            return
        warnings.warn(text, UnseenCategoryWarning, stacklevel=stacklevel)
        # Remembered once shown (an "error" filter raised above and an ignored warning was not
        # seen: those causes may still warn later).
        if action != "ignore":
            self._warned_causes.add(cause)

    def _unseen_message(self, unseen: np.ndarray, worst: int, kind: str) -> str:
        """The :class:`UnseenCategoryWarning` text for the mask ``unseen`` (n, D_cat): the
        column ``worst`` holds values of ``kind`` (``"missing"``, ``"text"`` or a type name)
        that match none of its categories."""
        n_rows = len(unseen)
        if n_rows >= UNSEEN_WARNING_MIN_ROWS:
            share = (
                f"more than {UNSEEN_WARNING_SHARE:.0%} of this batch's values in one categorical "
                "column were not seen at fit time and are encoded"
            )
        else:
            count, cells = int(unseen.sum()), unseen.size
            share = (
                f"{count} of the {_counted(cells, 'categorical value')} in this batch of "
                f"{_counted(n_rows, 'row')} {'was' if count == 1 else 'were'} not seen at fit "
                f"time and {'is' if count == 1 else 'are'} encoded"
            )
        fitted = self.categories_[worst]
        known = ", ".join(repr(c) for c in fitted[:3]) + (", ..." if len(fitted) > 3 else "")
        column = self.categorical_[worst]
        if kind == "missing":
            found = (
                f"column {column!r} holds missing values (None, NaN or the like), but none of "
                f"the categories it was fitted with ({known}) is a missing value. A column that "
                "the source always filled and the stream leaves empty (a field no longer "
                "recorded, a failed join) is the usual cause"
            )
        else:
            # Text meets text categories exactly, so there the likelier cause is categories the
            # source never had (a shift in this column), not a type mismatch.
            cause = (
                "Either the stream holds categories the source never had (a shift in this "
                "column) or they are written differently (e.g. '06' vs '6')"
                if kind == "text"
                else "A type or format mismatch with the fitted data is the usual cause"
            )
            found = (
                f"column {column!r} has values of type {'str' if kind == 'text' else kind} "
                f"that match none of the categories it was fitted with ({known}). {cause}"
            )
        return (
            f"Encoder: {share} as unknown; {found} (see adaptable.encoding for the matching rule)."
        )

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
        enc._prepare()
        return enc

    def __getstate__(self) -> dict[str, Any]:
        """The instance's attributes for pickling and copying, without the memory of the warnings
        shown: it says what this instance told its user, and is no part of the fitted state
        (the pickle is the same whether or not a batch warned)."""
        state = self.__dict__.copy()
        state.pop("_warned_causes", None)
        state.pop("_warned_under", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restore :meth:`__getstate__`'s attributes; the copy has shown no warning yet."""
        self.__dict__.update(state)
        self._warned_causes = set()
        self._warned_under = None

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


def _counted(count: int, noun: str) -> str:
    """``count`` and ``noun``, plural unless one: "1 row", "2 rows"."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _filter_action(category: type[Warning], text: str, stacklevel: int) -> str:
    """The action of the first warning filter that matches ``category`` with message ``text``
    raised at ``stacklevel`` counted from the caller (as ``warnings.warn`` counts it), found as
    ``warnings.warn_explicit`` finds it; the default action when none matches."""
    try:
        # this function's frame, its caller's, then stacklevel - 1 more
        frame = sys._getframe(stacklevel)
    except ValueError:  # fewer frames: warnings.warn then names the "sys" module
        module, lineno = "sys", 1
    else:
        module, lineno = frame.f_globals.get("__name__", "<string>"), frame.f_lineno
    for action, message, kind, module_pattern, line in warnings.filters:
        if (
            (message is None or message.match(text))
            and issubclass(category, kind)
            and (module_pattern is None or module_pattern.match(module))
            and (line == 0 or lineno == line)
        ):
            return action
    return warnings.defaultaction


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
    _require_unique(frame, columns, where)


def _require_unique(frame: pd.DataFrame, columns: Sequence[object], where: str) -> None:
    if frame.columns.is_unique:
        return
    wanted = set(columns)
    repeated = [c for c in frame.columns[frame.columns.duplicated()].unique() if c in wanted]
    if repeated:
        counts = frame.columns.value_counts()
        described = ", ".join(f"{c!r} ({counts[c]} times)" for c in repeated[:10])
        raise ValueError(
            f"Encoder.{where}: the input has duplicated column name(s) {described}; "
            "each feature must appear once."
        )


def _from_blocks(
    frame: pd.DataFrame, numeric_pos: np.ndarray, category_pos: np.ndarray
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The numerical columns as float64 (n, D_num), NaN -> 0, and the categorical columns as
    an object array (n, D_cat), read from the frame's blocks of plain numpy arrays (each kind
    in one concatenation) instead of one object array of the whole frame; ``None`` for a part
    the blocks cannot give the same way (a numerical column of another dtype, an infinite
    number; a categorical column whose values are not Python objects), which the caller then
    reads the usual way.

    The values are those of ``frame.to_numpy(dtype=object)`` read as numbers: a numpy integer,
    float or bool converts to float64 exactly as its Python object does.
    """
    try:
        manager = frame._mgr
        blocks = [block.values for block in manager.blocks]
        # each column's block and its row in that block (cached by pandas per frame)
        block_of, row_in_block = manager.blknos, manager.blklocs
    except AttributeError:  # another pandas: the public path
        return None, None
    # one pass over the blocks: plain numpy numbers and plain Python objects, the strings of
    # pandas' string dtype among them (other extension arrays, such as Int64 or category, are
    # neither, and leave their columns to the usual path)
    numbers: list[np.ndarray] = []
    objects: list[np.ndarray] = []
    number_first = np.full(len(blocks), -1, dtype=np.intp)
    object_first = np.full(len(blocks), -1, dtype=np.intp)
    number_rows = object_rows = 0
    for index, values in enumerate(blocks):
        if type(values) is not np.ndarray:
            # a text column of pandas' own string dtype (the default for text from pandas 3):
            # its Python strings, as the usual path would read them (missing values included)
            values = _python_strings(values)
        if values is None or values.ndim != 2:
            continue
        kind = values.dtype.kind
        if kind in "biuf":
            number_first[index] = number_rows
            number_rows += len(values)
            numbers.append(values)
        elif kind == "O":
            object_first[index] = object_rows
            object_rows += len(values)
            objects.append(values)
    located = (block_of, row_in_block, len(frame))
    gathered_numbers = _gather(numbers, number_first, numeric_pos, *located)
    return _gather_numbers(gathered_numbers), _gather(objects, object_first, category_pos, *located)


def _python_strings(values: object) -> np.ndarray | None:
    """The object array (1, n) behind one column of pandas' string dtype stored as Python
    strings, which holds what ``to_numpy(dtype=object)`` gives; ``None`` for any other array
    (pyarrow storage among them)."""
    if not isinstance(values, pd.arrays.StringArray):
        return None
    strings = getattr(values, "_ndarray", None)
    if type(strings) is not np.ndarray or strings.ndim != 1 or strings.dtype != object:
        return None
    return strings[None, :]


def _gather(
    blocks: list[np.ndarray],
    first: np.ndarray,
    positions: np.ndarray,
    block_of: np.ndarray,
    row_in_block: np.ndarray,
    n_rows: int,
) -> np.ndarray | None:
    """The frame columns at ``positions`` as an (n, len(positions)) array from ``blocks``
    (k, n) concatenated, ``first`` the first row of each frame block in that concatenation (-1:
    not among them); ``None`` where a column lies in another block."""
    if not positions.size:
        return np.empty((n_rows, 0), dtype=object)
    starts = first[block_of[positions]]
    if not blocks or starts.min() < 0:
        return None
    joined = blocks[0] if len(blocks) == 1 else np.concatenate(blocks)
    return joined[starts + row_in_block[positions]].T


def _gather_numbers(gathered: np.ndarray | None) -> np.ndarray | None:
    """The gathered numerical columns as float64 with NaN -> 0 (``None`` also where a value
    is infinite, so that the usual path words the error)."""
    if gathered is None:
        return None
    if not gathered.size:
        return np.zeros(gathered.shape)
    # a fresh array laid out column by column, as pandas' own conversion gives (sums over the
    # rows later depend on the layout)
    numbers_ = gathered.astype(np.float64)
    finite = np.isfinite(numbers_)
    if not finite.all():
        if np.isinf(numbers_).any():
            return None
        numbers_[~finite] = 0.0
    return numbers_


def _small_frame_values(frame: pd.DataFrame) -> np.ndarray | None:
    """The whole frame as one object array when it is small (see ``_SMALL_BATCH_CELLS``)."""
    if frame.size > _SMALL_BATCH_CELLS:
        return None
    try:
        return frame.to_numpy(dtype=object)
    except (TypeError, ValueError):
        return None


def _numbers_or_none(values: np.ndarray) -> np.ndarray | None:
    """Object cells as finite float64 (NaN -> 0), or ``None`` to let ``_numeric_block`` decide
    (and word the error) when a cell is not a plain number."""
    try:
        numbers_ = values.astype(np.float64)
    except (TypeError, ValueError):
        return None
    if np.isinf(numbers_).any():
        return None
    return np.nan_to_num(numbers_, nan=0.0)


def _numeric_block(frame: pd.DataFrame, columns: Sequence[object]) -> np.ndarray:
    if not columns:
        return np.zeros((len(frame), 0))
    block = frame[list(columns)]
    # (the usual reading of plain numbers never comes here: no cost per batch)
    dated = [(c, d) for c, d in zip(columns, block.dtypes, strict=True) if d.kind == "M"]
    if dated:
        raise ValueError(_dates_message([c for c, _ in dated], str(dated[0][1])))
    try:
        values = block.to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError) as err:
        raise ValueError(_not_numbers_message(frame, columns, err)) from err
    if np.isinf(values).any():
        bad = [columns[j] for j in np.flatnonzero(np.isinf(values).any(axis=0))]
        raise ValueError(f"Numerical column(s) hold infinite values: {', '.join(map(str, bad))}.")
    # The authors fill numerical NaN with 0 before scaling (method.md, section 3).
    return np.nan_to_num(values, nan=0.0)


def _not_numbers_message(frame: pd.DataFrame, columns: Sequence[object], err: Exception) -> str:
    """The error for numerical ``columns`` of ``frame`` that do not all convert to float64: the
    columns that fail and the first cell of the first of them that fails (its row's index
    label and value). Only on the error path: each column is converted again on its own."""
    failing: list[object] = []
    for column in columns:
        try:
            frame[column].to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError):
            failing.append(column)
    if not failing:  # only the columns together fail: the conversion's own words
        return f"Numerical columns must hold numbers: {err}"
    if len(failing) == 1:
        named, of = f"Numerical column {failing[0]!r} must hold numbers", ""
    else:
        listed = ", ".join(map(repr, failing[:10])) + (" ..." if len(failing) > 10 else "")
        named, of = f"Numerical columns {listed} must hold numbers", f" of {failing[0]!r}"
    series = frame[failing[0]]
    # the values as the conversion sees them (missing ones as NaN)
    cells = series.to_numpy(dtype=object, na_value=np.nan)
    row = _first_failing(cells)
    if row is None:  # a column that fails as a whole (its dtype), not in one cell
        return f"{named}: {err}"
    label = python_value(series.index[row])
    if _is_date(cells[row]):
        return _dates_message([failing[0]], f"row {label!r} holds {cells[row]!r}")
    value = repr(python_value(cells[row]))
    value = value if len(value) <= 60 else value[:57] + "..."
    return f"{named}, but row {label!r}{of} holds {value}."


def _first_failing(cells: np.ndarray) -> int | None:
    """The position of the first object in ``cells`` that does not convert to float64 (``None``
    when all do); by halving, so that a long column costs a few whole-array conversions rather
    than one per cell."""
    try:
        cells.astype(np.float64)
        return None
    except (TypeError, ValueError):
        pass
    low, high = 0, len(cells)  # cells[:low] convert; cells[:high] do not
    while high - low > 1:
        middle = (low + high) // 2
        try:
            cells[:middle].astype(np.float64)
        except (TypeError, ValueError):
            high = middle
        else:
            low = middle
    return low


def _standardised(
    values: np.ndarray, mean: np.ndarray, scale: np.ndarray, columns: Sequence[object]
) -> np.ndarray:
    """``(values - mean) / scale`` as float32, refusing values that float32 cannot hold."""
    with np.errstate(over="ignore"):
        out = (values - mean) / scale
    # float32 ends at about 3.4e38: larger numbers would silently become inf downstream.
    too_large = ~(np.abs(out) <= np.finfo(np.float32).max)
    if too_large.any():
        bad = [columns[j] for j in np.flatnonzero(too_large.any(axis=0))]
        raise ValueError(
            "Numerical column(s) hold values too large to encode (beyond float32's range once "
            f"standardised): {', '.join(map(str, bad))}."
        )
    return out.astype(np.float32, copy=False)


def _object_block(frame: pd.DataFrame, columns: Sequence[object]) -> np.ndarray:
    if not columns:
        return np.empty((len(frame), 0), dtype=object)
    return frame[list(columns)].to_numpy(dtype=object)


def _refuse_dates(frame: pd.DataFrame, columns: Sequence[object]) -> None:
    """``ValueError`` naming the ``columns`` of ``frame`` that hold dates or times."""
    dated = [(c, what) for c in columns if (what := _dates_in(frame[c])) is not None]
    if dated:
        raise ValueError(_dates_message([c for c, _ in dated], dated[0][1]))


def _dates_in(values: pd.Series) -> str | None:
    """What shows that a column holds dates or times (its dtype, or a value's type); ``None``
    where it holds none."""
    if values.dtype.kind == "M":
        return str(values.dtype)
    if values.dtype != object:
        return None
    kind = pd.api.types.infer_dtype(values, skipna=True)
    if kind in ("datetime", "datetime64", "date") or kind.startswith("mixed"):
        found = next((v for v in values if _is_date(v)), None)
        return None if found is None else f"values of type {type(found).__name__}"
    return None


def _is_date(value: object) -> bool:
    return isinstance(value, datetime.date | np.datetime64)


def _dates_message(columns: Sequence[object], what: str) -> str:
    listed = ", ".join(map(repr, columns[:10])) + (" ..." if len(columns) > 10 else "")
    return (
        f"Column(s) {listed} hold dates or times ({what}), which the Encoder reads neither "
        "as numbers nor as categories: convert them to numbers before fit and before every "
        f"batch (e.g. X[{columns[0]!r}].dt.dayofweek, .dt.month, or days since a fixed "
        "date), or leave them out of the columns read by declaring both numerical= and "
        "categorical= (AdapTable then hands them to the model alone)."
    )


def _category_strings(values: pd.Series) -> pd.Series:
    """Category values as strings at fit time, NaN as ``"nan"``, as the loaders produce them."""
    if values.dtype == object and pd.api.types.infer_dtype(values, skipna=False) == "string":
        return values
    return values.map(lambda v: "nan" if _missing(v) else str(v))


def _missing(v: object) -> bool:
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def _jsonable(name: object) -> object:
    if isinstance(name, np.integer):
        return int(name)
    return name

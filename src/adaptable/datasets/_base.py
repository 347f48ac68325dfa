"""Shared pieces of the data layer: the dataset type, data-directory resolution, file lookup,
TableShift's schema step and its domain split."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, NamedTuple

import numpy as np
import pandas as pd

from adaptable.encoding import kinds_by_dtype
from adaptable.values import python_value

DATA_DIR_ENV = "ADAPTABLE_DATA_DIR"

# TableShift's split constants, identical for every task (datasets.md, section 2).
SPLIT_RANDOM_STATE = 264738
ID_VALID_FRACTION = 0.1
ID_TEST_FRACTION = 0.1
OOD_VALID_FRACTION = 0.1


class DataFileError(FileNotFoundError):
    """A raw data file a task needs is not in the data directory."""


class DataFormatError(ValueError):
    """A raw data file is present but cannot be what the publisher ships (truncated, wrong columns)."""


class Split(NamedTuple):
    """One split of a task: raw features and integer labels."""

    X: pd.DataFrame
    y: np.ndarray


@dataclass(frozen=True)
class ShiftDataset:
    """A TableShift task as AdapTable uses it.

    ``train`` and ``valid`` are in-domain; ``test`` is the out-of-domain test split
    (TableShift's ``ood_test``). ``numerical`` and ``categorical`` name the feature columns by
    kind (decided by dtype, as the authors' code does); ``classes`` names the labels 0..C-1.
    ``id_test`` is TableShift's in-domain test split (the rows the domain split holds out of
    train / valid), or ``None`` for datasets built without one (e.g. synthetic ones); the
    paper's experiments never use it, the pure label-shift scenarios resample it.
    """

    name: str
    train: Split
    valid: Split
    test: Split
    numerical: list[str]
    categorical: list[str]
    classes: list[str]
    domain_split: str
    sources: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    id_test: Split | None = None

    @property
    def features(self) -> list[str]:
        """All feature columns in table order."""
        return list(self.train.X.columns)

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    def source_prior(self) -> np.ndarray:
        """Class frequencies of train + valid labels (the authors' p_s)."""
        y = np.concatenate([self.train.y, self.valid.y])
        return np.bincount(y, minlength=self.n_classes) / len(y)

    def summary(self) -> dict[str, object]:
        """Split sizes and class balance, for reports."""
        out: dict[str, object] = {"dataset": self.name}
        for split_name in ("train", "valid", "test"):
            split = getattr(self, split_name)
            out[f"{split_name}_rows"] = len(split.y)
            out[f"{split_name}_positive_rate"] = (
                float(np.mean(split.y == 1)) if self.n_classes == 2 else None
            )
        out["numerical"] = len(self.numerical)
        out["categorical"] = len(self.categorical)
        return out

    def __repr__(self) -> str:
        sizes = ", ".join(f"{s}={len(getattr(self, s).y)}" for s in ("train", "valid", "test"))
        return (
            f"ShiftDataset({self.name!r}, {sizes}, numerical={len(self.numerical)}, "
            f"categorical={len(self.categorical)}, classes={self.classes})"
        )


def resolve_data_dir(data_dir: str | os.PathLike[str] | None) -> Path:
    """The argument, else ``$ADAPTABLE_DATA_DIR``, else a per-user cache directory."""
    if data_dir is not None:
        return Path(data_dir).expanduser()
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env).expanduser()
    return default_data_dir()


def find_file(
    data_dir: Path,
    task: str,
    candidates: Sequence[str],
    obtain: str,
) -> Path:
    """Return the first of ``candidates`` (paths relative to ``data_dir``) that exists.

    Each candidate is also tried with ``.gz`` appended, because publishers' files are accepted
    plain or gzip-compressed. Raises :class:`DataFileError` naming the file, the task and where a
    user obtains it.
    """
    for rel in candidates:
        for name in (rel, rel + ".gz"):
            path = data_dir / name
            if path.is_file():
                return path
    raise DataFileError(
        f"Task {task!r} needs the raw file {candidates[0]!r} (plain or .gz) under the data "
        f"directory {str(data_dir)!r}, and it is not there. Obtain it from {obtain}. "
        + data_dir_hint()
    )


def default_data_dir() -> Path:
    """The data folder used when neither an argument nor ``$ADAPTABLE_DATA_DIR`` names one:
    ``adaptable/data`` in the per-user cache directory (``~/.cache/adaptable/data`` on Linux)."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("adaptable")) / "data"


def data_dir_hint() -> str:
    """The sentence every missing-file error ends with: the three ways to name the data folder
    and the default one."""
    return (
        "Point adaptable at the folder holding the raw files with --data-dir DIR (command "
        f"line), load(..., data_dir=DIR) (Python) or ${DATA_DIR_ENV}; the default is "
        f"{str(default_data_dir())!r}."
    )


def narrow_numerics(frame: pd.DataFrame) -> pd.DataFrame:
    """TableShift casts every float64/int64 column to float32 at load (datasets.md, step 2)."""
    frame = frame.copy()
    for col in frame.columns:
        if frame[col].dtype in (np.float64, np.int64):
            frame[col] = frame[col].astype(np.float32)
    return frame


def as_category_strings(values: pd.Series) -> pd.Series:
    """TableShift's categorical cast: Python ``str()`` of every value, NaN becoming ``"nan"``.

    Deliberate difference: we keep an ``object`` column of strings rather than a pandas
    ``category``, so that splits and corrupted streams share one value space; the levels are
    the same strings.

    Example:
        >>> as_category_strings(pd.Series([1.0, None, 3.0], dtype="float32")).tolist()
        ['1.0', 'nan', '3.0']
    """
    if values.dtype == object:
        # Mixed Python objects (e.g. ints next to floats) must keep their own str() forms,
        # which factorising would merge (1 == 1.0), so map value by value.
        return values.map(lambda v: "nan" if _is_missing(v) else str(v)).astype(object)
    # Numeric / string columns: str() each distinct value once (BRFSS has millions of rows).
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    labels = np.array([str(v) for v in uniques] + ["nan"], dtype=object)
    return pd.Series(labels[codes], index=values.index, name=values.name, dtype=object)


def _is_missing(value: object) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def as_declared_int(values: pd.Series) -> pd.Series:
    """TableShift's int cast: integer when no NaN is present, else the column stays float."""
    if values.isna().any():
        return values.astype(np.float64)
    return values.astype(np.int64)


def require_columns(frame: pd.DataFrame, columns: Iterable[str], task: str, path: Path) -> None:
    """Fail clearly when a raw file lacks columns the task needs."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        shown = ", ".join(missing[:8]) + (" ..." if len(missing) > 8 else "")
        raise DataFormatError(
            f"{path.name} does not look like the publisher's file for task {task!r}: "
            f"{len(missing)} expected column(s) missing ({shown}). Found columns: "
            f"{', '.join(map(str, list(frame.columns)[:8]))}{' ...' if frame.shape[1] > 8 else ''}."
        )


def require_numbers(
    frame: pd.DataFrame,
    columns: Iterable[str],
    task: str,
    path: Path | str,
    *,
    missing_ok: bool = False,
    whole: bool = False,
    first_line: int | None = 2,
) -> None:
    """Fail clearly when a column the task reads as numbers holds text, gaps or fractions.

    A publisher's file holds numbers in these columns; text there (an edited cell), a missing
    value where the publisher has none (a torn last line leaves NaN cells) or a fraction in a
    count means the file is not the publisher's, and loading it anyway would put rows into the
    wrong split or fail later with a message naming nothing.

    Args:
        columns: the columns to check (all must be present; see :func:`require_columns`).
        missing_ok: the publisher's file has blanks in these columns.
        whole: the values must be whole numbers (codes, counts).
        first_line: the file line of the first data row (2 for a CSV with one header line);
            ``None`` reports 1-based row numbers instead (binary formats).

    Example:
        >>> frame = pd.DataFrame({"age": ["31", "forty"]})
        >>> require_numbers(frame, ["age"], "toy", "toy.csv")
        Traceback (most recent call last):
        ...
        adaptable.datasets._base.DataFormatError: toy.csv (task 'toy'): column 'age' must hold numbers, but line 3 holds 'forty'. The file is not the publisher's (edited or corrupted); obtain a fresh copy.
    """
    name = Path(path).name

    def where(position: int) -> str:
        return f"row {position + 1}" if first_line is None else f"line {position + first_line}"

    for column in columns:
        values = frame[column].reset_index(drop=True)
        numbers = (
            values
            if pd.api.types.is_numeric_dtype(values)
            else pd.to_numeric(values, errors="coerce")
        )
        text = numbers.isna() & values.notna() & (values.astype(str).str.strip() != "")
        problem = None
        if pd.api.types.is_bool_dtype(values):
            problem = "holds true/false values"
        elif text.any():
            position = int(np.flatnonzero(text.to_numpy())[0])
            value = python_value(values.iloc[position])
            problem = f"must hold numbers, but {where(position)} holds {value!r}"
        elif not missing_ok and numbers.isna().any():
            gaps = np.flatnonzero(numbers.isna().to_numpy())
            problem = (
                f"has {len(gaps)} missing value(s) (first at {where(int(gaps[0]))}); the "
                "publisher's file has none there (a truncated last line leaves such gaps)"
            )
        elif whole:
            finite = numbers.dropna().to_numpy(dtype=np.float64)
            fractional = np.flatnonzero(finite != np.round(finite))
            if len(fractional):
                position = int(np.flatnonzero(numbers.notna().to_numpy())[fractional[0]])
                problem = (
                    f"must hold whole numbers, but {where(position)} holds "
                    f"{python_value(values.iloc[position])!r}"
                )
        if problem is not None:
            raise DataFormatError(
                f"{name} (task {task!r}): column {column!r} {problem}. The file is not the "
                "publisher's (edited or corrupted); obtain a fresh copy."
            )


def read_csv_checked(path: Path, task: str, **kwargs: object) -> pd.DataFrame:
    """``pandas.read_csv`` whose failures (truncated gzip, binary junk) become DataFormatError."""
    import zlib

    try:
        return pd.read_csv(path, **kwargs)  # type: ignore[arg-type]
    except (EOFError, zlib.error, OSError, UnicodeDecodeError, pd.errors.ParserError) as err:
        raise DataFormatError(
            f"Could not read {str(path)!r} for task {task!r}: {err}. The file looks truncated or "
            "corrupted; obtain a fresh copy from the publisher."
        ) from err
    except pd.errors.EmptyDataError as err:
        raise DataFormatError(f"{str(path)!r} for task {task!r} is empty.") from err


def check_row_count(frame: pd.DataFrame, expected: int, task: str, path: Path) -> None:
    """The publishers' files have known sizes; anything else is a truncated or other release."""
    if len(frame) != expected:
        raise DataFormatError(
            f"{path.name} for task {task!r} has {len(frame):,} data rows; the publisher's file has "
            f"{expected:,}. The file looks truncated or is a different release."
        )


class SplitPositions(NamedTuple):
    """Positional rows of each part of TableShift's domain split."""

    train: np.ndarray
    valid: np.ndarray
    id_test: np.ndarray
    ood_test: np.ndarray


def domain_split(
    ood_mask: np.ndarray, id_mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """TableShift's domain split on positional rows: returns (train, valid, ood_test) positions.

    Exactly the three ``train_test_split`` calls of datasets.md section 2 (no stratification, the
    same random_state each time, ``ood_test`` being the first, 90 % part of the last call).
    """
    parts = split_positions(ood_mask, id_mask)
    return parts.train, parts.valid, parts.ood_test


def split_positions(ood_mask: np.ndarray, id_mask: np.ndarray | None = None) -> SplitPositions:
    """:func:`domain_split` with the in-domain test split too (TableShift's ``id_test``)."""
    from sklearn.model_selection import train_test_split

    ood_mask = np.asarray(ood_mask, dtype=bool)
    ood_pos = np.flatnonzero(ood_mask)
    id_pos = np.flatnonzero(np.asarray(id_mask, dtype=bool) if id_mask is not None else ~ood_mask)
    if len(id_pos) < 10 or len(ood_pos) < 10:
        raise DataFormatError(
            f"The domain split left {len(id_pos)} in-domain and {len(ood_pos)} out-of-domain rows; "
            "the raw file is too small or its split column is wrong."
        )
    train, rest = train_test_split(
        id_pos, test_size=ID_VALID_FRACTION + ID_TEST_FRACTION, random_state=SPLIT_RANDOM_STATE
    )
    valid, id_test = train_test_split(
        rest,
        test_size=ID_TEST_FRACTION / (ID_VALID_FRACTION + ID_TEST_FRACTION),
        random_state=SPLIT_RANDOM_STATE,
    )
    ood_test, _ood_valid = train_test_split(
        ood_pos, test_size=OOD_VALID_FRACTION, random_state=SPLIT_RANDOM_STATE
    )
    return SplitPositions(*(np.asarray(p) for p in (train, valid, id_test, ood_test)))


def build_dataset(
    name: str,
    features: pd.DataFrame,
    target: np.ndarray,
    ood_mask: np.ndarray,
    classes: list[str],
    domain_split_description: str,
    sources: list[str],
    id_mask: np.ndarray | None = None,
    notes: list[str] | None = None,
) -> ShiftDataset:
    """Split a prepared feature table into the task's train / valid / test."""
    features = features.reset_index(drop=True)
    target = np.asarray(target, dtype=np.int64)
    parts = split_positions(ood_mask, id_mask)
    numerical, categorical = kinds_by_dtype(features)

    def take(pos: np.ndarray) -> Split:
        return Split(features.iloc[pos].reset_index(drop=True), target[pos].copy())

    return ShiftDataset(
        name=name,
        train=take(parts.train),
        valid=take(parts.valid),
        test=take(parts.ood_test),
        numerical=numerical,
        categorical=categorical,
        classes=classes,
        domain_split=domain_split_description,
        sources=sources,
        notes=list(notes or []),
        id_test=take(parts.id_test),
    )


# Failures a reader raises on a truncated or corrupted file (gzip EOF, zlib, bad headers).
_READ_ERRORS = (EOFError, OSError, ValueError, UnicodeDecodeError, KeyError, IndexError)


def read_xport_checked(
    source: Path | BinaryIO,
    task: str,
    label: str,
    columns: Iterable[str] | None = None,
    chunksize: int = 50_000,
) -> pd.DataFrame:
    """Read a SAS transport (``.XPT``) file, plain or gzip-compressed, as the publisher ships it.

    Args:
        source: a path (``.gz`` is decompressed on the fly) or an open binary stream (e.g. a
            zip member).
        task: the task name, for error messages.
        label: the file name shown in error messages.
        columns: keep only these columns (those present); reading in chunks then keeps memory
            near the size of the kept columns, which matters for the ~1 GB BRFSS files.
        chunksize: rows per chunk.

    Returns:
        The table; character variables decoded as Latin-1 strings, numbers as float64.

    Raises:
        DataFormatError: the file is truncated, not an XPORT file, or otherwise unreadable.
    """
    import gzip
    import zlib

    wanted = None if columns is None else list(columns)
    opened: BinaryIO | None = None
    try:
        if isinstance(source, Path):
            opened = (
                gzip.open(source) if source.name.lower().endswith(".gz") else open(source, "rb")
            )
            stream: BinaryIO = opened  # type: ignore[assignment]
        else:
            stream = source
        reader = pd.read_sas(stream, format="xport", encoding="latin-1", chunksize=chunksize)
        parts = []
        with reader:
            for chunk in reader:
                if wanted is not None:
                    chunk = chunk[[c for c in wanted if c in chunk.columns]]
                parts.append(chunk)
    except (*_READ_ERRORS, zlib.error) as err:
        raise DataFormatError(
            f"Could not read {label!r} for task {task!r} as a SAS transport (XPT) file: "
            f"{type(err).__name__}: {err}. The file looks truncated or corrupted; obtain a fresh "
            "copy from the publisher."
        ) from err
    finally:
        if opened is not None:
            opened.close()
    if not parts:
        raise DataFormatError(f"{label!r} for task {task!r} holds no data rows.")
    return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]


@dataclass
class PreparedTable:
    """A task's whole table after its row filters and schema step, before the domain split.

    The loaders build this first, so that tests and diagnostics can see every row (the split
    keeps only train / valid / ood_test). ``ood_mask`` / ``id_mask`` mark the out-of-domain and
    in-domain rows (``id_mask=None``: every row not out-of-domain).
    """

    name: str
    features: pd.DataFrame
    target: np.ndarray
    ood_mask: np.ndarray
    classes: list[str]
    domain_split: str
    sources: list[str]
    id_mask: np.ndarray | None = None
    notes: list[str] = field(default_factory=list)

    def to_dataset(self) -> ShiftDataset:
        """Apply TableShift's domain split (datasets.md section 2)."""
        return build_dataset(
            self.name,
            self.features,
            self.target,
            ood_mask=self.ood_mask,
            classes=self.classes,
            domain_split_description=self.domain_split,
            sources=self.sources,
            id_mask=self.id_mask,
            notes=self.notes,
        )

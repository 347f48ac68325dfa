"""Checked access to a saved file's tensors and JSON metadata; every error names the field.

A file edited by hand or truncated must fail loudly, never give different predictions: each
part of :class:`~adaptable.core.estimator.AdapTable` reads its own saved state through a
:class:`StateReader`, which refuses, naming the field, anything missing, malformed, of another
type, shape or dtype than the code writes, or in disagreement with the rest of the file. The
tensors are :class:`Tensors`: their names, shapes and dtypes are known before any is loaded, so
a tensor of the wrong shape, or one that no part owns, is refused without reading its data;
:meth:`StateReader.no_unexpected_tensors` refuses the tensors no part read.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np

from adaptable.framework.probability import check_distribution

#: numpy's names of safetensors' dtypes
SAFETENSORS_DTYPES = {
    "F64": "float64",
    "F32": "float32",
    "F16": "float16",
    "I64": "int64",
    "I32": "int32",
    "I16": "int16",
    "I8": "int8",
    "U64": "uint64",
    "U32": "uint32",
    "U16": "uint16",
    "U8": "uint8",
    "BOOL": "bool",
}
#: deepest nesting of lists and objects the metadata may hold (the encoder's schema reaches 5)
MAX_METADATA_DEPTH = 16
#: longest integer the metadata may hold (a seed below 2**256 has 78 digits); a longer one is
#: refused by its field's check instead of failing Python's integer conversion unnamed
MAX_INTEGER_DIGITS = 100
#: what :meth:`StateReader.tensors_under` accepts for each kind: numpy dtype kinds, in words
_KINDS = {"f": ("f", "floats"), "i": ("iub", "integers")}
#: the version of a package release, as the file's ``version`` field holds it
_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?([.+-]?[0-9A-Za-z.+-]*)")


class Tensors(Mapping[str, np.ndarray]):
    """A file's tensors by key: names, shapes and dtypes known before any data is read.

    Args:
        headers: ``(shape, dtype name)`` of each tensor by key.
        load: reads one tensor's data by key.

    Example:
        >>> tensors = Tensors.of_arrays({"a": np.zeros((2, 3))})
        >>> tensors.header("a"), tensors["a"].shape
        (((2, 3), 'float64'), (2, 3))
    """

    def __init__(
        self,
        headers: Mapping[str, tuple[tuple[int, ...], str]],
        load: Callable[[str], np.ndarray],
        on_load: Callable[[str], None] | None = None,
    ) -> None:
        self._headers = dict(headers)
        self._load = load
        self._on_load = on_load

    @classmethod
    def of_arrays(cls, arrays: Mapping[str, Any]) -> Tensors:
        """Arrays already in memory."""
        values = {key: np.asarray(value) for key, value in arrays.items()}
        headers = {key: (value.shape, value.dtype.name) for key, value in values.items()}
        return cls(headers, values.__getitem__)

    @classmethod
    def of_safetensors(cls, handle: Any) -> Tensors:
        """The tensors of an open ``safetensors.safe_open`` handle (its header only, so far)."""
        headers = {}
        for key in handle.keys():  # noqa: SIM118 (a handle is no mapping)
            piece = handle.get_slice(key)
            dtype = piece.get_dtype()
            headers[key] = (tuple(piece.get_shape()), SAFETENSORS_DTYPES.get(dtype, dtype))
        return cls(headers, handle.get_tensor)

    def header(self, key: str) -> tuple[tuple[int, ...], str]:
        """``(shape, dtype name)`` of tensor ``key``, without reading it."""
        return self._headers[key]

    def reporting_to(self, on_load: Callable[[str], None]) -> Tensors:
        """The same tensors; ``on_load`` is told the key of each one whose data is read."""
        return Tensors(self._headers, self._load, on_load)

    def with_prefix(self, prefix: str) -> Tensors:
        """The tensors whose key starts with ``prefix``, by the rest of their key (read
        through these, so reported under their full key)."""
        inner = {
            k.removeprefix(prefix): v for k, v in self._headers.items() if k.startswith(prefix)
        }
        return Tensors(inner, lambda key: self[prefix + key])

    def __getitem__(self, key: str) -> np.ndarray:
        if key not in self._headers:
            raise KeyError(key)
        if self._on_load is not None:
            self._on_load(key)
        return np.asarray(self._load(key))

    def __iter__(self) -> Iterator[str]:
        return iter(self._headers)

    def __len__(self) -> int:
        return len(self._headers)

    def __contains__(self, key: object) -> bool:
        return key in self._headers


class _LongInteger:
    """Stands for an integer too long to be any field's value (so that no conversion fails
    before the field can be named)."""

    def __init__(self, digits: int) -> None:
        self.digits = digits

    def __repr__(self) -> str:
        return f"<a {self.digits}-digit integer>"


def _integer(text: str) -> int | _LongInteger:
    digits = len(text.lstrip("-"))
    return _LongInteger(digits) if digits > MAX_INTEGER_DIGITS else int(text)


#: the label values a file holds as themselves (JSON scalars)
SAVED_LABEL_TYPES = (str, bool, int, float)


class StateReader:
    """One file's metadata (a JSON object) and tensors, read field by field.

    Args:
        path: the file's name, for messages.
        raw: the metadata, as JSON text.
        arrays: the file's tensors by key (:class:`Tensors`, or arrays in memory).
        formats: the accepted values of the metadata's ``"format"`` field.
        version: the running package's version: a file written by a newer one is refused.

    Raises:
        ValueError: the metadata is not JSON (or nests deeper than
            :data:`MAX_METADATA_DEPTH`), its format is not one of ``formats``, or its
            ``version`` is malformed or newer than ``version``.
    """

    def __init__(
        self,
        path: str,
        raw: str,
        arrays: Mapping[str, Any],
        formats: Sequence[str],
        version: str | None = None,
    ) -> None:
        self.path = path
        self.used: set[str] = set()
        tensors = arrays if isinstance(arrays, Tensors) else Tensors.of_arrays(arrays)
        self.arrays = tensors.reporting_to(self.used.add)
        self.meta = self._parse(raw)
        if not isinstance(self.meta, dict) or self.meta.get("format") not in formats:
            found = self.meta.get("format") if isinstance(self.meta, dict) else None
            raise ValueError(
                f"{path!r}: field 'format' names an unknown AdapTable file format {found!r}; "
                f"expected one of {list(formats)}."
            )
        if version is not None:
            self._check_version(version)

    def _parse(self, raw: str) -> Any:
        try:
            meta = json.loads(raw, parse_int=_integer)
        except json.JSONDecodeError as err:
            raise self.error("metadata", f"is not valid JSON ({err})") from err
        except RecursionError as err:
            raise self._too_deep(_deep_field(raw)) from err
        if isinstance(meta, dict):
            for key, value in meta.items():
                if _depth(value) > MAX_METADATA_DEPTH:
                    raise self._too_deep(key)
        return meta

    def _too_deep(self, field: str) -> ValueError:
        return self.error(field, f"nests lists or objects deeper than {MAX_METADATA_DEPTH} levels")

    def _check_version(self, running: str) -> None:
        version = self.field("version", str)
        match = _VERSION.fullmatch(version)
        if match is None:
            raise self.error(
                "version", f"must be a package version such as '0.1.0'; got {version!r}"
            )
        ours = _VERSION.fullmatch(running)
        # A later patch release writes what this one reads; a later minor or major may not.
        if ours is not None and _release(match)[:2] > _release(ours)[:2]:
            raise ValueError(
                f"{self.path!r} was written by adaptable {version}, newer than this one "
                f"({running}), which cannot know what it saved; upgrade adaptable to load it."
            )

    @property
    def format(self) -> str:
        return self.meta["format"]

    def error(self, field: str, problem: str) -> ValueError:
        """The error that names ``field`` and says what is wrong with it."""
        return ValueError(
            f"{self.path!r}: field {field!r} {problem}; the file is damaged or edited."
        )

    def field(self, key: str, kind: type | tuple[type, ...]) -> Any:
        """Metadata entry ``key``, which must exist and be of ``kind`` (a bool is no number)."""
        if key not in self.meta:
            raise self.error(key, "is missing")
        value = self.meta[key]
        if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
            raise self.error(key, f"must be a {getattr(kind, '__name__', kind)}; got {value!r}")
        return value

    def integer(self, key: str, minimum: int) -> int:
        value = self.field(key, int)
        if value < minimum:
            raise self.error(key, f"must be at least {minimum}; got {value}")
        return value

    def classes(self, n_classes: int) -> np.ndarray:
        """The saved labels (``classes``), or 0..C-1 where the file holds none."""
        if "classes" not in self.meta:
            return self._typed_classes(np.arange(n_classes))
        labels = self.field("classes", list)
        kinds = {
            str if isinstance(v, str) else bool if isinstance(v, bool) else float for v in labels
        }
        scalars = all(isinstance(v, SAVED_LABEL_TYPES) for v in labels)
        classes = np.asarray(labels) if scalars and len(kinds) == 1 else None
        if (
            classes is None
            or classes.shape != (n_classes,)
            or len(np.unique(classes)) != n_classes
            or not np.array_equal(np.sort(classes), classes)
        ):
            raise self.error(
                "classes", f"must be {n_classes} distinct sorted labels; got {labels!r:.200}"
            )
        return self._typed_classes(classes)

    def _typed_classes(self, classes: np.ndarray) -> np.ndarray:
        """``classes`` in the dtype the file names (``classes_dtype``), where it names one."""
        if "classes_dtype" not in self.meta or classes.dtype.kind not in "iuf":
            return classes
        name = self.field("classes_dtype", str)
        try:
            dtype = np.dtype(name)
        except TypeError:
            raise self.error("classes_dtype", f"is no numeric dtype; got {name!r}") from None
        typed = classes.astype(dtype) if dtype.kind in "iuf" else None
        if typed is None or not np.array_equal(typed, classes):
            raise self.error("classes_dtype", f"cannot hold the labels; got {name!r}")
        return typed

    def shape(self, key: str) -> tuple[int, ...] | None:
        """The shape of tensor ``key`` as the file declares it (``None``: no such tensor)."""
        return self.arrays.header(key)[0] if key in self.arrays else None

    def tensor(self, key: str, shape: tuple[int, ...], dtype: str = "float64") -> np.ndarray:
        """A tensor of ``shape`` and ``dtype`` (finite where a float), both checked before its
        data is read; an empty one may be absent (safetensors drops those)."""
        self.used.add(key)
        if key not in self.arrays:
            if 0 in shape:
                return np.zeros(shape, dtype=dtype)
            raise self.error(key, "is missing")
        found_shape, found_dtype = self.arrays.header(key)
        if tuple(found_shape) != tuple(shape):
            raise self.error(key, f"must have shape {tuple(shape)}; got {tuple(found_shape)}")
        if found_dtype != dtype:
            raise self.error(key, f"must be stored as {dtype}; got {found_dtype}")
        value = self.arrays[key]
        if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
            raise self.error(key, "holds NaN or inf values")
        return value

    def count(self, key: str) -> int:
        """A non-negative integer stored as an int64 tensor of shape (1,)."""
        value = int(self.tensor(key, (1,), "int64")[0])
        if value < 0:
            raise self.error(key, f"must be a count (at least 0); got {value}")
        return value

    def distribution(self, key: str, n_classes: int, positive: bool) -> np.ndarray:
        """A probability vector of length C; ``positive``: no zero entry either."""
        value = self.tensor(key, (n_classes,))
        try:
            check_distribution(value, n_classes, key)
        except ValueError as err:
            raise self.error(key, f"is not a probability vector ({err})") from err
        if positive and value.min() <= 0:
            raise self.error(key, f"must be positive for every class; got {value.tolist()}")
        return value

    def encoder(self) -> Any:
        """The saved :class:`~adaptable.encoding.Encoder` (metadata ``encoder``), checked: the
        column names, one mean and one positive scale per numerical column, sorted distinct
        categories per categorical column, and the schema these give."""
        from adaptable.encoding import Encoder

        state = self.field("encoder", dict)
        problem = encoder_problem(state)
        if problem is not None:
            raise self.error("encoder", f"cannot be read ({problem})")
        try:
            return Encoder.from_dict(state)
        except (KeyError, TypeError, ValueError, IndexError) as err:
            raise self.error("encoder", f"cannot be read ({err})") from err

    def prefixed(self, prefix: str) -> Tensors:
        """The tensors whose key starts with ``prefix``, by the rest of their key; each counts
        as read once its data is."""
        return self.arrays.with_prefix(prefix)

    def tensors_under(self, prefix: str, kinds: Mapping[str, str]) -> dict[str, np.ndarray]:
        """Every tensor whose key starts with ``prefix``, read, by the rest of its key: each
        must be one ``kinds`` names, stored as its kind (``"f"``: floats, all finite; ``"i"``:
        integers), checked from the header before its data is read.

        Raises:
            ValueError: naming the first tensor of no listed key, of another kind, or holding
                NaN or inf.

        Example:
            >>> reader = StateReader("f", '{"format": "x"}', {"a.n": np.ones(2)}, ["x"])
            >>> reader.tensors_under("a.", {"n": "f"})["n"].tolist()
            [1.0, 1.0]
        """
        read: dict[str, np.ndarray] = {}
        for key in sorted(k for k in self.arrays if k.startswith(prefix)):
            name = key.removeprefix(prefix)
            kind = kinds.get(name)
            if kind is None:
                raise self.error(key, "is not part of an AdapTable file")
            dtype = np.dtype(self.arrays.header(key)[1])
            if dtype.kind not in _KINDS[kind][0]:
                raise self.error(key, f"must be stored as {_KINDS[kind][1]}; got {dtype.name}")
            value = self.arrays[key]
            if kind == "f" and not np.all(np.isfinite(value)):
                raise self.error(key, "holds NaN or inf values")
            read[name] = value
        return read

    def no_unexpected_tensors(self) -> None:
        """Refuse a tensor that no part read."""
        extra = sorted(set(self.arrays) - self.used)
        if extra:
            raise self.error(extra[0], "is not part of an AdapTable file")


def _release(match: re.Match[str]) -> tuple[int, int, int]:
    major, minor, patch = match.group(1, 2, 3)
    return int(major), int(minor), int(patch or 0)


def _depth(value: Any) -> int:
    """How deep lists and objects nest in a parsed JSON value (iteratively: no recursion)."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        item, level = pending.pop()
        if isinstance(item, list | dict):
            deepest = max(deepest, level)
            if level > MAX_METADATA_DEPTH:
                return level
            children = item.values() if isinstance(item, dict) else item
            pending.extend((child, level + 1) for child in children)
    return deepest


#: a JSON object key, a string, or a bracket
_TOKEN = re.compile(r'("(?:[^"\\]|\\.)*")\s*:|"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _deep_field(raw: str) -> str:
    """The top-level key of the JSON text ``raw`` under which nesting gets too deep (for the
    message where the parser itself ran out of recursion)."""
    depth, key = 0, "metadata"
    for token in _TOKEN.finditer(raw):
        text = token.group(0)
        if token.group(1) is not None:
            if depth == 1:
                key = json.loads(token.group(1))
        elif text in "[{":
            depth += 1
            if depth > MAX_METADATA_DEPTH + 1:
                return key
        elif text in "]}":
            depth -= 1
    return key


_ENCODER_KEYS = {"numerical", "categorical", "mean", "scale", "categories", "positional", "schema"}


def is_column_name(name: Any) -> bool:
    """Whether an Encoder's saved state holds ``name`` as a column name (a JSON string or
    number; a name that is None is saved as NaN)."""
    return isinstance(name, str | int | float) and not isinstance(name, bool)


def encoder_problem(state: dict[str, Any]) -> str | None:
    """What is wrong with an Encoder's saved state (``Encoder.to_dict``), or ``None``."""
    if set(state) != _ENCODER_KEYS:
        return f"must hold exactly the keys {sorted(_ENCODER_KEYS)}; got {sorted(state)}"
    numerical, categorical = state["numerical"], state["categorical"]
    for name in ("numerical", "categorical"):
        names = state[name]
        if not isinstance(names, list) or not all(map(is_column_name, names)):
            return f"{name} must be a list of column names"
    if len({*map(repr, numerical), *map(repr, categorical)}) != len(numerical) + len(categorical):
        return "names a column twice"
    if not isinstance(state["positional"], bool):
        return f"positional must be true or false; got {state['positional']!r}"
    for name in ("mean", "scale"):
        values = state[name]
        if (
            not isinstance(values, list)
            or len(values) != len(numerical)
            or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
            or not all(math.isfinite(v) for v in values)
        ):
            return f"{name} must hold one finite number per numerical column ({len(numerical)})"
    if any(v <= 0 for v in state["scale"]):
        return "scale must be positive for every numerical column"
    categories = state["categories"]
    if not isinstance(categories, list) or len(categories) != len(categorical):
        return f"categories must hold one list per categorical column ({len(categorical)})"
    for j, cats in enumerate(categories):
        if (
            not isinstance(cats, list)
            or not cats
            or not all(isinstance(c, str) for c in cats)
            or any(a >= b for a, b in zip(cats, cats[1:], strict=False))
        ):
            return f"categories of column {j} must be distinct strings in sorted order"
    if state["schema"] != _schema(numerical, categorical, categories):
        return "schema disagrees with the columns and categories"
    return None


def _schema(numerical: list, categorical: list, categories: list) -> list[dict[str, Any]]:
    """The schema ``Encoder.to_dict`` writes for these columns, as JSON reads it back."""
    from adaptable.encoding import FeatureBlock

    blocks = [FeatureBlock(str(n), "numerical", i, i + 1) for i, n in enumerate(numerical)]
    start = len(numerical)
    for name, cats in zip(categorical, categories, strict=True):
        blocks.append(FeatureBlock(str(name), "categorical", start, start + len(cats), cats))
        start += len(cats)
    return [{**asdict(b), "categories": list(b.categories)} for b in blocks]

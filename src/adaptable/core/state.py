"""Checked access to a saved file's tensors and JSON metadata; every error names the field.

A file edited by hand or truncated must fail loudly, never give different predictions: each
part of :class:`~adaptable.core.estimator.AdapTable` reads its own saved state through a
:class:`StateReader`, which refuses, naming the field, anything missing, malformed or in
disagreement with the rest of the file, and remembers which tensors were read, so that
:meth:`StateReader.no_unexpected_tensors` refuses a tensor no part owns.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from adaptable.core.label_handler import check_distribution


class StateReader:
    """One file's metadata (a JSON object) and tensors, read field by field.

    Args:
        path: the file's name, for messages.
        raw: the metadata, as JSON text.
        arrays: the file's tensors by key.
        formats: the accepted values of the metadata's ``"format"`` field.

    Raises:
        ValueError: the metadata is not JSON, or its format is not one of ``formats``.
    """

    def __init__(
        self, path: str, raw: str, arrays: dict[str, np.ndarray], formats: Sequence[str]
    ) -> None:
        self.path = path
        self.arrays = arrays
        self.used: set[str] = set()
        try:
            self.meta = json.loads(raw)
        except json.JSONDecodeError as err:
            raise self.error("metadata", f"is not valid JSON ({err})") from err
        if not isinstance(self.meta, dict) or self.meta.get("format") not in formats:
            found = self.meta.get("format") if isinstance(self.meta, dict) else None
            raise ValueError(
                f"{path!r}: unknown AdapTable file format {found!r}; expected {formats[0]!r}."
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
            return np.arange(n_classes)
        classes = np.asarray(self.field("classes", list))
        if (
            classes.shape != (n_classes,)
            or len(np.unique(classes)) != n_classes
            or not np.array_equal(np.sort(classes), classes)
        ):
            raise self.error(
                "classes", f"must be {n_classes} distinct sorted labels; got {classes.tolist()}"
            )
        return classes

    def tensor(self, key: str, shape: tuple[int, ...]) -> np.ndarray:
        """A finite tensor of ``shape``; an empty one may be absent (safetensors drops those)."""
        self.used.add(key)
        if key not in self.arrays:
            if int(np.prod(shape)) == 0:
                return np.zeros(shape)
            raise self.error(key, "is missing")
        value = np.asarray(self.arrays[key])
        if value.shape != shape:
            raise self.error(key, f"must have shape {shape}; got {value.shape}")
        if not np.all(np.isfinite(value)):
            raise self.error(key, "holds NaN or inf values")
        return value

    def distribution(self, key: str, n_classes: int, positive: bool) -> np.ndarray:
        """A probability vector of length C; ``positive``: no zero entry either."""
        value = self.tensor(key, (n_classes,)).astype(np.float64)
        try:
            check_distribution(value, n_classes, key)
        except ValueError as err:
            raise self.error(key, f"is not a probability vector ({err})") from err
        if positive and value.min() <= 0:
            raise self.error(key, f"must be positive for every class; got {value.tolist()}")
        return value

    def encoder(self) -> Any:
        """The saved :class:`~adaptable.encoding.Encoder` (metadata ``encoder``)."""
        from adaptable.encoding import Encoder

        try:
            return Encoder.from_dict(self.field("encoder", dict))
        except (KeyError, TypeError, ValueError) as err:
            raise self.error("encoder", f"cannot be read ({err})") from err

    def prefixed(self, prefix: str) -> dict[str, np.ndarray]:
        """Every tensor whose key starts with ``prefix``, by the rest of its key."""
        out = {}
        for key, value in self.arrays.items():
            if key.startswith(prefix):
                self.used.add(key)
                out[key.removeprefix(prefix)] = value
        return out

    def no_unexpected_tensors(self) -> None:
        """Refuse a tensor that no part read."""
        extra = sorted(set(self.arrays) - self.used)
        if extra:
            raise self.error(extra[0], "is not part of an AdapTable file")

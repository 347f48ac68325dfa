"""The save file's digest: SHA-256 over its metadata and every tensor, stored in the metadata.

``AdapTable.save`` writes it as the metadata's ``digest`` field (``"sha256:<64 hex digits>"``);
``AdapTable.load`` recomputes it once every field has passed its own checks and refuses a file
whose digest does not match: a byte changed on disk, or an edit by hand that the field checks
could not tell from a file the code wrote. It guards against accident, not against someone
who rewrites the digest too. A file written before the digest existed holds none and is read
without this check.

What is hashed does not depend on how the file lays its parts out: the metadata as canonical
JSON (keys sorted, without the digest), then each tensor in the order of its key, as its key,
dtype, shape and little-endian bytes, each part preceded by its length.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

#: the metadata field that holds the digest
DIGEST_FIELD = "digest"
_PREFIX = "sha256:"
_FORM = re.compile(r"sha256:[0-9a-f]{64}")


def file_digest(metadata: Mapping[str, Any], tensors: Iterable[tuple[str, np.ndarray]]) -> str:
    """The digest of a file's metadata (as JSON reads it back; a ``digest`` entry is left out)
    and its tensors (``(key, array)`` pairs, in any order), as ``"sha256:<hex>"``.

    Raises:
        TypeError: metadata JSON cannot write.

    Example:
        >>> a = file_digest({"n": 2}, [("p", np.array([0.5, 0.5]))])
        >>> a == file_digest({"n": 2, "digest": "x"}, [("p", np.array([0.5, 0.5]))])
        True
        >>> a == file_digest({"n": 2}, [("p", np.array([0.5, 0.25]))])
        False
    """
    hasher = hashlib.sha256()

    def part(data: bytes) -> None:
        hasher.update(len(data).to_bytes(8, "little"))
        hasher.update(data)

    fields = {key: value for key, value in metadata.items() if key != DIGEST_FIELD}
    part(json.dumps(fields, sort_keys=True, separators=(",", ":")).encode())
    for key, array in sorted(tensors, key=lambda item: item[0]):
        value = np.ascontiguousarray(array)
        little = value.astype(value.dtype.newbyteorder("<"), copy=False)
        part(key.encode())
        part(f"{value.dtype.name}{value.shape}".encode())
        part(little.tobytes())
    return _PREFIX + hasher.hexdigest()


def is_digest(value: Any) -> bool:
    """Whether ``value`` is a digest as :func:`file_digest` writes it."""
    return isinstance(value, str) and _FORM.fullmatch(value) is not None

"""Encoding helpers of the run store: blob compression, datetimes, compressed JSON columns."""

from __future__ import annotations

import hashlib
import zlib
from datetime import datetime
from typing import Literal

__all__ = [
    "Codec",
    "decode_blob",
    "encode_blob",
    "from_iso",
    "pack_text",
    "sha256_hex",
    "to_iso",
    "unpack_text",
    "when",
]

Codec = Literal["raw", "zlib"]
"""How a blob's bytes are kept: as they are, or zlib-compressed."""

_MIN_COMPRESS = 512
"""Blobs shorter than this many bytes are kept raw (compression would not pay)."""


def sha256_hex(data: bytes) -> str:
    """sha256 hex digest of ``data`` (the blob key)."""
    return hashlib.sha256(data).hexdigest()


def encode_blob(data: bytes) -> tuple[Codec, bytes]:
    """Compress ``data`` when that makes it smaller.

    Returns:
        ``(codec, stored bytes)``.
    """
    if len(data) >= _MIN_COMPRESS:
        packed = zlib.compress(data, 6)
        if len(packed) < len(data):
            return "zlib", packed
    return "raw", data


def decode_blob(codec: str, stored: bytes, *, key: str) -> bytes:
    """Undo :func:`encode_blob`.

    Args:
        codec: ``raw`` or ``zlib``.
        stored: the stored bytes.
        key: the blob's sha256 (named in errors).

    Raises:
        ValueError: unknown codec or corrupt data, naming the blob.
    """
    if codec == "raw":
        return bytes(stored)
    if codec == "zlib":
        try:
            return zlib.decompress(stored)
        except zlib.error as exc:
            raise ValueError(f"blob {key}: corrupt zlib data ({exc})") from exc
    raise ValueError(f"blob {key}: unknown codec {codec!r}")


def pack_text(text: str) -> bytes:
    """Compress a (JSON) text column."""
    return zlib.compress(text.encode("utf-8"), 6)


def unpack_text(stored: bytes | None) -> str:
    """Undo :func:`pack_text`; ``None`` gives ``""``."""
    if not stored:
        return ""
    return zlib.decompress(stored).decode("utf-8")


def to_iso(value: datetime | None) -> str | None:
    """A datetime as ISO 8601 text (None stays None)."""
    return value.isoformat() if value is not None else None


def from_iso(value: str | None) -> datetime | None:
    """Parse ISO 8601 text written by :func:`to_iso` (None stays None)."""
    return datetime.fromisoformat(value) if value is not None else None


def when(value: str) -> datetime:
    """Parse a NOT NULL ISO 8601 column written by :func:`to_iso`."""
    return datetime.fromisoformat(value)

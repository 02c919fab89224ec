"""The one page-cursor codec: a JSON position as URL-safe base64 without padding. A cursor is opaque to the
caller and carries no data of its own; one that does not decode to the expected position is the caller's
400 naming `cursor`.

Two shapes use it:
- a keyset position, a tuple of strings (`encode_position`): the learning weights and the assembly log;
- a tenant-bound cursor (`encode_cursor`): JSON naming what it pages (`kind`), a fingerprint of the tenant
  (so a cursor from another tenant, or a hand-made one, is refused instead of paging something else) and
  the position — the entity listing, the tenant export and search pages.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from core.errors import InvalidInputError

_NOT_OURS = "not a cursor returned by this listing"


def to_cursor(value: Any) -> str:
    """A JSON-serialisable value as an opaque, URL-safe cursor (compact JSON, sorted keys)."""
    raw = json.dumps(value, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def from_cursor(cursor: str) -> Any:
    """The value inside a cursor made by `to_cursor`; ValueError when it is not base64url JSON."""
    return json.loads(base64.urlsafe_b64decode(cursor.encode() + b"=" * (-len(cursor) % 4)))


def encode_position(position: tuple[str, ...]) -> str:
    """The cursor for a keyset position."""
    return to_cursor(list(position))


def decode_position(cursor: str, length: int | None = None) -> tuple[str, ...]:
    """The keyset position of a cursor made by `encode_position` (of `length` strings when given);
    InvalidInputError otherwise."""
    try:
        position = from_cursor(cursor)
    except ValueError as exc:
        raise InvalidInputError("invalid cursor", {"cursor": _NOT_OURS}) from exc
    if not (isinstance(position, list) and position and all(isinstance(p, str) for p in position)):
        raise InvalidInputError("invalid cursor", {"cursor": _NOT_OURS})
    if length is not None and len(position) != length:
        raise InvalidInputError("invalid cursor", {"cursor": _NOT_OURS})
    return tuple(position)


def tenant_mark(tenant_id: str) -> str:
    """A short fingerprint of the tenant, so a cursor is only accepted by the tenant it was issued to."""
    return hashlib.sha256(tenant_id.encode()).hexdigest()[:16]


def encode_cursor(kind: str, tenant_id: str, position: dict[str, Any]) -> str:
    """An opaque cursor for `position` (JSON-serialisable) of a `kind` listing, bound to the tenant."""
    return to_cursor({"k": kind, "t": tenant_mark(tenant_id), "p": position})


def decode_cursor(kind: str, tenant_id: str, cursor: str) -> dict[str, Any]:
    """The position inside `cursor`; InvalidInputError naming `cursor` when it is not one of ours."""
    bad = InvalidInputError(
        "invalid cursor", {"cursor": "is not a cursor this listing issued to this tenant"}
    )
    try:
        payload = from_cursor(cursor)
    except ValueError as exc:
        raise bad from exc
    if (
        not isinstance(payload, dict)
        or payload.get("k") != kind
        or payload.get("t") != tenant_mark(tenant_id)
    ):
        raise bad
    position = payload.get("p")
    if not isinstance(position, dict):
        raise bad
    return position

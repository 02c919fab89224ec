"""Opaque page cursors for listings the service pages itself: a keyset position (a tuple of strings)
as URL-safe base64 JSON. A cursor that does not decode to a position is the caller's 400."""

from __future__ import annotations

import base64
import binascii
import json

from core.errors import InvalidInputError


def encode_position(position: tuple[str, ...]) -> str:
    """The cursor for a keyset position."""
    return base64.urlsafe_b64encode(json.dumps(list(position)).encode()).decode().rstrip("=")


def decode_position(cursor: str) -> tuple[str, ...]:
    """The keyset position of a cursor made by `encode_position`; InvalidInputError otherwise."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        position = json.loads(raw)
    except (binascii.Error, ValueError) as exc:
        raise InvalidInputError(
            "invalid cursor", {"cursor": "not a cursor returned by this listing"}
        ) from exc
    if not (isinstance(position, list) and position and all(isinstance(p, str) for p in position)):
        raise InvalidInputError("invalid cursor", {"cursor": "not a cursor returned by this listing"})
    return tuple(position)

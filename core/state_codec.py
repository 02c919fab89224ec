"""Encoding shared by the StateStore adapters: assembly sources and used ids as JSON, opaque log cursors."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from core.cursor import decode_position, encode_position
from core.state import AssemblySource


def dump_sources(sources: Sequence[AssemblySource]) -> str:
    """The sources an assembly returned, as a compact JSON array."""
    return json.dumps(
        [{"id": s.id, "source": s.source, "score": s.score, "tokens": s.tokens} for s in sources],
        separators=(",", ":"),
    )


def load_sources(text: str) -> tuple[AssemblySource, ...]:
    """The inverse of `dump_sources`."""
    return tuple(
        AssemblySource(
            id=str(s["id"]), source=str(s["source"]), score=float(s["score"]), tokens=int(s["tokens"])
        )
        for s in json.loads(text)
    )


def dump_ids(ids: Sequence[str] | None) -> str | None:
    """Used ids as a JSON array (None stays None: no feedback yet)."""
    return None if ids is None else json.dumps(list(ids), separators=(",", ":"))


def load_ids(text: str | None) -> tuple[str, ...] | None:
    """The inverse of `dump_ids`."""
    return None if text is None else tuple(str(i) for i in json.loads(text))


def dump_json(value: Any) -> str:
    """Any JSON value, compact and with sorted keys (stable bytes for equal values)."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def encode_log_cursor(created_at: str, assembly_id: str) -> str:
    """The cursor after the log row (created_at, assembly_id)."""
    return encode_position((created_at, assembly_id))


def decode_log_cursor(cursor: str) -> tuple[str, str]:
    """(created_at, assembly_id) of a log cursor; InvalidInputError when it is not one."""
    created_at, assembly_id = decode_position(cursor, length=2)
    return created_at, assembly_id

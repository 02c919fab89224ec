"""Integrity and trust of memories, checked before a memory is returned (docs/conformance.md#memory-integrity,
docs/conformance.md#memory-trust).

Integrity: a memory's content is hashed when it is written (sha256 of its content as indexed: the text of
its `content` field, surrounding whitespace trimmed — what a result shows as its title) and the hash is
stored in its metadata (`content_sha256`). Whenever a memory is served (a search result, an assembled
item) the content being served is hashed again; a memory whose content no longer matches is left out,
logged and counted (`Integrity.tampered`), never shown. A memory written before hashes were kept has no
hash and is served unchecked. The check covers the content; a tampered category or tag is not caught.

Trust: a memory's `trust_level` is `user` (written by a person) or `agent` (written by an agent), and
search filters on it; we order them user > agent and add `external` below both (text an agent copied from
outside: the least trusted). `min_trust` keeps memories at or above a level, inside both retrievers
(`trust_rank`, indexed metadata); a memory without a level ranks lowest.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Mapping
from typing import Any

from core.errors import InvalidInputError
from core.models import Condition, EntityKey
from core.search.filters import NUMBER

_log = logging.getLogger(__name__)

CONTENT_HASH = "content_sha256"
TRUST_LEVEL = "trust_level"
TRUST_RANK = "trust_rank"
# Least trusted first: `agent` and `user`, and `external` below them (docs/conformance.md#memory-trust).
TRUST_LEVELS = ("external", "agent", "user")
UNRANKED = -1  # a memory without a trust level: below every level a request can ask for


def content_digest(content: str) -> str:
    """sha256 (hex) of a memory's content as indexed and served."""
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def intact(metadata: Mapping[str, Any], served_content: str) -> bool:
    """Whether the content being served is the content hashed at write (no stored hash: unchecked)."""
    stored = metadata.get(CONTENT_HASH)
    return not isinstance(stored, str) or stored == content_digest(served_content)


def trust_rank(level: Any) -> int:
    """The position of a trust level in TRUST_LEVELS (UNRANKED for none)."""
    return TRUST_LEVELS.index(level) if level in TRUST_LEVELS else UNRANKED


def trust_floor(min_trust: str) -> Condition:
    """The retrieval condition keeping memories trusted at least as `min_trust`."""
    return Condition(TRUST_RANK, "gte", (trust_rank(min_trust),), NUMBER)


def check_trust(body: Mapping[str, Any], path: str = "") -> None:
    """InvalidInputError when a memory's `trust_level` is not one of TRUST_LEVELS."""
    level = body.get(TRUST_LEVEL)
    if level is not None and level not in TRUST_LEVELS:
        raise InvalidInputError(
            "invalid trust_level", {path + TRUST_LEVEL: "must be one of: " + ", ".join(TRUST_LEVELS)}
        )


class Integrity:
    """Counts (and logs) memories left out because their content no longer matches its hash."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.tampered = 0

    def served(self, tenant_id: str, key: EntityKey, metadata: Mapping[str, Any], content: str) -> bool:
        """True when the memory may be served; a mismatch is logged, counted and answered False."""
        if intact(metadata, content):
            return True
        with self._lock:
            self.tampered += 1
        _log.warning("memory %s of tenant %s left out: its content does not match its hash", key, tenant_id)
        return False

"""The metadata an entity is indexed with: its type's filterable fields, and for a memory the fields the
service keeps for it (core/memory/relevance.py: uses, last use, the relevance key; core/memory/integrity.py:
the content's hash, the trust level's rank)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.indexing.entity_types import EntityType
from core.memory.integrity import (
    CONTENT_HASH,
    TRUST_LEVEL,
    TRUST_RANK,
    content_digest,
    trust_rank,
)
from core.memory.relevance import RELEVANCE_KEY, memory_metadata
from core.models import StoredEntity
from core.text import flatten

MEMORY_TYPE = "memory"
# What the service stores beside a memory's metadata for its own filters and checks, never shown to a caller
# (search hits, GET, listings, context blocks, MCP: tests/handlers/test_memory_exposure.py). The counters
# `access_count` / `last_accessed_at` are documented and shown (docs/api.md, Memories).
INTERNAL_METADATA = frozenset({RELEVANCE_KEY, CONTENT_HASH, TRUST_RANK})


def public_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """`metadata` without the service's internal keys (INTERNAL_METADATA)."""
    return {k: v for k, v in metadata.items() if k not in INTERNAL_METADATA}


def indexed_metadata(
    etype: EntityType, body: Mapping[str, Any], prior: StoredEntity | None, created_at: str
) -> dict[str, Any]:
    """The filterable fields of `body`; a memory's also carry what the service keeps from `prior`."""
    metadata = {f: body[f] for f in etype.filterable if body.get(f) is not None}
    if etype.name != MEMORY_TYPE:
        return metadata
    kept = prior.metadata if prior is not None and not prior.deleted else None
    out = memory_metadata(metadata, kept, created_at)
    out[CONTENT_HASH] = content_digest(flatten(body.get(etype.title_field)).strip())
    out[TRUST_RANK] = trust_rank(body.get(TRUST_LEVEL))
    return out

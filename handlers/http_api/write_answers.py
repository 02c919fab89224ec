"""The answer to one entity write, the same from the HTTP routes and the MCP tools: shaped as
WriteResponse here, then reported (logged, counted per tenant) by handlers/observability/observations.py."""

from __future__ import annotations

from core.indexing.drafts import WriteResult
from core.models import WriteOutcome
from core.search.search_api import WriteResponse


def written(result: WriteResult) -> WriteResponse:
    """The answer to one applied (or duplicate) write."""
    duplicate = result.outcome is WriteOutcome.DUPLICATE
    return WriteResponse(
        entity_type=result.key.entity_type,
        entity_id=result.key.entity_id,
        version=result.version,
        outcome="duplicate" if duplicate else "applied",
        reembedded=result.reembedded,
        message="already at this version; nothing changed" if duplicate else None,
        unindexed_fields=list(result.unindexed_fields),
    )

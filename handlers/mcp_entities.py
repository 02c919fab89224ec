"""Entity writes and listing limits for the MCP tools, shaped exactly like the HTTP routes'."""

from __future__ import annotations

from typing import Any

from core.errors import InvalidInputError
from core.indexing.catalog import MAX_ENTITY_PAGE
from core.search.search_api import WriteResponse
from handlers.routes.entities import written
from infra.wiring import Container


def checked_page_size(limit: int) -> int:
    """GET /entities' bound on `limit` (1..MAX_ENTITY_PAGE), with the same 400 text."""
    if not 1 <= limit <= MAX_ENTITY_PAGE:
        raise InvalidInputError(
            "request is invalid: limit", {"limit": f"must be between 1 and {MAX_ENTITY_PAGE}"}
        )
    return limit


def upsert(
    c: Container, tenant: str, entity_type: str, entity_id: str, fields: dict[str, Any], partial: bool
) -> WriteResponse:
    """PUT (or PATCH with `partial`) of one entity; a stale version is the HTTP API's 409 text."""
    now = c.clock.now()
    if partial:
        return written("patch", tenant, c.indexing.patch(tenant, entity_type, entity_id, fields, now))
    return written("put", tenant, c.indexing.put(tenant, entity_type, entity_id, fields, now))


def delete(c: Container, tenant: str, entity_type: str, entity_id: str, version: int | None) -> WriteResponse:
    """DELETE of one entity (`version` as the HTTP query parameter; the service bounds it)."""
    return written(
        "delete", tenant, c.indexing.delete(tenant, entity_type, entity_id, version, c.clock.now())
    )

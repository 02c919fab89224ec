"""The MCP entity tools (handlers/mcp/server.py): get_entity, list_entities, upsert_entity and delete_entity,
with writes and listing limits shaped exactly like the HTTP routes'."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from core.errors import InvalidInputError
from core.indexing.catalog import DEFAULT_ENTITY_PAGE, MAX_ENTITY_PAGE, EntityOut, EntityPage
from core.indexing.entity_writes import Queued
from core.payload import INT64_MAX
from core.search.search_api import WriteResponse
from handlers.http_api.openapi_models import Job as JobOut
from handlers.http_api.write_answers import written
from handlers.mcp.arguments import Act, Cursor, EntityId, EntityType
from handlers.mcp.tools import DELETE, READ, UPSERT
from handlers.observability.observations import entity_write
from infra.wiring.root import Container


def checked_page_size(limit: int) -> int:
    """GET /entities' bound on `limit` (1..MAX_ENTITY_PAGE), with the same 400 text."""
    if not 1 <= limit <= MAX_ENTITY_PAGE:
        raise InvalidInputError(
            "request is invalid: limit", {"limit": f"must be between 1 and {MAX_ENTITY_PAGE}"}
        )
    return limit


class UpsertAnswer(WriteResponse):
    """upsert_entity's answer: the write's (as PUT / PATCH answer it), or for an entity as large as a bulk
    job, `outcome: queued` with the job that embeds it (its progress: GET /jobs/{job_id})."""

    version: int | None = Field(  # type: ignore[assignment]
        description="The version written (queued: the one the write carries, null when the job assigns it)"
    )
    outcome: Literal["applied", "stale", "duplicate", "queued"]  # type: ignore[assignment]
    job: JobOut | None = Field(default=None, description="The write job, when the write was queued")


def upsert(
    c: Container, tenant: str, entity_type: str, entity_id: str, fields: dict[str, Any], partial: bool
) -> UpsertAnswer:
    """PUT (or PATCH with `partial`) of one entity through the write use case the HTTP routes use; a stale
    version is the HTTP API's 409 text."""
    if partial:
        done = c.writes.patch(tenant, entity_type, entity_id, fields)
    else:
        put = c.writes.put(tenant, entity_type, entity_id, fields)
        if isinstance(put, Queued):
            version = fields.get("version")
            return UpsertAnswer(
                entity_type=entity_type,
                entity_id=entity_id,
                version=version if isinstance(version, int) else None,
                outcome="queued",
                reembedded=True,
                message="queued as a job: as large as a bulk job, embedded in the background",
                job=JobOut.model_validate(put.job.to_json()),
            )
        done = put
    answer = written(done)
    entity_write("patch" if partial else "put", tenant, answer, c.settings.tenant_metrics)
    return UpsertAnswer.model_validate(answer.model_dump())


def delete(c: Container, tenant: str, entity_type: str, entity_id: str, version: int | None) -> WriteResponse:
    """DELETE of one entity (`version` as the HTTP query parameter; the service bounds it)."""
    answer = written(c.writes.delete(tenant, entity_type, entity_id, version))
    entity_write("delete", tenant, answer, c.settings.tenant_metrics)
    return answer


def register_entity_tools(server: MCPServer, act: Act) -> None:
    """get_entity, list_entities, upsert_entity and delete_entity."""
    _entity_read_tools(server, act)
    _entity_write_tools(server, act)


def _entity_read_tools(server: MCPServer, act: Act) -> None:
    @server.tool(
        description="A stored entity: fields, version, whether embedded (GET /entities/{type}/{id}).",
        annotations=READ,
    )
    def get_entity(ctx: Context, entity_type: EntityType, entity_id: EntityId) -> EntityOut:
        return act(ctx, "read", lambda w, c: c.catalog.get(w.tenant_id, entity_type, entity_id))

    @server.tool(
        description="The tenant's entities, newest first, with cursor paging (GET /entities).",
        annotations=READ,
    )
    def list_entities(
        ctx: Context,
        entity_type: Annotated[str | None, Field(description="Only this type (default: every type)")] = None,
        limit: Annotated[
            int, Field(description="Entities per page", ge=1, le=MAX_ENTITY_PAGE)
        ] = DEFAULT_ENTITY_PAGE,
        cursor: Cursor = None,
    ) -> EntityPage:
        return act(
            ctx,
            "read",
            lambda w, c: c.catalog.list(w.tenant_id, entity_type, checked_page_size(limit), cursor),
        )


def _entity_write_tools(server: MCPServer, act: Act) -> None:
    @server.tool(
        description="Create or replace an entity (PUT /entities/{type}/{id}); `partial: true` updates "
        "only the given fields (PATCH). A `version` older than the stored one is refused; the same call "
        "again changes nothing. An entity as large as a bulk job is checked at once and embedded by a job: "
        "the answer is then the job (job_id, status).",
        annotations=UPSERT,
    )
    def upsert_entity(
        ctx: Context,
        entity_type: EntityType,
        entity_id: EntityId,
        fields: Annotated[
            dict[str, Any],
            Field(
                description="The entity's fields (each type's are listed by handlers/mcp/fields.py)",
                examples=[{"content": "The deploy needs a free cache volume", "version": 1}],
            ),
        ],
        partial: Annotated[bool, Field(description="true: change only the given fields")] = False,
    ) -> UpsertAnswer:
        return act(ctx, "write", lambda w, c: upsert(c, w.tenant_id, entity_type, entity_id, fields, partial))

    @server.tool(description="Delete an entity (DELETE /entities/{type}/{id}).", annotations=DELETE)
    def delete_entity(
        ctx: Context,
        entity_type: EntityType,
        entity_id: EntityId,
        version: Annotated[
            int | None, Field(description="The delete's version (default: the next one)", ge=0, le=INT64_MAX)
        ] = None,
    ) -> WriteResponse:
        return act(ctx, "write", lambda w, c: delete(c, w.tenant_id, entity_type, entity_id, version))

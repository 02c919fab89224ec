"""PUT | PATCH | DELETE /entities/{type}/{id}, POST /entities (bulk) and POST /entities/ndjson (a corpus
as one job)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from core.errors import InvalidInputError, StaleVersionError
from core.indexing.entity_models import entity_models
from core.models import WriteOutcome
from core.payload import INT64_MAX
from core.search.search_api import BulkRequest, BulkResponse, WriteResponse
from handlers._observability import logger
from handlers.gate import body_file
from handlers.routes.common import accepted, caller, only_parameters, services, written_or_queued
from handlers.tenant_metrics import TenantMetric, count

if TYPE_CHECKING:
    from core.indexing.drafts import WriteResult

router = Router()


def _written(action: str, tenant_id: str, result: WriteResult) -> WriteResponse:
    """Log one write and shape its response; a stale write is a 409 naming the stored version."""
    applied = int(result.outcome is WriteOutcome.APPLIED)
    count(TenantMetric.WRITES, tenant_id, applied, services().settings.tenant_metrics)
    logger.info(
        f"entity {action}",
        extra={
            "tenant": tenant_id,
            "key": str(result.key),
            "outcome": result.outcome.value,
            "reembedded": result.reembedded,
        },
    )
    if result.outcome is WriteOutcome.STALE:
        stored = result.stored_version if result.stored_version is not None else result.version
        raise StaleVersionError(str(result.key), stored, result.version)
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


@router.put(
    "/entities/<entity_type>/<entity_id>",
    summary="Create or replace an entity; one above the async size becomes a job (202, GET /jobs/{id})",
    tags=["entities"],
    operation_id="putEntity",
    responses=written_or_queued(WriteResponse),
)
def put_entity(
    entity_type: str, entity_id: str, body: Annotated[dict[str, Any], Body()]
) -> Response[dict[str, Any]]:
    tenant = caller(router, "write").tenant_id
    c = services()
    item = {**body, "type": entity_type, "id": entity_id}
    costs = c.jobs.costs("bulk", [item])
    if not c.jobs.is_large(costs):
        result = c.indexing.put(tenant, entity_type, entity_id, body, c.clock.now())
    else:  # as large as a bulk job: checked now (400, 409, stale, duplicate answered at once), embedded by a job
        early = c.indexing.check_put(tenant, entity_type, entity_id, body, c.clock.now())
        if early is None:
            return accepted(c.jobs.submit(tenant, "bulk", [item], costs))
        result = early
    done = _written("put", tenant, result)
    return Response(200, content_types.APPLICATION_JSON, done.model_dump(mode="json"))


@router.patch(
    "/entities/<entity_type>/<entity_id>",
    summary="Update some fields",
    tags=["entities"],
    operation_id="patchEntity",
)
def patch_entity(entity_type: str, entity_id: str, body: Annotated[dict[str, Any], Body()]) -> WriteResponse:
    tenant = caller(router, "write").tenant_id
    c = services()
    return _written("patch", tenant, c.indexing.patch(tenant, entity_type, entity_id, body, c.clock.now()))


@router.delete(
    "/entities/<entity_type>/<entity_id>",
    summary="Delete an entity",
    tags=["entities"],
    operation_id="deleteEntity",
)
def delete_entity(
    entity_type: str, entity_id: str, version: Annotated[int | None, Query(ge=0, le=INT64_MAX)] = None
) -> WriteResponse:
    tenant = caller(router, "write").tenant_id
    c = services()
    return _written(
        "delete", tenant, c.indexing.delete(tenant, entity_type, entity_id, version, c.clock.now())
    )


@router.post(
    "/entities",
    summary="Index entities: small requests at once (200), larger ones as a job (202, GET /jobs/{id})",
    tags=["entities"],
    operation_id="bulkWrite",
    responses=written_or_queued(BulkResponse),
)
def bulk(request: Annotated[BulkRequest, Body()]) -> Response[dict[str, Any]]:
    principal = caller(router, "write")
    c = services()
    entity_models(c.registry).check_items(request.items)  # the published BulkItem schema, else a 400
    costs = c.jobs.costs("bulk", request.items)
    if c.jobs.is_large(costs) or len(request.items) > c.settings.max_batch_items:
        return accepted(c.jobs.submit(principal.tenant_id, "bulk", request.items, costs))
    report = c.indexing.bulk(principal.tenant_id, request.items, c.clock.now())
    count(TenantMetric.WRITES, principal.tenant_id, report.indexed, c.settings.tenant_metrics)
    logger.info(
        "bulk",
        extra={
            "tenant": principal.tenant_id,
            "indexed": report.indexed,
            "stale": report.skipped_stale,
            "errors": len(report.errors),
        },
    )
    done = BulkResponse.model_validate(
        {
            "indexed": report.indexed,
            "skipped_stale": report.skipped_stale,
            "errors": report.errors,
            "unindexed_fields": sorted(report.unindexed_fields),
        }
    )
    return Response(200, content_types.APPLICATION_JSON, done.model_dump(mode="json"))


@router.post(
    "/entities/ndjson",
    summary="Index a whole corpus, one entity a line (NDJSON), as ONE job (202, GET /jobs/{id}); a bad line "
    "is reported with its number and the others indexed",
    tags=["entities"],
    operation_id="uploadEntities",
)
def upload(
    entity_type: Annotated[str | None, Query(alias="type", description="Every line's type (else its own `type`)")] = None,
    id_field: Annotated[str | None, Query(description="The line field holding the entity id (BEIR: _id)")] = None,
    field_map: Annotated[str | None, Query(alias="map", description="`title=title,text=abstract`: entity field = line field; nothing else is taken")] = None,
) -> Response[dict[str, Any]]:  # fmt: skip
    from infra.record_files import item_mapper, parse_field_map

    principal = caller(router, "write")
    only_parameters(router, "type", "id_field", "map")
    c = services()
    to_item = None
    if entity_type is not None or id_field is not None or field_map is not None:
        try:
            fields = parse_field_map(field_map) if field_map is not None else None
        except ValueError as exc:
            raise InvalidInputError(f"invalid map: {exc}", {"map": str(exc)}) from exc
        kind = c.registry.resolve(entity_type, path="type") if entity_type is not None else None
        to_item = item_mapper(kind, id_field or "id", fields)
    job = c.jobs.submit_lines(principal.tenant_id, body_file(router.current_event.raw_event), to_item)
    return accepted(job)


written = _written  # the MCP server's entity tools shape their answers with the same helper

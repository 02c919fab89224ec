"""PUT | PATCH | DELETE /entities/{type}/{id}, POST /entities (bulk) and POST /entities/ndjson (a corpus
as one job)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from core.errors import InvalidInputError
from core.indexing.entity_writes import Queued
from core.payload import INT64_MAX
from core.search.search_api import BulkRequest, BulkResponse, WriteResponse
from handlers.http_api.gate import body_file
from handlers.http_api.routes.common import accepted, caller, only_parameters, services, written_or_queued
from handlers.http_api.write_answers import written
from handlers.observability.powertools import logger
from handlers.observability.tenant_metrics import TenantMetric, count

router = Router()


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
    done = services().writes.put(tenant, entity_type, entity_id, body)
    if isinstance(done, Queued):
        return accepted(done.job)
    answer = written("put", tenant, done, services().settings.tenant_metrics)
    return Response(200, content_types.APPLICATION_JSON, answer.model_dump(mode="json"))


@router.patch(
    "/entities/<entity_type>/<entity_id>",
    summary="Update some fields",
    tags=["entities"],
    operation_id="patchEntity",
)
def patch_entity(entity_type: str, entity_id: str, body: Annotated[dict[str, Any], Body()]) -> WriteResponse:
    tenant = caller(router, "write").tenant_id
    c = services()
    return written(
        "patch", tenant, c.writes.patch(tenant, entity_type, entity_id, body), c.settings.tenant_metrics
    )


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
    done = c.writes.delete(tenant, entity_type, entity_id, version)
    return written("delete", tenant, done, c.settings.tenant_metrics)


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
    report = c.writes.bulk(principal.tenant_id, request.items)
    if isinstance(report, Queued):
        return accepted(report.job)
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
    from infra.user_files.record_files import item_mapper, parse_field_map

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

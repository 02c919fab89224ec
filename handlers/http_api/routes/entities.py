"""PUT | PATCH | DELETE /entities/{type}/{id}, POST /entities (bulk) and POST /entities/ndjson (a corpus
as one job)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from core.indexing.entity_writes import Queued
from core.payload import INT64_MAX
from core.search.search_api import BulkRequest, BulkResponse, WriteResponse
from handlers.http_api.gate import body_file
from handlers.http_api.routes.common import accepted, caller, only_parameters, services, written_or_queued
from handlers.http_api.write_answers import written
from handlers.observability.observations import bulk_written, entity_written, job_queued, observed

router = Router()


@router.put(
    "/entities/<entity_type>/<entity_id>",
    summary="Create or replace an entity; one above the async size becomes a job (202, GET /jobs/{id})",
    tags=["entities"],
    operation_id="putEntity",
    responses=written_or_queued(WriteResponse),
)
@observed(router, entity_written("put"))
def put_entity(
    entity_type: str, entity_id: str, body: Annotated[dict[str, Any], Body()]
) -> Response[dict[str, Any]]:
    done = services().writes.put(caller(router, "write").tenant_id, entity_type, entity_id, body)
    if isinstance(done, Queued):
        return accepted(done.job)
    return Response(200, content_types.APPLICATION_JSON, written(done).model_dump(mode="json"))


@router.patch(
    "/entities/<entity_type>/<entity_id>",
    summary="Update some fields",
    tags=["entities"],
    operation_id="patchEntity",
)
@observed(router, entity_written("patch"))
def patch_entity(entity_type: str, entity_id: str, body: Annotated[dict[str, Any], Body()]) -> WriteResponse:
    return written(services().writes.patch(caller(router, "write").tenant_id, entity_type, entity_id, body))


@router.delete(
    "/entities/<entity_type>/<entity_id>",
    summary="Delete an entity",
    tags=["entities"],
    operation_id="deleteEntity",
)
@observed(router, entity_written("delete"))
def delete_entity(
    entity_type: str, entity_id: str, version: Annotated[int | None, Query(ge=0, le=INT64_MAX)] = None
) -> WriteResponse:
    return written(
        services().writes.delete(caller(router, "write").tenant_id, entity_type, entity_id, version)
    )


@router.post(
    "/entities",
    summary="Index entities: small requests at once (200), larger ones as a job (202, GET /jobs/{id})",
    tags=["entities"],
    operation_id="bulkWrite",
    responses=written_or_queued(BulkResponse),
)
@observed(router, bulk_written)
def bulk(request: Annotated[BulkRequest, Body()]) -> Response[dict[str, Any]]:
    report = services().writes.bulk(caller(router, "write").tenant_id, request.items)
    if isinstance(report, Queued):
        return accepted(report.job)
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
@observed(router, job_queued)
def upload(
    entity_type: Annotated[str | None, Query(alias="type", description="Every line's type (else its own `type`)")] = None,
    id_field: Annotated[str | None, Query(description="The line field holding the entity id (BEIR: _id)")] = None,
    field_map: Annotated[str | None, Query(alias="map", description="`title=title,text=abstract`: entity field = line field; nothing else is taken")] = None,
) -> Response[dict[str, Any]]:  # fmt: skip
    tenant = caller(router, "write").tenant_id
    only_parameters(router, "type", "id_field", "map")
    upload = body_file(router.current_event.raw_event)
    return accepted(services().jobs.submit_upload(tenant, upload, entity_type, id_field, field_map))

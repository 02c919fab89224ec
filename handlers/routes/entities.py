"""PUT | PATCH | DELETE /entities/{type}/{id} and POST /entities (bulk)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from core.errors import PayloadTooLargeError, StaleVersionError
from core.models import WriteOutcome
from core.schemas import BulkRequest, BulkResponse, WriteResponse
from core.service.indexing import WriteResult
from handlers._observability import logger
from handlers.routes.common import caller, services

router = Router()


def _written(result: WriteResult) -> WriteResponse:
    if result.outcome is WriteOutcome.STALE:
        stored = services().index.get(caller(router, "write").tenant_id, [result.key])[result.key]
        raise StaleVersionError(str(result.key), stored.version, result.version)
    return WriteResponse(
        entity_type=result.key.entity_type,
        entity_id=result.key.entity_id,
        version=result.version,
        outcome="duplicate" if result.outcome is WriteOutcome.DUPLICATE else "applied",
        reembedded=result.reembedded,
        message="already at this version; nothing changed"
        if result.outcome is WriteOutcome.DUPLICATE
        else None,
    )


@router.put("/entities/<entity_type>/<entity_id>", summary="Create or replace an entity", tags=["entities"])
def put_entity(entity_type: str, entity_id: str, body: Annotated[dict[str, Any], Body()]) -> WriteResponse:
    principal = caller(router, "write")
    c = services()
    result = c.indexing.put(principal.tenant_id, entity_type, entity_id, body, c.clock.now())
    logger.info(
        "entity put",
        extra={"tenant": principal.tenant_id, "key": str(result.key), "outcome": result.outcome.value},
    )
    return _written(result)


@router.patch("/entities/<entity_type>/<entity_id>", summary="Update some fields", tags=["entities"])
def patch_entity(entity_type: str, entity_id: str, body: Annotated[dict[str, Any], Body()]) -> WriteResponse:
    principal = caller(router, "write")
    c = services()
    result = c.indexing.patch(principal.tenant_id, entity_type, entity_id, body, c.clock.now())
    logger.info(
        "entity patch",
        extra={
            "tenant": principal.tenant_id,
            "key": str(result.key),
            "outcome": result.outcome.value,
            "reembedded": result.reembedded,
        },
    )
    return _written(result)


@router.delete("/entities/<entity_type>/<entity_id>", summary="Delete an entity", tags=["entities"])
def delete_entity(
    entity_type: str, entity_id: str, version: Annotated[int | None, Query(ge=0)] = None
) -> WriteResponse:
    principal = caller(router, "write")
    c = services()
    result = c.indexing.delete(principal.tenant_id, entity_type, entity_id, version, c.clock.now())
    logger.info(
        "entity delete",
        extra={"tenant": principal.tenant_id, "key": str(result.key), "outcome": result.outcome.value},
    )
    return _written(result)


@router.post("/entities", summary="Index up to 500 entities", tags=["entities"])
def bulk(request: Annotated[BulkRequest, Body()]) -> BulkResponse:
    principal = caller(router, "write")
    c = services()
    if len(request.items) > c.settings.max_batch_items:
        raise PayloadTooLargeError(
            f"at most {c.settings.max_batch_items} items per request", c.settings.max_body_bytes
        )
    report = c.indexing.bulk(principal.tenant_id, request.items, c.clock.now())
    logger.info(
        "bulk",
        extra={
            "tenant": principal.tenant_id,
            "indexed": report.indexed,
            "stale": report.skipped_stale,
            "errors": len(report.errors),
        },
    )
    return BulkResponse.model_validate(
        {"indexed": report.indexed, "skipped_stale": report.skipped_stale, "errors": report.errors}
    )

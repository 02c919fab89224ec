"""Reading back what was stored: GET /entities/{type}/{id}, POST /entities/batch-get, GET /entities (newest first, cursor paging),
GET /context/weights/history and GET /evals (stored golden-set figures)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from core.indexing.catalog import (
    DEFAULT_ENTITY_PAGE,
    DEFAULT_READ_ROWS,
    MAX_ENTITY_PAGE,
    MAX_READ_ROWS,
    BatchGetRequest,
    BatchGetResponse,
    EntityOut,
    EntityPage,
    EvalsResponse,
    WeightHistoryResponse,
)
from handlers.http_api.routes.common import caller, only_parameters, services

router = Router()


@router.get(
    "/entities/<entity_type>/<entity_id>",
    summary="A stored entity",
    tags=["entities"],
    operation_id="getEntity",
)
def get_entity(entity_type: str, entity_id: str) -> EntityOut:
    tenant = caller(router, "read").tenant_id
    return services().catalog.get(tenant, entity_type, entity_id)


@router.post(
    "/entities/batch-get",
    summary="Up to 100 stored entities in one call",
    tags=["entities"],
    operation_id="batchGetEntities",
)
def batch_get_entities(request: Annotated[BatchGetRequest, Body()]) -> BatchGetResponse:
    tenant = caller(router, "read").tenant_id
    return services().catalog.batch_get(tenant, request)


@router.get(
    "/entities", summary="The tenant's entities, newest first", tags=["entities"], operation_id="listEntities"
)
def list_entities(
    type: Annotated[str | None, Query(max_length=64)] = None,  # noqa: A002 - the API's parameter name
    limit: Annotated[int, Query(ge=1, le=MAX_ENTITY_PAGE)] = DEFAULT_ENTITY_PAGE,
    cursor: Annotated[str | None, Query(max_length=1024)] = None,
) -> EntityPage:
    tenant = caller(router, "read").tenant_id
    return services().catalog.list(tenant, type, limit, cursor)


@router.get(
    "/context/weights/history",
    summary="Weight changes, newest first",
    tags=["context"],
    operation_id="getWeightHistory",
)
def weight_history(
    caller_id: Annotated[str | None, Query(alias="caller", max_length=128)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_READ_ROWS)] = DEFAULT_READ_ROWS,
) -> WeightHistoryResponse:
    only_parameters(
        router, "caller", "limit"
    )  # `offset` and the like are refused, as on the other /context GETs
    who = caller(router, "read")
    if caller_id is None and not who.acts_for_anyone:
        caller_id = who.caller  # a bound token reads its own caller's history, as with the log
    elif caller_id is not None:
        who.act_as(caller_id)
    return services().catalog.weight_history(who.tenant_id, caller_id, limit)


@router.get(
    "/evals",
    summary="Stored golden-set evaluation figures, newest first",
    tags=["governance"],
    operation_id="listEvals",
)
def evals(
    name: Annotated[str | None, Query(max_length=256)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_READ_ROWS)] = DEFAULT_READ_ROWS,
) -> EvalsResponse:
    tenant = caller(router, "read").tenant_id
    return services().catalog.evals(tenant, name, limit)


@router.get(
    "/overlays/<role_id>/evals",
    summary="An overlay's stored golden-set figures",
    tags=["governance"],
    operation_id="listOverlayEvals",
)
def overlay_evals(
    role_id: str, limit: Annotated[int, Query(ge=1, le=MAX_READ_ROWS)] = DEFAULT_READ_ROWS
) -> EvalsResponse:
    tenant = caller(router, "read").tenant_id
    from core.governance.golden_sets import EVAL_NAME_PREFIX  # the evaluation code loads on this route only

    return services().catalog.evals(tenant, EVAL_NAME_PREFIX + role_id, limit)

"""A tenant's lifecycle: GET /tenant/export (NDJSON pages) and DELETE /tenant (admin, confirmed)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from pydantic import BaseModel, ConfigDict, Field

from core.errors import ForbiddenError
from core.tenancy.lifecycle import EXPORT_PAGE_BYTES, EraseReport, ReopenReport
from handlers.http_api.routes.common import caller, services
from handlers.observability.observations import observed, tenant_erased, tenant_reopened

router = Router()
MIN_EXPORT_PAGE_BYTES = 10_000  # a page holds at least a few records; the bound only tunes page size
NDJSON = "application/x-ndjson"


class EraseRequest(BaseModel):
    """DELETE /tenant and POST /tenant/reopen: the tenant id, typed out, so nobody acts on a tenant by
    accident."""

    model_config = ConfigDict(extra="forbid")

    confirm: str = Field(min_length=1, max_length=256, description="Must equal the caller's tenant id")


@router.get(
    "/tenant/export",
    summary="Everything the tenant stored, as NDJSON pages",
    tags=["tenant"],
    operation_id="exportTenant",
)
def export(
    cursor: Annotated[str | None, Query(max_length=1024)] = None,
    max_bytes: Annotated[int, Query(ge=MIN_EXPORT_PAGE_BYTES, le=EXPORT_PAGE_BYTES)] = EXPORT_PAGE_BYTES,
) -> Response[str]:
    who = caller(router, "read")
    if not who.acts_for_anyone:  # the export holds every caller's log and learning
        raise ForbiddenError(
            "a token bound to one caller cannot export the whole tenant; it needs 'admin'", "admin"
        )
    body = services().lifecycle.export(who.tenant_id, cursor, max_bytes)
    return Response(status_code=200, content_type=NDJSON, body=body)


@router.delete(
    "/tenant",
    summary="Fence the tenant, then erase every trace of it (admin)",
    tags=["tenant"],
    operation_id="eraseTenant",
)
@observed(router, tenant_erased)
def erase(request: Annotated[EraseRequest, Body()]) -> EraseReport:
    return services().lifecycle.erase(caller(router, "admin").tenant_id, request.confirm)


@router.post(
    "/tenant/reopen",
    summary="Serve an erased tenant again, empty (admin)",
    tags=["tenant"],
    operation_id="reopenTenant",
)
@observed(router, tenant_reopened)
def reopen(request: Annotated[EraseRequest, Body()]) -> ReopenReport:
    return services().lifecycle.reopen(caller(router, "admin").tenant_id, request.confirm)

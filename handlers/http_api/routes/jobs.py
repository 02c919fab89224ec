"""GET /jobs/{job_id}: the status of a bulk or corpus write job (docs/architecture.md, Write path)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler.api_gateway import Router

from handlers.http_api.openapi_models import Job
from handlers.http_api.routes.common import caller, services

router = Router()


@router.get(
    "/jobs/<job_id>",
    summary="A write job's status: queued, running or done, with counts and errors",
    tags=["entities"],
    operation_id="getJob",
    responses={200: {"description": "The job", "content": {"application/json": {"model": Job}}}},
)
def get_job(job_id: str) -> dict[str, Any]:
    principal = caller(router, "read")
    return services().jobs.status(principal.tenant_id, job_id).to_json()

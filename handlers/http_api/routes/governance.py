"""Governed retrieval (docs/architecture.md, Governed retrieval): POST /retrieve, PUT|GET|DELETE /overlays/{role_id}, POST
/overlays/{role_id}/eval, GET /schemas/{name} and POST /corpus."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.metrics import MetricUnit

from core.governance.bundle import RetrievalBundle
from core.governance.overlay import RoleOverlay
from core.governance.requests import CorpusReport, RetrieveRequest
from core.governance.schema_validation import json_schema
from core.indexing.entity_writes import Queued
from core.timestamps import iso_timestamp
from handlers.http_api.openapi_models import OverlayDeleted, OverlayEvaluation, OverlayTuning
from handlers.http_api.routes.common import accepted, answer, caller, services, written_or_queued
from handlers.observability.powertools import logger, metrics
from handlers.observability.tenant_metrics import TenantMetric, count

router = Router()


@router.post(
    "/retrieve",
    summary="Governed retrieval for a role: a RetrievalBundle",
    tags=["governance"],
    operation_id="retrieve",
    responses=answer(RetrievalBundle),
)
def retrieve(request: Annotated[RetrieveRequest, Body()]) -> dict[str, Any]:
    principal = caller(router, "read")
    bundle = services().governed_retrieval.retrieve(principal.tenant_id, request)
    metrics.add_metric(
        name="RetrieveLatency", unit=MetricUnit.Milliseconds, value=bundle.diagnostics.timings_ms["total"]
    )
    degraded = bundle.query.mode == "lexical_degraded" or bundle.diagnostics.degraded_reason is not None
    count(
        TenantMetric.DEGRADED_ANSWERS, principal.tenant_id, int(degraded), services().settings.tenant_metrics
    )
    logger.info(
        "retrieve",
        extra={
            "tenant": principal.tenant_id,
            "role": request.role_id,
            "mode": bundle.query.mode,
            "selected": bundle.summary.selected,
            "states": [s.value for s in bundle.summary.states],
        },
    )
    return bundle.model_dump(mode="json")


@router.put(
    "/overlays/<role_id>",
    summary="Create or replace a role overlay",
    tags=["governance"],
    operation_id="putOverlay",
    responses=answer(RoleOverlay),
)
def put_overlay(role_id: str, body: Annotated[dict[str, Any], Body()]) -> dict[str, Any]:
    principal = caller(router, "write")
    overlay = services().governed_retrieval.put_overlay(principal.tenant_id, role_id, body)
    logger.info("overlay put", extra={"tenant": principal.tenant_id, "role": role_id})
    return overlay.model_dump(mode="json")


@router.get(
    "/overlays/<role_id>",
    summary="A role overlay",
    tags=["governance"],
    operation_id="getOverlay",
    responses=answer(RoleOverlay),
)
def get_overlay(role_id: str) -> dict[str, Any]:
    principal = caller(router, "read")
    return services().governed_retrieval.get_overlay(principal.tenant_id, role_id).model_dump(mode="json")


@router.delete(
    "/overlays/<role_id>",
    summary="Delete a role overlay",
    tags=["governance"],
    operation_id="deleteOverlay",
    responses=answer(OverlayDeleted),
)
def delete_overlay(role_id: str) -> dict[str, Any]:
    principal = caller(router, "write")
    services().governed_retrieval.delete_overlay(principal.tenant_id, role_id)
    logger.info("overlay deleted", extra={"tenant": principal.tenant_id, "role": role_id})
    return {"role_id": role_id, "deleted": True}


@router.post(
    "/overlays/<role_id>/eval",
    summary="Run and store an overlay's golden set",
    tags=["governance"],
    operation_id="evalOverlay",
    responses=answer(OverlayEvaluation),
)
def eval_overlay(role_id: str) -> dict[str, Any]:
    from core.governance.golden_sets import run_golden_sets  # the evaluation code loads with its first use

    principal = caller(router, "admin")
    c = services()
    c.governed_retrieval.get_overlay(principal.tenant_id, role_id)  # 404 before anything runs
    reports = run_golden_sets(
        principal.tenant_id, [role_id], c.governed_retrieval, c.state, iso_timestamp(c.clock.now())
    )
    if not reports:
        return {
            "role_id": role_id,
            "queries": 0,
            "strategies": {},
            "message": "the overlay has no golden set",
        }
    return reports[0].to_json()


@router.post(
    "/overlays/<role_id>/tune",
    summary="Tune the overlay's fusion on its golden set; adopt only an improvement",
    tags=["governance"],
    operation_id="tuneOverlay",
    responses=answer(OverlayTuning),
)
def tune_overlay_fusion(role_id: str) -> dict[str, Any]:
    from core.search.tuning_service import tune_overlay

    principal = caller(router, "admin")
    return tune_overlay(services().governed_retrieval, principal.tenant_id, role_id).to_json()


@router.get(
    "/schemas/<name>",
    summary="JSON Schema: role_overlay or retrieval_bundle",
    tags=["governance"],
    operation_id="getSchema",
)
def schema(name: str) -> dict[str, Any]:
    caller(router, "read")
    return json_schema(name)


@router.post(
    "/corpus",
    summary="Load documents for retrieval: small loads at once, larger ones as a job (202)",
    tags=["governance"],
    operation_id="loadCorpus",
    responses=written_or_queued(CorpusReport),
)
def corpus(body: Annotated[dict[str, Any], Body()]) -> Response[dict[str, Any]]:
    principal = caller(router, "write")
    report = services().writes.corpus(principal.tenant_id, body)
    if isinstance(report, Queued):
        return accepted(report.job)
    logger.info(
        "corpus",
        extra={
            "tenant": principal.tenant_id,
            "documents": report.documents_ingested,
            "chunks": report.chunks_ingested,
            "errors": len(report.errors),
        },
    )
    return Response(200, content_types.APPLICATION_JSON, report.model_dump(mode="json"))

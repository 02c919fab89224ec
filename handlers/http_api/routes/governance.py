"""Governed retrieval (docs/architecture.md, Governed retrieval): POST /retrieve, PUT|GET|DELETE /overlays/{role_id}, POST
/overlays/{role_id}/eval, GET /schemas/{name} and POST /corpus."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body

from core.governance.bundle import RetrievalBundle
from core.governance.overlay import RoleOverlay
from core.governance.requests import CorpusReport, RetrieveRequest
from core.governance.schema_validation import json_schema
from core.indexing.entity_writes import Queued
from handlers.http_api.openapi_models import OverlayDeleted, OverlayEvaluation, OverlayTuning
from handlers.http_api.routes.common import accepted, answer, caller, services, written_or_queued
from handlers.observability.observations import (
    corpus_loaded,
    observed,
    overlay_deleted,
    overlay_put,
    retrieved,
)

router = Router()


@router.post(
    "/retrieve",
    summary="Governed retrieval for a role: a RetrievalBundle",
    tags=["governance"],
    operation_id="retrieve",
    responses=answer(RetrievalBundle),
)
@observed(router, retrieved)
def retrieve(request: Annotated[RetrieveRequest, Body()]) -> dict[str, Any]:
    bundle = services().governed_retrieval.retrieve(caller(router, "read").tenant_id, request)
    return bundle.model_dump(mode="json")


@router.put(
    "/overlays/<role_id>",
    summary="Create or replace a role overlay",
    tags=["governance"],
    operation_id="putOverlay",
    responses=answer(RoleOverlay),
)
@observed(router, overlay_put)
def put_overlay(role_id: str, body: Annotated[dict[str, Any], Body()]) -> dict[str, Any]:
    overlay = services().governed_retrieval.put_overlay(caller(router, "write").tenant_id, role_id, body)
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
@observed(router, overlay_deleted)
def delete_overlay(role_id: str) -> dict[str, Any]:
    services().governed_retrieval.delete_overlay(caller(router, "write").tenant_id, role_id)
    return {"role_id": role_id, "deleted": True}


@router.post(
    "/overlays/<role_id>/eval",
    summary="Run and store an overlay's golden set",
    tags=["governance"],
    operation_id="evalOverlay",
    responses=answer(OverlayEvaluation),
)
def eval_overlay(role_id: str) -> dict[str, Any]:
    return services().overlay_evaluation.run(caller(router, "admin").tenant_id, role_id)


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
@observed(router, corpus_loaded)
def corpus(body: Annotated[dict[str, Any], Body()]) -> Response[dict[str, Any]]:
    report = services().writes.corpus(caller(router, "write").tenant_id, body)
    if isinstance(report, Queued):
        return accepted(report.job)
    return Response(200, content_types.APPLICATION_JSON, report.model_dump(mode="json"))

"""The /context routes: assemble, feedback, weights, budgets, log, callers, manual weights, eval."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.metrics import MetricUnit

from core.context.context_api import (
    DEFAULT_LOG_PAGE,
    DEFAULT_WEIGHTS_PAGE,
    MAX_LOG_PAGE,
    MAX_WEIGHTS_PAGE,
    AssembleRequest,
    AssembleResponse,
    BudgetOut,
    BudgetRequest,
    BudgetsResponse,
    CallersResponse,
    EvalResponse,
    FeedbackRequest,
    FeedbackResponse,
    LogResponse,
    ManualWeightRequest,
    WeightOut,
    WeightsResponse,
)
from handlers.http_api.routes.common import caller as principal
from handlers.http_api.routes.common import only_parameters, request_id, services
from handlers.observability.powertools import logger, metrics
from handlers.observability.tenant_metrics import TenantMetric, count

router = Router()
TRACE_HEADERS = ("x-amzn-trace-id", "traceparent", "x-request-id")


def _request_id() -> str | None:
    """API Gateway's request id, else a trace id the client sent (logged with the assembly)."""
    found = request_id(router)
    if found:
        return found
    headers = router.current_event.headers or {}
    return next((headers[h] for h in TRACE_HEADERS if headers.get(h)), None)


@router.post(
    "/context/assemble",
    summary="Assemble a token-budgeted context block",
    tags=["context"],
    operation_id="assembleContext",
)
def assemble(request: Annotated[AssembleRequest, Body()]) -> AssembleResponse:
    who = principal(router, "read")
    who.act_as(request.caller)
    rid = _request_id()
    response = services().context.assemble(who.tenant_id, request, rid)
    metrics.add_metric(
        name="AssemblyRetrievalLatency", unit=MetricUnit.Milliseconds, value=response.retrieval_ms
    )
    metrics.add_metric(name="AssemblyTokens", unit=MetricUnit.Count, value=response.total_tokens)
    metrics.add_metric(name="AssemblyWarnings", unit=MetricUnit.Count, value=len(response.warnings))
    on = services().settings.tenant_metrics
    count(TenantMetric.ASSEMBLIES, who.tenant_id, enabled=on)
    from core.context.context_service import is_degraded  # loaded already: services().context built it

    degraded = is_degraded(response.warnings)
    count(TenantMetric.DEGRADED_ANSWERS, who.tenant_id, int(degraded), enabled=on)
    logger.info(
        "context assembled",
        extra={
            "tenant": who.tenant_id,
            "caller": request.caller,
            "namespace": request.namespace,
            "assembly_id": response.assembly_id,
            "request_id": rid,
            "items": len(response.sources),
            "total_tokens": response.total_tokens,
            "token_budget": response.token_budget,
            "retrieval_ms": response.retrieval_ms,
            "warnings": response.warnings,
        },
    )
    return response


@router.post(
    "/context/feedback",
    summary="Record which items the caller used",
    tags=["context"],
    operation_id="sendFeedback",
)
def feedback(request: Annotated[FeedbackRequest, Body()]) -> FeedbackResponse:
    who = principal(router, "write")
    # a token bound to one caller steers only that caller's learning (another's assembly is a 404)
    response = services().context.feedback(who.tenant_id, request, who.bound_caller)
    logger.info(
        "context feedback",
        extra={
            "tenant": who.tenant_id,
            "assembly_id": response.assembly_id,
            "used": len(response.recorded_ids),
            "ignored": len(response.ignored_ids),
        },
    )
    return response


@router.get(
    "/context/weights",
    summary="Source weights and token shares, paged",
    tags=["context"],
    operation_id="listWeights",
)
def weights(
    limit: Annotated[int, Query(ge=1, le=MAX_WEIGHTS_PAGE)] = DEFAULT_WEIGHTS_PAGE,
    cursor: Annotated[str | None, Query(max_length=1024)] = None,
) -> WeightsResponse:
    only_parameters(router, "limit", "cursor")
    who = principal(router, "read")
    return services().learning.weights(who.tenant_id, limit, cursor, who.bound_caller)


@router.get("/context/budgets", summary="Caller token budgets", tags=["context"], operation_id="getBudgets")
def budgets() -> BudgetsResponse:
    only_parameters(router)
    who = principal(router, "read")
    return services().learning.budgets(who.tenant_id, who.bound_caller)


@router.get("/context/log", summary="The assembly log, newest first", tags=["context"], operation_id="getLog")
def log(
    caller: Annotated[str | None, Query(max_length=128)] = None,
    namespace: Annotated[str | None, Query(max_length=128)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LOG_PAGE)] = DEFAULT_LOG_PAGE,
    cursor: Annotated[str | None, Query(max_length=1024)] = None,
) -> LogResponse:
    who = principal(router, "read")
    only_parameters(router, "caller", "namespace", "limit", "cursor")
    if caller is None and not who.acts_for_anyone:
        caller = who.caller  # a bound token reads its own caller's log unless it names another it may read
    elif caller is not None:
        who.act_as(caller)
    return services().learning.log(who.tenant_id, caller, namespace, limit, cursor)


@router.get(
    "/context/log/callers",
    summary="Callers seen in the assembly log",
    tags=["context"],
    operation_id="listCallers",
)
def callers() -> CallersResponse:
    only_parameters(router)
    who = principal(router, "read")
    return services().learning.callers(who.tenant_id, who.bound_caller)


@router.put(
    "/context/weights/<caller>/<source>",
    summary="Pin a caller's weight and share for a source (learning leaves it alone)",
    tags=["context"],
    operation_id="setWeight",
)
def set_weight(caller: str, source: str, request: Annotated[ManualWeightRequest, Body()]) -> WeightOut:
    who = principal(router, "admin")
    row = services().learning.set_weight(who.tenant_id, caller, source, request)
    logger.info(
        "manual weight",
        extra={"tenant": who.tenant_id, "caller": caller, "source": source, "manual": row.manual},
    )
    return row


@router.put(
    "/context/budgets/<caller>",
    summary="Set a caller's budget and the min/max learning keeps it within (`*` = every caller)",
    tags=["context"],
    operation_id="setBudget",
)
def set_budget(caller: str, request: Annotated[BudgetRequest, Body()]) -> BudgetOut:
    who = principal(router, "admin")
    row = services().learning.set_budget(who.tenant_id, caller, request)
    logger.info(
        "budget set",
        extra={"tenant": who.tenant_id, "caller": caller, "budget": row.budget, "min": row.min_budget,
               "max": row.max_budget},
    )  # fmt: skip
    return row


@router.post(
    "/context/eval",
    summary="Run the learning cycle for this tenant now",
    tags=["context"],
    operation_id="runLearning",
)
def run_eval() -> EvalResponse:
    who = principal(router, "admin")
    report = services().learning.run(who.tenant_id)
    logger.info(
        "learning cycle",
        extra={
            "tenant": who.tenant_id,
            "callers": report.callers,
            "assemblies": report.assemblies,
            "weights": report.weights_count,
            "budgets": report.budgets_count,
        },
    )
    return report

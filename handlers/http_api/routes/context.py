"""The /context routes: assemble, feedback, weights, budgets, log, callers, manual weights, eval."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query

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
from handlers.observability.observations import (
    assembled,
    budget_set,
    feedback_recorded,
    learning_ran,
    observed,
    weight_set,
)

router = Router()


@router.post(
    "/context/assemble",
    summary="Assemble a token-budgeted context block",
    tags=["context"],
    operation_id="assembleContext",
)
@observed(router, assembled)
def assemble(request: Annotated[AssembleRequest, Body()]) -> AssembleResponse:
    who = principal(router, "read")
    who.act_as(request.caller)
    return services().context.assemble(who.tenant_id, request, request_id(router))


@router.post(
    "/context/feedback",
    summary="Record which items the caller used",
    tags=["context"],
    operation_id="sendFeedback",
)
@observed(router, feedback_recorded)
def feedback(request: Annotated[FeedbackRequest, Body()]) -> FeedbackResponse:
    who = principal(router, "write")
    # a token bound to one caller steers only that caller's learning (another's assembly is a 404)
    return services().context.feedback(who.tenant_id, request, who.bound_caller)


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
@observed(router, weight_set)
def set_weight(caller: str, source: str, request: Annotated[ManualWeightRequest, Body()]) -> WeightOut:
    who = principal(router, "admin")
    return services().learning.set_weight(who.tenant_id, caller, source, request)


@router.put(
    "/context/budgets/<caller>",
    summary="Set a caller's budget and the min/max learning keeps it within (`*` = every caller)",
    tags=["context"],
    operation_id="setBudget",
)
@observed(router, budget_set)
def set_budget(caller: str, request: Annotated[BudgetRequest, Body()]) -> BudgetOut:
    who = principal(router, "admin")
    return services().learning.set_budget(who.tenant_id, caller, request)


@router.post(
    "/context/eval",
    summary="Run the learning cycle for this tenant now",
    tags=["context"],
    operation_id="runLearning",
)
@observed(router, learning_ran)
def run_eval() -> EvalResponse:
    return services().learning.run(principal(router, "admin").tenant_id)

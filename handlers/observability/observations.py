"""What each answered request tells the operator — its log line, its function-wide metrics and its
per-tenant counts — said here, not in the routes (docs/architecture.md#observations).

A route names its report with `@observed(router, report)`: once the route has answered, the decorator
calls the report with the caller's tenant (the principal `caller` recorded for this request), the answer
as the route returned it and the route's arguments. Powertools' middlewares would see the answer only after
its validation, as JSON, without the values a log line reads from the typed answer (a search's legs). A
request that fails raises before any report: the error handlers log it.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Mapping
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, TypeVar, cast

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import BaseRouter
from aws_lambda_powertools.metrics import MetricUnit

from core.cursor import tenant_mark
from handlers.http_api.routes.common import PRINCIPAL, request_id, services
from handlers.observability.powertools import logger, metrics
from handlers.observability.tenant_metrics import TenantMetric, count

if TYPE_CHECKING:
    from core.context.context_api import (
        AssembleResponse,
        BudgetOut,
        EvalResponse,
        FeedbackResponse,
        WeightOut,
    )
    from core.search.search_api import SearchResponse, WriteResponse
    from core.tenancy.lifecycle import EraseReport, ReopenReport

F = TypeVar("F", bound=Callable[..., Any])
Report = Callable[[str, Any, Mapping[str, Any]], None]  # (tenant, answer, the route's arguments)


def observed(router: BaseRouter, report: Report) -> Callable[[F], F]:
    """The route, followed by `report` of its answer. The wrapper shows Powertools the route's own
    signature with its annotations evaluated (they are strings in the route's module), so validation and
    the OpenAPI document are the route's."""

    def decorate(route: F) -> F:
        @functools.wraps(route)
        def answer(*args: Any, **kwargs: Any) -> Any:
            result = route(*args, **kwargs)
            who = router.context.get(PRINCIPAL)  # recorded by `caller`
            if who is not None:
                report(who.tenant_id, result, kwargs)
            return result

        answer.__signature__ = inspect.signature(route, eval_str=True)  # type: ignore[attr-defined]
        answer.__annotations__ = typing.get_type_hints(route, include_extras=True)
        return cast(F, answer)

    return decorate


def _per_tenant() -> bool:
    return services().settings.tenant_metrics


def searched(tenant: str, response: SearchResponse, _args: Mapping[str, Any]) -> None:
    info, legs = response.query_info, response.legs
    metrics.add_metric(name="SearchLatency", unit=MetricUnit.Milliseconds, value=response.took_ms)
    metrics.add_metric(name="SearchCacheHit", unit=MetricUnit.Count, value=int(info.cache == "hit"))
    on = _per_tenant()
    count(TenantMetric.SEARCHES, tenant, enabled=on)
    count(TenantMetric.SEARCH_CACHE_HITS, tenant, int(info.cache == "hit"), enabled=on)
    count(TenantMetric.DEGRADED_ANSWERS, tenant, int(bool(info.degraded)), enabled=on)
    if info.cache == "bypass":  # the cache failed and the index answered alone (fail open)
        metrics.add_metric(name="SearchCacheBypass", unit=MetricUnit.Count, value=1)
    logger.info(
        "search",
        extra={
            "tenant": tenant,
            "strategy": info.strategy,
            "cache": info.cache,
            "results": len(response.results),
            "degraded": info.degraded,
            "took_ms": response.took_ms,
            **(legs.log_fields() if legs is not None else {}),
        },
    )


def assembled(tenant: str, response: AssembleResponse, args: Mapping[str, Any]) -> None:
    from core.context.context_service import is_degraded  # loaded already: the context service built it

    metrics.add_metric(
        name="AssemblyRetrievalLatency", unit=MetricUnit.Milliseconds, value=response.retrieval_ms
    )
    metrics.add_metric(name="AssemblyTokens", unit=MetricUnit.Count, value=response.total_tokens)
    metrics.add_metric(name="AssemblyWarnings", unit=MetricUnit.Count, value=len(response.warnings))
    on = _per_tenant()
    count(TenantMetric.ASSEMBLIES, tenant, enabled=on)
    count(TenantMetric.DEGRADED_ANSWERS, tenant, int(is_degraded(response.warnings)), enabled=on)
    request = args["request"]
    logger.info(
        "context assembled",
        extra={
            "tenant": tenant,
            "caller": request.caller,
            "namespace": request.namespace,
            "assembly_id": response.assembly_id,
            "request_id": request_id(BaseRouter),  # the current request's (Powertools keeps it on the class)
            "items": len(response.sources),
            "total_tokens": response.total_tokens,
            "token_budget": response.token_budget,
            "retrieval_ms": response.retrieval_ms,
            "warnings": response.warnings,
        },
    )


def feedback_recorded(tenant: str, response: FeedbackResponse, _args: Mapping[str, Any]) -> None:
    logger.info(
        "context feedback",
        extra={
            "tenant": tenant,
            "assembly_id": response.assembly_id,
            "used": len(response.recorded_ids),
            "ignored": len(response.ignored_ids),
        },
    )


def weight_set(tenant: str, row: WeightOut, args: Mapping[str, Any]) -> None:
    logger.info(
        "manual weight",
        extra={"tenant": tenant, "caller": args["caller"], "source": args["source"], "manual": row.manual},
    )


def budget_set(tenant: str, row: BudgetOut, args: Mapping[str, Any]) -> None:
    logger.info(
        "budget set",
        extra={"tenant": tenant, "caller": args["caller"], "budget": row.budget, "min": row.min_budget,
               "max": row.max_budget},
    )  # fmt: skip


def learning_ran(tenant: str, report: EvalResponse, _args: Mapping[str, Any]) -> None:
    logger.info(
        "learning cycle",
        extra={
            "tenant": tenant,
            "callers": report.callers,
            "assemblies": report.assemblies,
            "weights": report.weights_count,
            "budgets": report.budgets_count,
        },
    )


def retrieved(tenant: str, bundle: Mapping[str, Any], args: Mapping[str, Any]) -> None:
    """POST /retrieve answers its RetrievalBundle as JSON already (what is read here)."""
    diagnostics, query, summary = bundle["diagnostics"], bundle["query"], bundle["summary"]
    metrics.add_metric(
        name="RetrieveLatency", unit=MetricUnit.Milliseconds, value=diagnostics["timings_ms"]["total"]
    )
    degraded = query["mode"] == "lexical_degraded" or diagnostics.get("degraded_reason") is not None
    count(TenantMetric.DEGRADED_ANSWERS, tenant, int(degraded), _per_tenant())
    logger.info(
        "retrieve",
        extra={
            "tenant": tenant,
            "role": args["request"].role_id,
            "mode": query["mode"],
            "selected": summary["selected"],
            "states": list(summary["states"]),
        },
    )


def overlay_put(tenant: str, _overlay: Any, args: Mapping[str, Any]) -> None:
    logger.info("overlay put", extra={"tenant": tenant, "role": args["role_id"]})


def overlay_deleted(tenant: str, _answer: Any, args: Mapping[str, Any]) -> None:
    logger.info("overlay deleted", extra={"tenant": tenant, "role": args["role_id"]})


def job_accepted(tenant: str, answer: Response[Any]) -> bool:
    """Whether `answer` is a write's 202 Accepted; if so, its job logged."""
    if answer.status_code != HTTPStatus.ACCEPTED:
        return False
    job: Mapping[str, Any] = answer.body or {}
    logger.info("job accepted", extra={"tenant": tenant, "job": job["job_id"], "kind": job["kind"],
                                       "items": job["items"], "chunks": job["chunks"], "parts": job["parts"]})  # fmt: skip
    return True


def job_queued(tenant: str, answer: Response[Any], _args: Mapping[str, Any]) -> None:
    """The report of a route that always answers with a job (202)."""
    job_accepted(tenant, answer)


def corpus_loaded(tenant: str, answer: Response[Any], _args: Mapping[str, Any]) -> None:
    if job_accepted(tenant, answer):
        return
    report: Mapping[str, Any] = answer.body or {}
    logger.info(
        "corpus",
        extra={
            "tenant": tenant,
            "documents": report["documents_ingested"],
            "chunks": report["chunks_ingested"],
            "errors": len(report["errors"]),
        },
    )


def entity_written(action: str) -> Report:
    """The report of an entity's PUT, PATCH or DELETE (`action`), whose answer is a WriteResponse, or for a
    PUT a Response holding one as JSON (200) or a job (202)."""

    def report(tenant: str, answer: WriteResponse | Response[Any], _args: Mapping[str, Any]) -> None:
        if not isinstance(answer, Response):
            entity_write(action, tenant, answer, _per_tenant())
        elif not job_accepted(tenant, answer):
            entity_write(action, tenant, answer.body or {}, _per_tenant())

    return report


def entity_write(
    action: str, tenant: str, answer: WriteResponse | Mapping[str, Any], per_tenant: bool
) -> None:
    """Log one applied (or duplicate) write, a WriteResponse or its JSON; count it when per-tenant metrics
    are on (`per_tenant`)."""
    shown = answer if isinstance(answer, Mapping) else answer.model_dump()
    count(TenantMetric.WRITES, tenant, int(shown["outcome"] == "applied"), per_tenant)
    logger.info(
        f"entity {action}",
        extra={
            "tenant": tenant,
            "key": f"{shown['entity_type']}:{shown['entity_id']}",
            "outcome": shown["outcome"],
            "reembedded": shown["reembedded"],
        },
    )


def bulk_written(tenant: str, answer: Response[Any], _args: Mapping[str, Any]) -> None:
    if job_accepted(tenant, answer):
        return
    report: Mapping[str, Any] = answer.body or {}
    count(TenantMetric.WRITES, tenant, report["indexed"], _per_tenant())
    logger.info(
        "bulk",
        extra={
            "tenant": tenant,
            "indexed": report["indexed"],
            "stale": report["skipped_stale"],
            "errors": len(report["errors"]),
        },
    )


def tenant_erased(tenant: str, report: EraseReport, _args: Mapping[str, Any]) -> None:
    logger.warning(
        "tenant erased",
        extra={
            "tenant_mark": tenant_mark(tenant),  # a fingerprint: the log keeps no trace of the tenant id
            "entities": report.entities_removed,
            "state_rows": report.state_rows_removed,
            "cache_entries": report.cache_entries_removed,
            "jobs": report.jobs_removed,
            "job_parts": report.job_parts_discarded,
        },
    )


def tenant_reopened(tenant: str, report: ReopenReport, _args: Mapping[str, Any]) -> None:
    logger.warning(
        "tenant reopened", extra={"tenant_mark": tenant_mark(tenant), "swept": report.entities_removed}
    )

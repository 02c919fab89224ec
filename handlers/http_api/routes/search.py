"""POST /search and POST /embed (the vectors a search or a write may carry)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.metrics import MetricUnit

from core.search.embedding import EmbedRequest, EmbedResponse
from core.search.search_api import SearchRequest, SearchResponse
from handlers.http_api.routes.common import caller, services
from handlers.observability.powertools import logger, metrics
from handlers.observability.tenant_metrics import TenantMetric, count

router = Router()


@router.post(
    "/search", summary="Hybrid search over the tenant's entities", tags=["search"], operation_id="search"
)
def search(request: Annotated[SearchRequest, Body()]) -> Annotated[SearchResponse, Body()]:
    principal = caller(router, "read")
    response = services().search.search(principal.tenant_id, request)
    info = response.query_info
    metrics.add_metric(name="SearchLatency", unit=MetricUnit.Milliseconds, value=response.took_ms)
    metrics.add_metric(name="SearchCacheHit", unit=MetricUnit.Count, value=int(info.cache == "hit"))
    on = services().settings.tenant_metrics
    count(TenantMetric.SEARCHES, principal.tenant_id, enabled=on)
    count(TenantMetric.SEARCH_CACHE_HITS, principal.tenant_id, int(info.cache == "hit"), enabled=on)
    count(TenantMetric.DEGRADED_ANSWERS, principal.tenant_id, int(bool(info.degraded)), enabled=on)
    if info.cache == "bypass":  # the cache failed and the index answered alone (fail open)
        metrics.add_metric(name="SearchCacheBypass", unit=MetricUnit.Count, value=1)
    logger.info(
        "search",
        extra={
            "tenant": principal.tenant_id,
            "strategy": info.strategy,
            "cache": info.cache,
            "results": len(response.results),
            "degraded": info.degraded,
            "took_ms": response.took_ms,
            **(response.legs.log_fields() if response.legs is not None else {}),
        },
    )
    return response


@router.post(
    "/embed",
    summary="The deployment's vectors for texts (to send as `query_vector` or `embedding`)",
    tags=["search"],
    operation_id="embed",
)
def embed(request: Annotated[EmbedRequest, Body()]) -> Annotated[EmbedResponse, Body()]:
    principal = caller(router, "read")
    return services().embedding.embed(principal.tenant_id, request)

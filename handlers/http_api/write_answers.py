"""The answer to one entity write, the same from the HTTP routes and the MCP tools: logged, counted per
tenant, shaped as WriteResponse."""

from __future__ import annotations

from core.indexing.drafts import WriteResult
from core.models import WriteOutcome
from core.search.search_api import WriteResponse
from handlers.observability.powertools import logger
from handlers.observability.tenant_metrics import TenantMetric, count


def written(action: str, tenant_id: str, result: WriteResult, tenant_metrics: bool) -> WriteResponse:
    """Log one applied (or duplicate) write, count it when per-tenant metrics are on, shape its answer."""
    count(TenantMetric.WRITES, tenant_id, int(result.outcome is WriteOutcome.APPLIED), tenant_metrics)
    logger.info(
        f"entity {action}",
        extra={
            "tenant": tenant_id,
            "key": str(result.key),
            "outcome": result.outcome.value,
            "reembedded": result.reembedded,
        },
    )
    duplicate = result.outcome is WriteOutcome.DUPLICATE
    return WriteResponse(
        entity_type=result.key.entity_type,
        entity_id=result.key.entity_id,
        version=result.version,
        outcome="duplicate" if duplicate else "applied",
        reembedded=result.reembedded,
        message="already at this version; nothing changed" if duplicate else None,
        unindexed_fields=list(result.unindexed_fields),
    )

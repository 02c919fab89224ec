"""The nightly Lambda (EventBridge schedule): runs the context learning cycle for every tenant and caller
with enough new feedback (DESIGN.md §4), then every stored overlay's golden set (DESIGN.md §6), stores
the figures and emits both as metrics.

The scheduled event carries nothing the cycle needs; an event whose `detail` names a `tenant_id` limits
the run to that tenant (handy for a manual `sam local invoke`). Running it twice is harmless: the cycle
marks the assemblies it learned from, so a second run finds nothing pending. A state-store outage raises,
so Lambda's retry and the errors alarm take over.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from core.scoring import iso_timestamp
from core.service.golden import run_golden_sets
from handlers._observability import logger, metrics, tracer
from infra.wiring import Container, container


def _golden_sets(c: Container, tenant: str | None) -> list[dict[str, Any]]:
    """Run and store every stored overlay's golden set (one tenant's when `tenant` is given)."""
    owners = c.state.overlay_owners()
    by_tenant: dict[str, list[str]] = {}
    for owner, role_id in owners:
        if tenant is None or owner == tenant:
            by_tenant.setdefault(owner, []).append(role_id)
    results: list[dict[str, Any]] = []
    at = iso_timestamp(c.clock.now())
    for owner, roles in sorted(by_tenant.items()):
        for report in run_golden_sets(owner, roles, c.retrieval, c.state, at):
            for strategy, figures in report.strategies.items():
                metrics.add_metric(
                    name=f"GoldenNdcg10_{strategy}", unit=MetricUnit.NoUnit, value=figures.ndcg_at_10
                )
            results.append({"tenant": owner, **report.to_json()})
    return results


@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False, capture_error=False)  # tenant data never in X-Ray
@metrics.log_metrics(raise_on_empty_metrics=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    detail = event.get("detail") if isinstance(event, dict) else None
    tenant = detail.get("tenant_id") if isinstance(detail, dict) else None
    tenant = tenant if isinstance(tenant, str) and tenant else None
    c = container()
    report = c.learning.run(tenant)
    metrics.add_metric(name="LearningCallers", unit=MetricUnit.Count, value=report.callers)
    metrics.add_metric(name="LearningAssemblies", unit=MetricUnit.Count, value=report.assemblies)
    metrics.add_metric(name="LearningWeightChanges", unit=MetricUnit.Count, value=report.weights_count)
    metrics.add_metric(name="LearningBudgetChanges", unit=MetricUnit.Count, value=report.budgets_count)
    metrics.add_metric(name="LearningSkipped", unit=MetricUnit.Count, value=len(report.skipped))
    logger.info(
        "learning cycle",
        extra={
            "tenant": tenant,
            "callers": report.callers,
            "assemblies": report.assemblies,
            "weight_changes": report.weights_count,
            "budget_changes": report.budgets_count,
            "skipped": report.skipped,
        },
    )
    golden = _golden_sets(c, tenant)
    logger.info("golden sets", extra={"tenant": tenant, "overlays": len(golden)})
    return {**report.model_dump(mode="json"), "golden_sets": golden}

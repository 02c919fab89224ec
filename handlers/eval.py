"""The nightly learning Lambda (EventBridge schedule): runs the context learning cycle for every tenant
and caller with enough new feedback (DESIGN.md §4), and emits what it changed as metrics.

The scheduled event carries nothing the cycle needs; an event whose `detail` names a `tenant_id` limits
the run to that tenant (handy for a manual `sam local invoke`). Running it twice is harmless: the cycle
marks the assemblies it learned from, so a second run finds nothing pending. A state-store outage raises,
so Lambda's retry and the errors alarm take over.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from handlers._observability import logger, metrics, tracer
from infra.wiring import container


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics(raise_on_empty_metrics=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    detail = event.get("detail") if isinstance(event, dict) else None
    tenant = detail.get("tenant_id") if isinstance(detail, dict) else None
    report = container().learning.run(tenant if isinstance(tenant, str) and tenant else None)
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
    return report.model_dump(mode="json")

"""Typed per-tenant metrics: what each tenant does and gets — searches, writes, assemblies,
cache hits and degraded answers — as CloudWatch metrics with a `tenant` dimension (EMF, Powertools
`single_metric`, so the dimension never leaks onto the function-wide metrics of `handlers.observability.powertools`).
The stack's dashboard (template.yaml QuarryDashboard) charts them per tenant.

Each tenant adds one custom metric per name (CloudWatch bills per metric): a deployment with very many
tenants can drop the dimension by setting QUARRY_TENANT_METRICS=false.
"""

from __future__ import annotations

import enum

from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

from handlers.observability.powertools import NAMESPACE, SERVICE

TENANT_DIMENSION = "tenant"


class TenantMetric(enum.StrEnum):
    """The per-tenant metrics; the value is the CloudWatch metric name."""

    SEARCHES = "Searches"
    SEARCH_CACHE_HITS = "SearchCacheHits"
    WRITES = "Writes"
    ASSEMBLIES = "Assemblies"
    DEGRADED_ANSWERS = "DegradedAnswers"  # a search, assembly or retrieval that answered with less


def count(metric: TenantMetric, tenant_id: str, value: float = 1, enabled: bool = True) -> None:
    """Emit `value` of `metric` for `tenant_id` (one EMF line, at once); nothing while metrics are off
    (Powertools' `single_metric` prints even then)."""
    if not enabled or value == 0 or is_metrics_disabled():
        return
    with single_metric(
        name=metric.value,
        unit=MetricUnit.Count,
        value=value,
        namespace=NAMESPACE,
        default_dimensions={"service": SERVICE},
    ) as emitted:
        emitted.add_dimension(name=TENANT_DIMENSION, value=tenant_id)

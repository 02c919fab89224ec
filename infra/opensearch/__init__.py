"""The OpenSearch SearchIndex adapter (production). Importing this package never imports opensearch-py;
the client is built (or injected) when the adapter is."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.errors import ConfigurationError
from infra.opensearch.client import RetryPolicy, build_client
from infra.opensearch.index import OpenSearchIndex, build_opensearch_index
from infra.opensearch.layout import Layout
from infra.opensearch.tenancy import TenantIndexes

if TYPE_CHECKING:
    from infra.config.settings import Settings

__all__ = [
    "OpenSearchIndex",
    "RetryPolicy",
    "TenantIndexes",
    "build_client",
    "build_index",
    "build_opensearch_index",
]

_REFRESH: dict[str, bool | str] = {"false": False, "true": True, "wait_for": "wait_for"}


def build_index(settings: Settings, dimension: int, client: Any = None) -> OpenSearchIndex | TenantIndexes:
    """The adapter from settings (`QUARRY_OPENSEARCH_*`), each index built by build_opensearch_index; a missing URL fails naming the variable. With
    tenants that have an index of their own, a TenantIndexes over the shared index and theirs; a tenant
    bringing its own vectors (QUARRY_BYO_VECTOR_TENANTS) has one at its declared dimension (a knn_vector
    field holds one dimension per index)."""
    if client is None:
        if not settings.opensearch_url:
            raise ConfigurationError(
                "invalid configuration: QUARRY_OPENSEARCH_URL is required when the index is OpenSearch",
                {"QUARRY_OPENSEARCH_URL": "is required when QUARRY_INDEX=opensearch"},
            )
        client = build_client(
            settings.opensearch_url,
            region=settings.opensearch_region,
            service=settings.opensearch_service,
            timeout=settings.opensearch_timeout,
            max_retries=settings.opensearch_max_retries,
        )

    def make(prefix: str, shape: Layout, own_dimension: int | None = None) -> OpenSearchIndex:
        return build_opensearch_index(
            client,
            dimension=dimension if own_dimension is None else own_dimension,
            prefix=prefix,
            refresh=_REFRESH[settings.opensearch_refresh],
            retry=RetryPolicy(max_retries=settings.opensearch_max_retries),
            max_bulk_bytes=settings.opensearch_max_bulk_bytes,
            model_check_seconds=settings.opensearch_model_check_seconds,
            layout=shape,
            wait_for_active_shards=settings.opensearch_wait_for_active_shards,
            request_timeout=settings.opensearch_timeout,
        )

    shared = make(settings.opensearch_index_prefix, layout(settings))
    byo = dict(settings.byo_vector_tenants)
    if not settings.opensearch_own_index_tenants and not byo:
        return shared
    return TenantIndexes(
        shared, settings.opensearch_own_index_tenants, make, settings.opensearch_index_prefix, byo
    )


def layout(settings: Settings) -> Layout:
    """The layout of new index generations, from settings (`QUARRY_OPENSEARCH_SHARDS`…)."""
    return Layout(
        shards=settings.opensearch_shards,
        replicas=settings.opensearch_replicas,
        routed=settings.opensearch_routing == "tenant",
        partition_size=settings.opensearch_routing_partition_size,
    )

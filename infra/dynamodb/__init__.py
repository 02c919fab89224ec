"""DynamoDB adapters: `DynamoStateStore` (state.py) and `DynamoCache` (cache.py), tables in tables.py.

`build_state_store` and `build_cache` are what `infra/wiring/root.py` calls; they import boto3 only when used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from infra.config.settings import Settings
    from infra.dynamodb.cache import DynamoCache
    from infra.dynamodb.state import DynamoStateStore


def build_state_store(settings: Settings, client: Any | None = None) -> DynamoStateStore:
    """The state store named by the settings, creating its table first when pointed at a local endpoint."""
    from infra.dynamodb.state import DynamoStateStore

    store = DynamoStateStore(
        settings.state_table, client=client, log_retention_days=settings.log_retention_days or None
    )
    if settings.creates_dynamodb_tables:
        store.ensure_tables()
    return store


def build_cache(settings: Settings, client: Any | None = None) -> DynamoCache:
    """The cache named by the settings, creating its table first when pointed at a local endpoint."""
    from infra.dynamodb.cache import DynamoCache

    cache = DynamoCache(settings.cache_table, client=client)
    if settings.creates_dynamodb_tables:
        cache.ensure_tables()
    return cache

"""The search cache key (docs/architecture.md, Read path; docs/conformance.md#search-cache): a hash of
everything that shapes the answer plus the tenant's index generation, so any write to the tenant changes every
key at once.

Unlike the specification's key (docs/conformance.md#search-cache-key: lower-cased and trimmed), the query goes
in as sent: the answer depends on its case (`auto` reads `checkRateLimit` as an identifier and
`checkratelimit` as a plain word) and echoes it (`query_info.original_query`), so two spellings must never
share an entry."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

SEARCH_CACHE_TTL_SECONDS = 300  # docs/conformance.md#search-cache: answers cached 5 minutes


def generation_key(tenant_id: str) -> str:
    """The cache counter that holds a tenant's index generation."""
    return f"gen:{tenant_id}"


def settling_key(tenant_id: str) -> str:
    """Present while a tenant's last write may not be visible to search yet (nothing is cached then)."""
    return f"settling:{tenant_id}"


def search_cache_key(
    tenant_id: str,
    query: str,
    entity_types: Sequence[str],
    filters: Mapping[str, Any],
    strategy: str,
    limit: int,
    generation: int,
    explain: bool = False,
    variant: str = "",
    options: Mapping[str, Any] | None = None,
) -> str:
    """sha256 over tenant, the query as sent, sorted types, sorted filters, strategy, limit, explain, the
    ranking settings (`variant`: fusion, α, depths… of the deployment), the answer's `options` (min_score…)
    and the generation."""
    normalised = {
        "t": tenant_id,
        "q": query,
        "v": variant,
        "e": sorted(entity_types),
        "f": filters,
        "s": strategy,
        "l": limit,
        "x": explain,
        "g": generation,
    }
    if options:  # absent otherwise: the keys of requests without options stay as they were
        normalised["o"] = options
    payload = json.dumps(normalised, sort_keys=True, separators=(",", ":"), default=str)
    return search_key_prefix(tenant_id) + hashlib.sha256(payload.encode()).hexdigest()


SEARCH_KEY_HASH_CHARS = 64  # search keys end in a sha256 hex digest


def search_key_prefix(tenant_id: str) -> str:
    """What every cached search of the tenant starts with."""
    return f"search:{tenant_id}:"


def is_tenant_cache_key(key: str, tenant_id: str) -> bool:
    """True for the tenant's own search entries, settling marker and generation counter (not a tenant whose id extends it)."""
    if key in (generation_key(tenant_id), settling_key(tenant_id)):
        return True
    prefix = search_key_prefix(tenant_id)
    return key.startswith(prefix) and len(key) == len(prefix) + SEARCH_KEY_HASH_CHARS


SINGLE_ITEM = "-"  # the item key of a partition that holds one entry


def cache_partition(key: str) -> tuple[str, str]:
    """(partition, item) of a cache key for a store keyed by both: a tenant's cached searches share one
    partition (`search:<tenant>`), so an erase lists them all in one strongly consistent read; any other
    key is a partition of its own."""
    cut = len(key) - SEARCH_KEY_HASH_CHARS - 1
    if key.startswith("search:") and cut > len("search:") and key[cut] == ":":
        return key[:cut], key[cut + 1 :]
    return key, SINGLE_ITEM


def search_partition(tenant_id: str) -> str:
    """The partition of the tenant's cached searches (`cache_partition` of each of its search keys)."""
    return search_key_prefix(tenant_id)[:-1]

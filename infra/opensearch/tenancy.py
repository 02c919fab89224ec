"""Tenants with an index of their own (QUARRY_OPENSEARCH_OWN_INDEX_TENANTS): ranking statistics of their own.

BM25's document frequencies and average lengths are per shard: in a shared index, a tenant's scores move
when another tenant on the same shard writes the same words, and prefix and fuzzy expansions (at most 50
terms, taken from the shard's whole term dictionary) can be crowded out by another tenant's terms
(measured and argued in docs/scaling.md, "Ranking statistics and tenants"). A tenant listed here (or every
tenant, with "*") gets its own alias `<prefix>-t-<hash of the tenant>` (one shard, not routed), so nothing
of another tenant is in any statistic it is scored with. Every other tenant stays in the shared index.

A tenant bringing its own vectors (QUARRY_BYO_VECTOR_TENANTS, core/indexing/caller_vectors.py) always gets its own
index, built at its declared dimension: a knn_vector field has one dimension per index.

This is a tier, not a default: each own index is at least one shard (with its replicas) on the cluster,
and a cluster holds a few thousand shards at most (docs/scaling.md).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from core.indexing.catalog import EmbeddingStatus, EntityPosition
from core.models import (
    Candidate,
    CandidateLists,
    CandidateQuery,
    EntityKey,
    EntityRecord,
    Filters,
    LexicalQuery,
    Placement,
    StoredEntity,
    Vector,
    WriteOutcome,
)
from core.ports import MetadataTouch
from infra.opensearch.index import OpenSearchIndex
from infra.opensearch.layout import Layout

ALL_TENANTS = "*"
OWN_INDEX_SHARDS = 1  # one tenant's index: small; its replicas follow the shared layout's
HASH_CHARS = 16  # 64 bits of SHA-256: index names stay short and valid whatever the tenant id holds


def own_layout(shared: Layout) -> Layout:
    """The layout of a tenant's own index: one shard, not routed, the shared index's replicas."""
    return Layout(shards=OWN_INDEX_SHARDS, replicas=shared.replicas, routed=False)


def own_prefix(prefix: str, tenant_id: str) -> str:
    """The alias of a tenant's own index (index names refuse upper case and most punctuation: a hash)."""
    return f"{prefix}-t-{hashlib.sha256(tenant_id.encode()).hexdigest()[:HASH_CHARS]}"


class TenantIndexes:
    """A SearchIndex that sends each tenant to its own index when it has one, else to the shared one."""

    def __init__(
        self,
        shared: OpenSearchIndex,
        own: Sequence[str],
        make: Callable[[str, Layout, int | None], OpenSearchIndex],
        prefix: str,
        dimensions: Mapping[str, int] | None = None,
    ) -> None:
        self._shared = shared
        self._dimensions = dict(dimensions or {})  # tenants bringing their own vectors: their dimension
        self._own = frozenset(own) | self._dimensions.keys()
        self._make = make  # (alias, layout, dimension or None) → an adapter on the same client and settings
        self._prefix = prefix
        self._layout = own_layout(shared.layout)
        self._indexes: dict[str, OpenSearchIndex] = {}
        self._lock = threading.Lock()

    def has_own_index(self, tenant_id: str) -> bool:
        """Whether the tenant's documents live in an index of their own."""
        return ALL_TENANTS in self._own or tenant_id in self._own

    def for_tenant(self, tenant_id: str) -> OpenSearchIndex:
        """The adapter holding the tenant's documents."""
        if not self.has_own_index(tenant_id):
            return self._shared
        alias = own_prefix(self._prefix, tenant_id)
        with self._lock:
            index = self._indexes.get(alias)
            if index is None:
                own_dimension = self._dimensions.get(tenant_id)
                index = self._indexes[alias] = self._make(alias, self._layout, own_dimension)
            return index

    # -- what is not a tenant's -----------------------------------------------------------------------------

    @property
    def visibility_delay_seconds(self) -> float:
        return self._shared.visibility_delay_seconds

    @property
    def client(self) -> Any:
        return self._shared.client

    @property
    def alias(self) -> str:
        """The shared index's alias."""
        return self._shared.alias

    def aliases(self) -> list[str]:
        """The shared alias and every tenant alias that exists (what `quarry reindex` goes through), but
        those of tenants bringing their own vectors: no model can recompute them (`caller_vector_tenants`)."""
        found = self.client.indices.get_alias(name=f"{self._prefix}-t-*", ignore=404) or {}
        names = {
            a for entry in found.values() if isinstance(entry, Mapping) for a in entry.get("aliases", {})
        }
        skipped = {own_prefix(self._prefix, t) for t in self._dimensions}
        return [self.alias, *sorted(names - skipped)]

    def caller_vector_tenants(self) -> list[str]:
        """The tenants bringing their own vectors, each in an index of its own that a reindex leaves alone."""
        return sorted(self._dimensions)

    def live_model_dir(self, tenant_id: str | None = None) -> str | None:
        """The model folder behind the tenant's index (the shared one's without a tenant)."""
        return (self._shared if tenant_id is None else self.for_tenant(tenant_id)).live_model_dir()

    def recheck_model(self) -> None:
        self._shared.recheck_model()
        with self._lock:
            for index in self._indexes.values():
                index.recheck_model()

    def ensure_index(self) -> bool:
        return self._shared.ensure_index()

    def drop(self) -> None:
        """Drop the shared index and every tenant index this process has used (evaluation, tests)."""
        self._shared.drop()
        with self._lock:
            for index in self._indexes.values():
                index.drop()

    # -- SearchIndex, tenant by tenant ------------------------------------------------------------------

    def upsert(self, record: EntityRecord) -> WriteOutcome:
        return self.for_tenant(record.tenant_id).upsert(record)

    def upsert_many(self, records: Sequence[EntityRecord]) -> list[WriteOutcome]:
        outcomes: list[WriteOutcome | None] = [None] * len(records)
        by_tenant: dict[str, list[int]] = {}
        for n, record in enumerate(records):
            by_tenant.setdefault(record.tenant_id, []).append(n)
        for tenant_id, positions in by_tenant.items():
            written = self.for_tenant(tenant_id).upsert_many([records[p] for p in positions])
            for p, outcome in zip(positions, written, strict=True):
                outcomes[p] = outcome
        return [o for o in outcomes if o is not None]

    def update_metadata(
        self,
        tenant_id: str,
        key: EntityKey,
        version: int,
        body: Mapping[str, Any],
        metadata: Mapping[str, Any],
        updated_at: str,
        placement: Placement | None = None,
    ) -> WriteOutcome:
        index = self.for_tenant(tenant_id)
        return index.update_metadata(tenant_id, key, version, body, metadata, updated_at, placement)

    def touch_metadata(self, tenant_id: str, touches: Sequence[MetadataTouch]) -> list[WriteOutcome]:
        return self.for_tenant(tenant_id).touch_metadata(tenant_id, touches)

    def delete(self, tenant_id: str, key: EntityKey, version: int | None) -> WriteOutcome:
        return self.for_tenant(tenant_id).delete(tenant_id, key, version)

    def get(self, tenant_id: str, keys: Sequence[EntityKey]) -> dict[EntityKey, StoredEntity]:
        return self.for_tenant(tenant_id).get(tenant_id, keys)

    def lexical(self, tenant_id: str, query: LexicalQuery, filters: Filters, k: int) -> list[Candidate]:
        return self.for_tenant(tenant_id).lexical(tenant_id, query, filters, k)

    def vector(self, tenant_id: str, embedding: Vector, filters: Filters, k: int) -> list[Candidate]:
        return self.for_tenant(tenant_id).vector(tenant_id, embedding, filters, k)

    def retrieve(
        self, tenant_id: str, query: LexicalQuery | None, embedding: Vector | None, filters: Filters, k: int
    ) -> CandidateLists:
        return self.for_tenant(tenant_id).retrieve(tenant_id, query, embedding, filters, k)

    def retrieve_many(self, tenant_id: str, specs: Sequence[CandidateQuery]) -> list[CandidateLists]:
        return self.for_tenant(tenant_id).retrieve_many(tenant_id, specs)

    def displayed(self, tenant_id: str, candidates: Sequence[Candidate]) -> list[Candidate]:
        return self.for_tenant(tenant_id).displayed(tenant_id, candidates)

    def list_entities(
        self, tenant_id: str, entity_type: str | None, limit: int, after: EntityPosition | None
    ) -> list[StoredEntity]:
        return self.for_tenant(tenant_id).list_entities(tenant_id, entity_type, limit, after)

    def facets(
        self, tenant_id: str, query: LexicalQuery | None, filters: Filters, fields: Sequence[str], size: int
    ) -> dict[str, dict[str, int]]:
        return self.for_tenant(tenant_id).facets(tenant_id, query, filters, fields, size)

    def embedding_status(self, tenant_id: str, keys: Sequence[EntityKey]) -> dict[EntityKey, EmbeddingStatus]:
        return self.for_tenant(tenant_id).embedding_status(tenant_id, keys)

    def purge_tenant(self, tenant_id: str) -> int:
        return self.for_tenant(tenant_id).purge_tenant(tenant_id)

    def chunk_vectors(
        self, tenant_id: str, chunks: Sequence[tuple[EntityKey, int]]
    ) -> dict[tuple[EntityKey, int], Vector]:
        return self.for_tenant(tenant_id).chunk_vectors(tenant_id, chunks)

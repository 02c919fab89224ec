"""OpenSearchIndex: the production SearchIndex (BM25 + k-NN in one OpenSearch index behind an alias).

The adapter only sequences calls: bodies come from `bodies`/`mapping`/`documents`, responses are read by
`responses`, failures are translated by `errors`. Retries come from libraries, paced by one RetryPolicy:
whole requests by opensearch-py's Transport (`client.build_client`), throttled `_bulk` items by
opensearch-py's `helpers.streaming_bulk`, throttled or failed `_msearch` items by tenacity (opensearch-py
has no helper for those).

A few parts, each given what it needs and none reading another's attributes, put together by
`build_opensearch_index` (docs/architecture.md#adapter-parts): the index's creation and what is known of
the live generation, followed through a reindex (lifecycle.py); the retried calls (calls.py);
compare-and-set writes and tombstones (writes.py); the searches in one `_msearch` (searches.py); listings,
facets and erasure (catalog.py). Reads by key stay here; every other port method is delegated to the part
that owns it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from core.indexing.catalog import EmbeddingStatus, EntityPosition
from core.models import (
    ALL_CHUNKS,
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
from infra.opensearch import documents, mapping
from infra.opensearch.calls import IndexCalls, Refresh
from infra.opensearch.catalog import OpenSearchCatalog
from infra.opensearch.client import RetryPolicy, node_timeout
from infra.opensearch.index_lifecycle import IndexLifecycle
from infra.opensearch.layout import Layout
from infra.opensearch.searches import IndexSearches
from infra.opensearch.writes import IndexWrites

# Bytes per `_bulk` request. Amazon OpenSearch Service refuses requests above 10 MiB on small instance
# types (100 MiB on larger ones) with a 413, and recommends bulk requests of 5–15 MiB: 5 MiB stays
# below every cap with room to spare. QUARRY_OPENSEARCH_MAX_BULK_BYTES changes it.
DEFAULT_MAX_BULK_BYTES = 5 * 1024 * 1024
REFRESH_INTERVAL_SECONDS = 1.0  # OpenSearch's default index.refresh_interval (the mapping keeps it)
# How often a process reads which model built the generation behind the alias (one GET _mapping): a
# `quarry reindex` swap is followed within this; its settle wait is longer (infra/opensearch/reindex.py).
DEFAULT_MODEL_CHECK_SECONDS = 5.0
# OpenSearch's own default: an acknowledged write is on every in-sync copy of its shard, even when only the
# primary is active (docs/scaling.md, "What an acknowledged write means"). "all" refuses writes while a
# replica is missing instead.
DEFAULT_ACTIVE_SHARDS = "1"


def build_opensearch_index(
    client: Any,
    dimension: int,
    prefix: str = "quarry",
    refresh: Refresh = False,
    retry: RetryPolicy | None = None,
    sleep: Callable[[float], None] = time.sleep,
    auto_create: bool = True,
    max_bulk_bytes: int = DEFAULT_MAX_BULK_BYTES,
    model_check_seconds: float = DEFAULT_MODEL_CHECK_SECONDS,
    monotonic: Callable[[], float] = time.monotonic,
    layout: Layout | None = None,
    wait_for_active_shards: str = DEFAULT_ACTIVE_SHARDS,
    request_timeout: float | None = None,
) -> OpenSearchIndex:
    """The OpenSearch SearchIndex behind the alias `prefix`, its parts built here over one client.

    `refresh`: what writes wait for; `sleep`: tenacity's waits between `_msearch` attempts (tests record
    them); `auto_create`: create the index on the first write; `layout`: of new generations."""
    lifecycle = IndexLifecycle(
        client, dimension, prefix, layout or Layout(), auto_create, model_check_seconds, monotonic
    )
    # Every `_bulk` says how many copies of each shard must be active before it writes, and how long a
    # primary that is not (a node just lost, a replica being promoted) is waited for: less than the
    # client waits for the answer, so a write the node cannot place is answered 503 by the node, not
    # left running after the client gave up and sent it again (client.node_timeout). opensearch-py
    # takes `timeout` for its own unless `request_timeout` is given too.
    write_params: dict[str, Any] = {"wait_for_active_shards": wait_for_active_shards}
    if request_timeout is not None:
        write_params.update(timeout=node_timeout(request_timeout), request_timeout=request_timeout)
    calls = IndexCalls(
        client, lifecycle, refresh, retry or RetryPolicy(), sleep, max_bulk_bytes, write_params
    )
    return OpenSearchIndex(
        client,
        refresh,
        lifecycle,
        calls,
        IndexWrites(calls, lifecycle),
        IndexSearches(calls, lifecycle),
        OpenSearchCatalog(client, calls, lifecycle),
    )


class OpenSearchIndex:
    """SearchIndex over OpenSearch: one document per entity, chunks nested, writes compare-and-set."""

    def __init__(
        self,
        client: Any,
        refresh: Refresh,
        lifecycle: IndexLifecycle,
        calls: IndexCalls,
        writes: IndexWrites,
        searches: IndexSearches,
        catalog: OpenSearchCatalog,
    ) -> None:
        """The parts, over one client (build_opensearch_index makes them)."""
        self._client = client
        self._refresh = refresh
        self._lifecycle = lifecycle
        self._calls = calls
        self._writes = writes
        self._searches = searches
        self._catalog = catalog

    @property
    def visibility_delay_seconds(self) -> float:
        """0 when writes wait for a refresh; else the index refresh interval (a search may miss a write)."""
        return 0.0 if self._refresh else REFRESH_INTERVAL_SECONDS

    @property
    def client(self) -> Any:
        """The opensearch-py client (for `quarry reindex`, which works beside the adapter)."""
        return self._client

    @property
    def layout(self) -> Layout:
        """The layout of the index generations this adapter creates."""
        return self._lifecycle.layout

    @property
    def alias(self) -> str:
        """The alias every read and write goes through."""
        return self._lifecycle.alias

    # -- the lifecycle (IndexLifecycle) ---------------------------------------------------------------------

    def ensure_index(self) -> bool:
        """Check the live index, or create the template, the first index and its alias; True when created."""
        return self._lifecycle.ensure_index()

    def drop(self) -> None:
        """Delete every index generation behind the alias, and the template (evaluation and test indices)."""
        self._lifecycle.drop()

    def live_model_dir(self, tenant_id: str | None = None) -> str | None:
        """The model folder the generation behind the alias was built with (None: the configured model);
        every tenant's, as one index holds them all (TenantIndexes answers per tenant)."""
        return self._lifecycle.live_model_dir()

    def recheck_model(self) -> None:
        """Read the live generation's model on the next call (a reindex may have swapped the alias)."""
        self._lifecycle.recheck_model()

    # -- writes (IndexWrites) ---------------------------------------------------------------------------------

    def upsert(self, record: EntityRecord) -> WriteOutcome:
        """Store a whole entity version, unless the stored one is as new or newer."""
        return self._writes.upsert(record)

    def upsert_many(self, records: Sequence[EntityRecord]) -> list[WriteOutcome]:
        """Upsert many entity versions (one `_mget` and one `_bulk` per round); one outcome per record."""
        return self._writes.upsert_many(records)

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
        """Rewrite the stored document with new body/metadata (and placement) at `version`."""
        return self._writes.update_metadata(tenant_id, key, version, body, metadata, updated_at, placement)

    def touch_metadata(self, tenant_id: str, touches: Sequence[MetadataTouch]) -> list[WriteOutcome]:
        """Merge each touch's changes into the live document's metadata, the version kept."""
        return self._writes.touch_metadata(tenant_id, touches)

    def delete(self, tenant_id: str, key: EntityKey, version: int | None) -> WriteOutcome:
        """Replace the entity by a tombstone at `version` (stored + 1 when None)."""
        return self._writes.delete(tenant_id, key, version)

    # -- searches (IndexSearches) -------------------------------------------------------------------------------

    def lexical(self, tenant_id: str, query: LexicalQuery, filters: Filters, k: int) -> list[Candidate]:
        """BM25 over the boosted tiers, best chunk per entity, at most k."""
        return self._searches.lexical(tenant_id, query, filters, k)

    def vector(self, tenant_id: str, embedding: Vector, filters: Filters, k: int) -> list[Candidate]:
        """Cosine k-NN (scores converted back to raw cosine), best chunk per entity, at most k."""
        return self._searches.vector(tenant_id, embedding, filters, k)

    def retrieve(
        self, tenant_id: str, query: LexicalQuery | None, embedding: Vector | None, filters: Filters, k: int
    ) -> CandidateLists:
        """The lexical and the vector list in ONE `_msearch` round trip."""
        return self._searches.retrieve(tenant_id, query, embedding, filters, k)

    def retrieve_many(self, tenant_id: str, specs: Sequence[CandidateQuery]) -> list[CandidateLists]:
        """Every spec's lexical and vector list in ONE `_msearch` round trip."""
        return self._searches.retrieve_many(tenant_id, specs)

    def displayed(self, tenant_id: str, candidates: Sequence[Candidate]) -> list[Candidate]:
        """The candidates as they are: every hit of this index comes with its display values (its doc
        values, in the answer that ranked it), so none is left to read (CandidateQuery.display is not
        needed to save a round trip here)."""
        return list(candidates)

    # -- the catalog (OpenSearchCatalog, and reads by key here) ----------------------------------------------

    def facets(
        self, tenant_id: str, query: LexicalQuery | None, filters: Filters, fields: Sequence[str], size: int
    ) -> dict[str, dict[str, int]]:
        """Entities per value of each field among the query's matches."""
        return self._catalog.facets(tenant_id, query, filters, fields, size)

    def list_entities(
        self, tenant_id: str, entity_type: str | None, limit: int, after: EntityPosition | None
    ) -> list[StoredEntity]:
        """Live entities newest first, after `after`."""
        return self._catalog.list_entities(tenant_id, entity_type, limit, after)

    def embedding_status(self, tenant_id: str, keys: Sequence[EntityKey]) -> dict[EntityKey, EmbeddingStatus]:
        """Chunk and embedded-chunk counts of the live entities among `keys`."""
        return self._catalog.embedding_status(tenant_id, keys)

    def purge_tenant(self, tenant_id: str) -> int:
        """Delete every document of the tenant (tombstones too) and refresh, so searches see it gone."""
        return self._catalog.purge_tenant(tenant_id)

    def get(self, tenant_id: str, keys: Sequence[EntityKey]) -> dict[EntityKey, StoredEntity]:
        """The stored entities among `keys` (tombstones included, flagged deleted)."""
        unique = sorted(set(keys))
        if not unique:
            return {}
        found = self._calls.fetch(tenant_id, [documents.doc_id(tenant_id, k) for k in unique])
        entities = (documents.stored_entity(s) for s in found if s.get(mapping.TENANT) == tenant_id)
        return {e.key: e for e in entities}

    def chunk_vectors(
        self, tenant_id: str, chunks: Sequence[tuple[EntityKey, int]]
    ) -> dict[tuple[EntityKey, int], Vector]:
        """Stored chunk embeddings, from one `_mget` of the entities' chunk numbers and vectors (no text)."""
        import numpy as np

        keys = sorted({key for key, _ in chunks})
        wanted = set(chunks)
        out: dict[tuple[EntityKey, int], Vector] = {}
        ids = [documents.doc_id(tenant_id, k) for k in keys]
        for doc in self._calls.fetch(tenant_id, ids, vectors_only=True):
            if doc.get(mapping.TENANT) != tenant_id:
                continue
            key = EntityKey(str(doc.get(mapping.ENTITY_TYPE)), str(doc.get(mapping.ENTITY_ID)))
            every = (key, ALL_CHUNKS) in wanted
            for chunk in doc.get(mapping.CHUNKS) or []:
                ref = (key, int(chunk.get("chunk_no", ALL_CHUNKS)))
                if (every or ref in wanted) and ref[1] != ALL_CHUNKS and chunk.get("embedding") is not None:
                    out[ref] = np.asarray(chunk["embedding"], dtype=np.float32)
        return out

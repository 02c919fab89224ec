"""The search index's roles: writing entities, reading them back, and retrieving candidates (one backend
implements all three as a `SearchIndex`) (docs/architecture.md, Ports and adapters).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

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


@dataclass(frozen=True, slots=True)
class MetadataTouch:
    """Changes to one entity's metadata at the version they were computed from (SearchIndex.touch_metadata)."""

    key: EntityKey
    version: int
    changes: Mapping[str, Any]


class IndexWriter(Protocol):
    """Writes of entity versions into BM25 and k-NN retrieval, versioned per entity."""

    @property
    def visibility_delay_seconds(self) -> float:
        """How long an applied write may stay invisible to search (0: visible on return; OpenSearch without
        a refresh per write: its refresh interval). The search cache waits that long for writes to settle."""
        ...

    def upsert(self, record: EntityRecord) -> WriteOutcome:
        """Store a whole entity version; older than stored → STALE, equal → DUPLICATE, else APPLIED."""
        ...

    def upsert_many(self, records: Sequence[EntityRecord]) -> list[WriteOutcome]:
        """`upsert` for many records in one round trip / transaction; one outcome per record, in order."""
        ...

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
        """Change body, metadata and (when given) the indexed source/owner/namespace only (no text, no
        embedding); versioned like `upsert`."""
        ...

    def touch_metadata(self, tenant_id: str, touches: Sequence[MetadataTouch]) -> list[WriteOutcome]:
        """Merge each touch's changes into its entity's indexed metadata without moving the version, in one
        round trip (bookkeeping the service keeps, such as a memory's uses: core/memory/reinforcement.py;
        fields retrieval filters on by range inside the retriever, never through keyword-index tokens);
        NOT_FOUND for an entity not live at exactly the touch's version (a write since then wins and the
        change is dropped). One outcome per touch, in order."""
        ...

    def delete(self, tenant_id: str, key: EntityKey, version: int | None) -> WriteOutcome:
        """Remove from lexical and vector retrieval; a tombstone keeps the version so older writes lose.

        `version` None: the stored version + 1 (unknown → NOT_FOUND). An unknown entity with a version gets
        a tombstone alone (APPLIED). A live entity at exactly `version` is deleted: a delete wins a tie.
        An older version → STALE; a tombstone already at `version` → DUPLICATE.
        """
        ...

    def purge_tenant(self, tenant_id: str) -> int:
        """Erase every entity, tombstone, chunk, vector and keyword row of the tenant; how many entities."""
        ...


class EntityCatalog(Protocol):
    """Stored entities read back by key or listed, as written (not ranked)."""

    def get(self, tenant_id: str, keys: Sequence[EntityKey]) -> dict[EntityKey, StoredEntity]:
        """The stored entities among `keys` (tombstones included, flagged `deleted`)."""
        ...

    def list_entities(
        self, tenant_id: str, entity_type: str | None, limit: int, after: EntityPosition | None
    ) -> list[StoredEntity]:
        """Live entities (no tombstones), newest first by (created_at, entity_type, entity_id) descending,
        strictly after `after`; at most `limit`."""
        ...

    def embedding_status(self, tenant_id: str, keys: Sequence[EntityKey]) -> dict[EntityKey, EmbeddingStatus]:
        """Chunk and embedded-chunk counts of the live entities among `keys`."""
        ...


class Retriever(Protocol):
    """Ranked candidates: BM25 and cosine k-NN lists, facets, and the stored chunk vectors behind them."""

    @property
    def visibility_delay_seconds(self) -> float:
        """As IndexWriter's: how long a write may take to show in these answers."""
        ...

    def lexical(self, tenant_id: str, query: LexicalQuery, filters: Filters, k: int) -> list[Candidate]:
        """BM25 over the boosted fields, best first, one candidate per entity."""
        ...

    def facets(
        self, tenant_id: str, query: LexicalQuery | None, filters: Filters, fields: Sequence[str], size: int
    ) -> dict[str, dict[str, int]]:
        """Per field, entities per value (core.search.filters.facet_key) over every entity the query's words match
        within the filters (every entity within them without a query): the `size` most frequent values,
        ties by value. A list field counts each of its values once per entity."""
        ...

    def vector(self, tenant_id: str, embedding: Vector, filters: Filters, k: int) -> list[Candidate]:
        """Cosine k-NN, best first, one candidate per entity."""
        ...

    def retrieve(
        self,
        tenant_id: str,
        query: LexicalQuery | None,
        embedding: Vector | None,
        filters: Filters,
        k: int,
    ) -> CandidateLists:
        """Both lists in one round trip where the backend allows (OpenSearch `_msearch`)."""
        ...

    def chunk_vectors(
        self, tenant_id: str, chunks: Sequence[tuple[EntityKey, int]]
    ) -> dict[tuple[EntityKey, int], Vector]:
        """The stored embeddings of these (entity, chunk_no) pairs, in one round trip; missing ones are left
        out (for MMR over retrieved candidates: nothing is embedded again). A pair with chunk_no ALL_CHUNKS
        asks for every stored chunk of the entity, each keyed by its own chunk number."""
        ...

    def retrieve_many(self, tenant_id: str, specs: Sequence[CandidateQuery]) -> list[CandidateLists]:
        """`retrieve` for every spec, in order, in ONE round trip where the backend allows (OpenSearch: one
        `_msearch` for all the lexical and vector queries); UnavailableError fails them all."""
        ...

    def displayed(self, tenant_id: str, candidates: Sequence[Candidate]) -> list[Candidate]:
        """`candidates` in order with their display values: those listed without them (a `handle`:
        CandidateQuery.display False) read in one round trip, each keeping its score and place. One whose
        entity was deleted since it was ranked is left out; one rewritten since shows its current version
        (its chunk of the same number, else its first): never a deleted or an older version."""
        ...


class SearchIndex(IndexWriter, EntityCatalog, Retriever, Protocol):
    """One backend's documents in every role: what an adapter implements and the composition root hands
    to the services that write, read back and rank alike."""

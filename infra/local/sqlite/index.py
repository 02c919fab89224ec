"""SqliteIndex: the embedded SearchIndex — one SQLite file (WAL) with the entities, a keyword index ranking
BM25 over per-tier weights (tantivy, or FTS5 with the porter + unicode61 tokenizer) and the embeddings; exact
or approximate cosine k-NN in NumPy over the tenant's vectors, held in memory-mapped files that follow
writes (vector_store.py).

A few parts, each given what it needs and none reading another's attributes, put together by
`build_sqlite_index` (docs/architecture.md#adapter-parts): the file, its transactions and the derived stores
that follow it (store.py); versioned writes and tombstones (writes.py); keyword search and the
tantivy hand-off (lexical.py); vector k-NN (vector_search.py); reads by key, listings, facets
and erasure (catalog.py); the SQL they share (sql.py). The index delegates each port method
to the part that owns it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

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
from infra.local.sqlite.catalog import SqliteCatalog
from infra.local.sqlite.errors import FAILURES, translate
from infra.local.sqlite.lexical import SqliteLexicalSearch
from infra.local.sqlite.sql import displayed
from infra.local.sqlite.store import SqliteStore
from infra.local.sqlite.vector_search import ANN_PROBE, SqliteVectorSearch
from infra.local.sqlite.writes import SqliteWrites


def build_sqlite_index(
    path: str | Path,
    ann_min_chunks: int = 0,
    ann_probe: int = ANN_PROBE,
    keyword_engine: Literal["fts5", "tantivy"] = "tantivy",
) -> SqliteIndex:
    """The embedded SearchIndex over the file at `path` (":memory:": a private one), its parts built here.

    `ann_min_chunks`: tenants with at least this many chunks get an approximate vector index (0: never);
    `ann_probe`: how many of its lists a search scores (more: better recall, slower); `keyword_engine`: who
    ranks keyword searches, the tantivy index that follows the writes (keyword_index.py) or FTS5 (written
    either way: fuzzy vocabulary, the newest chunks before tantivy commits them, queries of stop words only,
    switching back)."""
    store = SqliteStore(path, ann_min_chunks, keyword_engine)
    return SqliteIndex(
        store,
        SqliteWrites(store),
        SqliteLexicalSearch(store, store.keywords),
        SqliteVectorSearch(store, store.vectors, ann_probe),
        SqliteCatalog(store, store.vectors, store.keywords, store.keyword_folder),
    )


class SqliteIndex:
    """The embedded SearchIndex (see module docstring). Thread-safe: one connection per thread."""

    visibility_delay_seconds = 0.0  # a write is visible to the next read once its transaction commits

    def __init__(
        self,
        store: SqliteStore,
        writes: SqliteWrites,
        lexical: SqliteLexicalSearch,
        vectors: SqliteVectorSearch,
        catalog: SqliteCatalog,
    ) -> None:
        """The parts, over one store (build_sqlite_index makes them)."""
        self.store = store
        self.vector_search = vectors  # a benchmark reads its snapshots and sweeps its probe (bench/scale.py)
        self._writes = writes
        self._lexical = lexical
        self._catalog = catalog

    # -- writes (SqliteWrites) ----------------------------------------------------------------------------

    def upsert(self, record: EntityRecord) -> WriteOutcome:
        """Store a whole entity version (see SearchIndex.upsert)."""
        return self._writes.upsert(record)

    def upsert_many(self, records: Sequence[EntityRecord]) -> list[WriteOutcome]:
        """Store many entity versions in one transaction; one outcome per record, in order."""
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
        """Change body, metadata and placement; text and embeddings stay as they are."""
        return self._writes.update_metadata(tenant_id, key, version, body, metadata, updated_at, placement)

    def touch_metadata(self, tenant_id: str, touches: Sequence[MetadataTouch]) -> list[WriteOutcome]:
        """Merge each touch's changes into the live entity's metadata, the version kept."""
        return self._writes.touch_metadata(tenant_id, touches)

    def delete(self, tenant_id: str, key: EntityKey, version: int | None) -> WriteOutcome:
        """Drop the entity's chunks and keep a tombstone with the version, so older writes lose."""
        return self._writes.delete(tenant_id, key, version)

    # -- reads (SqliteLexicalSearch, SqliteVectorSearch) ----------------------------------------------------

    def lexical(self, tenant_id: str, query: LexicalQuery, filters: Filters, k: int) -> list[Candidate]:
        """BM25 over the tenant's own chunks, one candidate (best chunk) per entity."""
        return self._lexical.lexical(tenant_id, query, filters, k)

    def vector(
        self,
        tenant_id: str,
        embedding: Vector,
        filters: Filters,
        k: int,
        exact: bool = False,
        ranking_only: bool = False,
    ) -> list[Candidate]:
        """Cosine k-NN over the tenant's chunk vectors, filters applied before ranking."""
        return self.vector_search.vector(tenant_id, embedding, filters, k, exact, ranking_only)

    def chunk_vectors(
        self, tenant_id: str, chunks: Sequence[tuple[EntityKey, int]]
    ) -> dict[tuple[EntityKey, int], Vector]:
        """Stored chunk embeddings (one query)."""
        return self.vector_search.chunk_vectors(tenant_id, chunks)

    def retrieve(
        self, tenant_id: str, query: LexicalQuery | None, embedding: Vector | None, filters: Filters, k: int
    ) -> CandidateLists:
        """Both lists (locally there is no round trip to save)."""
        lexical = self._lexical.lexical(tenant_id, query, filters, k) if query is not None else []
        vector = self.vector_search.vector(tenant_id, embedding, filters, k) if embedding is not None else []
        return CandidateLists(lexical=tuple(lexical), vector=tuple(vector))

    def retrieve_many(self, tenant_id: str, specs: Sequence[CandidateQuery]) -> list[CandidateLists]:
        """Each CandidateQuery in turn (locally there is no round trip to save); a vector list for its
        ranking only, and both lists of a query without `display`, are read without their display values."""
        return [self._retrieve(tenant_id, s) for s in specs]

    def _retrieve(self, tenant_id: str, s: CandidateQuery) -> CandidateLists:
        lexical = (
            self._lexical.lexical(tenant_id, s.query, s.filters, s.k, s.display)
            if s.query is not None
            else []
        )
        vector = (
            self.vector_search.vector(
                tenant_id, s.embedding, s.filters, s.k, ranking_only=s.vector_ranking_only or not s.display
            )
            if s.embedding is not None
            else []
        )
        return CandidateLists(lexical=tuple(lexical), vector=tuple(vector))

    def displayed(self, tenant_id: str, candidates: Sequence[Candidate]) -> list[Candidate]:
        """The candidates listed without display values read in one query by their chunk ids (sql.displayed),
        on this thread's connection; SQLite's failures translated here."""
        try:
            return displayed(self.store.conn(), tenant_id, candidates)
        except FAILURES as exc:
            raise translate(exc) from exc

    # -- the catalog (SqliteCatalog) -------------------------------------------------------------------------

    def get(self, tenant_id: str, keys: Sequence[EntityKey]) -> dict[EntityKey, StoredEntity]:
        """The stored entities among `keys`, tombstones included."""
        return self._catalog.get(tenant_id, keys)

    def list_entities(
        self, tenant_id: str, entity_type: str | None, limit: int, after: EntityPosition | None
    ) -> list[StoredEntity]:
        """Live entities newest first, after `after`."""
        return self._catalog.list_entities(tenant_id, entity_type, limit, after)

    def embedding_status(self, tenant_id: str, keys: Sequence[EntityKey]) -> dict[EntityKey, EmbeddingStatus]:
        """Chunk and embedded-chunk counts of the live entities among `keys`."""
        return self._catalog.embedding_status(tenant_id, keys)

    def facets(
        self, tenant_id: str, query: LexicalQuery | None, filters: Filters, fields: Sequence[str], size: int
    ) -> dict[str, dict[str, int]]:
        """Entities per value of each field among the query's matches."""
        return self._catalog.facets(tenant_id, query, filters, fields, size)

    def purge_tenant(self, tenant_id: str) -> int:
        """Erase everything of the tenant from the file and the stores that follow it."""
        return self._catalog.purge_tenant(tenant_id)

    # -- the file (SqliteStore) ------------------------------------------------------------------------------

    def settle(self) -> None:
        """Bring the keyword index up to every committed write now (SqliteStore.settle)."""
        self.store.settle()

    def close(self) -> None:
        """Stop this process's background work on the file and close this thread's connection."""
        self.store.close()

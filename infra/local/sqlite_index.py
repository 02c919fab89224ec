"""SqliteIndex: the embedded SearchIndex — one SQLite file (WAL) with the entities, a keyword index ranking
BM25 over per-tier weights (tantivy, or FTS5 with the porter + unicode61 tokenizer) and the embeddings; exact
or approximate cosine k-NN in NumPy over the tenant's vectors, held in memory-mapped files that follow
writes (vector_store.py).

One job per module, composed here: the file, its transactions and the derived stores that follow it
(sqlite_store.py); versioned writes and tombstones (sqlite_writes.py); keyword search and the tantivy
hand-off (sqlite_lexical.py); vector k-NN (sqlite_vector_search.py); listings, facets and erasure
(sqlite_catalog.py); the SQL they share (sqlite_sql.py)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from core.models import CandidateLists, CandidateQuery, EntityKey, Filters, LexicalQuery, StoredEntity, Vector
from infra.local.sqlite_catalog import SqliteCatalog
from infra.local.sqlite_lexical import SqliteLexicalSearch
from infra.local.sqlite_sql import ENTITY_COLUMNS, stored
from infra.local.sqlite_store import SQL_BATCH
from infra.local.sqlite_vector_search import ANN_PROBE, SqliteVectorSearch
from infra.local.sqlite_writes import SqliteWrites


class SqliteIndex(SqliteWrites, SqliteLexicalSearch, SqliteVectorSearch, SqliteCatalog):
    """The embedded SearchIndex (see module docstring). Thread-safe: one connection per thread."""

    visibility_delay_seconds = 0.0  # a write is visible to the next read once its transaction commits

    def __init__(
        self,
        path: str | Path,
        ann_min_chunks: int = 0,
        ann_probe: int = ANN_PROBE,
        keyword_engine: Literal["fts5", "tantivy"] = "tantivy",
    ) -> None:
        """`ann_min_chunks`: tenants with at least this many chunks get an approximate vector index (0:
        never); `ann_probe`: how many of its lists a search scores (more: better recall, slower);
        `keyword_engine`: who ranks keyword searches, the tantivy index that follows the writes
        (keyword_index.py) or FTS5 (written either way: fuzzy vocabulary, the newest chunks before tantivy
        commits them, queries of stop words only, switching back)."""
        super().__init__(path, ann_min_chunks, ann_probe, keyword_engine)
        self._ensure_listing_index()

    def get(self, tenant_id: str, keys: Sequence[EntityKey]) -> dict[EntityKey, StoredEntity]:
        """The stored entities among `keys`, tombstones included."""
        found: dict[EntityKey, StoredEntity] = {}
        unique = sorted(set(keys))
        for i in range(0, len(unique), SQL_BATCH // 2):
            batch = unique[i : i + SQL_BATCH // 2]
            pairs = ",".join("(?,?)" for _ in batch)
            params: list[Any] = [tenant_id]
            for k in batch:
                params.extend((k.entity_type, k.entity_id))
            rows = self._read(
                f"SELECT {ENTITY_COLUMNS} FROM idx_entities e WHERE e.tenant_id = ? "
                f"AND (e.entity_type, e.entity_id) IN (VALUES {pairs})",
                params,
            )
            for row in rows:
                entity = stored(row)
                found[entity.key] = entity
        return found

    def retrieve(
        self, tenant_id: str, query: LexicalQuery | None, embedding: Vector | None, filters: Filters, k: int
    ) -> CandidateLists:
        """Both lists (locally there is no round trip to save)."""
        lexical = self.lexical(tenant_id, query, filters, k) if query is not None else []
        vector = self.vector(tenant_id, embedding, filters, k) if embedding is not None else []
        return CandidateLists(lexical=tuple(lexical), vector=tuple(vector))

    def retrieve_many(self, tenant_id: str, specs: Sequence[CandidateQuery]) -> list[CandidateLists]:
        """Each spec in turn (locally there is no round trip to save); a vector list for its ranking only
        is read without its display values."""
        return [self._retrieve(tenant_id, s) for s in specs]

    def _retrieve(self, tenant_id: str, s: CandidateQuery) -> CandidateLists:
        lexical = self.lexical(tenant_id, s.query, s.filters, s.k) if s.query is not None else []
        vector = (
            self.vector(tenant_id, s.embedding, s.filters, s.k, ranking_only=s.vector_ranking_only)
            if s.embedding is not None
            else []
        )
        return CandidateLists(lexical=tuple(lexical), vector=tuple(vector))

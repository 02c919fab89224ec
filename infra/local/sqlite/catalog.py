"""The read-back and erase part of `SqliteIndex`: reading entities by key, listing a tenant's entities newest first, their embedding
status, and purging a tenant so that nothing of it is left in the file (docs/architecture.md, A tenant's data
lifecycle)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from core.errors import UnavailableError
from core.indexing.catalog import EmbeddingStatus, EntityPosition
from core.models import EntityKey, Filters, LexicalQuery, StoredEntity
from core.search.filters import COLUMN_FIELDS, facet_key
from infra.local.keywords.fts import fts5_expression, scoped_expression
from infra.local.keywords.fts_tables import fts_table, is_missing_table
from infra.local.keywords.keyword_files import remove_folder, tenant_folder, writer_lock
from infra.local.sqlite.sql import ENTITY_COLUMNS, JOIN, filter_sql, stored
from infra.local.sqlite.store import SqliteStore
from infra.local.vectors.vector_store import VectorStores

LISTING_INDEX = (
    "CREATE INDEX IF NOT EXISTS idx_entities_newest "
    "ON idx_entities (tenant_id, created_at, entity_type, entity_id)"
)
KEY_BATCH = 200  # (type, id) pairs per query: 400 bound parameters, under SQLite's limit


def _key_pairs(keys: Sequence[EntityKey]) -> Iterator[tuple[str, list[str]]]:
    unique = sorted(set(keys))
    for i in range(0, len(unique), KEY_BATCH):
        batch = unique[i : i + KEY_BATCH]
        params: list[str] = []
        for k in batch:
            params.extend((k.entity_type, k.entity_id))
        yield ",".join("(?,?)" for _ in batch), params


def secure_delete(conn: sqlite3.Connection) -> None:
    """Make this connection overwrite deleted content with zeros (an erased tenant is not in free pages)."""
    conn.execute("PRAGMA secure_delete = ON")


def checkpoint(conn: sqlite3.Connection) -> None:
    """Fold the WAL into the main file and truncate it, so older page images of erased rows go too."""
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _facet_sql(matched: str, field: str) -> str:
    """Entities per value of `field` among `matched` (a metadata key, or a column: core/search/filters.py)."""
    join = "JOIN idx_entities e ON e.tenant_id = ? AND e.entity_type = m.entity_type AND e.entity_id = m.entity_id"
    if field in COLUMN_FIELDS:
        return (
            f"SELECT e.{field}, 'text', count(*) FROM ({matched}) m {join} WHERE e.{field} IS NOT NULL "
            f"GROUP BY e.{field} ORDER BY count(*) DESC, e.{field} LIMIT ?"
        )
    return (
        f"SELECT j.value, j.type, count(DISTINCT e.rowid) FROM ({matched}) m {join}, json_each(e.metadata, ?) j "
        "WHERE j.type NOT IN ('null', 'object', 'array') GROUP BY j.value, j.type "
        "ORDER BY count(DISTINCT e.rowid) DESC, j.value LIMIT ?"
    )


def _facet_args(field: str) -> list[str]:
    return [] if field in COLUMN_FIELDS else ['$."' + field.replace('"', "") + '"']


def _json_value(kind: str, value: Any) -> Any:
    """A json_each value back as JSON had it (SQLite reads true as 1)."""
    return {"true": True, "false": False}.get(kind, value)


class SqliteCatalog:
    """The catalog part of SqliteIndex: `get`, `list_entities`, `embedding_status`, `purge_tenant`,
    `facets`."""

    def __init__(
        self, store: SqliteStore, vectors: VectorStores, keywords: Any, keyword_folder: Path
    ) -> None:
        """`vectors`, `keywords` (None with FTS5) and `keyword_folder`: what follows `store`'s writes, which
        an erase empties too (SqliteStore)."""
        self._store = store
        self._vectors = vectors
        self._keywords = keywords
        self._keyword_folder = keyword_folder
        store.conn().execute(LISTING_INDEX)

    def get(self, tenant_id: str, keys: Sequence[EntityKey]) -> dict[EntityKey, StoredEntity]:
        """The stored entities among `keys`, tombstones included."""
        found: dict[EntityKey, StoredEntity] = {}
        for pairs, params in _key_pairs(keys):
            rows = self._store.read(
                f"SELECT {ENTITY_COLUMNS} FROM idx_entities e WHERE e.tenant_id = ? "
                f"AND (e.entity_type, e.entity_id) IN (VALUES {pairs})",
                [tenant_id, *params],
            )
            for row in rows:
                entity = stored(row)
                found[entity.key] = entity
        return found

    def facets(
        self,
        tenant_id: str,
        query: LexicalQuery | None,
        filters: Filters,
        fields: Sequence[str],
        size: int,
    ) -> dict[str, dict[str, int]]:
        """Entities per value of each field among the query's matches (core/ports/search_index.py, Retriever.facets),
        counted in SQL: one grouped read per field over the matched entities."""
        where, params = filter_sql(filters)
        if query is not None and not query.empty:
            expression = fts5_expression(query, None)
            if not expression:
                return {f: {} for f in fields}
            table = fts_table(tenant_id)
            matched = (
                f"SELECT DISTINCT c.entity_type, c.entity_id FROM {table} JOIN idx_chunks c ON c.id = "
                f"{table}.rowid {JOIN} WHERE {table} MATCH ? AND +c.tenant_id = ? AND {where}"
            )
            args: list[Any] = [scoped_expression(expression, filters), tenant_id, *params]
        else:
            matched = f"SELECT DISTINCT c.entity_type, c.entity_id FROM idx_chunks c {JOIN} WHERE c.tenant_id = ? AND {where}"
            args = [tenant_id, *params]
        out: dict[str, dict[str, int]] = {}
        for field in fields:
            try:
                rows = self._store.read(
                    _facet_sql(matched, field), [*args, tenant_id, *_facet_args(field), size]
                )
            except UnavailableError:
                if query is not None and is_missing_table(self._store.conn(), fts_table(tenant_id)):
                    return {f: {} for f in fields}  # the tenant never wrote a chunk
                raise
            out[field] = {facet_key(_json_value(kind, value)): int(n) for value, kind, n in rows}
        return out

    def list_entities(
        self, tenant_id: str, entity_type: str | None, limit: int, after: EntityPosition | None
    ) -> list[StoredEntity]:
        """Live entities newest first by (created_at, entity_type, entity_id) descending, after `after`."""
        if limit <= 0:
            return []
        where = ["e.tenant_id = ?", "e.deleted = 0"]
        params: list[Any] = [tenant_id]
        if entity_type is not None:
            where.append("e.entity_type = ?")
            params.append(entity_type)
        if after is not None:
            where.append("(COALESCE(e.created_at, ''), e.entity_type, e.entity_id) < (?, ?, ?)")
            params.extend((after.created_at, after.entity_type, after.entity_id))
        rows = self._store.read(
            f"SELECT {ENTITY_COLUMNS} FROM idx_entities e WHERE {' AND '.join(where)} "
            "ORDER BY COALESCE(e.created_at, '') DESC, e.entity_type DESC, e.entity_id DESC LIMIT ?",
            [*params, limit],
        )
        return [stored(row) for row in rows]

    def embedding_status(self, tenant_id: str, keys: Sequence[EntityKey]) -> dict[EntityKey, EmbeddingStatus]:
        """Chunk and embedded-chunk counts of the live entities among `keys`."""
        found: dict[EntityKey, EmbeddingStatus] = {}
        for pairs, params in _key_pairs(keys):
            rows = self._store.read(
                "SELECT c.entity_type, c.entity_id, count(*), count(c.embedding) FROM idx_chunks c "
                f"WHERE c.tenant_id = ? AND (c.entity_type, c.entity_id) IN (VALUES {pairs}) "
                "GROUP BY c.entity_type, c.entity_id",
                [tenant_id, *params],
            )
            for etype, eid, chunks, embedded in rows:
                found[EntityKey(etype, eid)] = EmbeddingStatus(int(chunks), int(embedded))
        return found

    def purge_tenant(self, tenant_id: str) -> int:
        """Erase the tenant's entities, tombstones, chunks, vectors, keyword rows and generation.

        Its FTS5 table and tantivy index are its own (fts_tables.py, keyword_index.py): they are dropped
        with the statistics they held, and no other tenant's ever held its words. Deleted content is zeroed
        (`secure_delete`), the file is rebuilt (`VACUUM`: the cost of an erase grows with the whole file,
        an admin operation's price for leaving no bytes behind) and the WAL is checkpointed and truncated.
        """
        conn = self._store.conn()
        secure_delete(conn)
        folder = self._keyword_folder
        # The tantivy index goes first, whichever engine this process runs, and no catch-up can build it
        # again before the rows are gone (a crash in between leaves the rows: it is rebuilt from them).
        with writer_lock(folder) if folder.exists() else contextlib.nullcontext():
            remove_folder(tenant_folder(folder, tenant_id))
            if self._keywords is not None:
                self._keywords.forget(tenant_id)
            with self._store.tx() as tx:
                count = tx.execute(
                    "SELECT count(*) FROM idx_entities WHERE tenant_id = ?", (tenant_id,)
                ).fetchone()[0]
                tx.execute(f"DROP TABLE IF EXISTS {fts_table(tenant_id)}")  # its keyword rows and statistics
                tx.execute("DELETE FROM idx_chunks WHERE tenant_id = ?", (tenant_id,))
                tx.execute("DELETE FROM idx_entities WHERE tenant_id = ?", (tenant_id,))
                tx.execute("DELETE FROM idx_generation WHERE tenant_id = ?", (tenant_id,))
                tx.execute("DELETE FROM idx_changes WHERE tenant_id = ?", (tenant_id,))
        self._vectors.drop(tenant_id)
        # Free space still holds bytes of rows that writes before the erase replaced or deleted without
        # secure_delete (old chunk rows, merged FTS segments): rebuild the file so none of it survives.
        conn.execute("VACUUM")
        checkpoint(conn)
        return int(count)

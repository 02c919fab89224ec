"""The SQL of the embedded index: schema, filter clauses, and rows → candidates."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from core.models import Candidate, Condition, EntityKey, Filters, JsonObject, StoredEntity
from core.search.filters import DATE, NUMBER

SCHEMA = """
CREATE TABLE IF NOT EXISTS idx_entities (
    tenant_id TEXT NOT NULL, entity_type TEXT NOT NULL, entity_id TEXT NOT NULL,
    version INTEGER NOT NULL, deleted INTEGER NOT NULL DEFAULT 0,
    source TEXT NOT NULL, owner TEXT, namespace TEXT, created_at TEXT, updated_at TEXT,
    title TEXT, body TEXT, metadata TEXT, content_hash TEXT,
    PRIMARY KEY (tenant_id, entity_type, entity_id)
);
CREATE TABLE IF NOT EXISTS idx_chunks (
    id INTEGER PRIMARY KEY AUTOINCREMENT, tenant_id TEXT NOT NULL, entity_type TEXT NOT NULL, entity_id TEXT NOT NULL,
    chunk_no INTEGER NOT NULL, text TEXT NOT NULL, embedding BLOB
);
CREATE INDEX IF NOT EXISTS idx_chunks_entity ON idx_chunks (tenant_id, entity_type, entity_id);
CREATE INDEX IF NOT EXISTS idx_entities_superseded ON idx_entities (tenant_id)
    WHERE json_extract(metadata, '$.superseded_by') IS NOT NULL;
CREATE TABLE IF NOT EXISTS idx_generation (tenant_id TEXT PRIMARY KEY, gen INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS idx_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO idx_meta VALUES ('db_id', lower(hex(randomblob(16))));
"""

# The change log the derived vector store follows (vector_store.py): one row per chunk inserted or deleted
# and per chunk of an entity whose filterable fields (metadata included: the keyword index filters on it)
# changed. Triggers, so no write path can forget it.
CHANGE_LOG = """
CREATE TABLE IF NOT EXISTS idx_changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, tenant_id TEXT NOT NULL, chunk_id INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_changes_tenant ON idx_changes (tenant_id, seq);
CREATE TRIGGER IF NOT EXISTS idx_chunk_added AFTER INSERT ON idx_chunks BEGIN
    INSERT INTO idx_changes (tenant_id, chunk_id) VALUES (new.tenant_id, new.id);
END;
CREATE TRIGGER IF NOT EXISTS idx_chunk_dropped AFTER DELETE ON idx_chunks BEGIN
    INSERT INTO idx_changes (tenant_id, chunk_id) VALUES (old.tenant_id, old.id);
END;
CREATE TRIGGER IF NOT EXISTS idx_entity_moved
AFTER UPDATE OF source, owner, namespace, deleted, entity_type ON idx_entities BEGIN
    INSERT INTO idx_changes (tenant_id, chunk_id) SELECT tenant_id, id FROM idx_chunks
    WHERE tenant_id = new.tenant_id AND entity_type = new.entity_type AND entity_id = new.entity_id;
END;
CREATE TRIGGER IF NOT EXISTS idx_entity_labelled AFTER UPDATE OF metadata ON idx_entities
WHEN new.metadata IS NOT old.metadata AND new.deleted = 0 BEGIN
    INSERT INTO idx_changes (tenant_id, chunk_id) SELECT tenant_id, id FROM idx_chunks
    WHERE tenant_id = new.tenant_id AND entity_type = new.entity_type AND entity_id = new.entity_id;
END;
"""

# idx_meta key: the change-log position the tantivy keyword index still needs (keyword_index.py); the
# vector store never prunes the log past it, and the fts5 engine removes it.
KEYWORD_FLOOR = "keyword_seq"

ENTITY_COLUMNS = (
    "e.tenant_id, e.entity_type, e.entity_id, e.version, e.deleted, e.source, e.owner, e.namespace, "
    "e.created_at, e.updated_at, e.title, e.body, e.metadata, e.content_hash"
)
JOIN = (
    "JOIN idx_entities e ON e.tenant_id = c.tenant_id AND e.entity_type = c.entity_type "
    "AND e.entity_id = c.entity_id"
)


def filter_sql(filters: Filters) -> tuple[str, list[Any]]:
    """SQL conditions (on c = chunks, e = entities) for everything but the tenant."""
    clauses: list[str] = ["e.deleted = 0"]
    params: list[Any] = []

    def within(column: str, values: Sequence[Any]) -> None:
        clauses.append(f"{column} IN ({','.join('?' * len(values))})")
        params.extend(values)

    if filters.entity_types:
        within("c.entity_type", filters.entity_types)
    if filters.sources:
        within("e.source", filters.sources)
    if filters.namespaces:
        within("e.namespace", filters.namespaces)
    if filters.owner is not None:
        clauses.append("e.owner = ?")
        params.append(filters.owner)
    if filters.owners:
        within("e.owner", filters.owners)
    if filters.exclude_owner is not None:
        clauses.append("(e.owner IS NULL OR e.owner != ?)")
        params.append(filters.exclude_owner)
    for key, values in sorted(filters.metadata.items()):
        marks = ",".join("?" * len(values))
        clauses.append(f"EXISTS (SELECT 1 FROM json_each(e.metadata, ?) WHERE value IN ({marks}))")
        params.append(_json_path(key))
        params.extend(values)
    for condition in filters.conditions:
        sql, args = condition_sql(condition)
        clauses.append(sql)
        params.extend(args)
    return " AND ".join(clauses), params


def _json_path(key: str) -> str:
    return '$."' + key.replace('"', "") + '"'


_COMPARE = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
# Which JSON values a range compares with (core/search/filters.py): numbers, or text that starts with a date
# (the same test as infra/opensearch/documents.py DATED).
_RANGE_VALUES = {
    NUMBER: "type IN ('integer', 'real')",
    DATE: "type = 'text' AND value GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*'",
}


# The chunks of a tenant's entities holding a presence-indexed key (infra/local/keywords/fts.py PRESENCE_KEYS): few
# (superseded memories), found through the partial index above, so the vector leg leaves them out by id
# instead of selecting every other chunk by a scan of every entity's metadata.
# (CROSS JOIN: SQLite then walks the few marked entities first, not every chunk of the tenant.)
PRESENT_CHUNKS = (
    "SELECT c.id FROM idx_entities e CROSS JOIN idx_chunks c ON c.tenant_id = e.tenant_id "
    "AND c.entity_type = e.entity_type AND c.entity_id = e.entity_id "
    "WHERE e.tenant_id = ? AND json_extract(e.metadata, '$.superseded_by') IS NOT NULL"
)


def condition_sql(condition: Condition) -> tuple[str, list[Any]]:
    """One range/not/exists condition as SQL on e = entities, with its parameters."""
    values = list(condition.values)
    if condition.column:
        column = f"e.{condition.field}"
        if condition.op == "exists":
            return f"{column} IS {'NOT ' if values[0] else ''}NULL", []
        if condition.op == "not":
            return f"({column} IS NULL OR {column} NOT IN ({','.join('?' * len(values))}))", values
        return f"{column} {_COMPARE[condition.op]} ?", values
    each = "SELECT 1 FROM json_each(e.metadata, ?) WHERE "
    path = _json_path(condition.field)
    if condition.op == "exists":
        return f"{'' if values[0] else 'NOT '}EXISTS ({each}type != 'null')", [path]
    if condition.op == "not":
        return f"NOT EXISTS ({each}value IN ({','.join('?' * len(values))}))", [path, *values]
    compare = f"{_RANGE_VALUES[condition.kind]} AND value {_COMPARE[condition.op]} ?"
    return f"EXISTS ({each}{compare})", [path, *values]


def stored(row: Sequence[Any]) -> StoredEntity:
    return StoredEntity(
        tenant_id=row[0],
        key=EntityKey(row[1], row[2]),
        version=int(row[3]),
        deleted=bool(row[4]),
        source=row[5],
        owner=row[6],
        namespace=row[7],
        created_at=row[8] or "",
        updated_at=row[9] or "",
        title=row[10] or "",
        body=json.loads(row[11] or "{}"),
        metadata=json.loads(row[12] or "{}"),
        content_hash=row[13] or "",
    )


def collapse(rows: Sequence[Sequence[Any]], k: int) -> list[Candidate]:
    """Rows (type, id, chunk_no, text, score, *entity columns) best first → one Candidate per entity."""
    seen: set[EntityKey] = set()
    out: list[Candidate] = []
    for row in rows:
        key = EntityKey(row[0], row[1])
        if key in seen:
            continue
        seen.add(key)
        e = stored(row[5:])
        out.append(
            Candidate(
                key=key,
                score=float(row[4]),
                chunk_no=int(row[2]),
                title=e.title,
                text=row[3],
                source=e.source,
                owner=e.owner,
                namespace=e.namespace,
                created_at=e.created_at,
                updated_at=e.updated_at,
                metadata=e.metadata,
            )
        )
        if len(out) >= k:
            break
    return out


CANDIDATE_SELECT = (
    "SELECT c.id, c.entity_type, c.entity_id, c.chunk_no, c.text, e.source, e.owner, e.namespace, "
    f"e.created_at, e.updated_at, e.title, e.metadata FROM idx_chunks c {JOIN}"
)


def candidate(row: Sequence[Any], score: float) -> Candidate:
    """A Candidate from a CANDIDATE_SELECT row (its metadata JSON parsed only when read: JsonObject)."""
    return Candidate(
        key=EntityKey(row[1], row[2]),
        score=score,
        chunk_no=int(row[3]),
        title=row[10] or "",
        text=row[4],
        source=row[5],
        owner=row[6],
        namespace=row[7],
        created_at=row[8] or "",
        updated_at=row[9] or "",
        metadata=JsonObject(row[11]) if row[11] and row[11] != "{}" else {},
    )


def candidates(rows: Iterable[Sequence[Any]], picked: Iterable[tuple[int, float]]) -> list[Candidate]:
    """Candidates for (chunk id, score) pairs, in their order, from CANDIDATE_SELECT rows of those chunks
    (a pair without a row is left out)."""
    by_id = {row[0]: row for row in rows}
    return [candidate(by_id[i], score) for i, score in picked if i in by_id]


def chunk_keys(conn: sqlite3.Connection, tenant_id: str, ids: list[int]) -> dict[int, tuple[EntityKey, int]]:
    """Chunk id → (entity, chunk number) of the tenant's chunks among `ids`, in one read by primary key (a
    chunk row exists only while its entity is live: a delete drops the chunks in the same transaction,
    writes.py, so no entity join is needed)."""
    marks = ",".join("?" * len(ids))
    rows = conn.execute(
        # `+tenant_id`: look rows up by primary key, then re-check the tenant (an index scan over
        # the tenant's chunks would cost 10x more).
        f"SELECT id, entity_type, entity_id, chunk_no FROM idx_chunks WHERE id IN ({marks}) AND +tenant_id = ?",
        [*ids, tenant_id],
    )
    return {r[0]: (EntityKey(r[1], r[2]), r[3]) for r in rows}


def ranking_candidate(chunk_id: int, key: EntityKey, chunk_no: int, score: float) -> Candidate:
    """A candidate without its display values (CandidateQuery.display False): its key, matched chunk and
    score, and the chunk's id as the handle `displayed` reads them by."""
    return Candidate(key, score, chunk_no, "", "", "", None, None, "", "", {}, chunk_id)


def displayed(conn: sqlite3.Connection, tenant_id: str, listed: Sequence[Candidate]) -> list[Candidate]:
    """Retriever.displayed: the candidates with a handle (a chunk id) read by primary key in one query, the
    tenant re-checked. A chunk gone since the ranking (its entity rewritten or deleted) is looked up again by
    its entity: a live one shows its current chunk of that number (else its first), a deleted one is left
    out."""
    handles = [c.handle for c in listed if c.handle is not None]
    if not handles:
        return list(listed)
    marks = ",".join("?" * len(handles))
    where = f"WHERE c.id IN ({marks}) AND +c.tenant_id = ? AND e.deleted = 0"
    by_id = {row[0]: row for row in conn.execute(f"{CANDIDATE_SELECT} {where}", [*handles, tenant_id])}
    found: dict[EntityKey, Any] = {}
    for c in listed:
        row = by_id.get(c.handle)
        if row is not None and row[1] == c.key.entity_type and row[2] == c.key.entity_id:
            found[c.key] = row
    moved = [c for c in listed if c.handle is not None and c.key not in found]
    if moved:
        found.update(_current_rows(conn, tenant_id, moved))
    out = []
    for c in listed:
        if c.handle is None:
            out.append(c)
        elif (row := found.get(c.key)) is not None:
            out.append(candidate(row, c.score))
    return out


def _current_rows(
    conn: sqlite3.Connection, tenant_id: str, moved: Sequence[Candidate]
) -> dict[EntityKey, Any]:
    """Each live entity's CANDIDATE_SELECT row of the chunk numbered as its candidate's, else its first."""
    # The tenant inside each alternative: SQLite then looks each one up through idx_chunks_entity.
    alternatives = " OR ".join(["(c.tenant_id = ? AND c.entity_type = ? AND c.entity_id = ?)"] * len(moved))
    args = [v for c in moved for v in (tenant_id, c.key.entity_type, c.key.entity_id)]
    wanted = {c.key: c.chunk_no for c in moved}
    best: dict[EntityKey, Any] = {}
    sql = f"{CANDIDATE_SELECT} WHERE ({alternatives}) AND e.deleted = 0 ORDER BY c.chunk_no"
    for row in conn.execute(sql, args):
        key = EntityKey(row[1], row[2])
        if key not in best or int(row[3]) == wanted.get(key):
            best[key] = row
    return best

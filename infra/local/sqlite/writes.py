"""The write part of SqliteIndex: versioned writes (a write older than or equal to the stored version is
refused), metadata and placement updates, and tombstones that keep a deleted entity's version so an older
write arriving later loses. Each write also bumps its tenant's generation, which the vector store follows."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from core.models import EntityKey, EntityRecord, Placement, WriteOutcome
from core.ports import MetadataTouch
from infra.local.keywords.fts import scope_text
from infra.local.keywords.fts_tables import create_fts_table, fts_table
from infra.local.sqlite.store import SQL_BATCH, SqliteStore

_WHERE_KEY = "tenant_id=? AND entity_type=? AND entity_id=?"


class SqliteWrites:
    """The writes of SqliteIndex: every write runs in one transaction of the store (SqliteStore.tx)."""

    def __init__(self, store: SqliteStore) -> None:
        self._store = store

    def upsert(self, record: EntityRecord) -> WriteOutcome:
        """Store a whole entity version (see SearchIndex.upsert)."""
        return self.upsert_many([record])[0]

    def upsert_many(self, records: Sequence[EntityRecord]) -> list[WriteOutcome]:
        """Store many entity versions in one transaction; one outcome per record, in order."""
        outcomes: list[WriteOutcome] = []
        touched: set[str] = set()
        with self._store.tx() as conn:
            tables = {t: create_fts_table(conn, t) for t in sorted({r.tenant_id for r in records})}
            for record in records:
                outcome = _write(conn, record, tables[record.tenant_id])
                outcomes.append(outcome)
                if outcome is WriteOutcome.APPLIED:
                    touched.add(record.tenant_id)
            for tenant in sorted(touched):
                _bump(conn, tenant)
        return outcomes

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
        """Change body, metadata and placement (source/owner/namespace, filtered on); text and embeddings
        stay as they are."""
        with self._store.tx() as conn:
            row = _stored_row(conn, tenant_id, key)
            if row is None or row[1]:
                return WriteOutcome.NOT_FOUND
            refused = _outcome(int(row[0]), version)
            if refused is not None:
                return refused
            conn.execute(
                f"UPDATE idx_entities SET version=?, body=?, metadata=?, updated_at=? WHERE {_WHERE_KEY}",
                (
                    version,
                    json.dumps(dict(body)),
                    json.dumps(dict(metadata)),
                    updated_at,
                    tenant_id,
                    key.entity_type,
                    key.entity_id,
                ),
            )
            if placement is not None:
                _place(conn, tenant_id, key, placement)
            _bump(conn, tenant_id)
        return WriteOutcome.APPLIED

    def touch_metadata(self, tenant_id: str, touches: Sequence[MetadataTouch]) -> list[WriteOutcome]:
        """Merge each touch's changes into the metadata of the entity live at its version, the version kept,
        in one transaction (SearchIndex). The derived stores are not told: the vector store keeps no
        metadata, and bookkeeping fields are filtered on by SQL conditions on the entity row, never through
        the keyword index's tokens — so the change-log rows the metadata trigger writes are taken back in
        the same transaction and the generation stays (a flush of uses re-embeds and re-indexes nothing)."""
        outcomes = []
        with self._store.tx() as conn:
            floor = conn.execute("SELECT coalesce(max(seq), 0) FROM idx_changes").fetchone()[0]
            for touch in touches:
                key = touch.key
                row = conn.execute(
                    f"SELECT version, deleted, metadata FROM idx_entities WHERE {_WHERE_KEY}",
                    (tenant_id, key.entity_type, key.entity_id),
                ).fetchone()
                if row is None or row[1] or int(row[0]) != touch.version:
                    outcomes.append(WriteOutcome.NOT_FOUND)
                    continue
                merged = {**json.loads(row[2] or "{}"), **touch.changes}
                kept = json.dumps({k: v for k, v in merged.items() if v is not None})
                conn.execute(
                    f"UPDATE idx_entities SET metadata=? WHERE {_WHERE_KEY}",
                    (kept, tenant_id, key.entity_type, key.entity_id),
                )
                outcomes.append(WriteOutcome.APPLIED)
            conn.execute("DELETE FROM idx_changes WHERE seq > ?", (floor,))
        return outcomes

    def delete(self, tenant_id: str, key: EntityKey, version: int | None) -> WriteOutcome:
        """Drop chunks and FTS rows and keep a tombstone with the version, so older writes lose.

        Unknown entity: a tombstone alone when a version is given (NOT_FOUND without one). A live entity
        at exactly `version` is deleted (a delete wins a tie); an existing tombstone only moves forward.
        """
        with self._store.tx() as conn:
            row = _stored_row(conn, tenant_id, key)
            if row is None:
                if version is None:
                    return WriteOutcome.NOT_FOUND
                conn.execute(  # delete before create: a tombstone, so the older create loses
                    "INSERT INTO idx_entities (tenant_id, entity_type, entity_id, version, deleted, source, "
                    "title, body, metadata) VALUES (?,?,?,?,1,'','','{}','{}')",
                    (tenant_id, key.entity_type, key.entity_id, version),
                )
                return WriteOutcome.APPLIED
            stored, deleted = int(row[0]), bool(row[1])
            effective = stored + 1 if version is None else version
            if effective < stored or (deleted and effective == stored):
                return WriteOutcome.STALE if effective < stored else WriteOutcome.DUPLICATE
            _drop_chunks(conn, tenant_id, key)
            conn.execute(
                f"UPDATE idx_entities SET deleted=1, version=?, body='{{}}', metadata='{{}}', title='' "
                f"WHERE {_WHERE_KEY}",
                (effective, tenant_id, key.entity_type, key.entity_id),
            )
            _bump(conn, tenant_id)
        return WriteOutcome.APPLIED


def _stored_row(conn: sqlite3.Connection, tenant_id: str, key: EntityKey) -> tuple[Any, ...] | None:
    """(version, deleted) of the stored entity, tombstones included; None when there is none."""
    row: tuple[Any, ...] | None = conn.execute(
        f"SELECT version, deleted FROM idx_entities WHERE {_WHERE_KEY}",
        (tenant_id, key.entity_type, key.entity_id),
    ).fetchone()
    return row


def _outcome(stored: int | None, given: int) -> WriteOutcome | None:
    """None when `given` may replace `stored`, else why not (stale or duplicate)."""
    if stored is None or given > stored:
        return None
    return WriteOutcome.STALE if given < stored else WriteOutcome.DUPLICATE


def _write(conn: sqlite3.Connection, record: EntityRecord, table: str) -> WriteOutcome:
    """Store one record; `table`: its tenant's FTS5 table."""
    t, key = record.tenant_id, record.key
    row = _stored_row(conn, t, key)
    refused = _outcome(None if row is None else int(row[0]), record.version)
    if refused is not None:
        return refused
    _drop_chunks(conn, t, key)
    conn.execute(
        "INSERT OR REPLACE INTO idx_entities VALUES (?,?,?,?,0,?,?,?,?,?,?,?,?,?)",
        (
            t,
            key.entity_type,
            key.entity_id,
            record.version,
            record.source,
            record.owner,
            record.namespace,
            record.created_at,
            record.updated_at,
            record.title,
            json.dumps(dict(record.body)),
            json.dumps(dict(record.metadata)),
            record.content_hash,
        ),
    )
    scope = scope_text(t, key.entity_type, record.source, record.owner, record.namespace)
    for chunk in record.chunks:
        blob = None if chunk.embedding is None else np.asarray(chunk.embedding, np.float32).tobytes()
        cur = conn.execute(
            "INSERT INTO idx_chunks (tenant_id, entity_type, entity_id, chunk_no, text, embedding) "
            "VALUES (?,?,?,?,?,?)",
            (t, key.entity_type, key.entity_id, chunk.chunk_no, chunk.text, blob),
        )
        conn.execute(
            f"INSERT INTO {table} (rowid, scope, b3, b2, b1) VALUES (?,?,?,?,?)",
            (cur.lastrowid, scope, *chunk.tiers),
        )
    return WriteOutcome.APPLIED


def _drop_chunks(conn: sqlite3.Connection, tenant_id: str, key: EntityKey) -> None:
    """Delete the entity's chunks and their rows of the tenant's FTS5 table."""
    ids = [
        r[0]
        for r in conn.execute(
            f"SELECT id FROM idx_chunks WHERE {_WHERE_KEY}", (tenant_id, key.entity_type, key.entity_id)
        )
    ]
    table = fts_table(tenant_id)  # exists: the tenant's chunks were written into it
    for i in range(0, len(ids), SQL_BATCH):
        batch = ids[i : i + SQL_BATCH]
        marks = ",".join("?" * len(batch))
        conn.execute(f"DELETE FROM {table} WHERE rowid IN ({marks})", batch)
        conn.execute(f"DELETE FROM idx_chunks WHERE id IN ({marks})", batch)


def _bump(conn: sqlite3.Connection, tenant_id: str) -> None:
    """Move the tenant's generation on: loaded vector stores see they are behind."""
    conn.execute(
        "INSERT INTO idx_generation (tenant_id, gen) VALUES (?, 1) "
        "ON CONFLICT (tenant_id) DO UPDATE SET gen = gen + 1",
        (tenant_id,),
    )


def _place(conn: sqlite3.Connection, tenant_id: str, key: EntityKey, placement: Placement) -> None:
    """Move an entity's filter fields: its row and the scope column of each of its chunks."""
    ident = (tenant_id, key.entity_type, key.entity_id)
    conn.execute(
        f"UPDATE idx_entities SET source=?, owner=?, namespace=? WHERE {_WHERE_KEY}",
        (placement.source, placement.owner, placement.namespace, *ident),
    )
    scope = scope_text(tenant_id, key.entity_type, placement.source, placement.owner, placement.namespace)
    conn.execute(
        f"UPDATE {create_fts_table(conn, tenant_id)} SET scope=? "
        f"WHERE rowid IN (SELECT id FROM idx_chunks WHERE {_WHERE_KEY})",
        (scope, *ident),
    )

"""Chunk id → (entity, chunk number), remembered by the process: the keys a ranking without display values
needs (CandidateQuery.display False), without a read of idx_chunks per search.

An entry read once stays true: chunk ids are AUTOINCREMENT (never reused, even after a delete) and a chunk
row's key columns are never updated (writes.py replaces a chunk by deleting it and inserting a new one). What
an entry cannot tell is whether the chunk still exists, so it answers only for ids ranked from a view in
which they were live (the vector store's snapshot, a keyword index with nothing deleted since its commit);
other ids are read, and their rows' presence is the check. A chunk deleted after such a ranking is left out
when the page is shown (sql.displayed), as one deleted after the read always was.

Measured (bench/cpu_budget.py, 2,000 entities): the three key reads of a hybrid search took ~0.45 ms each
for 100 ids, a lookup here ~0.01 ms (docs/benchmarks.md#chunk-keys-kept).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence

from core.models import EntityKey
from infra.local.sqlite.sql import chunk_keys

KEPT_CHUNKS = 65_536  # entries kept (~20 MB at most); past it the oldest quarter is dropped

ChunkKey = tuple[EntityKey, int]


class ChunkKeys:
    """The remembered keys of one database's chunks (see module docstring). Thread-safe: lookups are
    single dict reads, every change is made under a lock."""

    def __init__(self, capacity: int = KEPT_CHUNKS) -> None:
        """`capacity`: entries kept at most."""
        self._known: dict[int, tuple[str, ChunkKey]] = {}
        self._capacity = capacity
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._known)

    def read(
        self, conn: sqlite3.Connection, tenant_id: str, ids: Sequence[int], live: bool
    ) -> dict[int, ChunkKey]:
        """Chunk id → (entity, chunk number) of the tenant's chunks among `ids`, as sql.chunk_keys gives
        them. `live`: the ids were ranked from a view in which each was live, so a remembered one is not
        read again; otherwise every id is read (a deleted chunk's absence is the answer). An id remembered
        for another tenant is read again, and its row's tenant check leaves it out."""
        if not live:
            found = chunk_keys(conn, tenant_id, list(ids))
            self._remember(tenant_id, found)
            return found
        known = self._known
        found = {}
        missing = []
        for chunk_id in ids:
            entry = known.get(chunk_id)
            if entry is not None and entry[0] == tenant_id:
                found[chunk_id] = entry[1]
            else:
                missing.append(chunk_id)
        if missing:
            read = chunk_keys(conn, tenant_id, missing)
            self._remember(tenant_id, read)
            found.update(read)
        return found

    def _remember(self, tenant_id: str, found: dict[int, ChunkKey]) -> None:
        if not found:
            return
        with self._lock:
            known = self._known
            if len(known) + len(found) > self._capacity:
                for chunk_id in list(known)[: max(len(known) // 4, len(known) + len(found) - self._capacity)]:
                    del known[chunk_id]
            for chunk_id, key in found.items():
                known[chunk_id] = (tenant_id, key)

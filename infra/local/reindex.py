"""`quarry reindex` on the embedded backend: re-embed every chunk (of the data file, or of one tenant) with
another model while searches go on, then switch vectors and model in one transaction (docs/architecture.md, A
tenant's data lifecycle).

Which model a tenant's vectors come from: `idx_tenant_model` (a row per tenant switched alone with
`--tenant`), else `idx_embedding_model` (the whole file's, set by a run without `--tenant`, which also
clears every tenant row: all tenants are then on that model), else the configured model. Each tenant's
vector store holds its own dimension, so tenants on models of different sizes share one file.

One run at a time per data file (an exclusive `flock` on `<file>.reindex.lock`, released by the kernel
if the process dies); a run starts by dropping the shadow vectors a crashed run left behind (they may
come from another model).

1. Shadow: chunks without a shadow vector are embedded with the new model in batches, each batch its own
   short transaction (`idx_reindex`), so readers and writers are never blocked for long.
2. Swap: inside one write-locked transaction, if no chunk lacks a shadow (writes that landed meanwhile are
   embedded first, then the swap is retried), every chunk's vector is replaced by its shadow, the data
   file's active model (`idx_embedding_model`) is set and every tenant's generation is bumped. A reader's
   snapshot sees all old vectors or all new ones; the servers' `SwitchingEmbedder` reads the active model
   before each embedding, so queries follow the switch at once.
3. Settle: a write that embedded with the old model just before the swap may commit just after it; after
   `settle_seconds` (longer than a write takes), chunks newer than the swap are embedded again with the new
   model (idempotent for the ones that already were).
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import ConflictError
from core.indexing.chunking import embedding_input
from core.indexing.entity_types import EntityTypeRegistry
from core.ports import Embedder
from infra.local.sqlite.connect import immediate, open_sqlite
from infra.local.vectors.vector_files import ColumnFiles
from infra.local.vectors.vector_store import VectorStores

SCHEMA = """
CREATE TABLE IF NOT EXISTS idx_reindex (chunk_id INTEGER PRIMARY KEY, embedding BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS idx_embedding_model (
    id INTEGER PRIMARY KEY CHECK (id = 1), model_dir TEXT NOT NULL, model_id TEXT NOT NULL,
    dimension INTEGER NOT NULL, switched_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS idx_tenant_model (
    tenant_id TEXT PRIMARY KEY, model_dir TEXT NOT NULL, model_id TEXT NOT NULL,
    dimension INTEGER NOT NULL, switched_at REAL NOT NULL
);
"""
ACTIVE = (
    "SELECT coalesce((SELECT model_dir FROM idx_tenant_model WHERE tenant_id = ?), "
    "(SELECT model_dir FROM idx_embedding_model WHERE id = 1))"
)
REINDEX_BATCH = 64  # chunks per embedding call and per shadow transaction (as `quarry ingest` batches)
MAX_SWAP_ATTEMPTS = 20  # rounds of "embed what was written meanwhile, try again" before giving up
DEFAULT_SETTLE_SECONDS = 30.0  # longer than a bulk write of 500 entities takes to embed and commit
CHUNKS = (
    "SELECT c.id, c.entity_type, e.title, c.text FROM idx_chunks c JOIN idx_entities e "
    "ON e.tenant_id = c.tenant_id AND e.entity_type = c.entity_type AND e.entity_id = c.entity_id "
)
PENDING = (
    CHUNKS
    + "LEFT JOIN idx_reindex r ON r.chunk_id = c.id WHERE r.chunk_id IS NULL AND c.embedding IS NOT NULL "
    "AND c.id > ? {scope} ORDER BY c.id LIMIT ?"
)
NEWER = CHUNKS + "WHERE c.id > ? AND c.embedding IS NOT NULL {scope} ORDER BY c.id LIMIT ?"
TENANT_SCOPE = "AND c.tenant_id = ?"


class ReindexBusyError(ConflictError):
    """Another `quarry reindex` is running on the same data file."""


@dataclass(frozen=True, slots=True)
class ReindexReport:
    """What a reindex did."""

    model_dir: str
    tenant: str | None  # None: every tenant of the data file
    model_id: str
    dimension: int
    chunks: int
    swap_attempts: int
    settled_chunks: int
    took_s: float


def passage_input(registry: EntityTypeRegistry, entity_type: str, title: str, text: str) -> str:
    """The text a chunk's vector embeds, exactly as IndexingService builds it (core.indexing.chunking)."""
    chunked = entity_type in registry.names() and registry.get(entity_type).chunked
    return embedding_input(chunked, title, text)


def active_model(conn: sqlite3.Connection, tenant_id: str | None = None) -> str | None:
    """The model folder a tenant's vectors were switched to (its own, else the file's), or None (the
    configured model)."""
    conn.executescript(SCHEMA)
    row = conn.execute(ACTIVE, (tenant_id,)).fetchone()
    return None if row is None or row[0] is None else str(row[0])


class SqliteReindexer:
    """The shadow/swap/settle steps on one data file, or on one tenant of it (see module docstring)."""

    def __init__(self, path: str | Path, registry: EntityTypeRegistry, tenant: str | None = None) -> None:
        self._path = path
        self._conn = open_sqlite(path)
        self._conn.executescript(SCHEMA)
        self._registry = registry
        self._tenant = tenant
        self._scope = "" if tenant is None else TENANT_SCOPE
        self._scope_args: tuple[str, ...] = () if tenant is None else (tenant,)
        self._lock_file: Any = None

    @property
    def tenant(self) -> str | None:
        """The tenant this run re-embeds, or None for every tenant."""
        return self._tenant

    def begin(self) -> None:
        """Take the data file's reindex lock and drop a crashed run's shadow vectors."""
        self._lock_file = open(str(self._path) + ".reindex.lock", "a+b")  # noqa: SIM115 - held for the run
        try:
            fcntl.flock(self._lock_file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            self._lock_file.close()
            self._lock_file = None
            raise ReindexBusyError(f"another quarry reindex is running on {self._path}") from exc
        with immediate(self._conn):
            self._conn.execute("DELETE FROM idx_reindex")

    def end(self) -> None:
        """Release the reindex lock (closing the descriptor releases the flock)."""
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None

    def close(self) -> None:
        """Close the connection and release the lock."""
        self.end()
        self._conn.close()

    def has_tenant(self) -> bool:
        """True when the run's tenant has anything indexed (always True for a whole-file run)."""
        if self._tenant is None:
            return True
        row = self._conn.execute("SELECT 1 FROM idx_generation WHERE tenant_id = ?", (self._tenant,))
        return row.fetchone() is not None

    def _embed(self, embedder: Embedder, rows: Sequence[tuple[Any, ...]]) -> list[tuple[int, bytes]]:
        texts = [passage_input(self._registry, r[1], r[2] or "", r[3]) for r in rows]
        vectors = embedder.embed(texts)
        return [(int(r[0]), np.asarray(v, np.float32).tobytes()) for r, v in zip(rows, vectors, strict=True)]

    def shadow(self, embedder: Embedder, after_id: int = 0, batch: int = REINDEX_BATCH) -> int:
        """Embed every chunk without a shadow vector (id > after_id); how many were embedded."""
        done = 0
        while True:
            rows = self._conn.execute(
                PENDING.format(scope=self._scope), (after_id, *self._scope_args, batch)
            ).fetchall()
            if not rows:
                return done
            pairs = self._embed(embedder, rows)
            with immediate(self._conn):
                self._conn.executemany("INSERT OR REPLACE INTO idx_reindex VALUES (?, ?)", pairs)
            done += len(rows)

    def try_swap(self, model_dir: str, embedder: Embedder, now: float) -> tuple[bool, int]:
        """Swap when no chunk in scope lacks a shadow; (swapped, the largest chunk id at the swap)."""
        conn = self._conn
        with immediate(conn):
            if conn.execute(PENDING.format(scope=self._scope), (0, *self._scope_args, 1)).fetchone():
                return False, 0  # nothing written: the commit ends the transaction
            conn.execute(
                "UPDATE idx_chunks SET embedding = (SELECT r.embedding FROM idx_reindex r WHERE r.chunk_id = "
                f"idx_chunks.id) WHERE embedding IS NOT NULL {self._scope.replace('c.', '')}",
                self._scope_args,
            )
            row = (model_dir, embedder.model_id, embedder.dimension, now)
            if self._tenant is None:
                conn.execute("INSERT OR REPLACE INTO idx_embedding_model VALUES (1, ?, ?, ?, ?)", row)
                conn.execute("DELETE FROM idx_tenant_model")  # every tenant is on this model now
                conn.execute("UPDATE idx_generation SET gen = gen + 1")
            else:
                conn.execute(
                    "INSERT OR REPLACE INTO idx_tenant_model VALUES (?, ?, ?, ?, ?)", (self._tenant, *row)
                )
                conn.execute("UPDATE idx_generation SET gen = gen + 1 WHERE tenant_id = ?", (self._tenant,))
            conn.execute("DELETE FROM idx_reindex")
            top = conn.execute("SELECT coalesce(max(id), 0) FROM idx_chunks").fetchone()[0]
        return True, int(top)

    def settle(self, embedder: Embedder, after_id: int) -> int:
        """Embed again, with the new model, every chunk newer than the swap; how many."""
        count = 0
        while True:
            rows = self._conn.execute(
                NEWER.format(scope=self._scope), (after_id, *self._scope_args, REINDEX_BATCH)
            ).fetchall()
            if not rows:
                return count
            pairs = self._embed(embedder, rows)
            with immediate(self._conn):
                self._conn.executemany(
                    "UPDATE idx_chunks SET embedding = ? WHERE id = ?", [(b, i) for i, b in pairs]
                )
                self._bump()
            count += len(rows)
            after_id = pairs[-1][0]

    def _bump(self) -> None:
        sql = "UPDATE idx_generation SET gen = gen + 1"
        self._conn.execute(sql if self._tenant is None else f"{sql} WHERE tenant_id = ?", self._scope_args)

    def invalidate_vector_stores(self) -> int:
        """Make every process rebuild its memory-mapped vectors from the swapped ones: each tenant's (or the
        run's tenant's) `meta.json` is replaced by one no reader accepts (a changed file they notice, then
        a full build at the new dimension). How many stores."""
        folder = Path(str(self._path) + ".vectors")
        stores = sorted(p for p in folder.glob("*") if (p / "meta.json").exists())
        if self._tenant is not None:
            stores = [p for p in stores if p.name == VectorStores.store_name(self._tenant)]
        count = 0
        for store in stores:
            with ColumnFiles(store, "").lock():
                tmp = store / f"meta.reindex.{os.getpid()}.tmp"
                tmp.write_text(json.dumps({"format": -1, "reason": "reindexed"}))
                os.replace(tmp, store / "meta.json")
            count += 1
        return count

    def tenants(self) -> list[str]:
        """The tenants whose cached searches a swap must invalidate (every tenant, or the run's)."""
        if self._tenant is not None:
            return [self._tenant]
        return [r[0] for r in self._conn.execute("SELECT tenant_id FROM idx_generation ORDER BY tenant_id")]


def reindex(
    reindexer: SqliteReindexer,
    embedder: Embedder,
    model_dir: str,
    settle_seconds: float = DEFAULT_SETTLE_SECONDS,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    on_swap: Callable[[], None] | None = None,
) -> ReindexReport:
    """Shadow, swap (retrying while writes land), settle; `on_swap` runs right after the swap commits."""
    started = clock()
    reindexer.begin()
    try:
        chunks = reindexer.shadow(embedder)
        attempts, swapped, top = 0, False, 0
        while not swapped:
            if attempts == MAX_SWAP_ATTEMPTS:
                raise RuntimeError(
                    f"writes kept arriving: no swap after {MAX_SWAP_ATTEMPTS} attempts; run again"
                )
            attempts += 1
            swapped, top = reindexer.try_swap(model_dir, embedder, clock())
            if not swapped:
                chunks += reindexer.shadow(embedder)
        reindexer.invalidate_vector_stores()
        if on_swap is not None:
            on_swap()
        sleep(settle_seconds)
        settled = reindexer.settle(embedder, top)
    finally:
        reindexer.end()
    return ReindexReport(
        model_dir,
        reindexer.tenant,
        embedder.model_id,
        embedder.dimension,
        chunks,
        attempts,
        settled,
        round(clock() - started, 3),
    )

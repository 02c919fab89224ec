"""`quarry reindex` on the embedded backend: re-embed every chunk with another model while searches go on,
then switch vectors and model in one transaction (DESIGN.md §9, issue 13).

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

import json
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.entities import EntityTypeRegistry
from core.ports import Embedder
from infra.local.sqlite_connect import open_sqlite
from infra.local.vector_files import ColumnFiles

SCHEMA = """
CREATE TABLE IF NOT EXISTS idx_reindex (chunk_id INTEGER PRIMARY KEY, embedding BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS idx_embedding_model (
    id INTEGER PRIMARY KEY CHECK (id = 1), model_dir TEXT NOT NULL, model_id TEXT NOT NULL,
    dimension INTEGER NOT NULL, switched_at REAL NOT NULL
);
"""
REINDEX_BATCH = 64  # chunks per embedding call and per shadow transaction (as `quarry ingest` batches)
MAX_SWAP_ATTEMPTS = 20  # rounds of "embed what was written meanwhile, try again" before giving up
DEFAULT_SETTLE_SECONDS = 30.0  # longer than a bulk write of 500 entities takes to embed and commit
PENDING = (
    "SELECT c.id, c.entity_type, e.title, c.text FROM idx_chunks c JOIN idx_entities e "
    "ON e.tenant_id = c.tenant_id AND e.entity_type = c.entity_type AND e.entity_id = c.entity_id "
    "LEFT JOIN idx_reindex r ON r.chunk_id = c.id WHERE r.chunk_id IS NULL AND c.embedding IS NOT NULL "
    "AND c.id > ? ORDER BY c.id LIMIT ?"
)


@dataclass(frozen=True, slots=True)
class ReindexReport:
    """What a reindex did."""

    model_dir: str
    model_id: str
    dimension: int
    chunks: int
    swap_attempts: int
    settled_chunks: int
    took_s: float


def passage_input(registry: EntityTypeRegistry, entity_type: str, title: str, text: str) -> str:
    """The text a chunk's vector embeds, as IndexingService builds it: `title. text` for chunked types."""
    chunked = entity_type in registry.names() and registry.get(entity_type).chunked
    return f"{title}. {text}" if chunked else text


def active_model(conn: sqlite3.Connection) -> str | None:
    """The model folder the data file's vectors were switched to, or None (the configured model)."""
    conn.executescript(SCHEMA)
    row = conn.execute("SELECT model_dir FROM idx_embedding_model WHERE id = 1").fetchone()
    return None if row is None else str(row[0])


class SqliteReindexer:
    """The shadow/swap/settle steps on one data file (see module docstring)."""

    def __init__(self, path: str | Path, registry: EntityTypeRegistry) -> None:
        self._path = path
        self._conn = open_sqlite(path)
        self._conn.executescript(SCHEMA)
        self._registry = registry

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()

    def _embed(self, embedder: Embedder, rows: Sequence[tuple[Any, ...]]) -> list[tuple[int, bytes]]:
        texts = [passage_input(self._registry, r[1], r[2] or "", r[3]) for r in rows]
        vectors = embedder.embed(texts)
        return [(int(r[0]), np.asarray(v, np.float32).tobytes()) for r, v in zip(rows, vectors, strict=True)]

    def shadow(self, embedder: Embedder, after_id: int = 0, batch: int = REINDEX_BATCH) -> int:
        """Embed every chunk without a shadow vector (id > after_id); how many were embedded."""
        done = 0
        while True:
            rows = self._conn.execute(PENDING, (after_id, batch)).fetchall()
            if not rows:
                return done
            pairs = self._embed(embedder, rows)
            self._conn.execute("BEGIN IMMEDIATE")
            self._conn.executemany("INSERT OR REPLACE INTO idx_reindex VALUES (?, ?)", pairs)
            self._conn.execute("COMMIT")
            done += len(rows)

    def try_swap(self, model_dir: str, embedder: Embedder, now: float) -> tuple[bool, int]:
        """Swap when no chunk lacks a shadow; (swapped, the largest chunk id at the swap)."""
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            if conn.execute(PENDING, (0, 1)).fetchone() is not None:
                conn.execute("ROLLBACK")
                return False, 0
            conn.execute(
                "UPDATE idx_chunks SET embedding = (SELECT r.embedding FROM idx_reindex r WHERE r.chunk_id = "
                "idx_chunks.id) WHERE embedding IS NOT NULL"
            )
            conn.execute(
                "INSERT OR REPLACE INTO idx_embedding_model VALUES (1, ?, ?, ?, ?)",
                (model_dir, embedder.model_id, embedder.dimension, now),
            )
            conn.execute("UPDATE idx_generation SET gen = gen + 1")
            conn.execute("DELETE FROM idx_reindex")
            top = conn.execute("SELECT coalesce(max(id), 0) FROM idx_chunks").fetchone()[0]
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return True, int(top)

    def settle(self, embedder: Embedder, after_id: int) -> int:
        """Embed again, with the new model, every chunk newer than the swap; how many."""
        count = 0
        while True:
            rows = self._conn.execute(
                "SELECT c.id, c.entity_type, e.title, c.text FROM idx_chunks c JOIN idx_entities e "
                "ON e.tenant_id = c.tenant_id AND e.entity_type = c.entity_type AND e.entity_id = c.entity_id "
                "WHERE c.id > ? AND c.embedding IS NOT NULL ORDER BY c.id LIMIT ?",
                (after_id, REINDEX_BATCH),
            ).fetchall()
            if not rows:
                return count
            pairs = self._embed(embedder, rows)
            self._conn.execute("BEGIN IMMEDIATE")
            self._conn.executemany(
                "UPDATE idx_chunks SET embedding = ? WHERE id = ?", [(b, i) for i, b in pairs]
            )
            self._conn.execute("UPDATE idx_generation SET gen = gen + 1")
            self._conn.execute("COMMIT")
            count += len(rows)
            after_id = pairs[-1][0]

    def invalidate_vector_stores(self) -> int:
        """Make every process rebuild its memory-mapped vectors from the swapped ones: each tenant's
        `meta.json` is replaced by one no reader accepts (a changed file they notice, then a full build
        at the new dimension). How many stores."""
        folder = Path(str(self._path) + ".vectors")
        count = 0
        for store in sorted(p for p in folder.glob("*") if (p / "meta.json").exists()):
            with ColumnFiles(store, "").lock():
                tmp = store / f"meta.reindex.{os.getpid()}.tmp"
                tmp.write_text(json.dumps({"format": -1, "reason": "reindexed"}))
                os.replace(tmp, store / "meta.json")
            count += 1
        return count

    def tenants(self) -> list[str]:
        """Every tenant with a generation (whose cached searches a swap must invalidate)."""
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
    chunks = reindexer.shadow(embedder)
    attempts, swapped, top = 0, False, 0
    while not swapped:
        if attempts == MAX_SWAP_ATTEMPTS:
            raise RuntimeError(f"writes kept arriving: no swap after {MAX_SWAP_ATTEMPTS} attempts; run again")
        attempts += 1
        swapped, top = reindexer.try_swap(model_dir, embedder, clock())
        if not swapped:
            chunks += reindexer.shadow(embedder)
    reindexer.invalidate_vector_stores()
    if on_swap is not None:
        on_swap()
    sleep(settle_seconds)
    settled = reindexer.settle(embedder, top)
    return ReindexReport(
        model_dir,
        embedder.model_id,
        embedder.dimension,
        chunks,
        attempts,
        settled,
        round(clock() - started, 3),
    )

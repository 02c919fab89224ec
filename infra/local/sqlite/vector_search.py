"""The vector part of SqliteIndex's reads: cosine k-NN over the tenant's chunk vectors, held in
memory-mapped files that follow the writes (vector_store.py), exact or through the approximate index
(ivf.py), filters applied before ranking; and the stored chunk embeddings read back."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import numpy as np

from core.models import Candidate, Condition, EntityKey, Filters, Vector
from infra.local.keywords.fts import presence_conditions
from infra.local.sqlite.errors import FAILURES, FILE_FAILURES, translate, translate_files
from infra.local.sqlite.lexical import CHUNK_ROWS_PER_ENTITY
from infra.local.sqlite.sql import (
    CANDIDATE_SELECT,
    JOIN,
    PRESENT_CHUNKS,
    candidates,
    filter_sql,
    ranking_candidate,
)
from infra.local.sqlite.store import SqliteStore
from infra.local.vectors.exact_knn import VectorSnapshot
from infra.local.vectors.vector_store import VectorStores

ANN_PROBE = 24  # lists scored per approximate search (measured in bench/scale.py: recall@100 vs speed)
VECTOR_ATTEMPTS = 3  # rankings retried when a concurrent write replaced a picked chunk


class SqliteVectorSearch:
    """The vector part of SqliteIndex: `vector` and `chunk_vectors` (see module docstring)."""

    def __init__(self, store: SqliteStore, vectors: VectorStores, ann_probe: int = ANN_PROBE) -> None:
        """`vectors`: the stores that follow `store`'s writes; `ann_probe`: lists an approximate search
        scores (build_sqlite_index)."""
        self._store = store
        self._vectors = vectors
        self.ann_probe = ann_probe  # a benchmark sweeps it (bench/scale.py)

    def vector(
        self,
        tenant_id: str,
        embedding: Vector,
        filters: Filters,
        k: int,
        exact: bool = False,
        ranking_only: bool = False,
    ) -> list[Candidate]:
        """Cosine k-NN over the tenant's chunk vectors, filters applied before ranking: exact, or through the
        approximate index for a tenant past `ann_min_chunks` (unless `exact`). `ranking_only`: keys,
        matched chunks and scores, without the display values (CandidateQuery.vector_ranking_only, and
        CandidateQuery.display False: each carries its chunk id as the handle they are read by). The leg
        takes this thread's connection once and runs its reads on it, SQLite's failures translated here."""
        if k <= 0:
            return []
        conn = self._store.conn()
        try:
            return self._ranked(
                conn, tenant_id, embedding, filters, k, 0 if exact else self.ann_probe, ranking_only
            )
        except FAILURES as exc:
            raise translate(exc) from exc

    def _ranked(
        self,
        conn: sqlite3.Connection,
        tenant_id: str,
        embedding: Vector,
        filters: Filters,
        k: int,
        probe: int,
        ranking_only: bool,
    ) -> list[Candidate]:
        present, rest = presence_conditions(filters)
        excluded = _superseded_chunks(conn, tenant_id, present)
        if excluded is not None:  # left out by chunk id: the store's filters need not state it
            filters = rest
        allowed = _allowed_chunks(conn, tenant_id, filters)
        query = np.asarray(embedding, np.float32)
        snap = self._snapshot(conn, tenant_id, query.shape[0])
        for _ in range(VECTOR_ATTEMPTS):
            # A write committed after the snapshot was taken may have replaced a picked chunk: then take
            # the newer snapshot and rank again, so the answer is neither stale nor short.
            picked = snap.top(query, filters, allowed, k, CHUNK_ROWS_PER_ENTITY, probe, excluded or ())
            found = self._chunk_candidates(conn, tenant_id, picked, ranking_only)
            if len(found) == len(picked):
                return found
            snap = self._snapshot(conn, tenant_id, None)
        # Writes keep landing in between: rank once more with writers held off for these few ms.
        with self._store.tx() as held:
            snap = self._snapshot(held, tenant_id, None)
            picked = snap.top(query, filters, allowed, k, CHUNK_ROWS_PER_ENTITY, probe, excluded or ())
            return self._chunk_candidates(held, tenant_id, picked, ranking_only)

    def _chunk_candidates(
        self, conn: sqlite3.Connection, tenant_id: str, picked: list[tuple[int, float]], ranking_only: bool
    ) -> list[Candidate]:
        """Candidates for (chunk id, score) pairs already one per entity: one read, by primary key (for the
        ranking only, the keys and chunk numbers alone, those this process knows not read again: the
        snapshot ranked only live chunks, chunk_keys.py; each candidate's handle is its chunk id, by which
        sql.displayed reads the rest)."""
        if not picked:
            return []
        ids = [chunk_id for chunk_id, _ in picked]
        if ranking_only:
            keys = self._store.known_keys.read(conn, tenant_id, ids, live=True)
            return [ranking_candidate(i, *keys[i], score) for i, score in picked if i in keys]
        marks = ",".join("?" * len(ids))
        where = f"WHERE c.id IN ({marks}) AND +c.tenant_id = ? AND e.deleted = 0"
        return candidates(conn.execute(f"{CANDIDATE_SELECT} {where}", [*ids, tenant_id]), picked)

    def tenant_vectors(self, tenant_id: str) -> VectorSnapshot:
        """The tenant's vectors as of its latest committed generation."""
        try:
            return self._snapshot(self._store.conn(), tenant_id, None)
        except FAILURES as exc:
            raise translate(exc) from exc

    def _snapshot(self, conn: sqlite3.Connection, tenant_id: str, dimension: int | None) -> VectorSnapshot:
        """The tenant's vectors as of its latest committed generation (VectorStores.current), in one call."""
        try:
            return self._vectors.current(conn, tenant_id, dimension)
        except FILE_FAILURES as exc:  # the vector files beside the database, or SQLite
            raise translate_files("vectors", "vector files", exc) from exc

    def chunk_vectors(
        self, tenant_id: str, chunks: Sequence[tuple[EntityKey, int]]
    ) -> dict[tuple[EntityKey, int], Vector]:
        """Stored chunk embeddings from idx_chunks (one query)."""
        wanted = sorted(set(chunks))
        if not wanted:
            return {}
        # The tenant inside each alternative: SQLite then looks each one up through idx_chunks_entity
        # (with it outside the OR it scanned every chunk of the tenant: ~80 ms for 2 chunks of 10k).
        # chunk_no ALL_CHUNKS: every chunk of the entity (`? < 0` matches them all)
        rows = " OR ".join(
            ["(tenant_id=? AND entity_type=? AND entity_id=? AND (chunk_no=? OR ? < 0))"] * len(wanted)
        )
        args = [v for key, no in wanted for v in (tenant_id, key.entity_type, key.entity_id, no, no)]
        found = self._store.conn().execute(
            f"SELECT entity_type, entity_id, chunk_no, embedding FROM idx_chunks "
            f"WHERE embedding IS NOT NULL AND ({rows})",
            args,
        )
        return {(EntityKey(t, i), int(no)): np.frombuffer(blob, dtype=np.float32) for t, i, no, blob in found}


def _superseded_chunks(
    conn: sqlite3.Connection, tenant_id: str, present: tuple[Condition, ...]
) -> list[int] | None:
    """The chunks of superseded entities when the filters' only presence condition leaves them out (an
    `exists: false` on `superseded_by`, sql.PRESENT_CHUNKS); None otherwise."""
    if len(present) != 1 or present[0].values[0] is not False or present[0].field != "superseded_by":
        return None
    return [r[0] for r in conn.execute(PRESENT_CHUNKS, [tenant_id])]


def _allowed_chunks(conn: sqlite3.Connection, tenant_id: str, filters: Filters) -> list[int] | None:
    """The ids of the tenant's chunks that metadata filters and conditions allow (None: the search has
    neither, and the vector store applies the rest of the filters itself)."""
    if not (filters.metadata or filters.conditions):
        return None
    where, params = filter_sql(filters)
    sql = f"SELECT c.id FROM idx_chunks c {JOIN} WHERE c.tenant_id = ? AND {where}"
    return [r[0] for r in conn.execute(sql, [tenant_id, *params])]

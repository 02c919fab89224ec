"""The vector part of SqliteIndex's reads: cosine k-NN over the tenant's chunk vectors, held in
memory-mapped files that follow the writes (vector_store.py), exact or through the approximate index
(ivf.py), filters applied before ranking; and the stored chunk embeddings read back."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from core.models import Candidate, EntityKey, Filters, Vector
from infra.local.keywords.fts import states
from infra.local.sqlite.errors import FILE_FAILURES, translate_files
from infra.local.sqlite.lexical import CHUNK_ROWS_PER_ENTITY
from infra.local.sqlite.sql import CANDIDATE_SELECT, JOIN, PRESENT_CHUNKS, candidate, filter_sql
from infra.local.sqlite.store import SqliteStore
from infra.local.vectors.exact_knn import VectorSnapshot
from infra.local.vectors.vector_store import VectorStores


def ranking_candidate(row: Sequence[Any], score: float) -> Candidate:
    """A candidate for the ranking only: (id, type, id, chunk number) and its score, no display values."""
    return Candidate(EntityKey(row[1], row[2]), score, int(row[3]), "", "", "", None, None, "", "", {})


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
        matched chunks and scores, without the display values (CandidateQuery.vector_ranking_only)."""
        if k <= 0:
            return []
        excluded = self._superseded_chunks(tenant_id, filters)
        if excluded is not None:
            filters = replace(filters, conditions=tuple(c for c in filters.conditions if not states(c)))
        allowed = self._allowed_chunks(tenant_id, filters)
        query = np.asarray(embedding, np.float32)
        probe = 0 if exact else self.ann_probe
        snap = self.tenant_vectors(tenant_id)
        if snap.count and snap.matrix.shape[1] != query.shape[0]:
            # The query comes from another model than the vectors in memory: a reindex swapped the stored
            # vectors (a change the log does not carry), and a stale store must never answer with nothing.
            self._vectors.tenant(tenant_id).rebuild(self._store.conn())
        for _ in range(VECTOR_ATTEMPTS):
            # A write committed after the snapshot was taken may have replaced a picked chunk: then take
            # the newer snapshot and rank again, so the answer is neither stale nor short.
            picked = self.tenant_vectors(tenant_id).top(
                query, filters, allowed, k, CHUNK_ROWS_PER_ENTITY, probe, excluded or ()
            )
            found = self._chunk_candidates(tenant_id, picked, ranking_only)
            if len(found) == len(picked):
                return found
        # Writes keep landing in between: rank once more with writers held off for these few ms.
        with self._store.tx():
            picked = self.tenant_vectors(tenant_id).top(
                query, filters, allowed, k, CHUNK_ROWS_PER_ENTITY, probe, excluded or ()
            )
            return self._chunk_candidates(tenant_id, picked, ranking_only)

    def _superseded_chunks(self, tenant_id: str, filters: Filters) -> list[int] | None:
        """The chunks of superseded entities when the filters leave them out with nothing else of the kind
        (an `exists: false` on `superseded_by`, sql.PRESENT_CHUNKS); None otherwise."""
        present = [c for c in filters.conditions if states(c)]
        if len(present) != 1 or present[0].values[0] is not False or present[0].field != "superseded_by":
            return None
        return [r[0] for r in self._store.read(PRESENT_CHUNKS, [tenant_id])]

    def _allowed_chunks(self, tenant_id: str, filters: Filters) -> list[int] | None:
        """The ids of the tenant's chunks that metadata filters and conditions allow (None: the search has
        neither, and the vector store applies the rest of the filters itself)."""
        if not (filters.metadata or filters.conditions):
            return None
        where, params = filter_sql(filters)
        return [
            r[0]
            for r in self._store.read(
                f"SELECT c.id FROM idx_chunks c {JOIN} WHERE c.tenant_id = ? AND {where}",
                [tenant_id, *params],
            )
        ]

    def tenant_vectors(self, tenant_id: str) -> VectorSnapshot:
        """The tenant's vectors as of its latest committed generation."""
        row = self._store.read("SELECT gen FROM idx_generation WHERE tenant_id = ?", (tenant_id,))
        generation = int(row[0][0]) if row else 0
        try:
            return self._vectors.tenant(tenant_id).snapshot(self._store.conn(), generation)
        except FILE_FAILURES as exc:  # the vector files beside the database, or SQLite
            raise translate_files("vectors", "vector files", exc) from exc

    def _chunk_candidates(
        self, tenant_id: str, picked: list[tuple[int, float]], ranking_only: bool = False
    ) -> list[Candidate]:
        """Candidates for (chunk id, score) pairs already one per entity: one read, by primary key (for the
        ranking only, of the keys and chunk numbers alone: no texts read, no metadata parsed)."""
        if not picked:
            return []
        marks = ",".join("?" * len(picked))
        where = f"WHERE c.id IN ({marks}) AND +c.tenant_id = ? AND e.deleted = 0"
        args = [*(chunk_id for chunk_id, _ in picked), tenant_id]
        if ranking_only:
            keys = self._store.read(
                f"SELECT c.id, c.entity_type, c.entity_id, c.chunk_no FROM idx_chunks c {JOIN} {where}", args
            )
            by_key = {row[0]: row for row in keys}
            return [ranking_candidate(by_key[i], score) for i, score in picked if i in by_key]
        rows = self._store.read(f"{CANDIDATE_SELECT} {where}", args)
        by_id = {row[0]: row for row in rows}
        return [candidate(by_id[i], score) for i, score in picked if i in by_id]

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

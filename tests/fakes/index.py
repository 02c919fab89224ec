"""FakeSearchIndex: the SearchIndex port (core/ports/) in dicts, small enough to reason about by hand, and
faithful enough to pass the same contract suites as SqliteIndex and OpenSearchIndex
(tests/adapters/test_search_index_contract.py runs them on it as an in-process backend).

Lexical: BM25 over each chunk's boost tiers (tests/fakes/lexical.py), statistics per tenant. Vector: exact
cosine over the stored chunk embeddings. Both keep each entity's best chunk."""

from __future__ import annotations

import dataclasses
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from core.indexing.catalog import EmbeddingStatus, EntityPosition
from core.models import (
    ALL_CHUNKS,
    Candidate,
    CandidateLists,
    CandidateQuery,
    Chunk,
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
from core.search.filters import COLUMN_FIELDS, facet_key
from tests.fakes.filtering import field_values, passes
from tests.fakes.lexical import bm25, has_phrases, index_chunk, stems, wanted_terms


@dataclasses.dataclass(slots=True)
class _Entry:
    """One entity as stored: its readable state and (live ones) its chunks with their stemmed words."""

    entity: StoredEntity
    chunks: tuple[Chunk, ...] = ()
    words: tuple[Counter[str], ...] = ()  # per chunk: stem → tier-weighted frequency
    sequences: tuple[list[str], ...] = ()  # per chunk: its stems in order (for phrases)


def _tombstone(tenant_id: str, key: EntityKey, version: int) -> StoredEntity:
    return StoredEntity(tenant_id, key, version, True, "", None, None, "", "", "", {}, {}, "")


def _versioned(stored: StoredEntity | None, given: int) -> WriteOutcome | None:
    """STALE/DUPLICATE when `given` does not move past the stored version, else None (apply)."""
    if stored is None or given > stored.version:
        return None
    return WriteOutcome.STALE if given < stored.version else WriteOutcome.DUPLICATE


class FakeSearchIndex:
    """SearchIndex in memory; every read and write is scoped to the tenant it names."""

    visibility_delay_seconds = 0.0

    def __init__(self) -> None:
        self.entries: dict[tuple[str, EntityKey], _Entry] = {}
        self._lock = threading.Lock()  # the fan-out reads from a thread pool

    # writes

    def upsert(self, record: EntityRecord) -> WriteOutcome:
        return self.upsert_many([record])[0]

    def upsert_many(self, records: Sequence[EntityRecord]) -> list[WriteOutcome]:
        with self._lock:
            return [self._write(r) for r in records]

    def _write(self, r: EntityRecord) -> WriteOutcome:
        old = self.entries.get((r.tenant_id, r.key))
        refused = _versioned(old.entity if old else None, r.version)
        if refused is not None:
            return refused
        entity = StoredEntity(
            r.tenant_id, r.key, r.version, False, r.source, r.owner, r.namespace, r.created_at,
            r.updated_at, r.title, dict(r.body), dict(r.metadata), r.content_hash,
        )  # fmt: skip
        indexed = [index_chunk(c) for c in r.chunks]
        self.entries[(r.tenant_id, r.key)] = _Entry(
            entity, r.chunks, tuple(w for w, _ in indexed), tuple(s for _, s in indexed)
        )
        return WriteOutcome.APPLIED

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
        with self._lock:
            entry = self.entries.get((tenant_id, key))
            if entry is None or entry.entity.deleted:
                return WriteOutcome.NOT_FOUND
            refused = _versioned(entry.entity, version)
            if refused is not None:
                return refused
            moved = placement or Placement(entry.entity.source, entry.entity.owner, entry.entity.namespace)
            entry.entity = dataclasses.replace(
                entry.entity,
                version=version,
                body=dict(body),
                metadata=dict(metadata),
                updated_at=updated_at,
                source=moved.source,
                owner=moved.owner,
                namespace=moved.namespace,
            )
            return WriteOutcome.APPLIED

    def touch_metadata(self, tenant_id: str, touches: Sequence[MetadataTouch]) -> list[WriteOutcome]:
        with self._lock:
            return [self._touch(tenant_id, t) for t in touches]

    def _touch(self, tenant_id: str, touch: MetadataTouch) -> WriteOutcome:
        entry = self.entries.get((tenant_id, touch.key))
        if entry is None or entry.entity.deleted or entry.entity.version != touch.version:
            return WriteOutcome.NOT_FOUND
        merged = {**entry.entity.metadata, **touch.changes}
        metadata = {k: v for k, v in merged.items() if v is not None}
        entry.entity = dataclasses.replace(entry.entity, metadata=metadata)
        return WriteOutcome.APPLIED

    def delete(self, tenant_id: str, key: EntityKey, version: int | None) -> WriteOutcome:
        with self._lock:
            entry = self.entries.get((tenant_id, key))
            if entry is None:
                if version is None:
                    return WriteOutcome.NOT_FOUND
                self.entries[(tenant_id, key)] = _Entry(_tombstone(tenant_id, key, version))
                return WriteOutcome.APPLIED
            stored = entry.entity.version
            effective = stored + 1 if version is None else version
            if effective < stored:
                return WriteOutcome.STALE
            if entry.entity.deleted and effective == stored:
                return WriteOutcome.DUPLICATE
            self.entries[(tenant_id, key)] = _Entry(_tombstone(tenant_id, key, effective))
            return WriteOutcome.APPLIED

    def purge_tenant(self, tenant_id: str) -> int:
        with self._lock:
            mine = [k for k in self.entries if k[0] == tenant_id]
            for k in mine:
                del self.entries[k]
            return len(mine)

    # reads

    def _live(self, tenant_id: str, filters: Filters | None = None) -> list[_Entry]:
        with self._lock:
            found = [e for (t, _), e in self.entries.items() if t == tenant_id and not e.entity.deleted]
        return [e for e in found if filters is None or passes(e.entity, filters)]

    def get(self, tenant_id: str, keys: Sequence[EntityKey]) -> dict[EntityKey, StoredEntity]:
        with self._lock:
            found = (self.entries.get((tenant_id, key)) for key in keys)
            return {e.entity.key: e.entity for e in found if e is not None}

    def lexical(self, tenant_id: str, query: LexicalQuery, filters: Filters, k: int) -> list[Candidate]:
        if query.empty or k <= 0:
            return []
        everything = self._live(tenant_id)
        chunks = [(e, n) for e in everything for n in range(len(e.chunks))]
        lengths = [sum(e.words[n].values()) for e, n in chunks]
        average = (sum(lengths) / len(lengths) if lengths else 0.0) or 1.0
        terms = wanted_terms(query, (w for e in everything for words in e.words for w in words))
        # Phrases must all occur and score as their words; terms are ORed (infra/local/keywords/fts.py's expression).
        wanted = terms + [(s, 1) for p in query.phrases for s in stems(p)]
        df = {stem: sum(1 for e, n in chunks if stem in e.words[n]) for stem, _ in wanted}
        scored: list[tuple[float, _Entry, int]] = []
        for (entry, n), length in zip(chunks, lengths, strict=True):
            words = entry.words[n]
            if query.terms and not any(stem in words for stem, _ in terms):
                continue
            if not has_phrases(entry.sequences[n], query.phrases) or not passes(entry.entity, filters):
                continue
            scored.append((bm25(words, length, average, wanted, df, len(chunks)), entry, n))
        return _best_per_entity(scored, k)

    def vector(self, tenant_id: str, embedding: Vector, filters: Filters, k: int) -> list[Candidate]:
        if k <= 0:
            return []
        query = np.asarray(embedding, dtype=np.float32)
        query = query / (float(np.linalg.norm(query)) or 1.0)
        scored: list[tuple[float, _Entry, int]] = []
        for entry in self._live(tenant_id, filters):
            for n, chunk in enumerate(entry.chunks):
                if chunk.embedding is None:
                    continue
                stored = np.asarray(chunk.embedding, dtype=np.float32)
                scored.append((float(stored @ query) / (float(np.linalg.norm(stored)) or 1.0), entry, n))
        return _best_per_entity(scored, k)

    def retrieve(
        self, tenant_id: str, query: LexicalQuery | None, embedding: Vector | None, filters: Filters, k: int
    ) -> CandidateLists:
        lexical = self.lexical(tenant_id, query, filters, k) if query is not None else []
        vector = self.vector(tenant_id, embedding, filters, k) if embedding is not None else []
        return CandidateLists(tuple(lexical), tuple(vector))

    def retrieve_many(self, tenant_id: str, specs: Sequence[CandidateQuery]) -> list[CandidateLists]:
        got = [self.retrieve(tenant_id, s.query, s.embedding, s.filters, s.k) for s in specs]
        return [g if s.display else self._lean(tenant_id, g) for s, g in zip(specs, got, strict=True)]

    def _lean(self, tenant_id: str, got: CandidateLists) -> CandidateLists:
        """Both lists without display values (CandidateQuery.display False), each candidate's handle the
        entity version it was ranked at."""
        with self._lock:
            versions = {key: e.entity.version for (t, key), e in self.entries.items() if t == tenant_id}

        def lean(c: Candidate) -> Candidate:
            return Candidate(c.key, c.score, c.chunk_no, "", "", "", None, None, "", "", {}, versions[c.key])

        return CandidateLists(tuple(map(lean, got.lexical)), tuple(map(lean, got.vector)), got.vectors)

    def displayed(self, tenant_id: str, candidates: Sequence[Candidate]) -> list[Candidate]:
        """Each candidate listed without display values (its handle: the entity version it was ranked at)
        rebuilt from the entity as it is now: left out once deleted."""
        out = []
        for c in candidates:
            if c.handle is None:
                out.append(c)
                continue
            with self._lock:
                entry = self.entries.get((tenant_id, c.key))
            if entry is not None and not entry.entity.deleted and entry.chunks:
                # the chunk ranked, or, rewritten since, its current chunk of that number (else its first)
                out.append(_candidate(entry, c.chunk_no if c.chunk_no < len(entry.chunks) else 0, c.score))
        return out

    def facets(
        self, tenant_id: str, query: LexicalQuery | None, filters: Filters, fields: Sequence[str], size: int
    ) -> dict[str, dict[str, int]]:
        entries = self._live(tenant_id, filters)
        if query is not None:
            matched = {c.key for c in self.lexical(tenant_id, query, filters, len(entries) or 1)}
            entries = [e for e in entries if e.entity.key in matched]
        out: dict[str, dict[str, int]] = {}
        for name in fields:
            counts: Counter[str] = Counter()
            for e in entries:
                counts.update({facet_key(v) for v in field_values(e.entity, name, name in COLUMN_FIELDS)})
            out[name] = dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:size])
        return out

    def list_entities(
        self, tenant_id: str, entity_type: str | None, limit: int, after: EntityPosition | None
    ) -> list[StoredEntity]:
        def position(e: StoredEntity) -> tuple[str, str, str]:
            return (e.created_at, e.key.entity_type, e.key.entity_id)

        live = [e.entity for e in self._live(tenant_id)]
        kept = [
            e
            for e in live
            if (entity_type is None or e.key.entity_type == entity_type)
            and (after is None or position(e) < (after.created_at, after.entity_type, after.entity_id))
        ]
        return sorted(kept, key=position, reverse=True)[: max(limit, 0)]

    def embedding_status(self, tenant_id: str, keys: Sequence[EntityKey]) -> dict[EntityKey, EmbeddingStatus]:
        wanted = set(keys)
        return {
            e.entity.key: EmbeddingStatus(len(e.chunks), sum(c.embedding is not None for c in e.chunks))
            for e in self._live(tenant_id)
            if e.entity.key in wanted and e.chunks
        }

    def chunk_vectors(
        self, tenant_id: str, chunks: Sequence[tuple[EntityKey, int]]
    ) -> dict[tuple[EntityKey, int], Vector]:
        by_key = {e.entity.key: e for e in self._live(tenant_id)}
        out: dict[tuple[EntityKey, int], Vector] = {}
        for key, wanted in chunks:
            entry = by_key.get(key)
            for chunk in entry.chunks if entry is not None else ():
                if chunk.embedding is not None and wanted in (ALL_CHUNKS, chunk.chunk_no):
                    out[(key, chunk.chunk_no)] = np.asarray(chunk.embedding, dtype=np.float32)
        return out


def _best_per_entity(scored: list[tuple[float, _Entry, int]], k: int) -> list[Candidate]:
    """Each entity's best chunk, best first; ties by entity key (the contract's deterministic order)."""
    best: dict[EntityKey, tuple[float, _Entry, int]] = {}
    for item in scored:
        key = item[1].entity.key
        if key not in best or item[0] > best[key][0]:
            best[key] = item
    ranked = sorted(best.values(), key=lambda s: (-s[0], s[1].entity.key))[:k]
    return [_candidate(entry, n, score) for score, entry, n in ranked]


def _candidate(entry: _Entry, n: int, score: float) -> Candidate:
    e, chunk = entry.entity, entry.chunks[n]
    return Candidate(
        e.key, score, chunk.chunk_no, e.title, chunk.text, e.source, e.owner, e.namespace, e.created_at,
        e.updated_at, e.metadata, None,
    )  # fmt: skip

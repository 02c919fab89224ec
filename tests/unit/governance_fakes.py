"""Test doubles for governed retrieval: an in-memory SearchIndex over the fixture corpus (built once from
the corpus, counting its reads, tf·idf over governance stems), with the state store, clock and failing
embedder of tests/fakes. The governance pipeline is what is under test; these only stand in for the ports
around it."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from core.governance.governed_retrieval import GovernedRetrievalService
from core.governance.requests import CorpusDocument
from core.governance.terms import stem
from core.indexing.chunking import build_chunks
from core.indexing.entity_types import EntityTypeRegistry
from core.models import Candidate, CandidateLists, EntityKey, Filters, LexicalQuery, Vector
from core.text import tokens
from tests.conftest import FakeEmbedder
from tests.fakes import FakeClock, FakeStateStore

CORPUS_FILE = Path(__file__).resolve().parents[1] / "fixtures" / "governance_corpus.json"
FAKE_DIMENSION = 1024  # wide enough that the hashing embedder's collisions are rare on the fixture


def corpus() -> list[dict[str, Any]]:
    """The fixture corpus's documents."""
    return list(json.loads(CORPUS_FILE.read_text())["documents"])


class FakeIndex:
    """SearchIndex double: tf·idf over light stems for lexical, exact cosine over embedder vectors."""

    def __init__(self, documents: Sequence[Mapping[str, Any]], embedder: Any) -> None:
        etype = EntityTypeRegistry().get("document")
        self.chunks: list[tuple[Candidate, list[str]]] = []
        for doc in documents:
            body = CorpusDocument.model_validate(doc).entity()
            for no, (_, plain) in enumerate(build_chunks(etype, body)):
                metadata = {k: body[k] for k in ("trust", "topic", "source") if k in body}
                candidate = Candidate(
                    key=EntityKey("document", body["id"]),
                    score=0.0,
                    chunk_no=no,
                    title=body["title"],
                    text=plain,
                    source=body.get("source", "vault"),
                    owner=None,
                    namespace=None,
                    created_at=body.get("created_at", ""),
                    updated_at=body.get("created_at", ""),
                    metadata=metadata,
                )
                self.chunks.append((candidate, [stem(t) for t in tokens(plain)]))
        self.vectors = np.stack(embedder.embed([f"{c.title}. {c.text}" for c, _ in self.chunks]))
        self.calls = 0
        self.vector_reads = 0

    def _best_per_entity(self, scored: list[tuple[float, int]], k: int) -> list[Candidate]:
        out: dict[EntityKey, Candidate] = {}
        for score, i in sorted(scored, key=lambda p: (-p[0], p[1])):
            c = self.chunks[i][0]
            if c.key not in out:
                out[c.key] = c._replace(score=score)
        return list(out.values())[:k]

    def _lexical(self, query: LexicalQuery, k: int) -> list[Candidate]:
        wanted = [stem(t) for t in query.terms]
        n = len(self.chunks)
        df = {t: sum(1 for _, words in self.chunks if t in words) for t in wanted}
        scored = []
        for i, (_, words) in enumerate(self.chunks):
            score = sum(words.count(t) * math.log(1 + n / df[t]) for t in wanted if df[t])
            if score > 0:
                scored.append((score, i))
        return self._best_per_entity(scored, k)

    def _vector(self, embedding: Vector, k: int) -> list[Candidate]:
        sims = self.vectors @ np.asarray(embedding, dtype=np.float32)
        return self._best_per_entity([(float(s), i) for i, s in enumerate(sims)], k)

    def retrieve(
        self, tenant_id: str, query: LexicalQuery | None, embedding: Vector | None, filters: Filters, k: int
    ) -> CandidateLists:
        self.calls += 1
        assert filters.entity_types == ("document",)
        lexical = self._lexical(query, k) if query is not None else []
        vector = self._vector(embedding, k) if embedding is not None else []
        return CandidateLists(lexical=tuple(lexical), vector=tuple(vector))

    def chunk_vectors(
        self, tenant_id: str, chunks: Sequence[tuple[EntityKey, int]]
    ) -> dict[tuple[EntityKey, int], Vector]:
        """The stored vectors, as an index returns them (no embedding)."""
        self.vector_reads += 1
        position = {(c.key, c.chunk_no): i for i, (c, _) in enumerate(self.chunks)}
        return {ref: self.vectors[position[ref]] for ref in chunks if ref in position}


def service(
    embedder: Any = "fake", documents: Sequence[Mapping[str, Any]] | None = None
) -> GovernedRetrievalService:
    """A GovernedRetrievalService over the fixture corpus; embedder "fake" (default), None, or any Embedder."""
    fake = FakeEmbedder(dimension=FAKE_DIMENSION)
    index = FakeIndex(documents if documents is not None else corpus(), fake)
    chosen = fake if embedder == "fake" else embedder
    return GovernedRetrievalService(index, FakeStateStore(), FakeClock(), chosen)  # type: ignore[arg-type]


def overlay(**changes: Any) -> dict[str, Any]:
    """The fixture's DBA overlay as JSON, with top-level fields replaced."""
    base: dict[str, Any] = {
        "role_id": "dba",
        "mission": "Keep production databases secure and available",
        "vocabulary": {"boost": ["vault"], "suppress": []},
        "source_policy": {"preferred": ["runbooks"], "forbidden": []},
        "retrieval_policy": {},
    }
    base.update(changes)
    return base

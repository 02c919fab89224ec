"""Vector pseudo-relevance feedback (core.search.pseudo_relevance): Rocchio's formula and which stored chunks it reads."""

from __future__ import annotations

from typing import Any

import numpy as np

from core.models import Candidate, EntityKey
from core.ports import Embedder
from core.search.fusion import fuse_convex
from core.search.pseudo_relevance import feedback_chunks, rocchio


def cand(name: str, score: float, chunk_no: int = 0) -> Candidate:
    return Candidate(EntityKey("memory", name), score, chunk_no, name, name, "memory", None, None, "", "", {})


def test_rocchio_adds_the_weighted_mean_of_the_feedback_and_keeps_unit_length() -> None:
    q = np.array([1.0, 0.0, 0.0], np.float32)
    docs = [np.array([0.0, 1.0, 0.0], np.float32), np.array([0.0, 0.0, 1.0], np.float32)]
    moved = rocchio(q, docs, weight=1.0)
    expected = np.array([1.0, 0.5, 0.5]) / np.linalg.norm([1.0, 0.5, 0.5])
    assert np.allclose(moved, expected, atol=1e-6)
    assert abs(float(np.linalg.norm(moved)) - 1.0) < 1e-6
    half = rocchio(q, docs[:1], weight=0.5)
    assert np.allclose(half, np.array([1.0, 0.5, 0.0]) / np.linalg.norm([1.0, 0.5, 0.0]), atol=1e-6)


def test_rocchio_without_feedback_or_weight_leaves_the_query_alone() -> None:
    q = np.array([0.6, 0.8], np.float32)
    assert np.array_equal(rocchio(q, []), q)
    assert np.array_equal(rocchio(q, [np.array([1.0, 0.0], np.float32)], weight=0.0), q)


def test_feedback_reads_the_top_results_vector_matched_chunk() -> None:
    # "both" is first (lexical + vector): its vector-matched chunk 3, not the lexical chunk 1, is read;
    # "lex" has no vector hit, so its lexical chunk 2 is.
    lexical = [cand("both", 9.0, chunk_no=1), cand("lex", 8.0, chunk_no=2)]
    vector = [cand("both", 0.9, chunk_no=3), cand("vec", 0.3, chunk_no=4)]
    fused = fuse_convex(lexical, vector, alpha=0.5)
    assert [f.candidate.key.entity_id for f in fused[:2]] == ["both", "lex"]
    assert feedback_chunks(fused, vector, 2) == [
        (EntityKey("memory", "both"), 3),
        (EntityKey("memory", "lex"), 2),
    ]
    assert feedback_chunks(fused, vector, 0) == []


class _Index:
    """Just the reads feedback makes: stored chunk vectors (here of another model), a k-NN (one vector spec
    of `retrieve_many`, or `vector`), and the display values of what is shown (all in hand here)."""

    def __init__(self, stored: dict) -> None:
        self.stored = stored
        self.searched: list[np.ndarray] = []

    def chunk_vectors(self, tenant_id: str, chunks: list) -> dict:
        return {c: self.stored[c] for c in chunks if c in self.stored}

    def retrieve_many(self, tenant_id: str, specs: list) -> list:
        from core.models import CandidateLists

        (spec,) = specs
        assert spec.query is None and not spec.display  # the feedback's search: its ranking first
        return [CandidateLists(vector=tuple(self.vector(tenant_id, spec.embedding, spec.filters, spec.k)))]

    def vector(self, tenant_id: str, embedding: np.ndarray, filters: object, k: int) -> list:
        self.searched.append(embedding)
        return []

    def displayed(self, tenant_id: str, candidates: list) -> list:
        return list(candidates)


def test_stored_vectors_of_another_model_are_not_used_as_feedback() -> None:
    # Mid-reindex the stored vectors may be the old model's (another dimension): no feedback, no error.
    from core.models import Filters
    from core.search.pseudo_relevance import feedback_search

    lexical = [cand("a", 3.0)]
    fused = fuse_convex(lexical, [], alpha=0.5)
    index = _Index({(EntityKey("memory", "a"), 0): np.ones(8, np.float32)})
    query = np.array([1.0, 0.0, 0.0, 0.0], np.float32)
    assert feedback_search(index, "t", query, fused, [], Filters(), 10) is None  # type: ignore[arg-type]
    assert index.searched == []


def test_turning_feedback_off_brings_the_alpha_measured_without_it(tmp_path: Any) -> None:
    """QUARRY_FEEDBACK_DOCS=0 alone gives α 0.7 (the best without feedback), not feedback's 0.8; an explicit
    QUARRY_ALPHA always wins."""
    from infra.config.settings import load_settings
    from infra.wiring.root import Container

    def alpha(**given: Any) -> float:
        return Container(load_settings(data_dir=tmp_path, **given)).search_settings.alpha

    assert alpha() == 0.8
    assert alpha(feedback_docs=0) == 0.7
    assert alpha(feedback_docs=0, alpha=0.65) == 0.65 and alpha(alpha=0.6) == 0.6


def test_feedback_reads_the_stored_chunk_nearest_the_query_when_the_match_is_unnamed() -> None:
    # A vector list retrieved for its ranking only names no chunk (ALL_CHUNKS): the entity's stored chunk
    # nearest the query is the feedback, as a k-NN search's best chunk would be.
    from core.models import ALL_CHUNKS, Filters
    from core.search.pseudo_relevance import feedback_search

    a = EntityKey("memory", "a")
    near, far = np.array([0.8, 0.6, 0.0], np.float32), np.array([0.0, 0.0, 1.0], np.float32)
    index = _Index({(a, 0): far, (a, 1): near, (EntityKey("memory", "b"), 0): far})
    index.chunk_vectors = lambda tenant_id, chunks: dict(index.stored)  # type: ignore[method-assign]
    vector = [cand("a", 0.8, chunk_no=ALL_CHUNKS)]
    query = np.array([1.0, 0.0, 0.0], np.float32)
    assert feedback_search(index, "t", query, fuse_convex([], vector), vector, Filters(), 10, 1) == []  # type: ignore[arg-type]
    assert np.allclose(index.searched[0], rocchio(query, [near]), atol=1e-6)


class _RankingOnlyIndex(_Index):
    """An index that answers the first vector list for its ranking only, and holds no stored vectors."""

    def retrieve_many(self, tenant_id: str, specs: list) -> list:
        from core.models import ALL_CHUNKS, CandidateLists

        (spec,) = specs
        assert spec.vector_ranking_only
        hit = Candidate(EntityKey("memory", "a"), 0.9, ALL_CHUNKS, "", "", "", None, None, "", "", {})
        return [CandidateLists(lexical=(), vector=(hit,))]

    def vector(self, tenant_id: str, embedding: np.ndarray, filters: object, k: int) -> list:
        self.searched.append(embedding)
        return [cand("a", 0.9, chunk_no=2)]


class _NoCache:
    def get(self, key: str, now: float) -> None:
        return None

    def counter(self, key: str) -> int:
        return 0


class _Clock:
    def now(self) -> float:
        return 0.0

    def monotonic(self) -> float:
        return 0.0


class _Embedder(Embedder):
    def embed_query(self, texts: list) -> list:
        return [np.array([1.0, 0.0, 0.0], np.float32) for _ in texts]


def test_a_ranking_only_vector_list_without_feedback_is_retrieved_whole_before_it_is_shown() -> None:
    # Given feedback on and no stored vector to move toward, when the first vector list carried its
    # ranking only, then the answer shows the entity's matched chunk and title from a whole vector list.
    from core.indexing.entity_types import EntityTypeRegistry
    from core.search.planning import SearchSettings
    from core.search.search_api import SearchRequest
    from core.search.search_service import SearchService

    index = _RankingOnlyIndex({})
    service = SearchService(
        index,  # type: ignore[arg-type]
        _Embedder(),  # type: ignore[arg-type]
        _NoCache(),  # type: ignore[arg-type]
        EntityTypeRegistry(),
        _Clock(),  # type: ignore[arg-type]
        SearchSettings(cache_ttl_seconds=0),
    )
    got = service.search("t", SearchRequest(query="anything at all", strategy="hybrid", explain=True))
    (result,) = got.results
    assert result.entity_id == "a" and result.title == "a" and result.explanation is not None
    assert result.explanation.matched_chunk == 2 and len(index.searched) == 1


def test_rescoring_ranks_the_candidates_in_hand_as_a_knn_search_with_the_moved_query_would() -> None:
    # Each entity of both legs scores its best stored chunk's cosine with the moved query (what a k-NN
    # search returns per entity), best first, at most `depth`; an entity with no stored vector is left out.
    from core.search.pseudo_relevance import rescored

    a, b, c = EntityKey("memory", "a"), EntityKey("memory", "b"), EntityKey("memory", "c")
    stored = {
        (a, 0): np.array([0.0, 1.0], np.float32),
        (a, 1): np.array([2.0, 0.0], np.float32),  # not unit length: cosine, not the dot product
        (b, 0): np.array([0.6, 0.8], np.float32),
        (EntityKey("memory", "z"), 0): np.array([1.0, 0.0], np.float32),  # not a candidate
    }
    moved = np.array([1.0, 0.0], np.float32)
    pool = [
        cand("b", 0.1, chunk_no=0),
        cand("a", 0.2, chunk_no=0),
        cand("c", 0.3),
        cand("a", 5.0, chunk_no=1),
    ]
    got = rescored(pool, stored, moved, depth=10)
    assert [(x.key, round(x.score, 6)) for x in got] == [(a, 1.0), (b, 0.6)]
    assert got[0].chunk_no == 0  # the display values are those of the entity's first candidate
    assert [x.key for x in rescored(pool, stored, moved, depth=1)] == [a]
    assert c not in {x.key for x in got}


def test_feedback_by_rescoring_uses_the_vectors_that_came_with_the_hits_and_searches_nothing() -> None:
    # Given the hits' vectors in hand but one entity's, when feedback re-scores, then only that entity's
    # vectors are read, nothing is searched, and each entity scores its best chunk against the moved query;
    # without any vectors in hand it declines (None: the caller searches again instead).
    from core.models import ALL_CHUNKS
    from core.search.pseudo_relevance import feedback_rescore

    a, b = EntityKey("memory", "a"), EntityKey("memory", "b")
    near, far = np.array([0.8, 0.6, 0.0], np.float32), np.array([0.0, 0.0, 1.0], np.float32)
    index = _Index({(b, 0): far})
    asked: list = []

    def chunk_vectors(tenant_id: str, chunks: list) -> dict:
        asked.append(chunks)
        return {c: v for c, v in index.stored.items() if (c[0], ALL_CHUNKS) in chunks}

    index.chunk_vectors = chunk_vectors  # type: ignore[method-assign]
    lexical, vector = [cand("b", 2.0)], [cand("a", 0.8)]
    query = np.array([1.0, 0.0, 0.0], np.float32)
    fused = fuse_convex(lexical, vector, alpha=0.8)
    hits = {a: {0: near}}
    got = feedback_rescore(index, "t", query, fused, lexical, vector, 10, 1, 1.0, hits)  # type: ignore[arg-type]
    assert asked == [[(b, ALL_CHUNKS)]] and index.searched == []
    moved = rocchio(query, [near])
    assert got is not None and [x.key for x in got] == [a, b]
    assert np.isclose(got[0].score, float(moved @ near)) and np.isclose(got[1].score, float(moved @ far))
    assert feedback_rescore(index, "t", query, fused, lexical, vector, 10, 1, 1.0, {}) is None  # type: ignore[arg-type]


def test_feedback_re_scores_on_opensearch_and_searches_again_locally_unless_set(tmp_path: Any) -> None:
    from infra.config.settings import load_settings

    assert load_settings(data_dir=tmp_path, index="sqlite").feedback_ranking == "search"
    assert (
        load_settings(
            data_dir=tmp_path, index="opensearch", opensearch_url="http://127.0.0.1:9"
        ).feedback_ranking
        == "rescore"
    )
    chosen = load_settings(
        data_dir=tmp_path, index="opensearch", opensearch_url="http://127.0.0.1:9", feedback_mode="search"
    )
    assert chosen.feedback_ranking == "search"

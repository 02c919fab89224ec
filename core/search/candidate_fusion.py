"""One search's candidate lists fused (docs/architecture.md, Read path): both legs in one round trip to
the index, the vector floor, the fusion, vector pseudo-relevance feedback on fused searches, and the
prefix-then-fuzzy fallback when nothing matched (docs/conformance.md#no-match-fallback)."""

from __future__ import annotations

from collections import ChainMap
from typing import Any

from core.models import Candidate, CandidateLists, CandidateQuery, EntityKey, Filters, LexicalQuery, MatchMode
from core.ports import Retriever
from core.search.fusion import Fused, fuse
from core.search.planning import SearchPlan, SearchSettings, strong_vector_hits
from core.search.pseudo_relevance import feedback_rescore, feedback_search


def fused_candidates(
    index: Retriever,
    settings: SearchSettings,
    tenant_id: str,
    lexical: LexicalQuery | None,
    embedding: Any,
    filters: Filters,
    depth: int,
    plan: SearchPlan,
) -> tuple[list[Fused], str | None]:
    """The fused ranking at `depth` per leg, and the fallback that produced it (None, prefix, fuzzy)."""
    lex = lexical if lexical is not None and not lexical.empty else None
    if lex is None and embedding is None:
        return [], None
    # With feedback on, the first vector list only picks the feedback documents (its ranking): the
    # feedback's list replaces it before anything is shown, so the index may leave out its chunks.
    feedback = plan.lexical and embedding is not None and settings.feedback_docs > 0
    got = _first_lists(index, settings, tenant_id, lex, embedding, filters, depth, feedback)
    # A vector leg retrieved deeper for re-scoring ranks at `depth` like the lexical one.
    vector = strong_vector_hits(got.vector[:depth], settings, plan.own_vector)
    # With feedback, the first fusion only names the feedback documents, its head: the rest is not built.
    head = settings.feedback_docs if feedback else None
    fused = fuse(settings.fusion, got.lexical, vector, plan.alpha, settings.rrf_k, top=head)
    if feedback and fused:
        fused = _with_feedback(
            index, settings, tenant_id, got, vector, fused, embedding, filters, depth, plan
        )
    if fused or lex is None:
        return fused, None
    # Nothing matched: widen the lexical match before answering nothing
    # (docs/conformance.md#no-match-fallback).
    for mode in (MatchMode.PREFIX, MatchMode.FUZZY):
        widened = LexicalQuery(lex.terms, lex.phrases if mode is MatchMode.PREFIX else (), mode)
        hits = index.lexical(tenant_id, widened, filters, depth)
        if hits:
            return fuse(settings.fusion, hits, [], 0.0, settings.rrf_k), mode.value
    return [], None


def _rescoring(settings: SearchSettings) -> bool:
    return settings.feedback_mode == "rescore"


def _first_lists(
    index: Retriever,
    settings: SearchSettings,
    tenant_id: str,
    lex: LexicalQuery | None,
    embedding: Any,
    filters: Filters,
    depth: int,
    feedback: bool,
) -> CandidateLists:
    """Both legs in one round trip. With feedback by a second search, the vector list is wanted for its
    ranking only; by re-scoring, its candidates may be shown and it goes `feedback_pool` × deeper (a wider
    pool for the moved query), asked as a second spec of the same round trip."""
    pool = max(1, settings.feedback_pool)
    # Display values are read for the served candidates only, after the ranking (Retrieval.served).
    if not (feedback and _rescoring(settings)):
        spec = CandidateQuery(lex, embedding, filters, depth, feedback, with_vectors=feedback, display=False)
        (got,) = index.retrieve_many(tenant_id, [spec])
        return got
    if pool == 1:
        spec = CandidateQuery(lex, embedding, filters, depth, with_vectors=True, display=False)
        (got,) = index.retrieve_many(tenant_id, [spec])
        return got
    specs = [
        CandidateQuery(lex, None, filters, depth, with_vectors=True, display=False),
        CandidateQuery(None, embedding, filters, depth * pool, with_vectors=True, display=False),
    ]
    lexical, vector = index.retrieve_many(tenant_id, specs)
    # Both lists' vectors (read, never written), each still decoded only when read.
    vectors: ChainMap[EntityKey, Any] = ChainMap(vector.vectors, lexical.vectors)  # type: ignore[arg-type]
    return CandidateLists(lexical.lexical, vector.vector, vectors)


def _with_feedback(
    index: Retriever,
    settings: SearchSettings,
    tenant_id: str,
    got: CandidateLists,
    vector: list[Candidate],
    fused: list[Fused],
    embedding: Any,
    filters: Filters,
    depth: int,
    plan: SearchPlan,
) -> list[Fused]:
    """Vector pseudo-relevance feedback (core/search/pseudo_relevance.py): fuse again with the moved query's
    hits (or, re-scoring, with the candidates in hand: both legs' whole lists, `got`, scored with the moved
    query, when their vectors came with them). Without feedback hits (no stored vector to move toward),
    the vector list, retrieved for its ranking only, is retrieved again whole, since its candidates would
    be shown."""
    lexical = got.lexical
    if _rescoring(settings):
        moved = feedback_rescore(
            index, tenant_id, embedding, fused, lexical, got.vector, depth,
            settings.feedback_docs, settings.feedback_weight, got.vectors,
        )  # fmt: skip
        if moved is not None:
            listed = strong_vector_hits(moved, settings, plan.own_vector)
            return fuse(settings.fusion, lexical, listed, plan.alpha, settings.rrf_k)
        # No vectors came with the hits (an index without the compact copy): the second search instead.
    again = feedback_search(
        index,
        tenant_id,
        embedding,
        fused,
        vector,
        filters,
        depth,
        settings.feedback_docs,
        settings.feedback_weight,
        got.vectors,
    )
    if (
        again is None
    ):  # the first list was retrieved for its ranking: the index may have left out its display values
        again = index.vector(tenant_id, embedding, filters, depth)
    vector = strong_vector_hits(again, settings, plan.own_vector)
    return fuse(settings.fusion, lexical, vector, plan.alpha, settings.rrf_k)

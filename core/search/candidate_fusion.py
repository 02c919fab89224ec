"""One search's candidate lists fused (docs/architecture.md, Read path): both legs in one round trip to
the index, the vector floor, the fusion, vector pseudo-relevance feedback on fused searches, and the
prefix-then-fuzzy fallback when nothing matched (docs/conformance.md#no-match-fallback)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.models import Candidate, CandidateQuery, Filters, LexicalQuery, MatchMode
from core.ports import Retriever
from core.search.fusion import Fused, fuse
from core.search.planning import SearchPlan, SearchSettings, strong_vector_hits
from core.search.pseudo_relevance import feedback_search


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
    if (lexical is None or lexical.empty) and embedding is None:
        return [], None
    lex = lexical if lexical is not None and not lexical.empty else None
    # With feedback on, the first vector list only picks the feedback documents (its ranking): the
    # feedback's list replaces it before anything is shown, so the index may leave out its chunks.
    feedback = plan.lexical and embedding is not None and settings.feedback_docs > 0
    spec = CandidateQuery(lex, embedding, filters, depth, vector_ranking_only=feedback)
    (got,) = index.retrieve_many(tenant_id, [spec])
    vector = strong_vector_hits(got.vector, settings, plan.own_vector)
    # With feedback, the first fusion only names the feedback documents, its head: the rest is not built.
    head = settings.feedback_docs if feedback else None
    fused = fuse(settings.fusion, got.lexical, vector, plan.alpha, settings.rrf_k, top=head)
    if feedback and fused:
        fused = _with_feedback(
            index, settings, tenant_id, got.lexical, vector, fused, embedding, filters, depth, plan
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


def _with_feedback(
    index: Retriever,
    settings: SearchSettings,
    tenant_id: str,
    lexical: Sequence[Candidate],
    vector: list[Candidate],
    fused: list[Fused],
    embedding: Any,
    filters: Filters,
    depth: int,
    plan: SearchPlan,
) -> list[Fused]:
    """Vector pseudo-relevance feedback (core/search/pseudo_relevance.py): fuse again with the moved query's
    hits. Without feedback hits (no stored vector to move toward), the vector list, retrieved for its ranking
    only, is retrieved again whole, since its candidates would be shown."""
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
    )
    if (
        again is None
    ):  # the first list was retrieved for its ranking: the index may have left out its display values
        again = index.vector(tenant_id, embedding, filters, depth)
    vector = strong_vector_hits(again, settings, plan.own_vector)
    return fuse(settings.fusion, lexical, vector, plan.alpha, settings.rrf_k)

"""How a search answers (docs/architecture.md, Read path): each fused candidate as a result (snippet,
matched terms, metadata, the explanation of its two legs), the response around a page of them, the stored
fields a search asks for, and the `min_score` cut. Scores and α are shown to 6 decimals."""

from __future__ import annotations

from collections.abc import Sequence

from core.indexing.catalog_service import ATTRIBUTE_FIELDS
from core.indexing.entity_types import EntityTypeRegistry
from core.memory.metadata import public_metadata
from core.models import EntityKey
from core.ports import EntityCatalog
from core.search.fusion import Fused, FusionMethod
from core.search.planning import SearchPlan
from core.search.query import ParsedQuery
from core.search.search_api import (
    Explanation,
    QueryInfo,
    RetrieverExplanation,
    SearchRequest,
    SearchResponse,
    SearchResult,
)
from core.search.snippet import highlight

SCORE_DECIMALS = 6  # scores and α in answers: 0.35, not 0.8 - 0.45 = 0.35000000000000003


def above(fused: list[Fused], min_score: float | None) -> list[Fused]:
    """The fused results scoring at least `min_score` (all of them without one)."""
    if min_score is None:
        return fused
    return [f for f in fused if round(f.score, SCORE_DECIMALS) >= min_score]  # as the answer shows it


def _rounded(score: float | None) -> float | None:
    return None if score is None else round(score, SCORE_DECIMALS)


def search_result(
    f: Fused,
    words: Sequence[str],
    plan: SearchPlan,
    fusion: FusionMethod,
    registry: EntityTypeRegistry,
    explain: bool,
    fallback: str | None,
) -> SearchResult:
    """One result: the candidate's identity, title, snippet with the query's `words` highlighted, fused
    score and metadata."""
    c = f.candidate
    explanation = None
    if explain:
        etype = registry.get(c.key.entity_type)
        explanation = Explanation(
            fusion=fusion.value,
            alpha=round(plan.alpha, SCORE_DECIMALS),
            lexical=RetrieverExplanation(rank=f.lexical_rank, score=_rounded(f.lexical_score)),
            vector=RetrieverExplanation(rank=f.vector_rank, score=_rounded(f.vector_score)),
            field_boosts={s.name: s.boost for s in etype.fields},
            matched_chunk=c.chunk_no,
            fallback=fallback,
        )
    metadata = public_metadata(c.metadata)
    metadata.update(source=c.source, created_at=c.created_at, updated_at=c.updated_at)
    if c.owner:
        metadata["owner"] = c.owner
    if c.namespace:
        metadata["namespace"] = c.namespace
    snippet, matched = highlight(c.title, c.text, words)
    return SearchResult(
        entity_type=c.key.entity_type,
        entity_id=c.key.entity_id,
        title=c.title,
        snippet=snippet,
        score=round(f.score, SCORE_DECIMALS),
        metadata=metadata,
        matched_terms=matched,
        explanation=explanation,
    )


def search_results(
    window: Sequence[Fused],
    parsed: ParsedQuery,
    plan: SearchPlan,
    fusion: FusionMethod,
    registry: EntityTypeRegistry,
    explain: bool,
    fallback: str | None,
) -> list[SearchResult]:
    """`search_result` of each of `window`, in order (the query's words listed once for all of them)."""
    words = list(parsed.terms) + [w for p in parsed.phrases for w in p.split()]
    return [search_result(f, words, plan, fusion, registry, explain, fallback) for f in window]


def search_response(
    request: SearchRequest,
    parsed: ParsedQuery,
    types: tuple[str, ...],
    plan: SearchPlan,
    results: list[SearchResult],
    total: int,
    next_cursor: str | None,
    fallback: str | None,
    degraded_reason: str | None,
) -> SearchResponse:
    """The answer around a page of results (its cache state and time are the caller's to fill in)."""
    return SearchResponse(
        results=results,
        next_cursor=next_cursor,
        total=total,
        query_info=QueryInfo(
            original_query=request.query,
            parsed_query=parsed.describe(),
            entities_searched=list(types),
            strategy=plan.strategy,
            cache="miss",
            degraded=degraded_reason is not None,
            degraded_reason=degraded_reason,
            fallback=fallback,
            terms_truncated=parsed.truncated,
            query_shape=parsed.shape.value,
        ),
        took_ms=0.0,
    )


def fill_return_fields(
    index: EntityCatalog, tenant_id: str, wanted: str | list[str] | None, results: Sequence[SearchResult]
) -> None:
    """Each result's stored fields as asked (one read of the page's entities), or nothing but its
    identity and scores for `none`."""
    if wanted is None or not results:
        return
    if wanted == "none":
        for r in results:
            r.title, r.snippet, r.metadata = "", "", {}
        return
    keys = [EntityKey(r.entity_type, r.entity_id) for r in results]
    stored = index.get(tenant_id, keys)
    names = None if wanted == "all" else set(wanted)
    for key, r in zip(keys, results, strict=True):
        entity = stored.get(key)
        body = entity.body if entity is not None and not entity.deleted else {}
        r.fields = {
            k: v for k, v in body.items() if k not in ATTRIBUTE_FIELDS and (names is None or k in names)
        }

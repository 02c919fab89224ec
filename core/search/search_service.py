"""The search use case (docs/architecture.md, Read path): parse → choose strategy → embed → retrieve → fuse → fallback →
snippet → respond, with a per-tenant generation-keyed cache in front.

The cache fails open: when it cannot be read or written, the search is answered from the index with
`query_info.cache = "bypass"`, the failure is logged and counted (`SearchService.cache_failures`), and
nothing is cached for that request. (Writes are where a cache outage must stop things: see indexing.)
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, NamedTuple

from core.errors import InvalidInputError, UnavailableError
from core.indexing.caller_vectors import caller_vector, declared_own
from core.indexing.catalog_service import ATTRIBUTE_FIELDS
from core.indexing.entity_types import EntityTypeRegistry
from core.models import (
    ALL_CHUNKS,
    Candidate,
    CandidateQuery,
    EntityKey,
    Filters,
    LexicalQuery,
    MatchMode,
    Vector,
)
from core.ports import Cache, Clock, Embedder, SearchIndex, tenant_embedder
from core.search.cache_key import generation_key, search_cache_key, settling_key
from core.search.filters import COMMON_FILTERS, FACET_VALUES, check_facets, parse_filters
from core.search.fusion import Fused, count_legs, fuse
from core.search.paging import PAGING_DEPTH, SearchPage
from core.search.planning import (
    SearchPlan,
    SearchSettings,
    plan_strategy,
    retrieval_depth,
    strong_vector_hits,
    vector_plan,
)
from core.search.pseudo_relevance import feedback_search
from core.search.query import ParsedQuery, parse_query
from core.search.search_api import (
    Explanation,
    QueryInfo,
    RetrieverExplanation,
    SearchRequest,
    SearchResponse,
    SearchResult,
)
from core.search.snippet import build_snippet, matched_terms

_log = logging.getLogger(__name__)

SCORE_DECIMALS = 6  # scores and α in answers: 0.35, not 0.8 - 0.45 = 0.35000000000000003
# Request fields beyond the ranking's inputs that change the answer (part of the cache key when set).
ANSWER_OPTIONS = ("facets", "min_score", "return_fields", "query_vector")
MODEL_SWITCH_ATTEMPTS = 2  # embed again once when `quarry reindex` switched the model mid-search (below)


class _Retrieved(NamedTuple):
    plan: SearchPlan
    lexical: LexicalQuery | None
    embedding: Any
    fused: list[Fused]
    fallback: str | None
    degraded_reason: str | None


class SearchService:
    """Answers POST /search for one tenant at a time."""

    def __init__(
        self,
        index: SearchIndex,
        embedder: Embedder,
        cache: Cache,
        registry: EntityTypeRegistry,
        clock: Clock,
        settings: SearchSettings | None = None,
    ) -> None:
        self._index = index
        self._embedder = embedder
        self._cache = cache
        self._registry = registry
        self.settings = settings or SearchSettings()
        self._clock = clock
        self._failures_lock = threading.Lock()
        self.cache_failures = 0  # cache reads/writes that failed and were bypassed (fail open)

    def _cached(self, what: str, call: Callable[[], Any]) -> tuple[bool, Any]:
        """(True, result) of a cache call, or (False, None) when the cache failed: logged and counted."""
        try:
            return True, call()
        except Exception as exc:  # any cache fault: the index still answers
            with self._failures_lock:
                self.cache_failures += 1
            _log.warning("search cache %s failed; answering without it: %s", what, exc)
            return False, None

    def _check_limits(self, request: SearchRequest) -> None:
        errors: dict[str, str] = {}
        if len(request.query) > self.settings.max_query_chars:
            errors["query"] = f"must be at most {self.settings.max_query_chars} characters"
        if request.limit > self.settings.max_limit:
            errors["limit"] = f"must be at most {self.settings.max_limit}"
        if errors:
            raise InvalidInputError("invalid search request", errors)

    def _entity_types(self, request: SearchRequest, parsed: ParsedQuery) -> tuple[str, ...]:
        requested = [
            self._registry.resolve(n, path=f"entities.{i}") for i, n in enumerate(request.entities or [])
        ]
        if parsed.entity_prefix:
            if requested and parsed.entity_prefix not in requested:
                return ()
            return (parsed.entity_prefix,)
        return tuple(sorted(set(requested))) if requested else self._registry.names()

    def _filterable(self, types: Sequence[str]) -> set[str]:
        allowed = set(COMMON_FILTERS)
        for name in types:
            allowed.update(self._registry.get(name).filterable)
        return allowed

    def _filters(self, types: Sequence[str], raw: Mapping[str, Any] | None) -> Filters:
        return parse_filters(raw, types, self._filterable(types))

    def search(self, tenant_id: str, request: SearchRequest) -> SearchResponse:
        """Run one search for `tenant_id`; never returns another tenant's entities."""
        started = self._clock.monotonic()
        self._check_limits(request)
        parsed = parse_query(request.query, self._registry, self.settings.max_terms)
        types = self._entity_types(request, parsed)
        filters = self._filters(types, request.filters)
        check_facets(request.facets, self._filterable(types))  # a 400 before any cache or index read
        own = self._query_vector(tenant_id, request)
        plan = vector_plan(
            plan_strategy(request.strategy, parsed.shape, self.settings),
            request.query,
            own is not None,
            declared_own(self._embedder, tenant_id),
            request.strategy,
        )
        if not request.query.strip() and not plan.own_vector:  # seed thefold: "empty query returns 0 results"
            response = self._response(request, parsed, types, plan, [], 0, None, None, None)
            response.took_ms = round((self._clock.monotonic() - started) * 1000, 3)
            return response
        ok, generation = self._cached(
            "generation read", lambda: self._cache.counter(generation_key(tenant_id))
        )
        if not ok:
            if request.cursor is not None:  # a cursor is only as good as the generation it is checked against
                raise UnavailableError("cache", "the index generation behind search cursors cannot be read")
            return self._answer(tenant_id, request, parsed, types, filters, plan, started, "bypass", None)
        key = search_cache_key(
            tenant_id,
            request.query,
            types,
            request.filters or {},
            request.strategy,
            request.limit,
            generation,
            request.explain,
            repr(self.settings),  # processes with other ranking settings may share the cache
            {k: v for k in ANSWER_OPTIONS if (v := getattr(request, k)) is not None},
        )
        page = SearchPage.first(tenant_id, request, types, generation)
        if request.cursor is not None:
            return self._answer(
                tenant_id,
                request,
                parsed,
                types,
                filters,
                plan,
                started,
                "bypass",
                page.resume(request.cursor),
            )
        # A TTL of 0 turns the cache off: nothing is read (no entry can still be fresh) or written.
        caching = self.settings.cache_ttl_seconds > 0
        ok, cached = (
            self._cached("read", lambda: self._cache.get(key, self._clock.now())) if caching else (True, None)
        )
        if cached is not None:
            response = SearchResponse.model_validate(cached)
            response.query_info.cache = "hit"
            response.took_ms = round((self._clock.monotonic() - started) * 1000, 3)
            return response
        answered: Literal["miss", "bypass"] = "miss" if ok else "bypass"
        response = self._answer(tenant_id, request, parsed, types, filters, plan, started, answered, page)
        if caching and ok and not response.query_info.degraded and not self._settling(tenant_id):
            value = response.model_dump(mode="json")
            stored, _ = self._cached(
                "write",
                lambda: self._cache.set(key, value, self.settings.cache_ttl_seconds, self._clock.now()),
            )
            if not stored:
                response.query_info.cache = "bypass"
        return response

    def _answer(
        self,
        tenant_id: str,
        request: SearchRequest,
        parsed: ParsedQuery,
        types: tuple[str, ...],
        filters: Filters,
        plan: SearchPlan,
        started: float,
        cache: Literal["miss", "bypass"],
        page: SearchPage | None,
    ) -> SearchResponse:
        """Run the search against the index (no cache), marked with how the cache was involved; without a
        page (the generation is unknown) no cursor is issued."""
        response = self._execute(tenant_id, request, parsed, types, filters, plan, page)
        response.query_info.cache = cache
        response.took_ms = round((self._clock.monotonic() - started) * 1000, 3)
        return response

    def _settling(self, tenant_id: str) -> bool:
        """True while the tenant's last write may still be invisible to search (see IndexingService); an
        index whose writes are visible on return costs no lookup."""
        if not getattr(self._index, "visibility_delay_seconds", 0.0):
            return False
        ok, marker = self._cached(
            "settling read", lambda: self._cache.get(settling_key(tenant_id), self._clock.now())
        )
        return not ok or marker is not None  # unknown: do not cache what may be stale

    def _query_vector(self, tenant_id: str, request: SearchRequest) -> Vector | None:
        """The caller's `query_vector`, checked against the tenant's dimension and made unit length."""
        if request.query_vector is None:
            return None
        dimension = tenant_embedder(self._embedder, tenant_id).dimension
        return caller_vector(request.query_vector, dimension, "query_vector")

    def _embed_and_retrieve(
        self,
        tenant_id: str,
        embedder: Embedder,
        request: SearchRequest,
        parsed: ParsedQuery,
        types: tuple[str, ...],
        filters: Filters,
        plan: SearchPlan,
    ) -> _Retrieved:
        """Embed the query with `embedder` (keyword only when it is down) and retrieve and fuse."""
        degraded_reason: str | None = None
        embedding = None
        if plan.own_vector and types:  # checked in `search` already
            embedding = caller_vector(request.query_vector, embedder.dimension, "query_vector")
        elif plan.vector and types:
            try:
                embedding = embedder.embed_query([parsed.text])[0]
            except UnavailableError as exc:
                degraded_reason = exc.public_message
                plan = SearchPlan("keyword", True, False, 0.0)
        lexical = LexicalQuery(parsed.terms, parsed.phrases, weights=parsed.weights) if plan.lexical else None
        depth = retrieval_depth(request.limit, plan, self.settings)
        fused, fallback = self._retrieve(tenant_id, lexical, embedding, filters, depth, plan, bool(types))
        return _Retrieved(plan, lexical, embedding, fused, fallback, degraded_reason)

    def _execute(
        self,
        tenant_id: str,
        request: SearchRequest,
        parsed: ParsedQuery,
        types: tuple[str, ...],
        filters: Filters,
        plan: SearchPlan,
        page: SearchPage | None,
    ) -> SearchResponse:
        for _ in range(MODEL_SWITCH_ATTEMPTS):
            embedder = tenant_embedder(self._embedder, tenant_id)
            got = self._embed_and_retrieve(tenant_id, embedder, request, parsed, types, filters, plan)
            if got.embedding is None or tenant_embedder(self._embedder, tenant_id) is embedder:
                break
            # A reindex switched the tenant's model between embedding and retrieval: the vectors retrieved
            # against may be the new model's, so embed with it and ask again (once is enough: a swap is atomic).
        plan, lexical, embedding, fused, fallback, degraded_reason = got
        fused = above(fused, request.min_score)
        window, total, next_cursor = fused[: request.limit], len(fused), None
        if page is not None:
            page.check_strategy(plan.strategy)
        if page is not None and len(fused) > request.limit:
            next_cursor = page.cursor(plan.strategy, 0)
        if page is not None and not page.is_first:
            # Pages after the first rank at the paging depth, leaving out what the first page showed
            # (recomputed: same generation, same inputs, same ranking), so each entity comes once.
            shown = {f.candidate.key for f in window}
            deep, fallback = self._retrieve(
                tenant_id, lexical, embedding, filters, PAGING_DEPTH, plan, bool(types)
            )
            rest = [f for f in above(deep, request.min_score) if f.candidate.key not in shown]
            window = rest[page.offset : page.offset + request.limit]
            total = len(shown) + len(rest)
            following = page.offset + request.limit
            next_cursor = page.cursor(plan.strategy, following) if following < len(rest) else None
        response = self._response(
            request, parsed, types, plan, window, total, next_cursor, fallback, degraded_reason
        )
        response._legs = count_legs(fused, len(window), plan.alpha)
        self._return_fields(tenant_id, request.return_fields, response.results)
        if request.facets:
            fields = check_facets(request.facets, self._filterable(types))
            counted = self._index.facets(tenant_id, lexical, filters, fields, FACET_VALUES) if types else {}
            response.facets = {f: counted.get(f, {}) for f in fields}
        return response

    def _return_fields(
        self, tenant_id: str, wanted: str | list[str] | None, results: list[SearchResult]
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
        stored = self._index.get(tenant_id, keys)
        names = None if wanted == "all" else set(wanted)
        for key, r in zip(keys, results, strict=True):
            entity = stored.get(key)
            body = entity.body if entity is not None and not entity.deleted else {}
            r.fields = {
                k: v for k, v in body.items() if k not in ATTRIBUTE_FIELDS and (names is None or k in names)
            }

    def _response(
        self,
        request: SearchRequest,
        parsed: ParsedQuery,
        types: tuple[str, ...],
        plan: SearchPlan,
        window: Sequence[Fused],
        total: int,
        next_cursor: str | None,
        fallback: str | None,
        degraded_reason: str | None,
    ) -> SearchResponse:
        results = [self._result(f, parsed, plan, request.explain, fallback) for f in window]
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

    def _retrieve(
        self,
        tenant_id: str,
        lexical: LexicalQuery | None,
        embedding: Any,
        filters: Filters,
        depth: int,
        plan: SearchPlan,
        any_types: bool,
    ) -> tuple[list[Fused], str | None]:
        if not any_types or ((lexical is None or lexical.empty) and embedding is None):
            return [], None
        lex = lexical if lexical is not None and not lexical.empty else None
        # With feedback on, the first vector list only picks the feedback documents (its ranking): the
        # feedback's list replaces it before anything is shown, so the index may leave out its chunks.
        feedback = plan.lexical and embedding is not None and self.settings.feedback_docs > 0
        spec = CandidateQuery(lex, embedding, filters, depth, vector_ranking_only=feedback)
        (got,) = self._index.retrieve_many(tenant_id, [spec])
        vector = strong_vector_hits(got.vector, self.settings, plan.own_vector)
        fused = fuse(self.settings.fusion, got.lexical, vector, plan.alpha, self.settings.rrf_k)
        if feedback and fused:
            fused = self._with_feedback(
                tenant_id, got.lexical, vector, fused, embedding, filters, depth, plan
            )
        if fused or lex is None:
            return fused, None
        # Nothing matched: widen the lexical match before answering nothing (seed nexus §5.2).
        for mode in (MatchMode.PREFIX, MatchMode.FUZZY):
            widened = LexicalQuery(lex.terms, lex.phrases if mode is MatchMode.PREFIX else (), mode)
            hits = self._index.lexical(tenant_id, widened, filters, depth)
            if hits:
                return fuse(self.settings.fusion, hits, [], 0.0, self.settings.rrf_k), mode.value
        return [], None

    def _with_feedback(
        self,
        tenant_id: str,
        lexical: Sequence[Candidate],
        vector: list[Candidate],
        fused: list[Fused],
        embedding: Any,
        filters: Filters,
        depth: int,
        plan: SearchPlan,
    ) -> list[Fused]:
        """Vector pseudo-relevance feedback (core.search.pseudo_relevance): fuse again with the moved query's hits. Without
        feedback hits (no stored vector to move toward), a vector list retrieved for its ranking only is
        retrieved again whole, since its candidates would be shown."""
        again = feedback_search(
            self._index,
            tenant_id,
            embedding,
            fused,
            vector,
            filters,
            depth,
            self.settings.feedback_docs,
            self.settings.feedback_weight,
        )
        if again is None:
            if not any(c.chunk_no == ALL_CHUNKS for c in vector):
                return fused
            again = self._index.vector(tenant_id, embedding, filters, depth)
        vector = strong_vector_hits(again, self.settings, plan.own_vector)
        return fuse(self.settings.fusion, lexical, vector, plan.alpha, self.settings.rrf_k)

    def _result(
        self, f: Fused, parsed: ParsedQuery, plan: SearchPlan, explain: bool, fallback: str | None
    ) -> SearchResult:
        c = f.candidate
        explanation = None
        if explain:
            etype = self._registry.get(c.key.entity_type)
            explanation = Explanation(
                fusion=self.settings.fusion.value,
                alpha=round(plan.alpha, SCORE_DECIMALS),
                lexical=RetrieverExplanation(rank=f.lexical_rank, score=_rounded(f.lexical_score)),
                vector=RetrieverExplanation(rank=f.vector_rank, score=_rounded(f.vector_score)),
                field_boosts={s.name: s.boost for s in etype.fields},
                matched_chunk=c.chunk_no,
                fallback=fallback,
            )
        metadata = dict(c.metadata)
        metadata.update(source=c.source, created_at=c.created_at, updated_at=c.updated_at)
        if c.owner:
            metadata["owner"] = c.owner
        if c.namespace:
            metadata["namespace"] = c.namespace
        words = list(parsed.terms) + [w for p in parsed.phrases for w in p.split()]
        return SearchResult(
            entity_type=c.key.entity_type,
            entity_id=c.key.entity_id,
            title=c.title,
            snippet=build_snippet(c.text, words),
            score=round(f.score, SCORE_DECIMALS),
            metadata=metadata,
            matched_terms=matched_terms((c.title, c.text), words),
            explanation=explanation,
        )


def above(fused: list[Fused], min_score: float | None) -> list[Fused]:
    """The fused results scoring at least `min_score` (all of them without one)."""
    if min_score is None:
        return fused
    return [f for f in fused if round(f.score, SCORE_DECIMALS) >= min_score]  # as the answer shows it


def _rounded(score: float | None) -> float | None:
    return None if score is None else round(score, SCORE_DECIMALS)

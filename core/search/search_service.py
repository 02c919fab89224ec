"""The search use case (docs/architecture.md, Read path): parse → choose strategy → embed → retrieve → fuse → fallback →
snippet → respond, with a per-tenant generation-keyed cache in front.

The cache fails open: when it cannot be read or written, the search is answered from the index with
`query_info.cache = "bypass"`, the failure is logged and counted (`SearchService.cache_failures`), and
nothing is cached for that request. (Writes are where a cache outage must stop things: see indexing.)

Its rules live beside it (planning.py, candidate_fusion.py, results.py, paging.py, cache_key.py), the
embedding, retrieval, memory ranking and what is served in retrieval.py, the snapshots cursors page over in
snapshot_paging.py; what stays here is the coordination of one use case: the cache, a model switched
mid-search, and the paged ranking behind the pages after the first.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from core.errors import CursorExpiredError, InvalidInputError, UnavailableError
from core.indexing.caller_vectors import caller_vector
from core.indexing.entity_types import EntityTypeRegistry
from core.memory.integrity import Integrity, trust_floor
from core.memory.metadata import MEMORY_TYPE
from core.memory.relevance import relevance_floor
from core.memory.supersession import current_only
from core.models import (
    Filters,
    Vector,
)
from core.ports import Cache, Clock, Embedder, SearchIndex, SearchSnapshots
from core.search.cache_key import generation_key, search_cache_key, settling_key
from core.search.filters import COMMON_FILTERS, FACET_VALUES, check_facets, parse_filters
from core.search.fusion import Fused, count_legs
from core.search.paging import PAGING_DEPTH, SearchPage, check_keep_alive
from core.search.planning import SearchPlan, SearchSettings, search_plan
from core.search.query import ParsedQuery, parse_query
from core.search.results import above, fill_return_fields, search_response, search_results
from core.search.retrieval import Retrieval, Retrieved
from core.search.search_api import (
    SearchRequest,
    SearchResponse,
)
from core.search.snapshot_paging import SnapshotPager

_log = logging.getLogger(__name__)

# Request fields beyond the ranking's inputs that change the answer (part of the cache key when set).
ANSWER_OPTIONS = (
    "facets",
    "min_score",
    "return_fields",
    "query_vector",
    "include_superseded",
    "min_relevance",
    "min_trust",
)
MODEL_SWITCH_ATTEMPTS = 2  # embed again once when `quarry reindex` switched the model mid-search (below)


@dataclass(frozen=True, slots=True)
class _Search:
    """One search as checked and planned in `search`: what every later step reads."""

    tenant_id: str
    request: SearchRequest
    parsed: ParsedQuery
    types: tuple[str, ...]
    filters: Filters
    facets: tuple[str, ...]  # the facet fields asked for, checked (each once)
    plan: SearchPlan
    started: float  # the clock's monotonic time when the search began


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
        snapshots: SearchSnapshots | None = None,
        new_id: Callable[[], str] | None = None,
        integrity: Integrity | None = None,
    ) -> None:
        """Without `snapshots` (or `new_id`) every cursor carries the index generation: no snapshots."""
        self.integrity = integrity or Integrity()  # memories left out: content no longer matches its hash
        self._index = index
        self._embedder = embedder
        self._cache = cache
        self._registry = registry
        self._clock = clock
        self._retrieval = Retrieval(index, settings or SearchSettings(), clock, self.integrity)
        self._pager = (
            SnapshotPager(snapshots, clock, new_id) if snapshots is not None and new_id is not None else None
        )
        self._failures_lock = threading.Lock()
        self.cache_failures = 0  # cache reads/writes that failed and were bypassed (fail open)

    @property
    def settings(self) -> SearchSettings:
        """The ranking and limits this service searches with (replaceable: a tuning, a test)."""
        return self._retrieval.settings

    @settings.setter
    def settings(self, value: SearchSettings) -> None:
        self._retrieval.settings = value

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
        check_keep_alive(request.keep_alive)
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
        return set(COMMON_FILTERS) | self._registry.filterable(types)

    def _filters(self, types: Sequence[str], request: SearchRequest) -> Filters:
        """The request's filters, leaving out superseded memories unless it asks for history (a search
        without memories among its types keeps its filters as they are) and, with `min_relevance`, memories
        whose decayed relevance is under it (core/memory/relevance.py)."""
        filters = parse_filters(request.filters, types, self._filterable(types))
        filters = current_only(filters, request.include_superseded or MEMORY_TYPE not in types)
        floors = []
        if request.min_relevance is not None:
            floors.append(relevance_floor(request.min_relevance, self._clock.now()))
        if request.min_trust is not None:
            floors.append(trust_floor(request.min_trust))
        return replace(filters, conditions=(*filters.conditions, *floors)) if floors else filters

    @staticmethod
    def _memory_types(request: SearchRequest, types: tuple[str, ...]) -> tuple[str, ...]:
        """With `min_relevance` or `min_trust`, the memories among `types` only: only memories have a
        relevance and a trust level (a search naming no memory type then finds nothing)."""
        if request.min_relevance is None and request.min_trust is None:
            return types
        return tuple(t for t in types if t == MEMORY_TYPE)

    def search(self, tenant_id: str, request: SearchRequest) -> SearchResponse:
        """Run one search for `tenant_id`; never returns another tenant's entities."""
        s = self._checked(tenant_id, request, self._clock.monotonic())
        if not request.query.strip() and not s.plan.own_vector:  # docs/conformance.md#empty-query
            response = self._response(request, s.parsed, s.types, s.plan, [], 0, None, None, None)
            response.took_ms = round((self._clock.monotonic() - s.started) * 1000, 3)
            return response
        return self._through_cache(s)

    def query_text(self, tenant_id: str, request: SearchRequest) -> str | None:
        """The text `search` would embed with the tenant's model for this request, checked as `search`
        checks it (its errors raised); None when it embeds nothing (keyword, a caller's vector, an empty
        query, no type, a page after the first). What core/search/query_batch.py embeds ahead."""
        s = self._checked(tenant_id, request, 0.0)
        embeds = s.plan.vector and not s.plan.own_vector and s.types and request.query.strip()
        return s.parsed.text if embeds and request.cursor is None else None

    def _checked(self, tenant_id: str, request: SearchRequest, started: float) -> _Search:
        """The request checked and planned: a 400 for what the search cannot run, before any read."""
        self._check_limits(request)
        parsed = parse_query(request.query, self._registry, self.settings.max_terms)
        types = self._entity_types(request, parsed)
        filters = self._filters(types, request)  # fields checked against every type the request names
        if (memories := self._memory_types(request, types)) != types:
            types, filters = memories, replace(filters, entity_types=memories)
        facets = check_facets(request.facets, self._filterable(types))  # a 400 before any cache or index read
        own = self._query_vector(tenant_id, request)
        plan = search_plan(
            request.strategy,
            parsed.shape,
            self.settings,
            request.query,
            own is not None,
            self._embedder.brings_own(tenant_id),
        )
        return _Search(tenant_id, request, parsed, types, filters, facets, plan, started)

    def _through_cache(self, s: _Search) -> SearchResponse:
        """The answer from the tenant's generation-keyed cache, or from the index and then cached (not
        when degraded, nor while a write may still be invisible); pages after the first bypass it."""
        tenant_id, request = s.tenant_id, s.request
        page = SearchPage.first(tenant_id, request, s.types, None)
        if request.cursor is not None:
            page = page.resume(request.cursor)  # a 400 for a foreign cursor before anything is read
            if page.snapshot_id is not None:
                return self._snapshot_page(s, page)
        ok, generation = self._cached(
            "generation read", lambda: self._cache.counter(generation_key(tenant_id))
        )
        if not ok:
            if request.cursor is not None:  # a cursor is only as good as the generation it is checked against
                raise UnavailableError("cache", "the index generation behind search cursors cannot be read")
            return self._answer(s, "bypass", None)
        if request.cursor is not None:
            page.check_generation(generation)
            return self._answer(s, "bypass", page)
        page = replace(page, generation=generation)
        if request.keep_alive is not None and self._pager is not None:
            return self._answer(s, "bypass", page)  # a snapshot of its own: never answered from the cache
        # A TTL of 0 turns the cache off: nothing is read (no entry can still be fresh) or written, and no
        # key is made.
        caching = self.settings.cache_ttl_seconds > 0
        key = self._cache_key(tenant_id, request, s.types, generation) if caching else ""
        ok, cached = (
            self._cached("read", lambda: self._cache.get(key, self._clock.now())) if caching else (True, None)
        )
        if cached is not None:
            response = SearchResponse.model_validate(cached)
            response.query_info.cache = "hit"
            response.took_ms = round((self._clock.monotonic() - s.started) * 1000, 3)
            return response
        answered: Literal["miss", "bypass"] = "miss" if ok else "bypass"
        response = self._answer(s, answered, page)
        if caching and ok and not response.query_info.degraded and not self._settling(tenant_id):
            self._store(key, response)
        return response

    def _snapshot_page(self, s: _Search, page: SearchPage) -> SearchResponse:
        """A page of the snapshot a cursor pins (no cache, no index: writes since do not change it)."""
        if self._pager is None:
            raise CursorExpiredError(lapsed_snapshot=True)  # a deployment without snapshots keeps none
        response = self._pager.page(page, s.request)
        response.took_ms = round((self._clock.monotonic() - s.started) * 1000, 3)
        return response

    def _store(self, key: str, response: SearchResponse) -> None:
        """Cache the answer; one the cache would not take is marked a bypass."""
        value = response.model_dump(mode="json")
        stored, _ = self._cached(
            "write", lambda: self._cache.set(key, value, self.settings.cache_ttl_seconds, self._clock.now())
        )
        if not stored:
            response.query_info.cache = "bypass"

    def _cache_key(
        self, tenant_id: str, request: SearchRequest, types: tuple[str, ...], generation: int
    ) -> str:
        return search_cache_key(
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

    def _answer(
        self, s: _Search, cache: Literal["miss", "bypass"], page: SearchPage | None
    ) -> SearchResponse:
        """Run the search against the index (no cache), marked with how the cache was involved; without a
        page (the generation is unknown) no cursor is issued."""
        response = self._execute(s, page)
        response.query_info.cache = cache
        response.took_ms = round((self._clock.monotonic() - s.started) * 1000, 3)
        return response

    def _settling(self, tenant_id: str) -> bool:
        """True while the tenant's last write may still be invisible to search (see IndexingService); an
        index whose writes are visible on return costs no lookup."""
        if not self._index.visibility_delay_seconds:
            return False
        ok, marker = self._cached(
            "settling read", lambda: self._cache.get(settling_key(tenant_id), self._clock.now())
        )
        return not ok or marker is not None  # unknown: do not cache what may be stale

    def _query_vector(self, tenant_id: str, request: SearchRequest) -> Vector | None:
        """The caller's `query_vector`, checked against the tenant's dimension and made unit length."""
        if request.query_vector is None:
            return None
        dimension = self._embedder.for_tenant(tenant_id).dimension
        return caller_vector(request.query_vector, dimension, "query_vector")

    def _retrieved(self, s: _Search) -> Retrieved:
        """The search embedded and retrieved with the tenant's current model."""
        for _ in range(MODEL_SWITCH_ATTEMPTS):
            embedder = self._embedder.for_tenant(s.tenant_id)
            got = self._retrieval.embed_and_retrieve(
                s.tenant_id, s.request, s.parsed, s.types, s.filters, s.plan, embedder
            )
            if got.embedding is None or self._embedder.for_tenant(s.tenant_id) is embedder:
                break
            # A reindex switched the tenant's model between embedding and retrieval: the vectors retrieved
            # against may be the new model's, so embed with it and ask again (once is enough: a swap is atomic).
        return got

    def _execute(self, s: _Search, page: SearchPage | None) -> SearchResponse:
        tenant_id, request, types, filters = s.tenant_id, s.request, s.types, s.filters
        plan, lexical, embedding, fused, fallback, degraded_reason = self._retrieved(s)
        fused = above(fused, request.min_score)
        # Display values are read, and memories checked, for what is served only (Retrieval.served).
        window, left_out = self._retrieval.served(tenant_id, fused, 0, request.limit)
        total, next_cursor, rest = len(fused) - left_out, None, None
        if page is not None:
            page.check_strategy(plan.strategy)
        if page is not None and total > request.limit:
            next_cursor = page.cursor(plan.strategy, 0)
        later = page is not None and not page.is_first  # a page after the first
        snapshotting = self._pager is not None and later
        snapshotting |= self._pager is not None and request.keep_alive is not None and next_cursor is not None
        if page is not None and (snapshotting or later):
            # The paged ranking: the first page, then the ranking at the paging depth less what the first
            # page showed (recomputed on a generation cursor: same generation, same inputs, same ranking).
            shown = {f.candidate.key for f in window}
            deep, deep_fallback = self._retrieval.retrieve(
                tenant_id, lexical, embedding, filters, PAGING_DEPTH, plan, types, request.min_relevance
            )
            rest = [f for f in above(deep, request.min_score) if f.candidate.key not in shown]
            if snapshotting:  # the snapshot keeps every result of the remainder, rendered
                rest, _ = self._retrieval.served(tenant_id, rest, 0, len(rest))
            total = len(shown) + len(rest)
            if later:
                window, left_out = self._retrieval.served(tenant_id, rest, page.offset, request.limit)
                total -= left_out
                fallback = deep_fallback
                following = page.offset + request.limit
                next_cursor = page.cursor(plan.strategy, following) if following < len(rest) else None
        response = self._response(
            request, s.parsed, types, plan, window, total, next_cursor, fallback, degraded_reason
        )
        response._legs = count_legs(fused, len(window), plan.alpha)
        fill_return_fields(self._index, tenant_id, request.return_fields, response.results)
        if s.facets:
            counted = self._index.facets(tenant_id, lexical, filters, s.facets, FACET_VALUES) if types else {}
            response.facets = {f: counted.get(f, {}) for f in s.facets}
        if snapshotting and page is not None and rest is not None:
            self._snapshot(s, page, response, rest, plan, fallback)
        return response

    def _snapshot(
        self,
        s: _Search,
        page: SearchPage,
        response: SearchResponse,
        rest: list[Fused],
        plan: SearchPlan,
        fallback: str | None,
    ) -> None:
        """Store the paged remainder `rest` as a snapshot when a page follows this one, and point the
        response's `next_cursor` at it (core/search/paging.py)."""
        assert self._pager is not None
        following = 0 if page.is_first else page.offset + s.request.limit
        if following >= len(rest):
            response.next_cursor = None
            return
        fusion, registry = self.settings.fusion, self._registry
        results = search_results(rest, s.parsed, plan, fusion, registry, True, fallback)
        fill_return_fields(self._index, s.tenant_id, s.request.return_fields, results)
        snapshot_id = self._pager.take(page, response, results, s.request.keep_alive)
        response.next_cursor = page.snapshot_cursor(snapshot_id, following)

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
        fusion, registry = self.settings.fusion, self._registry
        results = search_results(window, parsed, plan, fusion, registry, request.explain, fallback)
        return search_response(
            request, parsed, types, plan, results, total, next_cursor, fallback, degraded_reason
        )

"""Context assembly use cases (docs/architecture.md, Context assembly): assemble a token-budgeted block for an
LLM caller, record the caller's feedback, and read back weights, budgets, the assembly log and its callers.

assemble: budget → weights → explicit links → embed the query → parallel fan-out (sources, their
cross-namespace expansion, graph facts) → score → dedup → pack → render → log.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from core.context.budget import (
    DEFAULT_TOKEN_BUDGET,
    ResolvedBudget,
    effective_shares,
    resolve_budget,
    resolve_weights,
)
from core.context.context_api import (
    AssembleRequest,
    AssembleResponse,
    ContextSource,
    FeedbackRequest,
    FeedbackResponse,
)
from core.context.fan_out import Fanout, Gathered, MapFn, load_links, plan_tasks
from core.context.graph import graph_allowance
from core.context.links import parse_links
from core.context.packing import Packer, Packing
from core.context.render import LINK_LABEL
from core.context.scoring import RECENCY_FLOOR, ContextItem, deduplicate
from core.context.sources import DEFAULT_SOURCES, EXPLICIT_LINK_SOURCE, SourceSpec, select_sources
from core.errors import ConflictError, InvalidInputError, NotFoundError, UnavailableError
from core.indexing.entity_types import EntityTypeRegistry
from core.memory.integrity import Integrity
from core.memory.metadata import MEMORY_TYPE
from core.memory.reinforcement import Reinforcement
from core.memory.relevance import RELEVANCE_BLEND
from core.models import EntityKey, LexicalQuery, Vector
from core.ports import (
    Clock,
    Embedder,
    FeedbackLoop,
    LinkReader,
    SearchIndex,
    TokenCounters,
    TripleStore,
)
from core.search.fusion import RRF_K
from core.search.planning import MAX_QUERY_CHARS, MIN_VECTOR_SIMILARITY
from core.search.query import parse_query
from core.state import WILDCARD_CALLER, AssemblyLogEntry, AssemblySource, SourceWeight
from core.timestamps import iso_timestamp
from core.tokens import ESTIMATE, TokenCounter, estimate_tokens

MS = 1000.0
# Candidates per source: enough whole items to fill the budget at ~50 tokens each (a typical memory is
# ~200 characters), never fewer than 20 nor more than 100 (our bounds; the specification searched a
# fixed 20: docs/conformance.md#context-candidates).
TOKENS_PER_CANDIDATE = 50
MIN_DEPTH, MAX_DEPTH = 20, 100


def is_degraded(warnings: Sequence[str]) -> bool:
    """Whether an assembly answered with less than it could: a source, a retriever or the graph was
    unavailable."""
    return any("skipped" in w for w in warnings)


@dataclass(frozen=True, slots=True)
class ContextSettings:
    """Tunable assembly behaviour; defaults are the specification's constants
    (docs/conformance.md#packing)."""

    sources: tuple[SourceSpec, ...] = DEFAULT_SOURCES
    default_budget: int = DEFAULT_TOKEN_BUDGET
    max_query_chars: int = MAX_QUERY_CHARS
    recency_floor: float = RECENCY_FLOOR
    min_vector_similarity: float = MIN_VECTOR_SIMILARITY
    rrf_k: int = RRF_K
    memory_relevance_blend: float = RELEVANCE_BLEND  # docs/conformance.md#memory-blend (0.3)
    # caller → the token encoding its budgets are counted in when a request names none (core/tokens.py)
    token_encodings: Mapping[str, str] = field(default_factory=dict)


def candidate_depth(budget: int) -> int:
    """Candidates to retrieve per source for a budget."""
    return min(MAX_DEPTH, max(MIN_DEPTH, math.ceil(budget / TOKENS_PER_CANDIDATE)))


def query_hash(query: str) -> str:
    """sha256 of the lower-cased, whitespace-collapsed query (the log keeps no raw query text)."""
    return hashlib.sha256(" ".join(query.lower().split()).encode("utf-8")).hexdigest()


@dataclass(slots=True)
class _Prepared:
    """What an assembly knows before retrieval."""

    specs: list[SourceSpec]
    budget: ResolvedBudget
    rows: dict[str, SourceWeight]
    links: list[ContextItem]
    warnings: list[str]
    graph_allowance: int
    packer: Packer  # counts in the caller's token encoding
    encoding: str


class ContextService:
    """Assembles context blocks and records feedback for one tenant at a time."""

    def __init__(
        self,
        index: SearchIndex,
        embedder: Embedder,
        state: FeedbackLoop,
        registry: EntityTypeRegistry,
        clock: Clock,
        new_id: Callable[[], str],
        settings: ContextSettings | None = None,
        counter: TokenCounter = estimate_tokens,
        counters: TokenCounters | None = None,
        map_fn: MapFn = map,
        links: LinkReader | None = None,
        triples: TripleStore | None = None,
        reinforcement: Reinforcement | None = None,
        integrity: Integrity | None = None,
    ) -> None:
        self._reinforcement = reinforcement  # counts the memories each block uses (None: not counted)
        self.integrity = integrity or Integrity()  # memories left out: content no longer matches its hash
        self._index, self._embedder, self._state = index, embedder, state
        self._registry, self._clock, self._new_id = registry, clock, new_id
        self.settings = settings or ContextSettings()
        self._links, self._triples = links, triples
        self._fanout = Fanout(index, map_fn, triples)
        labels = {s.name: s.display for s in self.settings.sources}
        self._labels = {**labels, EXPLICIT_LINK_SOURCE: LINK_LABEL}
        self._packer = Packer(counter, self._labels)
        self._counters = counters

    def _budget(self, tenant_id: str, request: AssembleRequest) -> ResolvedBudget:
        if request.token_budget is not None:
            return resolve_budget(request.token_budget, None, None, request.namespace)
        own = self._state.get_budget(tenant_id, request.caller)
        wild = None if own is not None else self._state.get_budget(tenant_id, WILDCARD_CALLER)
        return resolve_budget(None, own, wild, request.namespace, self.settings.default_budget)

    def _embed(self, tenant_id: str, text: str, warnings: list[str]) -> Vector | None:
        try:
            return self._embedder.for_tenant(tenant_id).embed_query([text])[0]
        except UnavailableError as exc:
            warnings.append(f"semantic retrieval skipped, keyword only: {exc.public_message}")
            return None

    def _prepare(self, tenant_id: str, request: AssembleRequest) -> _Prepared:
        """Validate, resolve budget and weights, and load the explicit links (refusals raise here)."""
        if len(request.query) > self.settings.max_query_chars:
            raise InvalidInputError(
                "query too long", {"query": f"must be at most {self.settings.max_query_chars} characters"}
            )
        specs = select_sources(self.settings.sources, request.sources)
        links = parse_links(request.explicit_links, self._registry)
        budget = self._budget(tenant_id, request)
        rows = resolve_weights(
            [s.name for s in specs],
            self._state.get_weights(tenant_id, request.caller),
            self._state.get_weights(tenant_id, WILDCARD_CALLER),
            request.caller,
            len(self.settings.sources),
        )
        link_items, warnings = load_links(
            tenant_id, links, budget.tokens, self._index, self._registry, self._links
        )
        packer, encoding = self._packer_for(request)
        allowance = graph_allowance(budget.tokens)
        return _Prepared(specs, budget, rows, link_items, warnings, allowance, packer, encoding)

    def _packer_for(self, request: AssembleRequest) -> tuple[Packer, str]:
        """The packer counting in the request's `token_encoding`, else its caller's configured one, else
        the ceil(len/4) estimate (core/tokens.py); a 400 when this deployment cannot count in it."""
        encoding = request.token_encoding or self.settings.token_encodings.get(request.caller, ESTIMATE)
        if encoding == ESTIMATE:
            return self._packer, ESTIMATE
        if self._counters is None:
            raise InvalidInputError(
                "token encoding not available", {"token_encoding": f"{encoding} is not counted here"}
            )
        return Packer(self._counters.counter(encoding), self._labels), encoding

    def _gather(self, tenant_id: str, request: AssembleRequest, prep: _Prepared, now: float) -> Gathered:
        """Embed the query, then fan out to every source (and the graph) in parallel."""
        parsed = parse_query(request.query, self._registry)
        lexical = LexicalQuery(parsed.terms, parsed.phrases, weights=parsed.weights)
        embedding = self._embed(tenant_id, parsed.text, prep.warnings)
        # Without a triple store (QUARRY_TRIPLES_FILE unset, the default) there is no graph to enrich from:
        # a deployment's choice, not a skipped step, so no warning (a configured store that fails warns).
        with_graph = prep.graph_allowance > 0 and self._triples is not None
        weights = {name: row.weight for name, row in prep.rows.items()}
        plan = plan_tasks(
            prep.specs,
            weights,
            request.caller,
            request.namespace,
            request.expand_namespaces,
            request.include_superseded,
        )
        scoring = {
            "now": now,
            "min_vector_similarity": self.settings.min_vector_similarity,
            "recency_floor": self.settings.recency_floor,
            "rrf_k": self.settings.rrf_k,
            "min_relevance": request.min_relevance,
            "memory_blend": self.settings.memory_relevance_blend,
            "min_trust": request.min_trust,
            "integrity": self.integrity,
            "tenant_id": tenant_id,
        }
        gathered = self._fanout.gather(
            tenant_id,
            plan,
            (None if lexical.empty else lexical, embedding),
            candidate_depth(prep.budget.tokens),
            scoring,
            request.query if with_graph else None,
        )
        if plan.tasks and gathered.failed_sources == len(plan.tasks):
            raise UnavailableError("index", "; ".join(gathered.warnings))
        prep.warnings.extend(gathered.warnings)
        return gathered

    def _pack(self, prep: _Prepared, gathered: Gathered) -> Packing:
        items = deduplicate(gathered.items)  # the packer leaves out what repeats a link it placed
        packing = prep.packer.pack(
            prep.budget.tokens,
            items,
            effective_shares(prep.rows),
            prep.links,
            gathered.graph,
            prep.graph_allowance,
        )
        prep.warnings.extend(
            f"explicit link '{s}' did not fit in the 30% link allowance" for s in packing.skipped_links
        )
        return packing

    def assemble(self, tenant_id: str, request: AssembleRequest, request_id: str | None) -> AssembleResponse:
        """Build one context block for `request.caller`; never reads another tenant's data."""
        started, now = self._clock.monotonic(), self._clock.now()
        prep = self._prepare(tenant_id, request)
        retrieval_started = self._clock.monotonic()
        gathered = self._gather(tenant_id, request, prep, now)
        retrieval_ms = (self._clock.monotonic() - retrieval_started) * MS
        packing = self._pack(prep, gathered)
        assembly_id = self._log(
            tenant_id, request, request_id, prep.budget, packing, retrieval_ms, started, now
        )
        self._count_uses(tenant_id, [p.item.id for p in packing.items], now)
        return AssembleResponse(
            assembly_id=assembly_id,
            context_block=packing.block,
            sources=_sources(packing),
            total_tokens=packing.total_tokens,
            token_budget=prep.budget.tokens,
            token_encoding=prep.encoding,
            retrieval_ms=round(retrieval_ms, 3),
            warnings=prep.warnings,
        )

    def _log(
        self,
        tenant_id: str,
        request: AssembleRequest,
        request_id: str | None,
        budget: ResolvedBudget,
        packing: Packing,
        retrieval_ms: float,
        started: float,
        now: float,
    ) -> str | None:
        if not request.log:
            return None
        assembly_id = self._new_id()
        self._state.log_assembly(
            AssemblyLogEntry(
                assembly_id=assembly_id,
                tenant_id=tenant_id,
                caller=request.caller,
                namespace=request.namespace,
                request_id=request_id,
                query_hash=query_hash(request.query),
                budget=budget.tokens,
                total_tokens=packing.total_tokens,
                sources=tuple(
                    AssemblySource(p.item.id, p.item.source, round(p.item.normalised, 6), p.tokens)
                    for p in (*packing.links, *packing.items)
                ),
                retrieval_ms=round(retrieval_ms, 3),
                total_ms=round((self._clock.monotonic() - started) * MS, 3),
                created_at=iso_timestamp(now),
            )
        )
        return assembly_id

    def feedback(
        self, tenant_id: str, request: FeedbackRequest, caller: str | None = None
    ) -> FeedbackResponse:
        """Record which items the caller used; 404 for an assembly this tenant never logged, or (when
        `caller` is given) that another caller received."""
        entry = self._state.get_assembly(tenant_id, request.assembly_id)
        if entry is None or (caller is not None and entry.caller != caller):
            raise NotFoundError("assembly", request.assembly_id)
        if entry.processed:
            raise ConflictError(
                f"assembly '{request.assembly_id}' was already learned from; its feedback can no longer change"
            )
        returned = {s.id for s in entry.sources}
        named = list(dict.fromkeys(request.used_source_ids))
        recorded = [i for i in named if i in returned]
        at = iso_timestamp(self._clock.now())
        if not self._state.record_feedback(tenant_id, entry.assembly_id, recorded, request.tokens_used, at):
            raise NotFoundError("assembly", request.assembly_id)
        self._count_uses(tenant_id, recorded, self._clock.now())
        return FeedbackResponse(
            success=True,
            assembly_id=entry.assembly_id,
            recorded_ids=recorded,
            ignored_ids=[i for i in named if i not in returned],
        )

    def _count_uses(self, tenant_id: str, item_ids: Sequence[str], now: float) -> None:
        """Reinforce the memories among `item_ids` (`memory:<id>`; batched: core/memory/reinforcement.py)."""
        if self._reinforcement is None:
            return
        prefix = MEMORY_TYPE + ":"
        keys = [EntityKey(MEMORY_TYPE, i[len(prefix) :]) for i in item_ids if i.startswith(prefix)]
        if keys:
            self._reinforcement.used(tenant_id, keys, now)


def _sources(packing: Packing) -> list[ContextSource]:
    return [
        ContextSource(
            id=p.item.id,
            source=p.item.source,
            score=round(p.item.score, 6),
            tokens=p.tokens,
            title=p.item.title[:200],
            truncated=p.truncated,
        )
        for p in (*packing.links, *packing.items)
    ]


__all__ = ["ContextService", "ContextSettings"]

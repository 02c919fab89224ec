"""The retrieval half of a search (docs/architecture.md, Read path): the query embedded (keyword only when
the model is down), both retrievers asked and fused (candidate_fusion.py), and a search's memories ranked
and checked (core/memory/ranking.py). The search use case (search_service.py) asks it once per search, and
again at the paging depth for the pages after the first."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from core.errors import UnavailableError
from core.indexing.caller_vectors import caller_vector
from core.memory.integrity import Integrity
from core.memory.metadata import MEMORY_TYPE
from core.memory.ranking import rank_memories
from core.models import Candidate, Filters, LexicalQuery
from core.ports import Clock, Embedder, SearchIndex
from core.search.candidate_fusion import fused_candidates
from core.search.fusion import Fused
from core.search.planning import SearchPlan, SearchSettings, retrieval_depth
from core.search.query import ParsedQuery
from core.search.search_api import SearchRequest


class Retrieved(NamedTuple):
    """What one search retrieved: the plan it ran (keyword only when the model was down), the lexical
    query, the query vector, the fused ranking, the fallback that produced it and why it is degraded."""

    plan: SearchPlan
    lexical: LexicalQuery | None
    embedding: Any
    fused: list[Fused]
    fallback: str | None
    degraded_reason: str | None


class Retrieval:
    """Embeds, retrieves and ranks for the search use case, over one index, with its `settings` (the
    use case's: replacing them there replaces them here)."""

    def __init__(
        self, index: SearchIndex, settings: SearchSettings, clock: Clock, integrity: Integrity
    ) -> None:
        self._index = index
        self.settings = settings
        self._clock = clock
        self._integrity = integrity

    def embed_and_retrieve(
        self,
        tenant_id: str,
        request: SearchRequest,
        parsed: ParsedQuery,
        types: tuple[str, ...],
        filters: Filters,
        plan: SearchPlan,
        embedder: Embedder,
    ) -> Retrieved:
        """Embed the query with `embedder` (keyword only when it is down) and retrieve and fuse."""
        degraded_reason: str | None = None
        embedding = None
        if plan.own_vector and types:  # checked by the use case already
            embedding = caller_vector(request.query_vector, embedder.dimension, "query_vector")
        elif plan.vector and types:
            try:
                embedding = embedder.embed_query([parsed.text])[0]
            except UnavailableError as exc:
                degraded_reason = exc.public_message
                plan = SearchPlan("keyword", True, False, 0.0)
        lexical = LexicalQuery(parsed.terms, parsed.phrases, weights=parsed.weights) if plan.lexical else None
        depth = retrieval_depth(request.limit, plan, self.settings)
        fused, fallback = self.retrieve(
            tenant_id, lexical, embedding, filters, depth, plan, types, request.min_relevance
        )
        return Retrieved(plan, lexical, embedding, fused, fallback, degraded_reason)

    def retrieve(
        self,
        tenant_id: str,
        lexical: LexicalQuery | None,
        embedding: Any,
        filters: Filters,
        depth: int,
        plan: SearchPlan,
        types: Sequence[str],
        floor: float | None = None,
    ) -> tuple[list[Fused], str | None]:
        """The fused ranking at `depth` per leg with the memories among it ranked and checked, and the
        fallback that produced it; nothing when the search covers no type."""
        if not types:
            return [], None
        fused, fallback = fused_candidates(
            self._index, self.settings, tenant_id, lexical, embedding, filters, depth, plan
        )
        # Only a search of memories alone blends (docs/conformance.md, Memory): among other types a blended
        # memory would move past entities it did not outrank.
        weight = self.settings.memory_relevance_blend if _memories_only(types) else 0.0
        if (weight <= 0 and floor is None) or MEMORY_TYPE not in types:
            # Nothing ranks by a memory's values: each is checked when it is served (`served`).
            return fused, fallback
        # A blend or a floor reads every memory's values: they are read and checked before the cut.
        fused = self._filled(tenant_id, fused, _is_memory)
        return rank_memories(fused, self._clock.now(), weight, floor, self._intact(tenant_id)), fallback

    def served(
        self, tenant_id: str, fused: Sequence[Fused], start: int, count: int
    ) -> tuple[list[Fused], int]:
        """Results `start` to `start + count` of what `fused` serves, with their display values, and how many
        of the ranking up to them were left out on the way: a memory whose content no longer matches its
        hash (core/memory/integrity.py), or an entity deleted since it was ranked. The results
        before `start` are checked too (the left-out ones do not take a place), so pages never overlap."""
        out: list[Fused] = []
        left_out, at, wanted = 0, 0, start + count
        intact = self._intact(tenant_id)
        while len(out) < wanted and at < len(fused):
            batch = fused[at : at + wanted - len(out)]
            at += len(batch)
            kept = [
                f
                for f in self._filled(tenant_id, batch)
                if not _is_memory(f.candidate) or intact(f.candidate)
            ]
            left_out += len(batch) - len(kept)
            out.extend(kept)
        return out[start:wanted], left_out

    def _intact(self, tenant_id: str) -> Callable[[Candidate], bool]:
        integrity = self._integrity

        def intact(c: Candidate) -> bool:
            return integrity.served(tenant_id, c.key, c.metadata, c.title)

        return intact

    def _filled(
        self, tenant_id: str, fused: Sequence[Fused], wanted: Callable[[Candidate], bool] | None = None
    ) -> list[Fused]:
        """`fused` with the display values of the candidates listed without them (those `wanted` only), read
        in one call (Retriever.displayed); one whose entity was deleted since it was ranked is left out, one
        rewritten since shows its current version."""
        pending = [
            f.candidate
            for f in fused
            if f.candidate.handle is not None and (wanted is None or wanted(f.candidate))
        ]
        if not pending:
            return list(fused)
        filled = {c.key: c for c in self._index.displayed(tenant_id, pending)}
        out = []
        for f in fused:
            c = f.candidate
            if c.handle is None or (wanted is not None and not wanted(c)):
                out.append(f)
            elif (got := filled.get(c.key)) is not None:
                out.append(f._replace(candidate=got))
        return out


def _is_memory(candidate: Candidate) -> bool:
    return candidate.key.entity_type == MEMORY_TYPE


def _memories_only(types: Sequence[str]) -> bool:
    """Whether a search covers memories and nothing else (the one case its memories' scores blend)."""
    return bool(types) and all(t == MEMORY_TYPE for t in types)

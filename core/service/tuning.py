"""Fusion tuning use case (issue 5): retrieve each golden query's candidate lists once, exactly as
POST /search would, then let `core.tuning` score every fusion setting on them."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from core.entities import EntityTypeRegistry
from core.evaluation import Qrels
from core.fusion import FusionMethod
from core.models import Filters, LexicalQuery
from core.ports import Embedder, SearchIndex
from core.query import parse_query
from core.service.search import SearchSettings, plan_strategy, retrieval_depth, strong_vector_hits
from core.tuning import PLAIN_RRF_ALPHA, FusionSetting, QueryLists, TuningResult, tune_fusion

TUNING_LIMIT = 100  # lists as deep as a limit-100 search retrieves, so Recall@100 candidates are all there


def current_setting(settings: SearchSettings) -> FusionSetting:
    """The fusion setting a SearchSettings describes."""
    return FusionSetting(settings.fusion, alpha=settings.alpha, rrf_k=settings.rrf_k)


class FusionTuningService:
    """Collects lexical and vector lists for golden queries and tunes fusion on them."""

    def __init__(
        self,
        index: SearchIndex,
        embedder: Embedder,
        registry: EntityTypeRegistry,
        settings: SearchSettings,
        entity_types: Sequence[str] | None = None,
    ) -> None:
        self._index = index
        self._embedder = embedder
        self._registry = registry
        self._settings = settings
        self._types = tuple(entity_types or registry.names())

    def lists(
        self,
        tenant_id: str,
        queries: Mapping[str, str],
        strategy: str = "auto",
        vector_floor: float | None = None,
    ) -> dict[str, QueryLists]:
        """Per query: both candidate lists at search depth, and the α lean `strategy` gives it.

        Vector hits below `vector_floor` (default: the service's `min_vector_similarity`) are dropped,
        as SearchService drops them before fusing.
        """
        settings = self._settings
        if vector_floor is not None:
            settings = dataclasses.replace(settings, min_vector_similarity=vector_floor)
        base = self._settings.alpha if self._settings.fusion is FusionMethod.CONVEX else PLAIN_RRF_ALPHA
        max_terms = self._settings.max_terms
        parsed = {qid: parse_query(t, self._registry, max_terms) for qid, t in queries.items() if t.strip()}
        ids = list(parsed)
        vectors = self._embedder.embed_query([parsed[q].text for q in ids]) if ids else []
        out: dict[str, QueryLists] = {}
        for qid, vector in zip(ids, vectors, strict=True):
            query = parsed[qid]
            types = (query.entity_prefix,) if query.entity_prefix else self._types
            lexical = LexicalQuery(query.terms, query.phrases, weights=query.weights)
            plan = plan_strategy(strategy, query.shape, settings)
            depth = retrieval_depth(TUNING_LIMIT, plan, settings)
            got = self._index.retrieve(
                tenant_id, None if lexical.empty else lexical, vector, Filters(entity_types=types), depth
            )
            vector_hits = tuple(strong_vector_hits(got.vector, settings))
            out[qid] = QueryLists(got.lexical, vector_hits, alpha_shift=plan.alpha - base)
        return out

    def tune(self, tenant_id: str, queries: Mapping[str, str], qrels: Qrels) -> TuningResult:
        """The best fusion setting for the golden set, adopted only if it beats the current one."""
        runs = self.lists(tenant_id, {q: queries[q] for q in qrels if q in queries})
        return tune_fusion(runs, qrels, current_setting(self._settings))

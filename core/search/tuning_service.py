"""Fusion tuning use cases, both retrieve-once: search fusion (each golden query's candidate
lists retrieved once, exactly as POST /search would, then `core.search.fusion_tuning` scores every fusion setting on
them) and an overlay's fusion for governed retrieval (`tune_overlay`: each golden query retrieved once,
then re-ranked under every setting of the grid)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.errors import ConflictError, InvalidInputError, UnavailableError
from core.governance.golden_sets import run_golden_set
from core.governance.governed_retrieval import GovernedRetrievalService, Reuse
from core.governance.overlay import RoleOverlay
from core.indexing.entity_types import EntityTypeRegistry
from core.models import Filters, LexicalQuery, Vector
from core.ports import Embedder, Retriever
from core.search.fusion import FusionMethod, fuse
from core.search.fusion_tuning import (
    ALPHA_GRID,
    PLAIN_RRF_ALPHA,
    FusionSetting,
    QueryLists,
    TuningResult,
    tune_fusion,
)
from core.search.planning import SearchSettings, plan_strategy, retrieval_depth, strong_vector_hits
from core.search.pseudo_relevance import feedback_search
from core.search.query import ParsedQuery, parse_query
from core.search.ranking_metrics import Qrels

TUNING_LIMIT = 100  # lists as deep as a limit-100 search retrieves, so Recall@100 candidates are all there


def current_setting(settings: SearchSettings) -> FusionSetting:
    """The fusion setting a SearchSettings describes."""
    return FusionSetting(settings.fusion, alpha=settings.alpha, rrf_k=settings.rrf_k)


class FusionTuningService:
    """Collects lexical and vector lists for golden queries and tunes fusion on them."""

    def __init__(
        self,
        index: Retriever,
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
        as SearchService drops them before fusing. With vector feedback on, the vector list is the one
        the feedback search returned after the first fusion at the service's α (what POST /search fuses
        last), so the grid scores each α on it.
        """
        settings = self._settings
        if vector_floor is not None:
            settings = dataclasses.replace(settings, min_vector_similarity=vector_floor)
        base = self._settings.alpha if self._settings.fusion is FusionMethod.CONVEX else PLAIN_RRF_ALPHA
        max_terms = self._settings.max_terms
        parsed = {qid: parse_query(t, self._registry, max_terms) for qid, t in queries.items() if t.strip()}
        ids = list(parsed)
        embedder = self._embedder.for_tenant(tenant_id)
        vectors = embedder.embed_query([parsed[q].text for q in ids]) if ids else []
        return {
            qid: self._query_lists(tenant_id, parsed[qid], vector, strategy, settings, base)
            for qid, vector in zip(ids, vectors, strict=True)
        }

    def _query_lists(
        self,
        tenant_id: str,
        query: ParsedQuery,
        vector: Vector,
        strategy: str,
        settings: SearchSettings,
        base: float,
    ) -> QueryLists:
        """One query's lists, retrieved as POST /search would retrieve them."""
        types = (query.entity_prefix,) if query.entity_prefix else self._types
        lexical = LexicalQuery(query.terms, query.phrases, weights=query.weights)
        plan = plan_strategy(strategy, query.shape, settings)
        depth = retrieval_depth(TUNING_LIMIT, plan, settings)
        got = self._index.retrieve(
            tenant_id, None if lexical.empty else lexical, vector, Filters(entity_types=types), depth
        )
        vector_hits = tuple(strong_vector_hits(got.vector, settings))
        if plan.lexical and plan.vector and settings.feedback_docs > 0:
            # The vector list the final fusion sees: the feedback search's (as SearchService does).
            first = fuse(settings.fusion, got.lexical, vector_hits, plan.alpha, settings.rrf_k)
            again = feedback_search(
                self._index,
                tenant_id,
                vector,
                first,
                vector_hits,
                Filters(entity_types=types),
                depth,
                settings.feedback_docs,
                settings.feedback_weight,
            )
            if again is not None:
                vector_hits = tuple(strong_vector_hits(again, settings))
        return QueryLists(got.lexical, vector_hits, alpha_shift=plan.alpha - base)

    def tune(self, tenant_id: str, queries: Mapping[str, str], qrels: Qrels) -> TuningResult:
        """The best fusion setting for the golden set, adopted only if it beats the current one."""
        runs = self.lists(tenant_id, {q: queries[q] for q in qrels if q in queries})
        return tune_fusion(runs, qrels, current_setting(self._settings))


# The search grid's every other α (0.0 … 1.0 in steps of 0.1): each point re-runs governed retrieval.
TUNING_ALPHAS = ALPHA_GRID[::2]


@dataclass(frozen=True, slots=True)
class OverlayTuning:
    """The overlay's fusion setting before and after tuning on its golden set, with the scores."""

    role_id: str
    current: dict[str, Any]
    current_ndcg_at_10: float
    best: dict[str, Any]
    best_ndcg_at_10: float
    adopted: dict[str, Any]
    changed: bool

    def to_json(self) -> dict[str, Any]:
        """JSON-ready report."""
        return {
            "role_id": self.role_id,
            "current": self.current,
            "current_ndcg_at_10": self.current_ndcg_at_10,
            "best": self.best,
            "best_ndcg_at_10": self.best_ndcg_at_10,
            "adopted": self.adopted,
            "changed": self.changed,
        }


def _with_fusion(overlay: RoleOverlay, fusion: str, alpha: float) -> RoleOverlay:
    policy = overlay.retrieval_policy.model_copy(update={"fusion": fusion, "semantic_weight": alpha})
    return overlay.model_copy(update={"retrieval_policy": policy})


def _golden_ndcg(
    retrieval: GovernedRetrievalService, tenant_id: str, overlay: RoleOverlay, reuse: Reuse
) -> float:
    fusion = overlay.retrieval_policy.fusion
    report = run_golden_set(retrieval, tenant_id, overlay, (fusion,), reuse)
    if fusion not in report.strategies:
        raise UnavailableError("embedder", report.skipped.get(fusion, "semantic retrieval unavailable"))
    return report.strategies[fusion].ndcg_at_10


def tune_overlay(retrieval: GovernedRetrievalService, tenant_id: str, role_id: str) -> OverlayTuning:
    """Grid-search the overlay's fusion (rrf, or convex α 0…1) on its golden set; adopt and store the best
    setting only when it scores strictly above the current one, so tuning never lowers the golden score.

    Each golden query is retrieved ONCE (and its chunk vectors read once): every setting re-ranks those
    same candidate lists (`Reuse`), as FusionTuningService does for search."""
    overlay = retrieval.get_overlay(tenant_id, role_id)
    if retrieval.brings_own_vectors(tenant_id):  # not an outage: retrying could never help
        raise ConflictError(
            "fusion tuning weighs keyword against embedded-text rankings; this tenant's vectors come from its"
            " callers, so no task text is embedded and there is nothing to weigh (POST /overlays/{role_id}/eval"
            " reports what keyword retrieval scores)"
        )
    if not overlay.eval_profile.golden_set:
        raise InvalidInputError("the overlay has no golden set", {"eval_profile.golden_set": "is empty"})
    policy = overlay.retrieval_policy
    current = {"fusion": policy.fusion, "semantic_weight": policy.semantic_weight}
    reuse = Reuse()
    current_score = _golden_ndcg(retrieval, tenant_id, overlay, reuse)
    grid = [("rrf", policy.semantic_weight)] + [("convex", a) for a in TUNING_ALPHAS]
    scored = [(_golden_ndcg(retrieval, tenant_id, _with_fusion(overlay, f, a), reuse), f, a) for f, a in grid]
    best_score, best_fusion, best_alpha = max(
        scored, key=lambda s: (s[0], s[1] == policy.fusion, -abs(s[2] - 0.5))
    )
    best = {"fusion": best_fusion, "semantic_weight": best_alpha}
    changed = best_score > current_score and best != current
    if changed:
        tuned = _with_fusion(overlay, best_fusion, best_alpha)
        retrieval.put_overlay(tenant_id, role_id, tuned.model_dump(mode="json"))
    return OverlayTuning(
        role_id, current, current_score, best, best_score, best if changed else current, changed
    )

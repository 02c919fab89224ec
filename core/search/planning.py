"""How a search is planned (docs/architecture.md, Read path): the search settings and their measured
defaults (α, depths, the vector floor), which retrievers a strategy runs and with what α, and how deep each
retriever reads. Pure values and functions, shared by the search use case and the fusion tuner."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.errors import InvalidInputError
from core.memory.relevance import RELEVANCE_BLEND
from core.models import Candidate
from core.search.cache_key import SEARCH_CACHE_TTL_SECONDS
from core.search.fusion import RRF_K, FusionMethod
from core.search.pseudo_relevance import FEEDBACK_DOCS, FEEDBACK_MODE, FEEDBACK_WEIGHT
from core.search.query import MAX_TERMS, QueryShape

MAX_QUERY_CHARS = 1000  # a query, not a document; longer is refused with 400 (configurable)
CANDIDATE_DEPTH_FACTOR = 2  # retrieve at least 2 × limit from each retriever (docs/architecture.md)
# Fusion needs overlap between the two lists: with fewer than 100 candidates per retriever, documents
# ranked well by both but deep in one list are missed (bench/fusion_study.py: SciFact train nDCG@10
# 0.7352 at depth 40 vs 0.7378 at 100, α = 0.7). Single-retriever strategies only need 2 × limit.
MIN_FUSION_DEPTH = 100
MIN_SINGLE_DEPTH = 40
# The default α (vector share) of convex fusion. The specification's 0.6 (docs/conformance.md#convex-fusion)
# is what the `convex` evaluation strategy keeps; without feedback 0.7 maximised nDCG@10 on SciFact's train
# split and Cranfield (bench/results/fusion_study_*.json). With vector feedback (core.search.pseudo_relevance)
# the vector leg is stronger and 0.8 is best on both (bench/prf_study.py); tuned on neither test split.
DEFAULT_ALPHA = 0.8
ALPHA_WITHOUT_FEEDBACK = 0.7  # the default with `feedback_docs = 0`


def default_alpha(feedback_docs: int) -> float:
    """The convex α a deployment gets unless it sets one: the measured best with or without feedback."""
    return DEFAULT_ALPHA if feedback_docs > 0 else ALPHA_WITHOUT_FEEDBACK


# Question-like queries could lean further to the vector side, but measurement says no: on SciFact train
# and Cranfield any lean ≥ 0.05 lowered nDCG@10 (bench/fusion_study.py). Kept as a named 0.
SEMANTIC_LEAN = 0.0
LEXICAL_LEAN = 0.45  # identifier-like queries move α this much toward BM25 (to 0.35, as before feedback)
# Vector hits below this cosine are noise for all-MiniLM-L6-v2 (unrelated sentences score ~-0.1..0.15);
# without a floor every query "matches" the whole tenant. Measured on SciFact/Cranfield in bench/.
MIN_VECTOR_SIMILARITY = 0.2


@dataclass(frozen=True, slots=True)
class SearchSettings:
    """Tunable search behaviour; defaults are the specifications' constants (docs/conformance.md) or measured
    (`bench/`)."""

    fusion: FusionMethod = FusionMethod.CONVEX
    alpha: float = DEFAULT_ALPHA
    rrf_k: int = RRF_K
    max_query_chars: int = MAX_QUERY_CHARS
    max_terms: int = MAX_TERMS  # the search box's cap (docs/conformance.md#max-terms); eval lifts it
    max_limit: int = 100
    cache_ttl_seconds: float = SEARCH_CACHE_TTL_SECONDS
    min_depth: int = MIN_FUSION_DEPTH
    min_vector_similarity: float = MIN_VECTOR_SIMILARITY
    # Vector pseudo-relevance feedback on fused (hybrid) searches: the top `feedback_docs` fused results'
    # stored vectors move the query vector (weight `feedback_weight`) and the vector leg runs again.
    feedback_docs: int = FEEDBACK_DOCS
    feedback_weight: float = FEEDBACK_WEIGHT
    # "search" (a second k-NN with the moved query) or "rescore" (the candidates in hand scored with it,
    # the vector leg then retrieved `feedback_pool` × deeper): core/search/pseudo_relevance.py
    feedback_mode: str = FEEDBACK_MODE
    feedback_pool: int = 1
    # The weight of a memory's decayed relevance in its score (core/memory/relevance.py RELEVANCE_BLEND:
    # 0.3, docs/conformance.md#memory-blend); 0 ranks memories by the fused score alone. Other types never blend.
    memory_relevance_blend: float = RELEVANCE_BLEND


@dataclass(frozen=True, slots=True)
class SearchPlan:
    """Which retrievers run and how their lists are fused."""

    strategy: str
    lexical: bool
    vector: bool
    alpha: float
    # The query vector is the caller's (`query_vector`): its model's cosines are not the deployment
    # model's, so MIN_VECTOR_SIMILARITY (measured for all-MiniLM-L6-v2) does not apply; `min_score` does.
    own_vector: bool = False


def plan_strategy(requested: str, shape: QueryShape, settings: SearchSettings) -> SearchPlan:
    """The retrievers and α for a requested strategy; `auto` leans by the query's shape."""
    base = settings.alpha if settings.fusion is FusionMethod.CONVEX else 0.5
    if requested == "keyword":
        return SearchPlan("keyword", True, False, 0.0)
    if requested == "semantic":
        return SearchPlan("semantic", False, True, 1.0)
    if requested == "hybrid" or shape is QueryShape.PLAIN:
        return SearchPlan("hybrid", True, True, base)
    if shape is QueryShape.QUESTION:
        if SEMANTIC_LEAN <= 0:
            return SearchPlan("hybrid", True, True, base)
        return SearchPlan("hybrid:semantic-leaning", True, True, min(1.0, base + SEMANTIC_LEAN))
    return SearchPlan("hybrid:lexical-leaning", True, True, max(0.0, base - LEXICAL_LEAN))


def retrieval_depth(limit: int, plan: SearchPlan, settings: SearchSettings) -> int:
    """Candidates per retriever: 2 × limit, at least the fusion depth when both lists are fused."""
    floor = settings.min_depth if plan.lexical and plan.vector else MIN_SINGLE_DEPTH
    return max(limit * CANDIDATE_DEPTH_FACTOR, floor)


def strong_vector_hits(
    candidates: Sequence[Candidate], settings: SearchSettings, own_vector: bool = False
) -> list[Candidate]:
    """Vector candidates at or above the similarity floor (weaker ones are noise, see the constant); all of
    them for a caller's own query vector (SearchPlan.own_vector)."""
    return [c for c in candidates if own_vector or c.score >= settings.min_vector_similarity]


def search_plan(
    requested: str,
    shape: QueryShape,
    settings: SearchSettings,
    query: str,
    own_vector: bool,
    own_vectors_tenant: bool,
) -> SearchPlan:
    """One search's plan: the requested strategy's (`plan_strategy`) once the query vector's origin is
    known (`vector_plan`)."""
    return vector_plan(
        plan_strategy(requested, shape, settings), query, own_vector, own_vectors_tenant, requested
    )


def vector_plan(
    plan: SearchPlan, query: str, own_vector: bool, own_vectors_tenant: bool, requested: str
) -> SearchPlan:
    """The plan once the query vector's origin is known (docs/api.md, "Your own vectors"): a caller's
    vector with no query text is a semantic search; a tenant bringing its own vectors with no query vector
    searches by keywords (a semantic search then needs `query_vector`: 400)."""
    if own_vector and plan.vector:
        if not query.strip():
            return SearchPlan("semantic", False, True, 1.0, own_vector=True)
        return SearchPlan(plan.strategy, plan.lexical, plan.vector, plan.alpha, own_vector=True)
    if own_vectors_tenant and plan.vector:
        if requested == "semantic":
            raise InvalidInputError(
                "a semantic search of this tenant needs a query vector",
                {"query_vector": "is required: this tenant's vectors come from its callers"},
            )
        return SearchPlan("keyword", True, False, 0.0)
    return plan

"""Fusion of the lexical and vector candidate lists into one ranking (docs/architecture.md, Read path).

Both formulas keep lexical-only and vector-only hits. Each list is first put in its canonical order, best
score first and equal scores by entity key, so a rank never depends on the order in which an index returned
equal scores (its insertion or segment order, which a re-ingest or a warm embedding cache changes). Fused
ties then break deterministically: score, then the best rank in either list, then the entity key.
"""

from __future__ import annotations

import enum
import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from core.models import Candidate, EntityKey

RRF_K = 60  # docs/conformance.md#rrf-k: score = Σ 1/(k + rank + 1), rank from 0
# The plain convex formula's α (60% vector, 40% max-normalised BM25; docs/conformance.md#convex-fusion),
# reported as the `convex` baseline by `quarry eval`. Not the deployment's default: that is DEFAULT_ALPHA in
# core/search/search_service.py (0.8, measured; docs/architecture.md "Fusion and its constants").
PLAIN_CONVEX_ALPHA = 0.6
NORMALISE_EPSILON = 1e-10  # floor under the max divisor (docs/conformance.md#rrf-normalisation)


class FusionMethod(enum.Enum):
    """How two ranked lists become one."""

    RRF = "rrf"
    CONVEX = "convex"


class Fused(NamedTuple):
    """One fused result: the candidate, its fused score, and each retriever's rank and raw score (a named
    tuple: a fusion makes one per candidate of either list, and a tuple is built in C)."""

    candidate: Candidate
    score: float
    lexical_rank: int | None
    lexical_score: float | None
    vector_rank: int | None
    vector_score: float | None


def normalise_max(scores: Mapping[EntityKey, float]) -> dict[EntityKey, float]:
    """Scale scores to [0, 1] by dividing by the maximum (epsilon-floored); all-zero stays zero."""
    if not scores:
        return {}
    top = max(scores.values())
    if top <= 0:
        return {k: 0.0 for k in scores}
    return {k: v / max(top, NORMALISE_EPSILON) for k, v in scores.items()}


def _leg_order(cand: Candidate) -> tuple[float, EntityKey]:
    return (-cand.score, cand.key)


def in_leg_order(cands: Sequence[Candidate]) -> list[Candidate]:
    """A retriever's list in its canonical order: best score first, equal scores by entity key."""
    return sorted(cands, key=_leg_order)


Index = dict[EntityKey, tuple[int, Candidate]]
NO_RANK = 1 << 30  # the rank of a list an entity is missing from, for the tie rule


def _index(cands: Sequence[Candidate]) -> Index:
    """Each entity's first position in the list's canonical order and its candidate there."""
    out: Index = {}
    for rank, cand in enumerate(in_leg_order(cands)):
        out.setdefault(cand.key, (rank, cand))
    return out


def _assemble(
    lex: Index, vec: Index, scores: Mapping[EntityKey, float], top: int | None = None
) -> list[Fused]:
    """The fused results, best first: score, then the best rank in either list, then the entity key; with
    `top`, the first `top` of them only (a partial selection: the same results as the whole sort's head)."""
    ranked: list[tuple[float, int, EntityKey]] = []
    for key, score in scores.items():
        lr = lex.get(key)
        vr = vec.get(key)
        best = min(NO_RANK if lr is None else lr[0], NO_RANK if vr is None else vr[0])
        ranked.append((-score, best, key))
    if top is None:
        ranked.sort()  # keys are unique: a tuple's third element settles every tie
    else:
        ranked = heapq.nsmallest(max(0, top), ranked)
    return [_fused(lex.get(key), vec.get(key), -neg) for neg, _, key in ranked]


def _fused(lr: tuple[int, Candidate] | None, vr: tuple[int, Candidate] | None, score: float) -> Fused:
    """One entity's fused result from its (rank, candidate) in each list."""
    # Prefer the lexical candidate's chunk: its text holds the matched terms for the snippet.
    cand = lr[1] if lr else vr[1]  # type: ignore[index]
    return Fused(
        cand,
        score,
        lr[0] if lr else None,
        lr[1].score if lr else None,
        vr[0] if vr else None,
        vr[1].score if vr else None,
    )


def fuse_rrf(
    lexical: Sequence[Candidate],
    vector: Sequence[Candidate],
    k: int = RRF_K,
    alpha: float = 0.5,
    top: int | None = None,
) -> list[Fused]:
    """Weighted reciprocal rank fusion: Σ w/(k + rank + 1), w_vector = 2α, w_lexical = 2(1−α).

    At α = 0.5 this is plain RRF (Cormack et al. 2009; k = 60, docs/conformance.md#rrf-k).
    """
    lex, vec = _index(lexical), _index(vector)
    scores: dict[EntityKey, float] = {}
    for weight, index in ((2 * (1 - alpha), lex), (2 * alpha, vec)):
        for rank, key in enumerate(index):
            scores[key] = scores.get(key, 0.0) + weight / (k + rank + 1)
    return _assemble(lex, vec, scores, top)


def fuse_convex(
    lexical: Sequence[Candidate],
    vector: Sequence[Candidate],
    alpha: float = PLAIN_CONVEX_ALPHA,
    top: int | None = None,
) -> list[Fused]:
    """Convex combination α·cosine + (1−α)·bm25/max(bm25) over the union
    (docs/conformance.md#convex-fusion).

    A hit missing from one list contributes 0 from that list (a BM25-only or vector-only result).
    """
    lex, vec = _index(lexical), _index(vector)
    bm25 = normalise_max({key: c.score for key, (_, c) in lex.items()})
    cosine = {key: max(0.0, c.score) for key, (_, c) in vec.items()}
    keys = set(bm25) | set(cosine)
    scores = {key: alpha * cosine.get(key, 0.0) + (1 - alpha) * bm25.get(key, 0.0) for key in keys}
    return _assemble(lex, vec, scores, top)


def _fuse_one(
    method: FusionMethod, cands: Sequence[Candidate], lexical: bool, alpha: float, rrf_k: int
) -> list[Fused]:
    """`fuse` when only one list has candidates (a keyword or semantic search): the same scores, ranks and
    order as the two-list formulas (tests/unit/test_fusion.py), with one pass instead of a dozen dicts."""
    firsts: list[tuple[int, Candidate]] = []
    seen: set[EntityKey] = set()
    for rank, cand in enumerate(in_leg_order(cands)):
        if cand.key not in seen:
            seen.add(cand.key)
            firsts.append((rank, cand))
    if method is FusionMethod.RRF:
        weight = 2 * (1 - alpha) if lexical else 2 * alpha
        scores = [0.0 + weight / (rrf_k + position + 1) for position in range(len(firsts))]
    elif lexical:
        top = max((c.score for _, c in firsts), default=0.0)
        scale = (lambda v: v / max(top, NORMALISE_EPSILON)) if top > 0 else (lambda v: 0.0)
        scores = [alpha * 0.0 + (1 - alpha) * scale(c.score) for _, c in firsts]
    else:
        scores = [alpha * max(0.0, c.score) + (1 - alpha) * 0.0 for _, c in firsts]
    ranked = sorted(zip(scores, firsts, strict=True), key=lambda p: (-p[0], p[1][0], p[1][1].key))
    if lexical:
        return [Fused(c, score, rank, c.score, None, None) for score, (rank, c) in ranked]
    return [Fused(c, score, None, None, rank, c.score) for score, (rank, c) in ranked]


def fuse(
    method: FusionMethod,
    lexical: Sequence[Candidate],
    vector: Sequence[Candidate],
    alpha: float,
    rrf_k: int = RRF_K,
    top: int | None = None,
) -> list[Fused]:
    """Dispatch to the fusion formula `method` names; with `top`, the ranking's first `top` results only
    (what the whole ranking starts with: a search that reads only its head need not build the rest)."""
    if not lexical or not vector:
        fused = _fuse_one(method, lexical or vector, bool(lexical), alpha, rrf_k)
        return fused if top is None else fused[: max(0, top)]
    if method is FusionMethod.RRF:
        return fuse_rrf(lexical, vector, k=rrf_k, alpha=alpha, top=top)
    return fuse_convex(lexical, vector, alpha=alpha, top=top)


@dataclass(frozen=True, slots=True)
class LegCounts:
    """What each leg of one search contributed: the per-search log line
    (docs/conformance.md#search-log-line: vector, BM25, BM25-only and fused results, and α)."""

    vector: int
    bm25: int
    bm25_only: int
    hybrid: int
    alpha: float

    def log_fields(self) -> dict[str, float]:
        """The counts as log fields."""
        return {
            "vector_results": self.vector,
            "bm25_results": self.bm25,
            "bm25_only_results": self.bm25_only,
            "hybrid_results": self.hybrid,
            "alpha": self.alpha,
        }


def count_legs(fused: Sequence[Fused], returned: int, alpha: float) -> LegCounts:
    """Hits per leg among the fused candidates, and how many the answer returned."""
    vector = sum(1 for f in fused if f.vector_rank is not None)
    bm25 = sum(1 for f in fused if f.lexical_rank is not None)
    bm25_only = sum(1 for f in fused if f.lexical_rank is not None and f.vector_rank is None)
    return LegCounts(vector, bm25, bm25_only, returned, round(alpha, 6))

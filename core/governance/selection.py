"""Diversity-aware selection: Maximal Marginal Relevance over the kept candidates (Carbonell & Goldstein 1998).

    mmr(d) = λ·final(d) − (1 − λ)·max_{s ∈ selected} sim(d, s)

λ is retrieval_policy.diversity. Similarity is the cosine of chunk embeddings when the retrieval used
vectors, else the Jaccard similarity of the chunks' term stems (lexical-only needs no embedder). A
candidate at least NEAR_DUPLICATE similar to one already chosen is rejected as a near duplicate whatever
λ is; whatever MMR leaves past max_chunks is rejected as over the limit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.governance.bundle import RejectReason
from core.governance.screening import Rejection, Scored
from core.governance.terms import jaccard
from core.models import Vector

# Near-duplicate bars: the same passage re-published (mirrors, copies with a changed header) scores above
# these; distinct passages on one topic score below. Cosine 0.95 is the usual paraphrase-mining cut for
# all-MiniLM-L6-v2 (sentence-transformers docs); Jaccard 0.8 is the classic near-duplicate shingle bar
# (Broder 1997).
NEAR_DUPLICATE_COSINE = 0.95
NEAR_DUPLICATE_JACCARD = 0.8

if TYPE_CHECKING:  # numpy loads with the first similarity matrix, not when a handler imports this
    import numpy as np
    import numpy.typing as npt

    Matrix = npt.NDArray[np.float64]
else:
    Matrix = Any


@dataclass(frozen=True, slots=True)
class Similarity:
    """Pairwise similarity of the pool and the near-duplicate bar that goes with its measure."""

    matrix: Matrix
    measure: str
    near_duplicate: float


def cosine_similarity(vectors: Sequence[Vector]) -> Similarity:
    """Pairwise cosine of the pool's embeddings (rows are L2-normalised again, to be safe)."""
    import numpy as np

    if not vectors:
        return Similarity(np.zeros((0, 0)), "cosine", NEAR_DUPLICATE_COSINE)
    m = np.asarray(np.stack(vectors), dtype=np.float64)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    m = m / np.where(norms > 0, norms, 1.0)
    return Similarity(m @ m.T, "cosine", NEAR_DUPLICATE_COSINE)


def jaccard_similarity(pool: Sequence[Scored]) -> Similarity:
    """Pairwise Jaccard similarity of the pool's term stems."""
    import numpy as np

    n = len(pool)
    m = np.eye(n)
    for i in range(n):
        for j in range(i + 1, n):
            m[i, j] = m[j, i] = jaccard(pool[i].stems, pool[j].stems)
    return Similarity(m, "jaccard", NEAR_DUPLICATE_JACCARD)


@dataclass(frozen=True, slots=True)
class Selection:
    """The chosen candidates with their MMR scores, in order, and the rest with reasons."""

    chosen: tuple[tuple[Scored, float], ...]
    rejected: tuple[Rejection, ...]


def _closest(i: int, chosen: list[int], sim: Matrix) -> tuple[float, int | None]:
    if not chosen:
        return 0.0, None
    j = max(chosen, key=lambda c: sim[i, c])
    return float(sim[i, j]), j


def select_mmr(pool: Sequence[Scored], sim: Similarity, k: int, diversity: float) -> Selection:
    """Pick up to k of `pool` (best final first) by MMR; reject near duplicates and the overflow."""
    chosen: list[int] = []
    mmr: dict[int, float] = {}
    rejected: list[Rejection] = []
    remaining = list(range(len(pool)))
    while remaining and len(chosen) < k:
        scores = {
            i: diversity * pool[i].final - (1 - diversity) * _closest(i, chosen, sim.matrix)[0]
            for i in remaining
        }
        best = max(remaining, key=lambda i: (scores[i], -i))
        remaining.remove(best)
        closeness, twin = _closest(best, chosen, sim.matrix)
        if twin is not None and closeness >= sim.near_duplicate:
            rejected.append(_duplicate(pool[best], pool[twin], closeness, sim.measure))
            continue
        chosen.append(best)
        mmr[best] = scores[best]
    for i in remaining:
        closeness, twin = _closest(i, chosen, sim.matrix)
        if twin is not None and closeness >= sim.near_duplicate:
            rejected.append(_duplicate(pool[i], pool[twin], closeness, sim.measure))
        else:
            detail = f"ranked below the max_chunks={k} cut-off after diversity re-ranking"
            rejected.append(Rejection(pool[i], RejectReason.OVER_LIMIT, detail))
    return Selection(tuple((pool[i], mmr[i]) for i in chosen), tuple(rejected))


def _duplicate(s: Scored, twin: Scored, closeness: float, measure: str) -> Rejection:
    detail = f"near duplicate of selected {twin.chunk_id} ({measure} {closeness:.2f})"
    return Rejection(s, RejectReason.NEAR_DUPLICATE, detail)

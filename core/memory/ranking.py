"""A search's memories ranked as docs/conformance.md#memory-blend describes: the fused score blended with the memory's decayed
relevance (core/memory/relevance.py `blended`), memories under the request's relevance floor dropped.

The fused score enters the blend divided by the best fused score of the list, so both sides of
`0.7 × hybrid + 0.3 × decayed` lie in 0..1 whatever the fusion (RRF's scores are near 1/60, against which the
relevance alone would decide). The search service blends only a search of memories alone (weight 0
otherwise: core/search/search_service.py); results of other types always keep their fused score, so a
search that is not of memories alone ranks exactly as before."""

from __future__ import annotations

from collections.abc import Callable

from core.memory.metadata import MEMORY_TYPE
from core.memory.relevance import blended, relevance_at
from core.models import Candidate
from core.search.fusion import Fused


def rank_memories(
    fused: list[Fused],
    now: float,
    weight: float,
    floor: float | None,
    served: Callable[[Candidate], bool] = lambda _: True,
) -> list[Fused]:
    """`fused` with each memory's score blended (`weight` of relevance, the fused score normalised by the
    list's best), those under `floor` and those
    `served` refuses (core/memory/integrity.py) dropped, best first (a stable sort: ties keep the fused
    order); unchanged when it holds no memory."""
    if not any(f.candidate.key.entity_type == MEMORY_TYPE for f in fused):
        return fused
    top = max((f.score for f in fused), default=0.0)
    scale = 1.0 / top if top > 0 else 0.0
    out = []
    for f in fused:
        c = f.candidate
        if c.key.entity_type != MEMORY_TYPE:
            out.append(f)
            continue
        if not served(c):
            continue
        if weight <= 0 and floor is None:  # the relevance would change nothing: not computed
            out.append(f)
            continue
        relevance = relevance_at(c.metadata, c.created_at, now)
        if floor is not None and relevance < floor:
            continue
        out.append(f._replace(score=blended(f.score * scale, relevance, weight)) if weight > 0 else f)
    return sorted(out, key=lambda f: -f.score) if weight > 0 else out

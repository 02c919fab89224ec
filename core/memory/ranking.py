"""A search's memories ranked as seed thefold ranks them: the fused score blended with the memory's decayed
relevance (core/memory/relevance.py `blended`), memories under the request's relevance floor dropped.
Results of other types keep their fused score, so a search without memories ranks exactly as before."""

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
    """`fused` with each memory's score blended (`weight` of relevance), those under `floor` and those
    `served` refuses (core/memory/integrity.py) dropped, best first (a stable sort: ties keep the fused
    order); unchanged when it holds no memory."""
    if not any(f.candidate.key.entity_type == MEMORY_TYPE for f in fused):
        return fused
    out = []
    for f in fused:
        c = f.candidate
        if c.key.entity_type != MEMORY_TYPE:
            out.append(f)
            continue
        if not served(c):
            continue
        relevance = relevance_at(c.metadata, c.created_at, now)
        if floor is not None and relevance < floor:
            continue
        out.append(f._replace(score=blended(f.score, relevance, weight)) if weight > 0 else f)
    return sorted(out, key=lambda f: -f.score) if weight > 0 else out

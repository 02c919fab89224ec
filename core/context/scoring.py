"""One scale for every source (docs/architecture.md, Context assembly;
docs/conformance.md#context-scoring): per-source RRF of its lexical and vector lists, max-normalised to
[0, 1], then
`score = normalised × weight(caller, source) × recency boost × (0.5 if from another namespace)`,
and deduplication by entity and by normalised-content hash."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from core.memory.integrity import TRUST_LEVEL, Integrity, trust_rank
from core.memory.metadata import MEMORY_TYPE
from core.memory.relevance import blended, relevance_at
from core.models import Candidate, CandidateLists, EntityKey
from core.search.fusion import RRF_K, fuse_rrf, normalise_max
from core.timestamps import parse_timestamp, recency_boost

CROSS_NAMESPACE_SCORE_DISCOUNT = 0.5  # docs/conformance.md#context-scoring: other namespaces' hits count half
# Floor of the recency boost: 1/(1+ln(1+age_days)) reaches 0.1 after ~22 years, so it only matters for
# undated or absurdly old items, which still rank on relevance instead of vanishing. (Our choice; the
# specification's floor defaults to 0: docs/conformance.md#recency-decay.)
RECENCY_FLOOR = 0.1
_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class ContextItem:
    """A candidate for the context block: where it came from, its text and its scores."""

    id: str
    source: str
    title: str
    text: str
    normalised: float
    score: float
    created_at: str = ""
    namespace: str | None = None
    cross_namespace: bool = False

    @property
    def content_hash(self) -> str:
        """sha256 of the text lower-cased with punctuation and whitespace runs collapsed."""
        return content_hash(self.text)


def content_hash(text: str) -> str:
    """The dedup key of a text: case, punctuation and spacing do not make two texts different."""
    normalised = " ".join(_NON_WORD.sub(" ", text.lower()).split())
    return hashlib.sha256(normalised.encode("utf-8")).hexdigest()


def recency(created_at: str, now: float, floor: float = RECENCY_FLOOR) -> float:
    """The recency boost of an ISO timestamp; an unparseable or missing date gets the floor."""
    stamp = parse_timestamp(created_at) if created_at else None
    return floor if stamp is None else recency_boost(stamp, now, floor)


def score_source(
    source: str,
    retrieval: CandidateLists,
    weight: float,
    now: float,
    cross_namespace: bool = False,
    min_vector_similarity: float = 0.0,
    recency_floor: float = RECENCY_FLOOR,
    rrf_k: int = RRF_K,
    min_relevance: float | None = None,
    memory_blend: float = 0.0,
    min_trust: str | None = None,
    integrity: Integrity | None = None,
    tenant_id: str = "",
) -> list[ContextItem]:
    """One source's lexical and vector lists → scored items, best first.

    Plain RRF (k = 60, docs/conformance.md#rrf-k), max-divided to [0, 1] with the 1e-10 floor
    (docs/conformance.md#rrf-normalisation), then weighted, recency-boosted and, for another namespace's
    hits, halved.
    Vector hits under `min_vector_similarity` are dropped first: k-NN returns something for any query.
    A memory's normalised score is blended with its decayed relevance (`memory_blend`, 0.3:
    docs/conformance.md#memory-blend); memories whose relevance is under `min_relevance` (core/memory/relevance.py), whose trust is
    under `min_trust` or whose content fails its integrity check (core/memory/integrity.py) are dropped.
    """
    kept = _memory_kept(min_trust, integrity, tenant_id)
    retrieval = CandidateLists(
        tuple(c for c in retrieval.lexical if kept(c)), tuple(c for c in retrieval.vector if kept(c))
    )
    vector = [c for c in retrieval.vector if c.score >= min_vector_similarity]
    fused = fuse_rrf(retrieval.lexical, vector, k=rrf_k)
    normalised = normalise_max({f.candidate.key: f.score for f in fused})
    discount = CROSS_NAMESPACE_SCORE_DISCOUNT if cross_namespace else 1.0
    items = []
    for f in fused:
        norm = normalised[f.candidate.key]
        if f.candidate.key.entity_type == MEMORY_TYPE:
            relevance = relevance_at(f.candidate.metadata, f.candidate.created_at, now)
            if min_relevance is not None and relevance < min_relevance:
                continue
            norm = blended(norm, relevance, memory_blend)
        boost = recency(f.candidate.created_at, now, recency_floor)
        items.append(_item(f.candidate, source, norm, norm * weight * boost * discount, cross_namespace))
    return items


def _memory_kept(
    min_trust: str | None, integrity: Integrity | None, tenant_id: str
) -> Callable[[Candidate], bool]:
    """Whether a candidate may be served: anything but a memory under `min_trust` or tampered with."""
    floor = None if min_trust is None else trust_rank(min_trust)

    decided: dict[EntityKey, bool] = {}  # a candidate in both lists is checked (and hashed) once

    def kept(c: Candidate) -> bool:
        if c.key.entity_type != MEMORY_TYPE:
            return True
        if c.key not in decided:
            trusted = floor is None or trust_rank(c.metadata.get(TRUST_LEVEL)) >= floor
            intact = trusted and (
                integrity is None or integrity.served(tenant_id, c.key, c.metadata, c.title)
            )
            decided[c.key] = intact
        return decided[c.key]

    return kept


def _item(c: Candidate, source: str, normalised: float, score: float, cross: bool) -> ContextItem:
    return ContextItem(
        id=str(c.key),
        source=source,
        title=c.title,
        text=c.text,
        normalised=normalised,
        score=score,
        created_at=c.created_at,
        namespace=c.namespace,
        cross_namespace=cross,
    )


def rank(items: Iterable[ContextItem]) -> list[ContextItem]:
    """Best first; ties break by source then id, so equal inputs always pack the same way."""
    return sorted(items, key=lambda i: (-i.score, i.source, i.id))


def deduplicate(items: Sequence[ContextItem]) -> list[ContextItem]:
    """Keep the best-scoring copy of each entity and of each distinct content; drop non-positive scores
    (what repeats an explicit link is the packer's to leave out: only a placed link takes the place)."""
    seen_ids: set[str] = set()
    seen_hashes: set[str] = set()
    kept = []
    for item in rank(items):
        digest = item.content_hash
        if item.score <= 0 or item.id in seen_ids or digest in seen_hashes:
            continue
        seen_ids.add(item.id)
        seen_hashes.add(digest)
        kept.append(item)
    return kept

"""The governed-retrieval use case (docs/architecture.md, Governed retrieval): overlay → query → retrieve →
screen → MMR → bundle, and the overlays' CRUD through the OverlayStore.

Retrieval covers the tenant's `document` entities (the corpus: POST /corpus, or PUT /entities/document/…).
`lexical_only` never touches the embedder, so it works with none configured; otherwise an embedder outage
degrades to lexical retrieval and the bundle says so (`query.mode = lexical_degraded`).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from core.errors import NotFoundError, PayloadTooLargeError, UnavailableError
from core.governance.bundle import Mode, RejectReason, RetrievalBundle
from core.governance.bundle_assembly import AssemblyInput, assemble_bundle
from core.governance.overlay import RetrievalPolicy, RoleOverlay, SourcePolicy
from core.governance.query_builder import BuiltQuery, build_query
from core.governance.requests import RetrieveRequest
from core.governance.schema_validation import parse_overlay
from core.governance.screening import Rejection, Scored, screen
from core.governance.selection import (
    Selection,
    Similarity,
    cosine_similarity,
    jaccard_similarity,
    select_mmr,
)
from core.models import CandidateLists, EntityKey, Filters, Vector
from core.ports import Clock, Embedder, OverlayStore, Retriever

DOCUMENT_TYPE = (
    "document"  # the corpus lives in the built-in chunked `document` type (core/indexing/entity_types.py)
)
MIN_DEPTH = 40  # candidates per retriever, at least: as core.search.search_service.MIN_CANDIDATE_DEPTH
DEPTH_FACTOR = 4  # × max_chunks: room for forbidden, below-score and duplicate candidates to drop out
MMR_POOL_FACTOR = 3  # MMR looks at the best 3 × max_chunks kept candidates (the rest cannot win)
MS = 1000.0
# A stored overlay is one DynamoDB item, and an item holds at most 400 KB (Amazon DynamoDB Developer Guide,
# "Service, account, and table quotas"); the rest is headroom for its keys and attribute names. The same
# bound holds on every backend, so an overlay accepted locally is accepted in AWS.
MAX_OVERLAY_BYTES = 350_000
# Query vectors (a role's mission, a context summary) a warm process remembers per tenant (384-dim
# float32: ~3 MiB). Chunk vectors for MMR come from the index (Retriever.chunk_vectors), never embedded
# again; only a chunk stored without one (indexed while the embedder was down) is embedded here.
MEMO_VECTORS = 2048

Strategy = Literal["keyword", "semantic", "rrf", "convex"]


@dataclass(slots=True)
class Reuse:
    """What repeated retrievals of the same queries may share within one job (overlay tuning): each
    query's candidate lists and the chunk vectors already read, so re-ranking them under another fusion
    setting costs no index round trip."""

    retrievals: dict[tuple[object, ...], CandidateLists] = field(default_factory=dict)
    vectors: dict[tuple[EntityKey, int], Vector] = field(default_factory=dict)


class GovernedRetrievalService:
    """Governed retrieval for one tenant at a time; overlays are stored per tenant and role."""

    def __init__(
        self, index: Retriever, state: OverlayStore, clock: Clock, embedder: Embedder | None = None
    ) -> None:
        self._index = index
        self._state = state
        self._clock = clock
        self._embedder = embedder
        self._memo = _VectorMemo(MEMO_VECTORS)

    # -- overlays ------------------------------------------------------------------------------------

    def put_overlay(self, tenant_id: str, role_id: str, body: object) -> RoleOverlay:
        """Validate and store an overlay (400 naming each bad field); the path's role_id wins."""
        overlay = parse_overlay(body, role_id)
        stored = overlay.model_dump(mode="json")
        if len(json.dumps(stored, separators=(",", ":"))) > MAX_OVERLAY_BYTES:
            raise PayloadTooLargeError(
                f"an overlay may hold at most {MAX_OVERLAY_BYTES} bytes of JSON", MAX_OVERLAY_BYTES
            )
        self._state.put_overlay(tenant_id, role_id, stored)
        return overlay

    def find_overlay(self, tenant_id: str, role_id: str) -> RoleOverlay | None:
        """The tenant's stored overlay for the role, or None."""
        stored = self._state.get_overlay(tenant_id, role_id)
        return None if stored is None else parse_overlay(stored, role_id)

    def get_overlay(self, tenant_id: str, role_id: str) -> RoleOverlay:
        """The tenant's stored overlay (404 when this tenant has none, whoever else does)."""
        overlay = self.find_overlay(tenant_id, role_id)
        if overlay is None:
            raise NotFoundError("overlay", role_id)
        return overlay

    def brings_own_vectors(self, tenant_id: str) -> bool:
        """Whether the tenant's vectors come from its callers (docs/api.md, "Your own vectors"): its task
        text is never embedded, so only keyword retrieval can run."""
        return self._embedder is not None and self._embedder.brings_own(tenant_id)

    def delete_overlay(self, tenant_id: str, role_id: str) -> None:
        """Remove the tenant's overlay (404 when there is none)."""
        if not self._state.delete_overlay(tenant_id, role_id):
            raise NotFoundError("overlay", role_id)

    # -- retrieval ------------------------------------------------------------------------------------

    def retrieve(
        self,
        tenant_id: str,
        request: RetrieveRequest,
        strategy: Strategy | None = None,
        reuse: Reuse | None = None,
    ) -> RetrievalBundle:
        """Run the governed pipeline; `strategy` overrides the policy's retrievers/fusion (golden sets);
        `reuse` shares retrievals of the same query across calls (one tuning job)."""
        clock = _Stopwatch(self._clock.monotonic)
        now = self._clock.now()
        overlay = request.overlay
        if overlay is None and not request.shared_corpus_only:
            overlay = self.find_overlay(tenant_id, request.role_id)
        policy, sources = _policies(overlay, strategy)
        built = build_query(request.task_text, overlay, request.context_summary)
        clock.lap("build_query")
        wanted: Mode = "lexical_only" if request.lexical_only or strategy == "keyword" else "hybrid"
        if strategy == "semantic" and not request.lexical_only:
            wanted = "semantic_only"
        depth = max(MIN_DEPTH, DEPTH_FACTOR * policy.max_chunks)
        # embedding and retrieval are timed together: a separate embed lap would tell how warm the memo was
        got, mode, degraded = self._candidates(tenant_id, built, wanted, depth, reuse)
        clock.lap("retrieve")
        screened = screen(got.lexical, got.vector, built, policy, sources, mode, now)
        clock.lap("screen")
        selection, sim_degraded = self._select(tenant_id, screened.kept, policy, mode, reuse or Reuse())
        clock.lap("select")
        clock.total()
        return assemble_bundle(
            AssemblyInput(
                role_id=request.role_id,
                overlay_applied=overlay is not None,
                built=built,
                mode=mode,
                policy=policy,
                chosen=selection.chosen,
                rejected=[*screened.rejected, *selection.rejected],
                retrieved={"lexical_hits": len(got.lexical), "vector_hits": len(got.vector)},
                timings_ms=clock.laps,
                depth=depth,
                embedder=(
                    self._embedder.for_tenant(tenant_id).model_id
                    if self._embedder and mode not in _LEXICAL
                    else None
                ),
                degraded_reason=degraded or sim_degraded,
            )
        )

    def _candidates(
        self, tenant_id: str, built: BuiltQuery, wanted: Mode, depth: int, reuse: Reuse | None
    ) -> tuple[CandidateLists, Mode, str | None]:
        """Both candidate lists for the built query, shared through `reuse` across one tuning job."""
        embedding, mode, degraded = self._embed_query(tenant_id, built, wanted)
        key = (built.lexical, tuple(built.semantic_parts), mode, depth)  # what the index is asked
        got = reuse.retrievals.get(key) if reuse is not None else None
        if got is None:
            got = self._retrieve(tenant_id, built, embedding, mode, depth)
            if reuse is not None:
                reuse.retrievals[key] = got
        return got, mode, degraded

    def _embed_query(
        self, tenant_id: str, built: BuiltQuery, wanted: Mode
    ) -> tuple[Vector | None, Mode, str | None]:
        """The weighted, normalised query vector; lexical fallback when no embedder can answer."""
        if wanted in _LEXICAL:
            return None, wanted, None
        if self._embedder is None:
            return None, "lexical_degraded", "no embedder configured"
        try:
            # Through the memo: a role's mission (and a repeated context summary) is embedded once.
            vectors = self._memo.embed(
                tenant_id, self._embedder, [text for _, text, _ in built.semantic_parts]
            )
        except UnavailableError as exc:
            return None, "lexical_degraded", exc.public_message
        import numpy as np  # here, not at import: a handler's cold start never pays for it

        weights = np.asarray([w for _, _, w in built.semantic_parts], dtype=np.float32)
        combined = (np.stack(vectors).astype(np.float32) * weights[:, None]).sum(axis=0)
        norm = float(np.linalg.norm(combined))
        return (combined / norm if norm > 0 else combined).astype(np.float32), wanted, None

    def _retrieve(
        self, tenant_id: str, built: BuiltQuery, embedding: Vector | None, mode: Mode, depth: int
    ) -> CandidateLists:
        lexical = None if mode == "semantic_only" or built.lexical.empty else built.lexical
        if lexical is None and embedding is None:
            return CandidateLists()
        filters = Filters(entity_types=(DOCUMENT_TYPE,))
        return self._index.retrieve(tenant_id, lexical, embedding, filters, depth)

    def _select(
        self, tenant_id: str, kept: Sequence[Scored], policy: RetrievalPolicy, mode: Mode, reuse: Reuse
    ) -> tuple[Selection, str | None]:
        """MMR over the best MMR_POOL_FACTOR × max_chunks kept candidates; the rest are over the limit."""
        pool_size = MMR_POOL_FACTOR * policy.max_chunks
        pool, overflow = kept[:pool_size], kept[pool_size:]
        similarity, degraded = self._similarity(tenant_id, pool, mode, reuse.vectors)
        selection = select_mmr(pool, similarity, policy.max_chunks, policy.diversity)
        beyond = tuple(
            Rejection(s, RejectReason.OVER_LIMIT, f"ranked {pool_size + i + 1}, beyond the diversity pool")
            for i, s in enumerate(overflow)
        )
        return Selection(selection.chosen, selection.rejected + beyond), degraded

    def _similarity(
        self, tenant_id: str, pool: Sequence[Scored], mode: Mode, known: dict[tuple[EntityKey, int], Vector]
    ) -> tuple[Similarity, str | None]:
        """Cosine of the pool's chunk embeddings when vectors are in use, else term-stem Jaccard."""
        if mode in _LEXICAL or self._embedder is None or not pool:
            return jaccard_similarity(pool), None
        refs = [(s.candidate.key, s.candidate.chunk_no) for s in pool]
        try:
            unread = [ref for ref in refs if ref not in known]
            known.update(self._index.chunk_vectors(tenant_id, unread) if unread else {})
            stored = known
            missing = [s for s, ref in zip(pool, refs, strict=True) if ref not in stored]
            # The same input the indexer embeds for a chunked document.
            texts = [f"{s.candidate.title}. {s.candidate.text}" for s in missing]
            made = self._memo.embed(tenant_id, self._embedder, texts) if texts else []
        except UnavailableError as exc:
            return jaccard_similarity(pool), f"diversity fell back to term overlap: {exc.public_message}"
        fresh = iter(made)
        vectors = [stored[ref] if ref in stored else next(fresh) for ref in refs]
        return cosine_similarity(vectors), None


_LEXICAL: tuple[Mode, ...] = ("lexical_only", "lexical_degraded")


def _policies(overlay: RoleOverlay | None, strategy: Strategy | None) -> tuple[RetrievalPolicy, SourcePolicy]:
    """The overlay's policies (defaults without one), fusion replaced when a strategy names it."""
    policy = overlay.retrieval_policy if overlay else RetrievalPolicy()
    sources = overlay.source_policy if overlay else SourcePolicy()
    if strategy in ("rrf", "convex"):
        policy = policy.model_copy(update={"fusion": strategy})
    return policy, sources


class _VectorMemo:
    """A bounded, thread-safe LRU of text → vector in front of an Embedder, per tenant and model id (a
    shared memo would let one tenant time whether another embedded a text recently)."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._items: OrderedDict[tuple[str, str, str], Vector] = OrderedDict()
        self._lock = threading.Lock()

    def embed(self, tenant_id: str, embedder: Embedder, texts: Sequence[str]) -> list[Vector]:
        """Vectors for `texts`, embedding only those this tenant's calls left behind (in one call)."""
        embedder = embedder.for_tenant(tenant_id)
        model = embedder.model_id
        with self._lock:
            known = {
                t: self._items[(tenant_id, model, t)] for t in texts if (tenant_id, model, t) in self._items
            }
            for t in known:
                self._items.move_to_end((tenant_id, model, t))
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        fresh = dict(zip(missing, embedder.embed(missing), strict=True)) if missing else {}
        with self._lock:
            for t, v in fresh.items():
                self._items[(tenant_id, model, t)] = v
            while len(self._items) > self._capacity:
                self._items.popitem(last=False)
        found = {**known, **fresh}
        return [found[t] for t in texts]


class _Stopwatch:
    """Lap times in milliseconds from an injected monotonic clock."""

    def __init__(self, monotonic: Callable[[], float]) -> None:
        self._now = monotonic
        self._start = self._last = monotonic()
        self.laps: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = self._now()
        self.laps[name] = (now - self._last) * MS
        self._last = now

    def total(self) -> None:
        self.laps["total"] = (self._now() - self._start) * MS

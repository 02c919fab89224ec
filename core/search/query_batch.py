"""Query embeddings of several waiting searches in one model call (docs/architecture.md#query-batching).

The model reads all its weights for every call, so embedding a few queries together costs little more than
one (docs/benchmarks.md#query-batching). A server that runs one request at a time and has searches
waiting asks `QueryBatch.embed_ahead` for their query vectors in one call, then runs each search with the
vector made for it (infra/ahead_embedder.py serves it to that request alone).

Each waiting request is checked and planned exactly as `SearchService.search` will check and plan it
(`SearchService.query_text`): a body that is not a valid search, or one that embeds nothing (keyword, a
caller's vector, an empty query), is skipped and answers as it always did. Vectors are made with the
embedder the tenant resolves to now (`Embedder.for_tenant`) and filed under that tenant, that model's
`vectors_id` and the text, so a reindex that switches the model before the search runs leaves the vector
unused. When the model cannot answer, nothing is made and every search embeds on its own as before.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import ValidationError

from core.errors import QuarryError
from core.indexing.caller_vectors import brings_own_vectors
from core.models import Vector
from core.ports import Embedder
from core.search.search_api import SearchRequest
from core.search.search_service import SearchService

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class AheadVector:
    """A query vector made ahead for one request: whose (tenant), by which model (`vectors_id`), of which
    text; a search uses it only when all three match what it would embed itself."""

    tenant_id: str
    vectors_id: str
    text: str
    vector: Vector


@dataclass(frozen=True, slots=True)
class WaitingSearch:
    """A search request not yet run: its tenant (from its credentials) and its raw JSON body."""

    tenant_id: str
    body: str


class QueryBatch:
    """Embeds the queries of waiting searches together, at most `max_batch` per model call."""

    def __init__(self, search: SearchService, embedder: Embedder, max_batch: int) -> None:
        self._search = search
        self._embedder = embedder
        self.max_batch = max_batch

    def embed_ahead(self, waiting: Sequence[WaitingSearch | None]) -> list[AheadVector | None]:
        """One vector per waiting search that will embed its query (None for the others, and for every
        one when the model fails); searches of one model share a call."""
        out: list[AheadVector | None] = [None] * len(waiting)
        groups: dict[int, tuple[Embedder, list[tuple[int, str]]]] = {}
        for i, item in enumerate(waiting):
            planned = self._planned(item) if item is not None else None
            if planned is None or item is None:
                continue
            embedder, text = planned
            groups.setdefault(id(embedder), (embedder, []))[1].append((i, text))
        for embedder, members in groups.values():
            for start in range(0, len(members), self.max_batch):
                self._embed_group(embedder, members[start : start + self.max_batch], waiting, out)
        return out

    def _planned(self, item: WaitingSearch) -> tuple[Embedder, str] | None:
        """The tenant's embedder and the text its search will embed, or None (invalid, or embeds nothing)."""
        try:
            request = SearchRequest.model_validate_json(item.body)
            if (
                request.strategy == "keyword"
                or request.query_vector is not None
                or request.cursor is not None
            ):
                return None  # embeds nothing, whatever else the search finds: not worth planning here
            text = self._search.query_text(item.tenant_id, request)
            if text is None:
                return None
            embedder = self._embedder.for_tenant(item.tenant_id)
        except (ValidationError, QuarryError, ValueError):
            return None  # the search itself answers its 4xx
        return None if brings_own_vectors(embedder) else (embedder, text)

    @staticmethod
    def _embed_group(
        embedder: Embedder,
        members: list[tuple[int, str]],
        waiting: Sequence[WaitingSearch | None],
        out: list[AheadVector | None],
    ) -> None:
        """Embed one model's texts in one call into `out`; a failure leaves them to embed on their own."""
        if len(members) < 2:
            return  # alone, the search embeds it itself: nothing to share
        texts = list(dict.fromkeys(text for _, text in members))  # one row per distinct text
        try:
            vectors = dict(zip(texts, embedder.embed_query(texts), strict=True))
        except Exception as exc:  # any model fault: each search embeds (or degrades) on its own, as before
            _log.warning("query batch: embedding ahead failed; each search embeds its own: %s", exc)
            return
        vectors_id = embedder.vectors_id
        for i, text in members:
            item = waiting[i]
            assert item is not None
            out[i] = AheadVector(item.tenant_id, vectors_id, text, vectors[text])

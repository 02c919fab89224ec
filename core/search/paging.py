"""Cursor paging of POST /search.

What it guarantees: within one index generation of the tenant (the counter every applied write bumps),
a search is deterministic: the same candidates, the same fusion, ties broken by id. The first page is the
usual search (candidates at 2 × limit depth, at least 100 for hybrid). Later pages rank at the paging
depth (`PAGING_DEPTH` candidates per retriever), leave out exactly the entities the first page showed
(recomputed, not stored) and slice the rest, so across all pages every entity of that ranking appears
exactly once. `total` is the first page's ranking on the first page and the whole paged ranking after it.
If any write is applied to the tenant between two pages, or the strategy actually used changes (the
embedder degraded to keyword), the next page answers 409 `cursor_expired` instead of silently skipping
or repeating results; the caller starts again from the first page. The cursor is opaque and bound to
the tenant and to the request (query, entity types, filters, strategy, limit); `explain` may differ.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from core.cursor import decode_cursor, encode_cursor
from core.errors import CursorExpiredError, InvalidInputError

CURSOR_KIND = "search"
# Candidates per retriever behind pages 2+: ten full pages of the largest limit (100). Deeper than this a
# result list stops being a search answer; GET /entities lists everything.
PAGING_DEPTH = 1000


def request_fingerprint(request: Any, entity_types: Sequence[str]) -> str:
    """A short hash of what decides the ranking and the page size (not `explain`, not the cursor)."""
    normalised = {
        "q": " ".join(str(request.query).lower().split()),
        "e": sorted(entity_types),
        "f": request.filters or {},
        "s": request.strategy,
        "l": request.limit,
    }
    if getattr(request, "min_score", None) is not None:  # absent otherwise: older cursors stay valid
        normalised["m"] = request.min_score
    if getattr(request, "query_vector", None) is not None:  # a cursor of one vector's ranking, not another's
        normalised["v"] = request.query_vector
    payload = json.dumps(normalised, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class SearchPage:
    """Which slice of the fused ranking a request wants, and the cursor of the next one."""

    tenant_id: str
    fingerprint: str
    generation: int
    offset: int = 0
    strategy: str | None = None  # the strategy the first page used (None on the first page)

    @classmethod
    def first(cls, tenant_id: str, request: Any, types: Sequence[str], generation: int) -> SearchPage:
        """The first page of this request at the tenant's current generation."""
        return cls(tenant_id, request_fingerprint(request, types), generation)

    def resume(self, cursor: str) -> SearchPage:
        """The page a cursor points at; 400 for a foreign cursor, 409 when the index changed since."""
        p = decode_cursor(CURSOR_KIND, self.tenant_id, cursor)
        offset, generation, strategy = p.get("o"), p.get("g"), p.get("s")
        if p.get("f") != self.fingerprint:
            raise InvalidInputError(
                "invalid cursor",
                {
                    "cursor": "was issued for another request (query, entities, filters, strategy, limit or min_score)"
                },
            )
        if not isinstance(offset, int) or not isinstance(generation, int) or not isinstance(strategy, str):
            raise InvalidInputError("invalid cursor", {"cursor": "is not a cursor this API issued"})
        if generation != self.generation:
            raise CursorExpiredError()
        return replace(self, offset=max(offset, 0), strategy=strategy)

    def check_strategy(self, used: str) -> None:
        """A later page must rank the way the first did (a degraded embedder would change the order)."""
        if self.strategy is not None and used != self.strategy:
            raise CursorExpiredError()

    @property
    def is_first(self) -> bool:
        """True for a request without a cursor."""
        return self.strategy is None

    def cursor(self, used: str, offset: int) -> str:
        """The cursor of the page starting at `offset` of the paged remainder, ranked with `used`."""
        position = {"f": self.fingerprint, "g": self.generation, "o": offset, "s": used}
        return encode_cursor(CURSOR_KIND, self.tenant_id, position)

"""Cursor paging of POST /search, over a snapshot that writes do not change (docs/api.md, Paging).

A cursor pins what it pages over, the way an OpenSearch point in time does. The paged ranking is the first
page's results followed by the ranking at the paging depth (`PAGING_DEPTH` candidates per retriever) less
the entities the first page showed; it is computed once, stored as a snapshot (every result as the API
shows it, so later pages show entities as they were, even if changed or deleted since) under a random id
bound to the tenant and to the request, and later pages slice it: no ranking, no index read, so writes to
the tenant between pages change nothing and every entity of that ranking appears exactly once, in order.

When the snapshot is taken:
- on the first page, when the request sends `keep_alive` and there are more results than `limit` (the
  Python client's `iter_search` does): the iteration is stable from its first page;
- otherwise on the second page, from a cursor of the first page that carries the tenant's index
  generation (the first page stays a plain, cacheable search): a write between the first and the second
  page still answers 409 `cursor_expired`, none after it does.

A snapshot lives `keep_alive` seconds (DEFAULT_KEEP_ALIVE_SECONDS when not sent, within
MIN/MAX_KEEP_ALIVE_SECONDS), and each page read extends it by as much again, never past
MAX_SNAPSHOT_AGE_SECONDS after it was taken. A lapsed (or erased) snapshot answers 409 `cursor_expired`
saying so; the caller starts again from the first page. The cursor is opaque and bound to the tenant and
to the request (query, entity types, filters, strategy, limit, min_score, query_vector); `explain`,
`keep_alive` and `return_fields` may differ (a page shows the fields the snapshot stored).
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from core.cursor import decode_cursor, encode_cursor
from core.errors import CursorExpiredError, InvalidInputError

CURSOR_KIND = "search"
# Candidates per retriever behind pages 2+: ten full pages of the largest limit (100). Deeper than this a
# result list stops being a search answer; GET /entities lists everything.
PAGING_DEPTH = 1000
# A snapshot's lifetime between two page reads. Five minutes: time for a client to use a page and ask for
# the next (OpenSearch asks for a keep_alive with each point-in-time or scroll request for the same
# reason); a choice, not a measurement. The bounds keep a snapshot from lapsing before a round trip (10 s)
# and from outliving its use by hours (1 h); MAX_SNAPSHOT_AGE_SECONDS is OpenSearch's default
# `point_in_time.max_keep_alive` (24 h), here the age past which no page read extends a snapshot.
DEFAULT_KEEP_ALIVE_SECONDS = 300
MIN_KEEP_ALIVE_SECONDS = 10
MAX_KEEP_ALIVE_SECONDS = 3600
MAX_SNAPSHOT_AGE_SECONDS = 86_400
_COMPRESSION_LEVEL = 6  # zlib's default: results are repetitive JSON (keys, metadata), a few times smaller


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


def check_keep_alive(keep_alive: int | None) -> None:
    """400 naming both bounds when `keep_alive` is outside them (None: the default applies)."""
    if keep_alive is not None and not MIN_KEEP_ALIVE_SECONDS <= keep_alive <= MAX_KEEP_ALIVE_SECONDS:
        raise InvalidInputError(
            "invalid search request",
            {"keep_alive": f"must be between {MIN_KEEP_ALIVE_SECONDS} and {MAX_KEEP_ALIVE_SECONDS} seconds"},
        )


@dataclass(frozen=True, slots=True)
class SearchSnapshot:
    """A paged ranking as the API shows it, pinned for paging: `body` is `pack_snapshot`'s bytes."""

    tenant_id: str
    snapshot_id: str
    fingerprint: str
    created_at: float
    expires_at: float
    keep_alive: float
    body: bytes

    def extended(self, now: float, keep_alive: float | None) -> float:
        """The expiry a page read at `now` moves it to: `keep_alive` (its own when None) from now,
        never past MAX_SNAPSHOT_AGE_SECONDS after it was taken, never earlier than it was."""
        wanted = now + (self.keep_alive if keep_alive is None else keep_alive)
        return max(self.expires_at, min(wanted, self.created_at + MAX_SNAPSHOT_AGE_SECONDS))


def pack_snapshot(head: dict[str, Any], results: Sequence[dict[str, Any]]) -> bytes:
    """The stored form of a snapshot: compact JSON of the response's head and the ranked results, zlib."""
    raw = json.dumps({"head": head, "results": list(results)}, separators=(",", ":"), sort_keys=True)
    return zlib.compress(raw.encode(), _COMPRESSION_LEVEL)


def unpack_snapshot(body: bytes) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(head, results) of `pack_snapshot`'s bytes."""
    value = json.loads(zlib.decompress(body))
    return value["head"], value["results"]


@dataclass(frozen=True, slots=True)
class SearchPage:
    """Which slice of the paged ranking a request wants, and the cursor of the next one.

    A first page has neither `strategy` nor `snapshot_id`; a page of a generation cursor has `strategy`
    and `generation`; a page of a snapshot cursor has `snapshot_id`."""

    tenant_id: str
    fingerprint: str
    generation: int | None = None
    offset: int = 0
    strategy: str | None = None  # the strategy the first page used (generation cursors)
    snapshot_id: str | None = None

    @classmethod
    def first(cls, tenant_id: str, request: Any, types: Sequence[str], generation: int | None) -> SearchPage:
        """The first page of this request at the tenant's current generation (None: unknown)."""
        return cls(tenant_id, request_fingerprint(request, types), generation)

    def resume(self, cursor: str) -> SearchPage:
        """The page a cursor points at; 400 for a foreign or forged cursor (another tenant's, another
        request's). The generation of a generation cursor is checked by `check_generation`."""
        p = decode_cursor(CURSOR_KIND, self.tenant_id, cursor)
        if p.get("f") != self.fingerprint:
            raise InvalidInputError(
                "invalid cursor",
                {
                    "cursor": "was issued for another request (query, entities, filters, strategy, limit or min_score)"
                },
            )
        offset, snapshot_id = p.get("o"), p.get("n")
        if isinstance(offset, int) and isinstance(snapshot_id, str) and snapshot_id:
            return replace(self, offset=max(offset, 0), snapshot_id=snapshot_id, generation=None)
        generation, strategy = p.get("g"), p.get("s")
        if not isinstance(offset, int) or not isinstance(generation, int) or not isinstance(strategy, str):
            raise InvalidInputError("invalid cursor", {"cursor": "is not a cursor this API issued"})
        return replace(self, offset=max(offset, 0), strategy=strategy, generation=generation)

    def check_generation(self, current: int) -> None:
        """A generation cursor continues only at the generation it was issued at."""
        if self.generation != current:
            raise CursorExpiredError()

    def check_strategy(self, used: str) -> None:
        """A later page must rank the way the first did (a degraded embedder would change the order)."""
        if self.strategy is not None and used != self.strategy:
            raise CursorExpiredError()

    @property
    def is_first(self) -> bool:
        """True for a request without a cursor."""
        return self.strategy is None and self.snapshot_id is None

    def cursor(self, used: str, offset: int) -> str:
        """The generation cursor of the page starting at `offset` of the paged remainder, ranked with `used`."""
        position = {"f": self.fingerprint, "g": self.generation, "o": offset, "s": used}
        return encode_cursor(CURSOR_KIND, self.tenant_id, position)

    def snapshot_cursor(self, snapshot_id: str, offset: int) -> str:
        """The cursor of the page starting at `offset` of a snapshot's results."""
        position = {"f": self.fingerprint, "n": snapshot_id, "o": offset}
        return encode_cursor(CURSOR_KIND, self.tenant_id, position)

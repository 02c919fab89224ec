"""Taking and reading the snapshots search cursors page over (the rules are in core/search/paging.py).

`SnapshotPager.take` stores a paged ranking under a new id with its lifetime; `SnapshotPager.page` answers
a page of it — no ranking, no index read — and extends its lifetime. Explanations are stored with every
result and left out of a page whose request did not ask for them, so `explain` may differ between pages.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from core.errors import CursorExpiredError, InvalidInputError
from core.ports import Clock, SearchSnapshots
from core.search.paging import (
    DEFAULT_KEEP_ALIVE_SECONDS,
    SearchPage,
    SearchSnapshot,
    pack_snapshot,
    unpack_snapshot,
)
from core.search.search_api import SearchRequest, SearchResponse, SearchResult


class SnapshotPager:
    """Stores paged rankings and serves their pages, for one SearchService."""

    def __init__(self, snapshots: SearchSnapshots, clock: Clock, new_id: Callable[[], str]) -> None:
        self._snapshots, self._clock, self._new_id = snapshots, clock, new_id

    def take(
        self,
        page: SearchPage,
        head: SearchResponse,
        results: Sequence[SearchResult],
        keep_alive: int | None,
    ) -> str:
        """Store `results` (the ranking pages will slice) with the response `head` (total, query_info,
        facets) for `keep_alive` seconds; the snapshot's id."""
        now = self._clock.now()
        lifetime = float(DEFAULT_KEEP_ALIVE_SECONDS if keep_alive is None else keep_alive)
        snapshot_id = self._new_id()
        body = pack_snapshot(
            head.model_dump(mode="json", include={"total", "query_info", "facets"}),
            [r.model_dump(mode="json") for r in results],
        )
        snapshot = SearchSnapshot(
            page.tenant_id, snapshot_id, page.fingerprint, now, now + lifetime, lifetime, body
        )
        self._snapshots.put(snapshot)
        return snapshot_id

    def page(self, page: SearchPage, request: SearchRequest) -> SearchResponse:
        """The page of the snapshot `page` points at; 409 when it lapsed, 400 when it is another request's."""
        assert page.snapshot_id is not None
        now = self._clock.now()
        snapshot = self._snapshots.get(page.tenant_id, page.snapshot_id, now)
        if snapshot is None:
            raise CursorExpiredError(lapsed_snapshot=True)
        if snapshot.fingerprint != page.fingerprint:  # a cursor made by hand around another request's id
            raise InvalidInputError("invalid cursor", {"cursor": "is not a cursor this API issued"})
        if not self._snapshots.extend(
            page.tenant_id, page.snapshot_id, snapshot.extended(now, request.keep_alive), now
        ):
            raise CursorExpiredError(lapsed_snapshot=True)
        head, results = unpack_snapshot(snapshot.body)
        following = page.offset + request.limit
        window = [SearchResult.model_validate(r) for r in results[page.offset : following]]
        if not request.explain:
            for r in window:
                r.explanation = None
        response = SearchResponse.model_validate({**head, "results": [], "took_ms": 0.0})
        response.results = window
        response.query_info.cache = "bypass"
        if following < len(results):
            response.next_cursor = page.snapshot_cursor(page.snapshot_id, following)
        return response

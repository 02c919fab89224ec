"""Search paging over snapshots (core/search/paging.py, core/search/snapshot_paging.py) through the
composition root with every port a fake: a cursor pins the ranking it pages over, so writes, updates and
deletes between pages change nothing; a snapshot lives `keep_alive` seconds from each page read; a
lapsed one is a 409 saying so; another tenant's cursor is a 400; an erase removes the tenant's snapshots."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from core.errors import CursorExpiredError, InvalidInputError
from core.search.paging import DEFAULT_KEEP_ALIVE_SECONDS, MAX_KEEP_ALIVE_SECONDS, MIN_KEEP_ALIVE_SECONDS
from core.search.search_api import SearchRequest, SearchResponse
from tests.fakes import FakeSearchSnapshots, fake_container

QUERY = "crane"


@pytest.fixture
def c(tmp_path: Path) -> Any:
    c = fake_container(tmp_path)
    write(c, *[memory(f"m-{i:02d}", f"crane log entry {i}" + " crane" * (i % 4)) for i in range(25)])
    return c


def memory(eid: str, content: str) -> dict[str, Any]:
    return {"type": "memory", "id": eid, "content": content}


def write(c: Any, *items: dict[str, Any], tenant: str = "acme") -> None:
    report = c.indexing.bulk(tenant, list(items), c.clock.now())
    assert not report.errors, report.errors


def search(c: Any, tenant: str = "acme", **request: Any) -> SearchResponse:
    return c.search.search(tenant, SearchRequest(query=QUERY, strategy="keyword", limit=4, **request))


def all_pages(c: Any, between: Any = None, **request: Any) -> list[tuple[str, str]]:
    """(id, snippet) of every result, page after page; `between(n)` runs before page n+1 is asked for."""
    page = search(c, **request)
    seen = [(r.entity_id, r.snippet) for r in page.results]
    n = 0
    while page.next_cursor:
        if between is not None:
            between(n)
        n += 1
        page = search(c, cursor=page.next_cursor, **request)
        seen += [(r.entity_id, r.snippet) for r in page.results]
    return seen


def test_writes_updates_and_deletes_between_pages_change_nothing_the_cursor_pages_over(c: Any) -> None:
    # Given the paged ranking as it is before any write
    before = all_pages(c, keep_alive=60)
    assert len(before) == 25

    # When every gap between two pages writes a new entity, rewrites one already paged and one not yet
    # paged, and deletes one
    def churn(n: int) -> None:
        c.clock.advance(1)  # a later version of each rewritten entity
        write(c, memory(f"new-{n}", "crane crane crane crane brand new"))
        write(c, memory(f"m-{n:02d}", "crane rewritten"), memory(f"m-{24 - n:02d}", "crane rewritten too"))
        c.indexing.delete("acme", "memory", f"m-{(n + 12) % 25:02d}", None, c.clock.now())

    during = all_pages(c, between=churn, keep_alive=60)

    # Then every entity of the first ranking comes exactly once, in that order, as it was
    assert during == before
    assert all("rewritten" not in snippet for _, snippet in during)


def test_without_keep_alive_only_a_write_before_the_second_page_expires_the_cursor(c: Any) -> None:
    first = search(c)
    write(c, memory("early", "crane crane"))
    with pytest.raises(CursorExpiredError):
        search(c, cursor=first.next_cursor)

    before = all_pages(c)
    second_on = iter(range(100))
    during = all_pages(
        c, between=lambda n: n and write(c, memory(f"late-{next(second_on)}", "crane crane crane"))
    )
    assert during == before


def test_a_snapshot_lapses_keep_alive_after_the_last_page_read(c: Any) -> None:
    first = search(c, keep_alive=60)
    c.clock.advance(50)
    second = search(c, cursor=first.next_cursor)  # extends the snapshot to 60 s from now
    c.clock.advance(50)
    third = search(c, cursor=second.next_cursor)
    assert third.results
    c.clock.advance(61)
    with pytest.raises(CursorExpiredError) as lapsed:
        search(c, cursor=third.next_cursor)
    assert "lapsed" in str(lapsed.value) and "first page" in str(lapsed.value)


def test_the_default_keep_alive_is_five_minutes(c: Any) -> None:
    first = search(c, keep_alive=None)
    second = search(c, cursor=first.next_cursor)  # the snapshot is taken here, with the default lifetime
    c.clock.advance(DEFAULT_KEEP_ALIVE_SECONDS - 1)
    third = search(c, cursor=second.next_cursor)
    c.clock.advance(DEFAULT_KEEP_ALIVE_SECONDS + 1)
    with pytest.raises(CursorExpiredError):
        search(c, cursor=third.next_cursor)


@pytest.mark.parametrize("keep_alive", [MIN_KEEP_ALIVE_SECONDS - 1, MAX_KEEP_ALIVE_SECONDS + 1, 0])
def test_a_keep_alive_out_of_bounds_is_refused_naming_them(c: Any, keep_alive: int) -> None:
    bounds = f"between {MIN_KEEP_ALIVE_SECONDS} and {MAX_KEEP_ALIVE_SECONDS} seconds"
    with pytest.raises(ValidationError, match=bounds):  # the request model, as the API parses it
        search(c, keep_alive=keep_alive)
    unchecked = SearchRequest.model_construct(query=QUERY, limit=4, strategy="keyword", keep_alive=keep_alive)
    with pytest.raises(InvalidInputError) as refused:  # and the use case, for a request built unchecked
        c.search.search("acme", unchecked)
    assert bounds in refused.value.fields["keep_alive"]


def test_another_tenants_cursor_is_refused_and_reads_nothing(c: Any) -> None:
    write(c, memory("x-1", "crane of the other tenant"), tenant="initech")
    first = search(c, keep_alive=60)
    with pytest.raises(InvalidInputError) as refused:
        search(c, tenant="initech", cursor=first.next_cursor)
    assert "cursor" in refused.value.fields


def test_a_cursor_for_another_request_is_refused(c: Any) -> None:
    first = search(c, keep_alive=60)
    with pytest.raises(InvalidInputError):
        c.search.search(
            "acme", SearchRequest(query="log", strategy="keyword", limit=4, cursor=first.next_cursor)
        )


def test_erasing_the_tenant_removes_its_snapshots(c: Any) -> None:
    snapshots: FakeSearchSnapshots = c.snapshots
    write(c, *[memory(f"o-{i}", "crane elsewhere") for i in range(6)], tenant="initech")
    first = search(c, keep_alive=60)
    search(c, tenant="initech", keep_alive=60)
    assert {tenant for tenant, _ in snapshots.held} == {"acme", "initech"}

    report = c.lifecycle.erase("acme", "acme")

    assert {tenant for tenant, _ in snapshots.held} == {"initech"}
    assert report.cache_entries_removed >= 1
    with pytest.raises(CursorExpiredError):
        search(c, cursor=first.next_cursor)


def test_explain_may_differ_between_pages(c: Any) -> None:
    first = search(c, keep_alive=60)
    explained = search(c, cursor=first.next_cursor, explain=True)
    plain = search(c, cursor=first.next_cursor)
    assert all(r.explanation is not None for r in explained.results)
    assert all(r.explanation is None for r in plain.results)
    assert [r.entity_id for r in explained.results] == [r.entity_id for r in plain.results]

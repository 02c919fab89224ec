"""POST /search paging over a tenant being written, through the API on the local backend (and, imported by
tests/handlers/test_opensearch_api.py, on OpenSearch with DynamoDB): with `keep_alive` on the first page,
new, rewritten and deleted entities between pages change nothing — every entity of the first ranking
comes exactly once, in that order, as it was; a lapsed snapshot is a 409 saying so; another tenant's
cursor is a 400; erasing the tenant removes its snapshots."""

from __future__ import annotations

from typing import Any

import pytest

from core.cursor import from_cursor
from tests.conftest import api_event, invoke
from tests.fakes import FakeClock

CORPUS = [
    {
        "type": "memory",
        "id": f"s-{i:02d}",
        "content": f"quay gantry shift {i}" + " gantry" * (i % 4),
        "version": 1,
    }
    for i in range(26)
]
REQUEST = {"query": "gantry", "limit": 4}


def bulk(items: list[dict[str, Any]], tenant: str = "acme") -> None:
    status, body = invoke(api_event("bulk_entities", tenant=tenant, body={"items": items}))
    assert status == 200 and not body["errors"], body


def search(body: dict[str, Any], tenant: str = "acme") -> tuple[int, Any]:
    return invoke(api_event("search", tenant=tenant, body=body))


def pages(request: dict[str, Any], between: Any = None) -> list[tuple[str, str]]:
    """(id, snippet) of every hit, page after page; `between(n)` runs before page n + 2 is asked for."""
    status, page = search(request)
    assert status == 200, page
    seen = [(r["entity_id"], r["snippet"]) for r in page["results"]]
    n = 0
    while page["next_cursor"]:
        if between is not None:
            between(n)
        n += 1
        status, page = search({**request, "cursor": page["next_cursor"]})
        assert status == 200, page
        seen += [(r["entity_id"], r["snippet"]) for r in page["results"]]
    return seen


@pytest.mark.parametrize("strategy", ["keyword", "hybrid"])
def test_writes_between_pages_change_nothing_the_iteration_returns(local: Any, strategy: str) -> None:
    bulk(CORPUS)
    request = {**REQUEST, "strategy": strategy, "keep_alive": 60}
    before = pages(request)
    assert {i for i, _ in before} >= {c["id"] for c in CORPUS}

    def churn(n: int) -> None:
        bulk([{"type": "memory", "id": f"new-{n}", "content": "gantry gantry gantry gantry", "version": 1}])
        rewritten = [CORPUS[n], CORPUS[-1 - n]]
        bulk([{**item, "content": "gantry rewritten", "version": 2 + n} for item in rewritten])
        gone = CORPUS[(n + 13) % len(CORPUS)]["id"]
        status, body = invoke(api_event("delete_entity", path=f"/entities/memory/{gone}"))
        assert status in (200, 404), body  # 404: deleted by an earlier page's churn

    during = pages(request, between=churn)

    assert during == before
    assert len({i for i, _ in during}) == len(during)
    assert not any("rewritten" in snippet for _, snippet in during)


def test_a_lapsed_snapshot_is_409_saying_to_start_again(local: Any) -> None:
    clock = FakeClock()
    local.override(clock=clock)
    bulk(CORPUS)
    _, first = search({**REQUEST, "keep_alive": 30})
    clock.advance(25)
    status, second = search({**REQUEST, "cursor": first["next_cursor"]})  # extends it 30 s from now
    assert status == 200, second
    clock.advance(25)
    status, third = search({**REQUEST, "cursor": second["next_cursor"]})
    assert status == 200, third
    clock.advance(31)
    status, body = search({**REQUEST, "cursor": third["next_cursor"]})
    assert status == 409 and body["error"]["code"] == "cursor_expired"
    assert "lapsed" in body["error"]["message"] and "first page" in body["error"]["message"]


def test_another_tenants_cursor_is_refused(local: Any) -> None:
    bulk(CORPUS)
    bulk(CORPUS, tenant="other")
    _, first = search({**REQUEST, "keep_alive": 60})
    status, body = search({**REQUEST, "cursor": first["next_cursor"]}, tenant="other")
    assert status == 400 and "cursor" in body["error"]["fields"]


def test_a_keep_alive_out_of_bounds_is_400_naming_them(local: Any) -> None:
    status, body = search({**REQUEST, "keep_alive": 5})
    assert status == 400 and body["error"]["fields"]["keep_alive"] == "must be between 10 and 3600 seconds"


def test_erasing_the_tenant_removes_its_snapshots(local: Any) -> None:
    bulk(CORPUS)
    bulk(CORPUS, tenant="other")
    _, mine = search({**REQUEST, "keep_alive": 60})
    _, theirs = search({**REQUEST, "keep_alive": 60}, tenant="other")
    mine_id, theirs_id = (from_cursor(p["next_cursor"])["p"]["n"] for p in (mine, theirs))
    now = local.clock.now()
    assert local.snapshots.get("acme", mine_id, now) is not None

    status, report = invoke(api_event("delete_tenant", body={"confirm": "acme"}))

    assert status == 200, report
    assert local.snapshots.get("acme", mine_id, now) is None
    assert local.snapshots.get("other", theirs_id, now) is not None

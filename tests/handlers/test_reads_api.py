"""Reading back through the HTTP API: one entity, the newest-first listing, search pages beyond the first
(every matching entity exactly once; a write before the second page expires a cursor whose first page
did not send `keep_alive`, none after it does), weight history and stored golden-set figures. Driven by
the events/ samples on the local backend."""

from __future__ import annotations

from typing import Any

import pytest

from core.state import EvalRecord, SourceWeight, WeightChange
from tests.conftest import api_event, invoke

CORPUS = [
    {
        "type": "memory",
        "id": f"m-{i:03d}",
        "content": f"harbor crane note {i} about loading cargo" + (" urgent" if i % 3 == 0 else ""),
        "category": "ops",
        "created_at": f"2026-03-{1 + i % 28:02d}T{i % 24:02d}:00:00Z",
        "version": 1,
    }
    for i in range(57)
]


def bulk(items: list[dict[str, Any]], tenant: str = "acme") -> None:
    status, body = invoke(api_event("bulk_entities", tenant=tenant, body={"items": items}))
    assert status == 200 and not body["errors"], body


def get(
    name: str, path: str | None = None, query: dict[str, str] | None = None, **kw: Any
) -> tuple[int, Any]:
    return invoke(api_event(name, path=path, query=query, **kw))


def search(body: dict[str, Any], tenant: str = "acme") -> tuple[int, Any]:
    return invoke(api_event("search", tenant=tenant, body=body))


def test_get_entity_returns_the_stored_fields_version_and_embedding(local: Any) -> None:
    bulk(CORPUS[:2])
    status, body = get("get_entity", "/entities/memory/m-001")
    assert status == 200, body
    assert body["version"] == 1 and body["embedded"] is True and body["chunks"] == 1
    assert body["fields"]["content"].startswith("harbor crane note 1")
    assert body["metadata"] == {"category": "ops"} or "category" in body["fields"]
    assert "version" not in body["fields"]  # an attribute of the entity, not one of its fields


def test_what_the_entity_shows_as_attributes_is_not_repeated_in_its_fields(local: Any) -> None:
    item = {"title": "Fix login", "status": "open", "source": "tasks", "owner": "ann", "namespace": "auth",
            "updated_at": "2026-01-01T00:00:00Z"}  # fmt: skip
    assert invoke(api_event("put_entity", path="/entities/task/t-1", body=item))[0] == 200
    status, body = get("get_entity", "/entities/task/t-1")
    assert status == 200 and body["fields"] == {"title": "Fix login", "status": "open"}
    assert (body["source"], body["owner"], body["namespace"]) == ("tasks", "ann", "auth")
    assert body["updated_at"] == "2026-01-01T00:00:00Z" and body["version"] > 0


def test_get_entity_is_404_for_deleted_missing_and_other_tenants(local: Any) -> None:
    bulk(CORPUS[:1])
    assert get("get_entity", "/entities/memory/m-000", tenant="other")[0] == 404
    assert get("get_entity", "/entities/memory/nope")[0] == 404
    assert invoke(api_event("delete_entity", path="/entities/memory/m-000"))[0] == 200
    status, body = get("get_entity", "/entities/memory/m-000")
    assert status == 404 and body["error"]["code"] == "not_found"


def test_get_entity_of_an_unknown_type_is_400_naming_it(local: Any) -> None:
    status, body = get("get_entity", "/entities/spaceship/x")
    assert status == 400 and "type" in body["error"]["fields"]


def test_read_routes_need_the_read_scope(local: Any) -> None:
    status, body = get("list_entities", "/entities", scopes=["write"])
    assert status == 403 and body["error"]["code"] == "forbidden"


def test_listing_pages_newest_first_every_entity_once(local: Any) -> None:
    bulk(CORPUS)
    bulk([{"type": "task", "id": "t-1", "title": "not a memory"}])
    seen: list[dict[str, Any]] = []
    cursor = None
    while True:
        query = {"type": "memory", "limit": "10", **({"cursor": cursor} if cursor else {})}
        status, body = get("list_entities", "/entities", query)
        assert status == 200, body
        seen.extend(body["data"])
        cursor = body["next_cursor"]
        if cursor is None:
            break
    ids = [e["entity_id"] for e in seen]
    assert sorted(ids) == sorted(e["id"] for e in CORPUS) and len(ids) == len(set(ids))
    created = [e["created_at"] for e in seen]
    assert created == sorted(created, reverse=True)


def test_a_listing_cursor_is_bound_to_the_tenant_and_the_type(local: Any) -> None:
    bulk(CORPUS[:5])
    _, first = get("list_entities", "/entities", {"limit": "2"})
    cursor = first["next_cursor"]
    status, body = get("list_entities", "/entities", {"limit": "2", "cursor": cursor}, tenant="other")
    assert status == 400 and "cursor" in body["error"]["fields"]
    status, body = get("list_entities", "/entities", {"type": "memory", "limit": "2", "cursor": cursor})
    assert status == 400
    status, body = get("list_entities", "/entities", {"limit": "2", "cursor": "garbage!!"})
    assert status == 400


@pytest.mark.parametrize("strategy", ["keyword", "hybrid"])
def test_search_pages_return_every_match_exactly_once(local: Any, strategy: str) -> None:
    bulk(CORPUS)
    request = {"query": "harbor crane cargo", "limit": 7, "strategy": strategy}
    status, first = search(request)
    assert status == 200 and first["next_cursor"], first
    seen = [r["entity_id"] for r in first["results"]]
    cursor, totals = first["next_cursor"], set()
    while cursor:
        status, page = search({**request, "cursor": cursor})
        assert status == 200, page
        assert page["query_info"]["cache"] == "bypass" and len(page["results"]) <= 7
        totals.add(page["total"])
        seen.extend(r["entity_id"] for r in page["results"])
        cursor = page["next_cursor"]
    assert len(seen) == len(set(seen)) == len(CORPUS)
    assert totals == {len(CORPUS)}


def test_a_write_before_the_second_page_expires_only_a_cursor_without_keep_alive(local: Any) -> None:
    bulk(CORPUS[:20])
    request = {"query": "harbor", "limit": 5, "strategy": "keyword"}
    _, first = search(request)
    _, pinned = search({**request, "keep_alive": 60})  # this first page takes the snapshot itself
    bulk([{**CORPUS[30], "id": "m-new"}])
    status, body = search({**request, "cursor": first["next_cursor"]})
    assert status == 409 and body["error"]["code"] == "cursor_expired"
    assert "keep_alive" in body["error"]["message"]
    status, body = search({**request, "cursor": pinned["next_cursor"]})
    assert status == 200 and "m-new" not in [r["entity_id"] for r in body["results"]]


def test_a_search_cursor_only_continues_its_own_request_and_tenant(local: Any) -> None:
    bulk(CORPUS[:20])
    bulk(CORPUS[:20], tenant="other")
    request = {"query": "harbor", "limit": 5, "strategy": "keyword"}
    _, first = search(request)
    cursor = first["next_cursor"]
    assert search({**request, "cursor": cursor}, tenant="other")[0] == 400
    status, body = search({**request, "limit": 6, "cursor": cursor})
    assert status == 400 and "cursor" in body["error"]["fields"]


def test_weight_history_and_evals_are_readable(local: Any) -> None:
    state = local.state
    change = WeightChange("agent", "memory", 1.0, 1.1, 0.2, 0.25, "learning", "2030-01-01T00:00:00Z")
    state.put_weight("acme", SourceWeight("agent", "memory", 1.1, 0.25), change)
    state.put_eval("acme", EvalRecord("overlay:dba", "2030-01-01T00:00:00Z", {"rrf": {"ndcg@10": 0.8}}))
    status, body = get("weight_history", "/context/weights/history", {"caller": "agent"})
    assert status == 200 and body["data"][0]["new_weight"] == 1.1
    assert get("weight_history", "/context/weights/history", tenant="other")[1]["data"] == []
    status, body = get("list_evals", "/overlays/dba/evals", {})
    assert status == 200 and body["data"][0]["metrics"]["rrf"]["ndcg@10"] == 0.8
    assert get("list_evals", "/evals", {"name": "overlay:x"})[1]["data"] == []


def test_a_token_bound_to_a_caller_reads_only_its_history_and_cannot_export(local: Any) -> None:
    for who in ("agent-a", "agent-b"):
        change = WeightChange(who, "memory", 1.0, 1.2, 0.2, 0.25, "learning", "2030-01-01T00:00:00Z")
        local.state.put_weight("acme", SourceWeight(who, "memory", 1.2, 0.25), change)
    event = api_event("weight_history", path="/context/weights/history", query={}, scopes=["read"])
    event["requestContext"]["authorizer"]["lambda"]["caller"] = "agent-a"
    status, body = invoke(event)
    assert status == 200 and [r["caller"] for r in body["data"]] == ["agent-a"]
    event = api_event(
        "weight_history", path="/context/weights/history", query={"caller": "agent-b"}, scopes=["read"]
    )
    event["requestContext"]["authorizer"]["lambda"]["caller"] = "agent-a"
    assert invoke(event)[0] == 403
    event = api_event("tenant_export", query={}, scopes=["read"])
    event["requestContext"]["authorizer"]["lambda"]["caller"] = "agent-a"
    assert invoke(event)[0] == 403


def test_with_the_cache_down_pages_are_not_guessed(local: Any) -> None:
    from tests.handlers.test_cache_outage import FlakyCache

    flaky = FlakyCache()
    local.override(cache=flaky)
    bulk(CORPUS[:20])
    request = {"query": "harbor", "limit": 5, "strategy": "keyword"}
    _, first = search(request)
    flaky.down.add("counter")  # the generation a cursor is checked against cannot be read
    status, body = search({**request, "cursor": first["next_cursor"]})
    assert status == 503 and body["error"]["code"] == "unavailable"
    status, body = search(request)  # the first page still answers, without a cursor it could not honour
    assert status == 200 and len(body["results"]) == 5 and body["next_cursor"] is None

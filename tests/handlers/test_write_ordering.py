"""Write ordering through the HTTP API: the newest operation wins whatever
arrives first — a delete always leaves a versioned tombstone — and the two kinds of version (sequence
numbers, times in ms) cannot be mixed on one entity by accident."""

from __future__ import annotations

from typing import Any

from tests.conftest import api_event, invoke


def put(eid: str, version: int | None = None, title: str = "Fix the login bug") -> tuple[int, Any]:
    body: dict[str, Any] = {"title": title}
    if version is not None:
        body["version"] = version
    return invoke(api_event("put_entity", path=f"/entities/task/{eid}", body=body))


def delete(eid: str, version: int | None = None) -> tuple[int, Any]:
    query = {} if version is None else {"version": str(version)}
    return invoke(api_event("delete_entity", path=f"/entities/task/{eid}", query=query))


def found(query: str = "login") -> list[str]:
    status, body = invoke(api_event("search", body={"query": query, "strategy": "keyword"}))
    assert status == 200, body
    return [r["entity_id"] for r in body["results"]]


def test_a_delete_of_an_unknown_entity_is_404_but_an_older_put_arriving_later_is_refused(local: Any) -> None:
    status, body = delete("t-1", 3)
    assert status == 404 and body["error"]["code"] == "not_found"
    status, body = put("t-1", 2)
    assert status == 409 and body["error"]["code"] == "stale_version", body
    assert found() == []
    assert put("t-1", 4)[0] == 200 and found() == ["t-1"]  # a newer write is a re-creation


def test_a_newer_delete_moves_the_tombstone_so_a_put_between_the_two_is_refused(local: Any) -> None:
    assert delete("t-1", 5)[0] == 404
    assert delete("t-1", 10)[0] == 404
    status, body = put("t-1", 7)
    assert status == 409 and body["error"]["fields"]["version"] == "stored version is 10"
    assert found() == []


def test_a_delete_carrying_the_stored_version_deletes(local: Any) -> None:
    assert put("t-1", 4)[0] == 200 and found() == ["t-1"]
    status, body = delete("t-1", 4)
    assert status == 200 and body["outcome"] == "applied", body
    assert found() == []
    assert put("t-1", 4)[0] == 409  # the delete won the tie; the same version cannot bring it back


def test_an_older_delete_arriving_after_a_newer_put_is_refused(local: Any) -> None:
    assert put("t-1", 8)[0] == 200
    status, body = delete("t-1", 6)
    assert status == 409 and body["error"]["code"] == "stale_version"
    assert found() == ["t-1"]


def test_an_explicit_version_after_an_implicit_one_is_a_409_that_explains(local: Any) -> None:
    assert put("t-1")[0] == 200  # stored at its arrival time in ms
    status, body = put("t-1", 7, title="Fix the login bug again")
    assert status == 409 and body["error"]["code"] == "version_scheme_mismatch", body
    message = body["error"]["message"]
    assert "time in milliseconds" in message and "sequence number" in message
    assert "version" in body["error"]["fields"]


def test_an_implicit_version_after_explicit_ones_is_refused_too(local: Any) -> None:
    assert put("t-1", 1)[0] == 200
    status, body = put("t-1", title="Fix the login bug again")
    assert status == 409 and body["error"]["code"] == "version_scheme_mismatch"
    # a versionless DELETE of a sequence-versioned entity takes the next sequence number
    status, body = delete("t-1")
    assert status == 200 and body["version"] == 2
    assert put("t-1", 3)[0] == 200 and found() == ["t-1"]


def test_implicit_versions_keep_working_among_themselves(local: Any) -> None:
    assert put("t-1")[0] == 200
    status, body = put("t-1", title="Fix the login bug for good")
    assert status == 200 and body["outcome"] == "applied"
    assert delete("t-1")[0] == 200 and found() == []


def test_bulk_reports_a_version_kind_mismatch_per_item(local: Any) -> None:
    assert put("t-1")[0] == 200
    items = [
        {"type": "task", "id": "t-1", "title": "login again", "version": 2},
        {"type": "task", "id": "t-2", "title": "login elsewhere", "version": 2},
    ]
    status, body = invoke(api_event("bulk_entities", body={"items": items}))
    assert status == 200 and body["indexed"] == 1, body
    assert [(e["index"], e["code"]) for e in body["errors"]] == [(0, "version_scheme_mismatch")]


def test_path_ids_are_percent_decoded_on_every_entity_route(local: Any) -> None:
    status, body = put("caf%C3%A9%3Aau-lait")
    assert status == 200 and body["entity_id"] == "café:au-lait", body
    assert found() == ["café:au-lait"]
    status, body = invoke(
        api_event("patch_entity", path="/entities/task/caf%C3%A9%3Aau-lait", body={"status": "done"})
    )
    assert status == 200 and body["outcome"] == "applied", body
    assert delete("caf%C3%A9%3Aau-lait")[0] == 200 and found() == []


def test_ids_made_in_bulk_can_be_patched_and_deleted_through_the_path(local: Any) -> None:
    items = [{"type": "task", "id": "ticket:42/ü".replace("/", "-"), "title": "login ticket"}]
    status, body = invoke(api_event("bulk_entities", body={"items": items}))
    assert status == 200 and body["indexed"] == 1, body
    status, body = invoke(
        api_event("patch_entity", path="/entities/task/ticket%3A42-%C3%BC", body={"status": "done"})
    )
    assert status == 200, body
    assert delete("ticket%3A42-%C3%BC")[0] == 200 and found() == []


def test_the_id_alphabet_is_the_same_in_bulk_and_in_the_path(local: Any) -> None:
    bad = ["a\x00b", "..", ".", "tab\there", "a/b", "x" * 257, "", "bell\x07", "del\x7f"]
    items = [{"type": "task", "id": eid, "title": "login"} for eid in bad]
    items.append({"type": "task", "id": "ok-1", "title": "login"})
    status, body = invoke(api_event("bulk_entities", body={"items": items}))
    assert status == 400 and set(body["error"]["fields"]) == {f"items.{i}.id" for i in range(len(bad))}
    assert invoke(api_event("bulk_entities", body={"items": items[-1:]}))[0] == 200
    for raw in ("a%00b", "..", "%2E%2E", "tab%09here", "x" * 257, "%FF%FE"):
        status, body = put(raw)
        assert status == 400, (raw, body)
    assert found() == ["ok-1"]

"""One URL names one entity: every route percent-decodes its path parameters once, the same way (GET did
not; PUT, PATCH and DELETE did), and an MCP tool names the same entity by its decoded id."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import api_event, invoke

# (the path segment a client sends, the id it names)
ENCODED_IDS = [
    ("plain-id", "plain-id"),
    ("caf%C3%A9", "café"),
    ("x%41", "xA"),
    ("d%3Csvg", "d<svg"),
    ("100%25", "100%"),
    ("x%2541", "x%41"),  # an id holding a literal %41, as bulk may create it
    ("a%3Ab%40c", "a:b@c"),
    ("%F0%9F%A6%8A", "\U0001f98a"),
    ("r%E2%80%AEtl", "r\u202etl"),
]


def entity_path(segment: str) -> str:
    return f"/entities/task/{segment}"


def get(segment: str) -> tuple[int, Any]:
    return invoke(api_event("get_entity", path=entity_path(segment)))


@pytest.mark.parametrize(("segment", "entity_id"), ENCODED_IDS)
def test_every_method_decodes_the_path_the_same_way(local: Any, segment: str, entity_id: str) -> None:
    put = invoke(api_event("put_entity", path=entity_path(segment), body={"title": "first", "version": 1}))
    assert put[0] == 200 and put[1]["entity_id"] == entity_id, put
    status, got = get(segment)
    assert status == 200 and got["entity_id"] == entity_id and got["title"] == "first", got
    patch = invoke(
        api_event("patch_entity", path=entity_path(segment), body={"title": "second", "version": 2})
    )
    assert patch[0] == 200 and patch[1]["entity_id"] == entity_id, patch
    assert get(segment)[1]["title"] == "second"
    deleted = invoke(api_event("delete_entity", path=entity_path(segment), query={"version": "3"}))
    assert deleted[0] == 200 and deleted[1]["entity_id"] == entity_id, deleted
    assert get(segment)[0] == 404


def test_an_encoded_url_and_a_literal_id_are_different_entities(local: Any) -> None:
    items = [
        {"type": "task", "id": "x%41", "title": "literal percent", "version": 1},
        {"type": "task", "id": "xA", "title": "decoded", "version": 1},
    ]
    assert invoke(api_event("bulk_entities", body={"items": items}))[1]["indexed"] == 2
    assert get("x%41")[1]["title"] == "decoded"
    assert get("x%2541")[1]["title"] == "literal percent"
    assert invoke(api_event("delete_entity", path=entity_path("x%41"), query={}))[1]["entity_id"] == "xA"
    assert get("x%41")[0] == 404 and get("x%2541")[0] == 200  # the other one is untouched


@pytest.mark.parametrize(
    ("name", "method", "path"),
    [
        ("get_entity", None, "/entities/task/caf%C3"),
        ("put_entity", None, "/entities/task/caf%C3"),
        ("patch_entity", None, "/entities/task/caf%C3"),
        ("delete_entity", None, "/entities/task/caf%C3"),
        ("get_job", None, "/jobs/%FF"),
        ("get_overlay", None, "/overlays/r%C3"),
        ("list_evals", "GET", "/overlays/r%C3/evals"),
    ],
)
def test_a_segment_that_is_not_utf8_is_a_400_on_every_route(
    local: Any, name: str, method: str | None, path: str
) -> None:
    body = {"title": "x", "version": 1} if name in ("put_entity", "patch_entity") else None
    status, answer = invoke(api_event(name, path=path, method=method, body=body))
    assert status == 400, answer
    assert "is not valid UTF-8" in next(iter(answer["error"]["fields"].values()))


def test_overlay_jobs_and_weights_routes_decode_too(local: Any) -> None:
    from core.state import EvalRecord

    overlay = {"role_id": "ops:lead", "mission": "keep the harbour safe", "version": "1.0"}
    assert invoke(api_event("put_overlay", path="/overlays/ops%3Alead", body=overlay))[0] == 200
    assert invoke(api_event("get_overlay", path="/overlays/ops%3Alead"))[1]["role_id"] == "ops:lead"
    local.state.put_eval("acme", EvalRecord("overlay:ops:lead", "2030-01-01T00:00:00Z", {"ndcg": 0.5}))
    evals = invoke(api_event("list_evals", method="GET", path="/overlays/ops%3Alead/evals", query={}))
    assert evals[0] == 200 and [e["name"] for e in evals[1]["data"]] == ["overlay:ops:lead"], evals
    missing = invoke(api_event("get_job", path="/jobs/j%C3%B6b"))
    assert missing[0] == 404 and "jöb" in missing[1]["error"]["message"]
    weight = invoke(
        api_event("context_put_weight", path="/context/weights/b%C3%B6t/memory", body={"weight": 0.5})
    )
    assert weight[0] == 200 and weight[1]["caller"] == "böt", weight


def test_mcp_names_the_entity_the_http_path_encodes(local: Any) -> None:
    from tests.handlers.test_mcp_server import run, server_for

    put = invoke(api_event("put_entity", path=entity_path("d%3Csvg"), body={"title": "angle", "version": 1}))
    assert put[0] == 200

    async def work(client: Any) -> None:
        got = await client.call_tool("get_entity", {"entity_type": "task", "entity_id": "d<svg"})
        assert not got.is_error and got.structured_content["title"] == "angle"
        gone = await client.call_tool("delete_entity", {"entity_type": "task", "entity_id": "d<svg"})
        assert gone.structured_content["outcome"] == "applied"

    run(server_for(local, {"read", "write"}), work)
    assert get("d%3Csvg")[0] == 404

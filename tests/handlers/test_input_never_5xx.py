"""No 5xx from input: the I-JSON gate screens the body of every method (DELETE included) on the Lambda
path and the local server, MCP screens tool arguments the same way, export cursors are checked for
their shape, versions beyond what a 64-bit store holds are a 400, and an overlay too big for one DynamoDB
item is a 413 on every backend."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from core.cursor import encode_cursor
from core.tenancy.lifecycle import EXPORT_KIND
from tests.conftest import api_event, invoke

DEEP = "[" * 5000 + "]" * 5000
NOT_UTF8 = base64.b64encode(b'{"confirm": "caf\xe9"}').decode()
HUGE = 2**63  # one past the largest integer SQLite and a 64-bit version hold
BODY_ROUTES = ["delete_tenant", "delete_entity", "delete_overlay", "put_entity", "patch_entity", "search"]


@pytest.mark.parametrize("name", BODY_ROUTES)
@pytest.mark.parametrize("problem", ["deep", "not utf-8", "duplicate key", "surrogate"])
def test_a_malformed_body_is_a_400_whatever_the_method(local: Any, name: str, problem: str) -> None:
    event = api_event(name, headers={"content-type": "application/json"})
    if problem == "deep":
        event["body"] = DEEP
    elif problem == "not utf-8":
        event["body"], event["isBase64Encoded"] = NOT_UTF8, True
    elif problem == "duplicate key":
        event["body"] = '{"confirm": "acme", "confirm": "acme"}'
    else:
        event["body"] = '{"confirm": "\\ud800"}'
    status, body = invoke(event)
    assert status == 400, (name, problem, body)
    assert body["error"]["code"] == "invalid_input"
    assert invoke(api_event("search", body={"query": "anything"}))[0] == 200  # the tenant is still there


def test_the_local_server_screens_a_delete_body_too(local: Any) -> None:
    from tests.handlers.serving import serving

    keys = {"qk_admin": {"tenant": "acme", "scopes": ["read", "write", "admin"]}}
    with serving(keys, 1 << 20) as url:
        for raw in (DEEP.encode(), b'{"confirm": "caf\xe9"}'):
            request = urllib.request.Request(
                url + "/tenant",
                data=raw,
                method="DELETE",
                headers={"authorization": "Bearer qk_admin", "content-type": "application/json"},
            )
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=30)
            assert refused.value.code == 400
            assert json.loads(refused.value.read())["error"]["code"] == "invalid_input"


@pytest.mark.parametrize(
    "position",
    [
        {"p": "entities", "after": [1]},
        {"p": "entities", "after": {"a": 1}},
        {"p": "entities", "after": ["2026-01-01", "task"]},
        {"p": "entities", "after": "x"},
        {"p": "log", "c": 5},
        {"p": "log", "c": ["a"]},
        {"p": "state", "after": [None, None, None]},
        {"p": 7},
    ],
)
def test_a_forged_export_cursor_is_a_400(local: Any, position: dict[str, Any]) -> None:
    cursor = encode_cursor(EXPORT_KIND, "acme", position)
    status, body = invoke(api_event("tenant_export", query={"cursor": cursor}))
    assert status == 400 and "cursor" in body["error"]["fields"], body


@pytest.mark.parametrize("version", [str(HUGE), str(2**64), "9" * 40])
def test_a_query_version_past_int64_is_a_400(local: Any, version: str) -> None:
    assert (
        invoke(api_event("put_entity", path="/entities/task/t-1", body={"title": "x", "version": 1}))[0]
        == 200
    )
    status, body = invoke(api_event("delete_entity", path="/entities/task/t-1", query={"version": version}))
    assert status == 400 and "version" in body["error"]["fields"], body
    assert invoke(api_event("get_entity", path="/entities/task/t-1"))[0] == 200


def test_mcp_tool_arguments_pass_the_same_gate(local: Any) -> None:
    from tests.handlers.test_mcp_server import error_of, run, server_for

    async def work(client: Any) -> None:
        refusals = [
            await client.call_tool(
                "delete_entity", {"entity_type": "task", "entity_id": "t", "version": HUGE}
            ),
            await client.call_tool(
                "upsert_entity",
                {"entity_type": "task", "entity_id": "t", "fields": {"title": "x", "version": 2**64}},
            ),
            await client.call_tool(
                "upsert_entity",
                {
                    "entity_type": "task",
                    "entity_id": "t",
                    "fields": {"title": "x", "deep": json.loads("[" * 70 + "]" * 70)},
                },
            ),
            await client.call_tool("search", {"query": "x", "filters": {"status": HUGE}}),
        ]
        for result in refusals:
            assert error_of(result)["code"] == "invalid_input", result
        fine = await client.call_tool(
            "upsert_entity", {"entity_type": "task", "entity_id": "t", "fields": {"title": "x"}}
        )
        assert not fine.is_error

    run(server_for(local, {"read", "write"}), work)


def test_an_overlay_too_big_for_one_dynamodb_item_is_a_413(local: Any) -> None:
    overlay = {
        "mission": "keep the harbour safe",
        "version": "1.0",
        "synthesis_policy": {"instructions": ["w " * 1950] * 100},
    }
    status, body = invoke(api_event("put_overlay", path="/overlays/big", body=overlay))
    assert status == 413 and body["error"]["code"] == "payload_too_large", body
    assert invoke(api_event("get_overlay", path="/overlays/big"))[0] == 404
    overlay["synthesis_policy"]["instructions"] = ["w " * 1950] * 10
    assert invoke(api_event("put_overlay", path="/overlays/big", body=overlay))[0] == 200

"""One rule for request bodies: a JSON body whose top-level type is not the one its route's published
schema takes (an object, on every route today) is a 400 naming it, and nothing of it is applied — not its
first element (Powertools' validation would take an array's head for a body that is not a list), on every
operation of the OpenAPI document that takes a JSON body, through the Lambda handler, `quarry serve` and
MCP tool arguments alike."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import anyio
import pytest

from tests.conftest import api_event, invoke, load_event
from tests.handlers.serving import serving

# Every operation that takes a JSON body, by the events/ sample that calls it with a body it accepts.
SAMPLES = {
    "putEntity": "put_entity",
    "patchEntity": "patch_entity",
    "setWeight": "context_put_weight",
    "setBudget": "context_put_budget",
    "putOverlay": "put_overlay",
    "search": "search",
    "bulkWrite": "bulk_entities",
    "assembleContext": "context_assemble",
    "sendFeedback": "context_feedback",
    "retrieve": "retrieve",
    "loadCorpus": "load_corpus",
    "batchGetEntities": "batch_get_entities",
    "embed": "embed",
    "eraseTenant": "delete_tenant",
    "reopenTenant": "reopen_tenant",
}
TASK_A = {"type": "task", "id": "t-a", "title": "alpha ledger"}
TASK_B = {"type": "task", "id": "t-b", "title": "beta ledger"}


def _wrong_bodies(sample: str) -> dict[str, str]:
    """Bodies of each wrong top-level type; the array holds the sample's good body, then another."""
    good = json.loads(load_event(sample)["body"])
    return {"an array": json.dumps([good, {"x": 5}]), "a string": json.dumps("text"), "a number": "42",
            "null": "null"}  # fmt: skip


def _export() -> str:
    """The tenant's whole export (what it stored), to compare before and after a refused request."""
    from handlers.lambda_functions.api import lambda_handler
    from handlers.local_server.devserver import FakeLambdaContext

    result = lambda_handler(api_event("tenant_export"), FakeLambdaContext(aws_request_id="test"))
    assert result["statusCode"] == 200, result
    return str(result["body"])


def _json_body_operations() -> set[str]:
    status, doc = invoke(api_event("openapi", tenant=None))
    assert status == 200
    return {
        op["operationId"]
        for item in doc["paths"].values()
        for op in item.values()
        if "application/json" in (op.get("requestBody") or {}).get("content", {})
    }


def test_every_json_body_operation_has_a_sample_here(local: Any) -> None:
    assert _json_body_operations() == set(SAMPLES)


@pytest.mark.parametrize("operation", sorted(SAMPLES))
def test_a_body_of_the_wrong_top_level_type_is_a_400_naming_it_and_writes_nothing(
    local: Any, operation: str
) -> None:
    assert invoke(api_event("bulk_entities", body={"items": [TASK_A]}))[0] == 200
    before = _export()
    for kind, raw in _wrong_bodies(SAMPLES[operation]).items():
        status, answer = invoke(api_event(SAMPLES[operation], raw_body=raw))
        assert status == 400, (operation, kind, answer)
        assert answer["error"]["message"] == f"the request body must be a JSON object, not {kind}", answer
        assert answer["error"]["fields"] == {"body": f"must be a JSON object, not {kind}"}
        assert _export() == before, (operation, kind)


def test_a_bulk_write_sent_as_an_array_writes_neither_item(local: Any) -> None:
    status, answer = invoke(api_event("bulk_entities", body=[{"items": [TASK_A]}, {"items": [TASK_B]}]))
    assert status == 400, answer
    for entity in (TASK_A, TASK_B):
        path = f"/entities/task/{entity['id']}"
        assert invoke(api_event("get_entity", path=path))[0] == 404


def test_an_erase_sent_as_an_array_does_not_erase(local: Any) -> None:
    assert invoke(api_event("bulk_entities", body={"items": [TASK_A]}))[0] == 200
    status, answer = invoke(api_event("delete_tenant", body=[{"confirm": "acme"}, 5]))
    assert status == 400, answer
    assert invoke(api_event("get_entity", path="/entities/task/t-a"))[0] == 200


def test_quarry_serve_refuses_an_array_body_the_same_way(local: Any) -> None:
    keys = {"k": {"tenant": "acme", "scopes": ["read", "write"]}}
    with serving(keys, 1 << 20) as url:
        request = urllib.request.Request(  # noqa: S310 - loopback
            url + "/entities",
            data=json.dumps([{"items": [TASK_A]}, {"items": [TASK_B]}]).encode(),
            method="POST",
            headers={"authorization": "Bearer k", "content-type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)  # noqa: S310
        assert refused.value.code == 400
        body = json.loads(refused.value.read())
        assert body["error"]["fields"] == {"body": "must be a JSON object, not an array"}
    assert invoke(api_event("get_entity", path="/entities/task/t-a"))[0] == 404


@pytest.mark.parametrize(("arguments", "kind"), [([{"query": "x"}], "an array"), ("x", "a string"),
                                                 (5, "a number"), (None, "null")])  # fmt: skip
def test_mcp_tool_arguments_of_the_wrong_type_are_refused_naming_it(
    local: Any, arguments: Any, kind: str
) -> None:
    pytest.importorskip("mcp")
    from tests.handlers.test_mcp_tools import body_of, server_for

    server = server_for(local)

    async def call() -> Any:
        return await server.call_tool("search", arguments)

    refused = body_of(anyio.run(call))  # the HTTP API's error body, as every tool failure
    assert refused["code"] == "invalid_input"
    assert f"tool arguments must be a JSON object, not {kind}" in refused["message"]

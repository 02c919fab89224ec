"""What the schemathesis run of /openapi.json found (tests/handlers/test_openapi_fuzz.py), pinned: each was a
500 before its fix."""

from __future__ import annotations

from typing import Any

from tests.conftest import api_event, invoke


def test_a_versionless_delete_of_an_entity_at_the_largest_version_is_applied(local: Any) -> None:
    top = 2**63 - 1
    assert (
        invoke(api_event("put_entity", path="/entities/task/top", body={"title": "x", "version": top}))[0]
        == 200
    )
    event = api_event("delete_entity", path="/entities/task/top", query={})
    status, body = invoke(event)
    assert status == 200 and body["outcome"] == "applied" and body["version"] == top
    assert invoke(api_event("get_entity", path="/entities/task/top"))[0] == 404


def test_delete_tenant_with_a_body_that_is_not_json_is_a_400(local: Any) -> None:
    status, body = invoke(api_event("delete_tenant", raw_body="J%\udc97Q2"))
    assert status == 400 and body["error"]["code"] == "invalid_input"
    status, body = invoke(api_event("delete_tenant", raw_body='{"confirm": "acme", "confirm": "x"}'))
    assert status == 400 and "repeats the key" in body["error"]["fields"]["body"]

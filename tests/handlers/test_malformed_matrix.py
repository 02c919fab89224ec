"""A table of malformed requests across every route, through the Lambda handler. Each gets the
documented 4xx with the one error body (`fields` naming the problem) — never a 5xx, never a stack trace.

Classes: hostile JSON on every body route (lone surrogates, NaN/Infinity, duplicate keys, deep nesting,
huge numbers, wrong top-level type, null, empty, truncated, not UTF-8, bad base64, wrong or missing media
type), plus per-route field errors, query and path abuse, auth and scope, methods and unknown routes."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.conftest import api_event, invoke

BODY_ROUTES = [
    "search",
    "put_entity",
    "patch_entity",
    "bulk_entities",
    "context_assemble",
    "context_feedback",
    "context_put_weight",
    "retrieve",
    "put_overlay",
    "load_corpus",
]
HOSTILE_BODIES: dict[str, tuple[str, int]] = {
    "lone_surrogate_value": ('{"x": "\\ud800"}', 400),
    "lone_surrogate_key": ('{"\\udfff": 1}', 400),
    "nan": ('{"x": NaN}', 400),
    "infinity": ('{"x": -Infinity}', 400),
    "float_overflow": ('{"x": 1e999}', 400),
    "int_beyond_int64": ('{"x": 9223372036854775808}', 400),
    "duplicate_keys": ('{"x": 1, "x": 2}', 400),
    "deep_nesting": ('{"x": ' + "[" * 3000 + "]" * 3000 + "}", 400),
    "top_level_array": ("[]", 400),
    "top_level_string": ('"just a string"', 400),
    "top_level_number": ("42", 400),
    "null_body": ("null", 400),
    "truncated": ('{"x": ', 400),
    "trailing_garbage": ('{"x": 1} {"y": 2}', 400),
    "single_quotes": ("{'x': 1}", 400),
    "comment": ('{"x": 1 /* hi */}', 400),
}
ERROR_CODES = {
    400: "invalid_input",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
}


def check(event: dict[str, Any], expected: int, field: str | None = None) -> None:
    status, body = invoke(event)
    assert status == expected, body
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "fields"}
    assert body["error"]["code"] == ERROR_CODES[expected] or expected == 409
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in body["error"]["fields"].items())
    if expected == 400:
        assert body["error"]["fields"], body  # a 400 always names what is wrong
    if field is not None:
        assert field in body["error"]["fields"], body


@pytest.mark.parametrize("route", BODY_ROUTES)
@pytest.mark.parametrize("kind", sorted(HOSTILE_BODIES))
def test_hostile_json_on_every_body_route(local: Any, route: str, kind: str) -> None:
    raw, expected = HOSTILE_BODIES[kind]
    check(api_event(route, raw_body=raw), expected)


@pytest.mark.parametrize("route", BODY_ROUTES)
def test_bodies_that_are_not_utf8_or_not_json_media(local: Any, route: str) -> None:
    event = api_event(route)
    event["body"], event["isBase64Encoded"] = base64.b64encode(b'{"x": "\xc3\x28"}').decode(), True
    check(event, 400, "body")
    event = api_event(route)
    event["body"], event["isBase64Encoded"] = "***not base64***", True
    check(event, 400, "body")
    check(api_event(route, headers={"content-type": "text/plain"}), 415, "content-type")
    check(api_event(route, headers={"content-type": "application/x-www-form-urlencoded"}), 415)
    no_type = api_event(route)
    del no_type["headers"]["content-type"]
    check(no_type, 415, "content-type")
    check(api_event(route, raw_body='{"pad": "' + "x" * 1_100_000 + '"}'), 413, "body")


FIELD_CASES: list[tuple[str, dict[str, Any], int, str | None]] = [
    # search
    ("search", {"body": {"query": 5}}, 400, "query"),
    ("search", {"body": {"query": None}}, 400, "query"),
    ("search", {"body": {"query": ["a"]}}, 400, "query"),
    ("search", {"body": {"query": "ok", "limit": True}}, 400, "limit"),
    ("search", {"body": {"query": "ok", "limit": 2.5}}, 400, "limit"),
    ("search", {"body": {"query": "ok", "limit": -1}}, 400, "limit"),
    ("search", {"body": {"query": "ok", "explain": "yes please"}}, 400, "explain"),
    ("search", {"body": {"query": "ok", "entities": "task"}}, 400, "entities"),
    ("search", {"body": {"query": "ok", "filters": ["status"]}}, 400, "filters"),
    ("search", {"body": {"query": "ok", "filters": {"status": {"$ne": 1}}}}, 400, None),
    ("search", {"body": {"query": "\u0000"}}, 200, None),
    # entities
    ("put_entity", {"body": {"content": {"nested": "object"}}}, 400, "content"),
    ("put_entity", {"body": {"content": "x", "version": "7"}}, 400, "version"),
    ("put_entity", {"body": {"content": "x", "version": True}}, 400, "version"),
    ("put_entity", {"body": {"content": "x", "created_at": "yesterday"}}, 400, "created_at"),
    ("put_entity", {"body": {"content": "x", "source": ""}}, 400, "source"),
    ("put_entity", {"body": {"content": "x", "owner": "o" * 500}}, 400, "owner"),
    ("put_entity", {"body": {"content": "x"}, "path": "/entities/memory/" + "i" * 300}, 400, "id"),
    ("put_entity", {"body": {"content": "x"}, "path": "/entities/no-such-type/x"}, 400, "type"),
    ("patch_entity", {"body": {}}, 400, "body"),
    ("patch_entity", {"body": {"status": "done"}, "path": "/entities/task/never-written"}, 404, None),
    ("delete_entity", {"query": {"version": "-3"}}, 400, "version"),
    ("delete_entity", {"query": {"version": "seven"}}, 400, "version"),
    ("delete_entity", {"path": "/entities/task/never-written"}, 404, None),
    ("bulk_entities", {"body": {"items": []}}, 400, "items"),
    ("bulk_entities", {"body": {"items": {"type": "task"}}}, 400, "items"),
    (
        "bulk_entities",
        {"body": {"items": [{"type": "task", "id": "a", "title": "t"}], "extra": 1}},
        400,
        "extra",
    ),
    ("bulk_entities", {"body": {}}, 400, "items"),
    # context
    ("context_assemble", {"body": {"query": "q"}}, 400, "caller"),
    ("context_assemble", {"body": {"query": "q", "caller": "c", "token_budget": 0}}, 400, "token_budget"),
    ("context_assemble", {"body": {"query": "q", "caller": "c", "token_budget": 10**9}}, 400, "token_budget"),
    ("context_assemble", {"body": {"query": "q", "caller": "c", "log": "perhaps"}}, 400, "log"),
    ("context_assemble", {"body": {"query": "q", "caller": "   "}}, 400, "caller"),
    ("context_feedback", {"body": {"assembly_id": "missing", "used_source_ids": []}}, 404, None),
    ("context_feedback", {"body": {"assembly_id": "a", "used_source_ids": "all"}}, 400, "used_source_ids"),
    ("context_feedback", {"body": {"used_source_ids": []}}, 400, "assembly_id"),
    ("context_put_weight", {"body": {"weight": -1}}, 400, "weight"),
    ("context_put_weight", {"body": {"token_share": 0.99}}, 400, "token_share"),
    ("context_put_weight", {"body": {"weight": "heavy"}}, 400, "weight"),
    ("context_log", {"query": {"limit": "0"}}, 400, "limit"),
    ("context_log", {"query": {"limit": "lots"}}, 400, "limit"),
    ("context_log", {"query": {"cursor": "%%%"}}, 400, "cursor"),
    ("context_log", {"query": {"caller": "c" * 500}}, 400, "caller"),
    ("context_weights", {"query": {"limit": "-5"}}, 400, "limit"),
    ("context_weights", {"query": {"cursor": "eyJub3QiOiAiYSBsaXN0In0"}}, 400, "cursor"),
    # governance
    ("retrieve", {"body": {"task_text": "x"}}, 400, "role_id"),
    ("retrieve", {"body": {"role_id": "r", "task_text": ""}}, 400, "task_text"),
    ("retrieve", {"body": {"role_id": "r", "task_text": "x", "lexical_only": "maybe"}}, 400, "lexical_only"),
    ("put_overlay", {"body": {"role_id": "dba", "retrieval_policy": {"max_results": "many"}}}, 400, None),
    ("put_overlay", {"body": {"role_id": "dba", "unknown_section": {}}}, 400, None),
    ("get_overlay", {"path": "/overlays/nobody"}, 404, None),
    ("delete_overlay", {"path": "/overlays/nobody"}, 404, None),
    ("eval_overlay", {"path": "/overlays/nobody/eval"}, 404, None),
    ("tune_overlay", {"path": "/overlays/nobody/tune"}, 404, None),
    ("get_schema", {"path": "/schemas/../../etc/passwd"}, 404, None),
    ("get_schema", {"path": "/schemas/no_such_schema"}, 404, None),
    ("load_corpus", {"body": {"documents": "all of them"}}, 400, "documents"),
    ("load_corpus", {"body": {"docs": []}}, 400, "documents"),
    # auth, scopes, methods, routes
    ("search", {"tenant": None, "body": {"query": "x"}}, 401, None),
    ("context_eval", {"scopes": ["read", "write"]}, 403, None),
    ("put_entity", {"scopes": ["read"]}, 403, None),
    ("context_put_weight", {"scopes": ["read", "write"]}, 403, None),
    ("load_corpus", {"scopes": ["read"]}, 403, None),
    ("health", {"method": "POST"}, 405, "method"),
    ("search", {"method": "DELETE"}, 405, "method"),
    ("context_weights", {"method": "OPTIONS"}, 405, "method"),
    ("get_overlay", {"method": "PATCH"}, 405, "method"),
    ("health", {"path": "/entities/task"}, 404, None),
    ("health", {"path": "/v2/search"}, 404, None),
    ("health", {"path": "/%2e%2e/etc/passwd"}, 404, None),
]


@pytest.mark.parametrize(("route", "change", "expected", "field"), FIELD_CASES)
def test_bad_fields_queries_paths_and_auth(
    local: Any, route: str, change: dict[str, Any], expected: int, field: str | None
) -> None:
    event = api_event(route, **change)
    if expected == 200:
        status, body = invoke(event)
        assert status == 200, body
        return
    check(event, expected, field)


def test_the_matrix_has_at_least_80_cases() -> None:
    hostile = len(BODY_ROUTES) * len(HOSTILE_BODIES) + len(BODY_ROUTES) * 6
    assert hostile + len(FIELD_CASES) >= 80

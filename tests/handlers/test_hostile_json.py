"""Hostile JSON is a 400 naming the problem, never a 500; in a batch, one bad item is
reported in its place and the others are indexed."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.conftest import api_event, invoke

SURROGATE = "\\ud800"  # as it appears on the wire: a JSON escape for a lone high surrogate


@pytest.mark.parametrize(
    ("event", "raw", "field"),
    [
        ("search", f'{{"query": "{SURROGATE}"}}', "query"),
        ("search", f'{{"query": "ok {SURROGATE} ok"}}', "query"),
        ("search", f'{{"query": "ok", "filters": {{"status": "{SURROGATE}"}}}}', "filters.status"),
        ("put_entity", f'{{"content": "{SURROGATE}"}}', "content"),
        ("put_entity", '{"content": "x", "tags": ["\\udfff"]}', "tags.0"),
        ("patch_entity", f'{{"title": "{SURROGATE}"}}', "title"),
        ("context_assemble", f'{{"query": "{SURROGATE}", "caller": "a"}}', "query"),
        ("retrieve", f'{{"role_id": "r", "task_text": "{SURROGATE}"}}', "task_text"),
        ("put_overlay", f'{{"mission": "{SURROGATE}"}}', "mission"),
    ],
)
def test_a_lone_surrogate_in_any_text_field_is_a_400_naming_it(
    local: Any, event: str, raw: str, field: str
) -> None:
    status, body = invoke(api_event(event, raw_body=raw))
    assert status == 400, body
    assert "lone surrogate" in body["error"]["fields"][field]


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ('{"query": NaN}', "NaN"),
        ('{"query": "x", "limit": Infinity}', "Infinity"),
        ('{"query": "x", "limit": -Infinity}', "Infinity"),
        ('{"query": "x", "limit": 1e400}', "1e400"),
        ('{"query": "x", "query": "y"}', "repeats the key 'query'"),
        ("[" * 5000 + "]" * 5000, "nests deeper than 64"),
        ('{"query": "x", "filters": ' + '{"a": ' * 100 + "1" + "}" * 100 + "}", "nests deeper than 64"),
        ('{"query": "x", "limit": 1' + "0" * 5000 + "}", "beyond"),
        ('{"query": "x",', "is not valid JSON"),
    ],
)
def test_json_that_is_not_i_json_is_a_400_naming_the_problem(local: Any, raw: str, problem: str) -> None:
    status, body = invoke(api_event("search", raw_body=raw))
    assert status == 400, body
    assert problem in " ".join(body["error"]["fields"].values())


def test_a_body_that_is_not_utf8_is_a_400(local: Any) -> None:
    event = api_event("search")
    event["body"], event["isBase64Encoded"] = base64.b64encode(b'{"query": "caf\xe9"}').decode(), True
    status, body = invoke(event)
    assert status == 400 and "not valid UTF-8" in body["error"]["fields"]["body"]


def test_a_huge_version_is_a_400_not_a_storage_error(local: Any) -> None:
    status, body = invoke(
        api_event("put_entity", raw_body='{"content": "x", "version": 99999999999999999999}')
    )
    assert status == 400 and "version" in body["error"]["fields"]


def test_a_leading_byte_order_mark_is_ignored(local: Any) -> None:
    status, body = invoke(api_event("search", raw_body='\ufeff{"query": "anything"}'))
    assert status == 200, body


def test_in_bulk_a_bad_item_is_reported_in_place_and_the_others_are_indexed(local: Any) -> None:
    raw = (
        '{"items": [{"type": "task", "id": "good-1", "title": "Plan the launch"},'
        f' {{"type": "task", "id": "bad-text", "title": "{SURROGATE}"}},'
        f' {{"type": "task", "id": "x{SURROGATE}", "title": "bad id"}},'
        ' {"type": "task", "id": "good-2", "title": "Launch checklist"}]}'
    )
    status, body = invoke(api_event("bulk_entities", raw_body=raw))
    assert status == 200, body
    assert body["indexed"] == 2
    assert [e["index"] for e in body["errors"]] == [1, 2]
    assert "lone surrogate" in body["errors"][0]["fields"]["items.1.title"]
    # An item that is not even an object breaks the published BulkItem schema: the whole request is a 400
    # naming each one, and nothing of it is indexed.
    status, body = invoke(api_event("bulk_entities", raw_body='{"items": [null, 5, [], {"type": "task"}]}'))
    assert status == 400 and set(body["error"]["fields"]) == {
        "items.0",
        "items.1",
        "items.2",
        "items.3.id",
        "items.3.title",
    }
    status, found = invoke(api_event("search", body={"query": "launch"}))
    assert status == 200 and {r["entity_id"] for r in found["results"]} == {"good-1", "good-2"}


def test_in_a_corpus_a_bad_document_is_reported_and_the_others_load(local: Any) -> None:
    raw = (
        '{"documents": [{"id": "d1", "title": "Runbook", "text": "restart the service"},'
        f' {{"id": "d2", "title": "Broken", "text": "half an emoji {SURROGATE}"}}]}}'
    )
    status, body = invoke(api_event("load_corpus", raw_body=raw))
    assert status == 200, body
    assert body["documents_ingested"] == 1
    assert [e["index"] for e in body["errors"]] == [1]

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


# A number beyond ±(2^63 - 1) written as a float (1.6e226) in an entity's or a corpus document's own fields
# was accepted, while the published schema (JsonValue, whose numbers that large are integers to JSON Schema)
# refused it. The server now refuses it too, naming the field; a vector's numbers keep their own rule.
BEYOND = 1.6e226


def test_a_huge_float_in_an_entity_field_is_a_400_naming_it(local: Any) -> None:
    body = {"title": "x", "notes": {"weight": [1, -BEYOND]}, "priority": BEYOND}
    status, answer = invoke(api_event("put_entity", path="/entities/task/huge", body=body))
    assert status == 400, answer
    fields = answer["error"]["fields"]
    assert set(fields) == {"notes.weight.1", "priority"}
    assert "9223372036854775807" in fields["priority"]
    bulk = {
        "items": [
            {"type": "task", "id": "a", "title": "fine"},
            {"type": "task", "id": "b", "title": "x", "n": BEYOND},
        ]
    }
    status, answer = invoke(api_event("bulk_entities", body=bulk))
    assert status == 200 and answer["indexed"] == 1, answer
    assert [e["fields"] for e in answer["errors"]] == [{"items.1.n": fields["priority"]}]
    patch = api_event("patch_entity", path="/entities/task/a", body={"n": -BEYOND})
    assert invoke(patch)[0] == 400
    assert (
        invoke(api_event("put_entity", path="/entities/task/ok", body={"title": "x", "n": 9.2e18}))[0] == 200
    )


def test_a_huge_float_in_a_corpus_document_is_a_400_naming_it(local: Any) -> None:
    documents = [
        {"id": "d", "title": "T", "text": "words", "extra": BEYOND},
        {"id": "e", "title": "T", "chunks": [{"text": "a passage", "rank": -BEYOND}]},
    ]
    status, answer = invoke(api_event("load_corpus", body={"documents": documents}))
    assert status == 400, answer
    assert set(answer["error"]["fields"]) == {"documents.0.extra", "documents.1.chunks.0.rank"}

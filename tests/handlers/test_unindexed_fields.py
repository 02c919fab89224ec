"""Nothing silently unsearchable: a write names the fields its type does not index (`unindexed_fields`),
and a document's title is required by one rule whatever else the write carries."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import api_event, invoke


def _put(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    return invoke(api_event("put_entity", path=path, body=body))


def test_writes_name_the_fields_no_search_will_find(local: Any) -> None:
    status, body = _put(
        "/entities/document/d1", {"title": "Notes", "body": "zebra crossing", "colour": "red"}
    )
    assert status == 200 and body["unindexed_fields"] == ["body", "colour"]
    status, body = _put("/entities/document/d2", {"title": "Notes", "text": "zebra crossing"})
    assert status == 200 and body["unindexed_fields"] == []
    status, answer = invoke(api_event("search", body={"query": "zebra", "strategy": "keyword"}))
    assert [r["entity_id"] for r in answer["results"]] == ["d2"]  # what the report warned of
    status, body = invoke(api_event("patch_entity", path="/entities/document/d2", body={"mood": "calm"}))
    assert status == 200 and body["unindexed_fields"] == ["mood"]
    items = [
        {"type": "task", "id": "t1", "title": "One", "notes": "x"},
        {"type": "task", "id": "t2", "title": "Two", "status": "open", "estimate": 3},
    ]
    status, body = invoke(api_event("bulk_entities", body={"items": items}))
    assert status == 200 and body["unindexed_fields"] == ["estimate", "notes"]


@pytest.mark.parametrize("body", [{}, {"text": "  "}, {"body": "words in an undeclared field"}])
def test_a_documents_title_is_required_by_one_rule(local: Any, body: dict[str, Any]) -> None:
    status, answer = _put("/entities/document/d", body)
    assert status == 400, answer
    assert answer["error"]["fields"] == {"title": "is required for a document without text or chunks"}


def test_a_document_with_text_needs_no_title(local: Any) -> None:
    status, body = _put("/entities/document/d", {"text": "an abstract without a title"})
    assert status == 200, body

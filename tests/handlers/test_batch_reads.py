"""Stored fields without one GET per hit: `return_fields` on POST /search, and POST /entities/batch-get
(up to 100 ids, the caller's tenant only)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import api_event, invoke

TASK = {
    "type": "task",
    "id": "t1",
    "title": "Quarterly report",
    "description": "Numbers for the board",
    "status": "open",
    "project_id": "p9",
}


def _write(items: list[dict[str, Any]], tenant: str) -> None:
    status, body = invoke(api_event("bulk_entities", tenant=tenant, body={"items": items}))
    assert status == 200 and not body["errors"], body


def _batch_get(items: Any, tenant: str = "acme") -> tuple[int, dict[str, Any]]:
    return invoke(api_event("batch_get_entities", tenant=tenant, body={"items": items}))


def test_batch_get_answers_in_order_and_never_across_tenants(local: Any) -> None:
    _write([TASK, {**TASK, "id": "t2", "title": "Second"}, {**TASK, "id": "gone"}], "acme")
    _write([{**TASK, "id": "theirs", "title": "Globex only"}], "globex")
    status, _ = invoke(api_event("delete_entity", path="/entities/task/gone", query={}))
    assert status == 200
    wanted = [
        {"type": "task", "id": "t2"},
        {"type": "task", "id": "theirs"},
        {"type": "task", "id": "t1"},
        {"type": "task", "id": "t2"},
        {"type": "task", "id": "gone"},
    ]
    status, body = _batch_get(wanted)
    assert status == 200, body
    assert [e["entity_id"] for e in body["found"]] == ["t2", "t1"]
    assert body["found"][1]["fields"]["description"] == "Numbers for the board"
    assert body["missing"] == [{"type": "task", "id": "theirs"}, {"type": "task", "id": "gone"}]
    status, body = _batch_get([{"type": "task", "id": "theirs"}], tenant="globex")
    assert status == 200 and [e["title"] for e in body["found"]] == ["Globex only"]


@pytest.mark.parametrize(
    ("items", "field"),
    [
        ([], "items"),
        ([{"type": "task", "id": f"t{i}"} for i in range(101)], "items"),
        ([{"type": "task", "id": "t1"}, {"type": "spaceship", "id": "x"}], "items.1.type"),
        ([{"type": "task", "id": ""}], "items.0.id"),
    ],
)
def test_a_bad_batch_get_is_a_400_naming_the_field(local: Any, items: Any, field: str) -> None:
    status, body = _batch_get(items)
    assert status == 400 and field in body["error"]["fields"], body


def _results(tenant: str, **extra: Any) -> list[dict[str, Any]]:
    status, body = invoke(api_event("search", tenant=tenant, body={"query": "quarterly report", **extra}))
    assert status == 200, body
    return list(body["results"])


def test_return_fields_brings_the_stored_fields_of_the_callers_entities(local: Any) -> None:
    _write([TASK], "acme")
    _write([{**TASK, "description": "Globex secret"}], "globex")
    (hit,) = _results("acme", return_fields="all")
    assert hit["fields"]["description"] == "Numbers for the board"
    assert hit["fields"]["project_id"] == "p9"
    (hit,) = _results("acme", return_fields=["description", "nonexistent"])
    assert hit["fields"] == {"description": "Numbers for the board"}
    (hit,) = _results("acme", return_fields="none")
    assert (hit["entity_id"], hit["title"], hit["snippet"], hit["metadata"], hit.get("fields")) == (
        "t1",
        "",
        "",
        {},
        None,
    )
    (hit,) = _results("acme")  # the default: as before, no stored fields
    assert hit["title"] == "Quarterly report" and hit.get("fields") is None
    (hit,) = _results("globex", return_fields=["description"])
    assert hit["fields"] == {"description": "Globex secret"}
    status, body = invoke(api_event("search", body={"query": "x", "return_fields": "some"}))
    assert status == 400 and "return_fields" in body["error"]["fields"]

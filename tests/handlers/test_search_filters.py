"""Range, `not`, `exists` and any-of filters through POST /search on the local backend: what passes,
that another tenant's entities never do, and 400s that name the field and the operator."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import api_event, invoke


def _task(eid: str, due: str | None, status: str) -> dict[str, Any]:
    item = {"type": "task", "id": eid, "title": f"Quarterly report {eid}", "status": status}
    return item if due is None else {**item, "due_date": due}


def _write(tenant: str, items: list[dict[str, Any]]) -> None:
    status, body = invoke(api_event("bulk_entities", tenant=tenant, body={"items": items}))
    assert status == 200 and not body["errors"], body


def _ids(tenant: str, filters: dict[str, Any], strategy: str = "auto") -> set[str]:
    payload = {"query": "quarterly report", "filters": filters, "strategy": strategy}
    status, body = invoke(api_event("search", tenant=tenant, body=payload))
    assert status == 200, body
    return {r["entity_id"] for r in body["results"]}


def test_filters_combine_within_the_callers_tenant(local: Any) -> None:
    _write(
        "acme",
        [
            _task("jan", "2026-01-15", "open"),
            _task("feb", "2026-02-20T10:00:00Z", "done"),
            _task("none", None, "open"),
        ],
    )
    _write("globex", [_task("theirs", "2026-01-20", "open")])
    for strategy in ("keyword", "semantic", "hybrid"):
        assert _ids("acme", {"due_date": {"gte": "2026-01-01", "lte": "2026-01-31"}}, strategy) == {"jan"}
        assert _ids("acme", {"due_date": {"exists": False}}, strategy) == {"none"}
        assert _ids("acme", {"status": {"not": "done"}, "due_date": {"lt": "2026-03-01"}}, strategy) == {
            "jan"
        }
        assert _ids("acme", {"status": ["open", "done"], "created_at": {"gte": "2000-01-01"}}, strategy) == {
            "jan",
            "feb",
            "none",
        }
    assert _ids("globex", {"due_date": {"gte": "2026-01-01"}}) == {"theirs"}


@pytest.mark.parametrize(
    ("filters", "field"),
    [
        ({"due_date": {"gte": "soon"}}, "filters.due_date.gte"),
        ({"due_date": {"gte": True}}, "filters.due_date.gte"),
        ({"due_date": {"between": ["2026-01-01", "2026-02-01"]}}, "filters.due_date.between"),
        ({"created_at": {"not": "2026-01-01"}}, "filters.created_at.not"),
        ({"created_at": "2026-01-01"}, "filters.created_at"),
        ({"created_at": {"gt": 5}}, "filters.created_at.gt"),
        ({"owner": {"gt": "a"}}, "filters.owner.gt"),
        ({"status": {"exists": "yes"}}, "filters.status.exists"),
        ({"status": {"in": "open"}}, "filters.status.in"),
        ({"status": {"not": []}}, "filters.status.not"),
        ({"status": {"not": [{"a": 1}]}}, "filters.status.not"),
        ({"status": {}}, "filters.status"),
        ({"colour": {"gt": 1}}, "filters.colour"),
    ],
)
def test_a_bad_filter_is_a_400_naming_the_field_and_the_operator(
    local: Any, filters: dict[str, Any], field: str
) -> None:
    status, body = invoke(api_event("search", body={"query": "report", "filters": filters}))
    assert status == 400, body
    assert body["error"]["code"] == "invalid_input"
    assert field in body["error"]["fields"], body


def test_facets_count_the_callers_matches_beyond_the_page(local: Any) -> None:
    _write("acme", [_task(f"t{i}", None, "done" if i % 3 == 0 else "open") for i in range(12)])
    _write("globex", [_task("theirs", None, "blocked")])
    payload = {"query": "quarterly report", "limit": 2, "facets": ["status", "source"], "strategy": "keyword"}
    status, body = invoke(api_event("search", body=payload))
    assert status == 200 and len(body["results"]) == 2
    assert body["facets"] == {"status": {"open": 8, "done": 4}, "source": {"tasks": 12}}
    status, body = invoke(api_event("search", body={**payload, "filters": {"status": {"not": "open"}}}))
    assert body["facets"]["status"] == {"done": 4}
    status, body = invoke(api_event("search", tenant="globex", body=payload))
    assert body["facets"]["status"] == {"blocked": 1}
    for bad, field in ((["colour"], "facets.0"), (["status", "created_at"], "facets.1"), ([], "facets")):
        status, body = invoke(api_event("search", body={"query": "report", "facets": bad}))
        assert status == 400 and field in body["error"]["fields"], body


@pytest.mark.parametrize(
    "bound",
    ["2026-01-01\n", "2026-01-01T25:99", "2026-02-30", "2026-01-01T23:60", "2026-01-01T09:30:61Z",
     "2026-01-01T09:30+24:00", "2026-13-01", "2026-01-01T09:30Z\n"],
)  # fmt: skip
@pytest.mark.parametrize("field", ["due_date", "created_at"])
def test_a_date_bound_that_names_no_real_moment_is_a_400_naming_the_bound(
    local: Any, field: str, bound: str
) -> None:
    filters = {field: {"gte": bound}}
    status, body = invoke(api_event("search", body={"query": "report", "filters": filters}))
    assert status == 400, body
    assert f"filters.{field}.gte" in body["error"]["fields"], body


@pytest.mark.parametrize(
    "bound",
    ["2026-01-01", "2026-01-01T09:30", "2026-01-01 09:30:15", "2026-01-01T09:30:15.250Z",
     "2026-01-01T09:30:15,5+01:00", "2026-01-01T09:30-0530", "2024-02-29T23:59:59Z"],
)  # fmt: skip
def test_every_form_of_a_real_date_bound_is_accepted(local: Any, bound: str) -> None:
    _write("acme", [_task("later", "2027-06-01", "open")])
    assert _ids("acme", {"due_date": {"gte": bound}, "created_at": {"gte": bound}}) == {"later"}

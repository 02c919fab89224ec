"""The filter operators of a search (core/search/filters.py: ranges, `in`, `not`, `exists`) on every SearchIndex
adapter, inside both retrievers: the same entities pass on SQLite and on OpenSearch."""

from __future__ import annotations

import dataclasses
from typing import Any

from core.models import Filters, LexicalQuery
from core.search.filters import COMMON_FILTERS, parse_filters
from tests.adapters.search_index_contract import lex, record, unit, vec

FILTERABLE = {"status", "tags", "due_date", "priority", *COMMON_FILTERS}
# id → (metadata, owner, created_at); `e`'s priority is a boolean, `d`'s a text: neither is a number.
ENTITIES: dict[str, tuple[dict[str, Any], str | None, str]] = {
    "a": (
        {"due_date": "2026-01-10", "priority": 1, "status": "open", "tags": ["x", "y"]},
        None,
        "2026-01-01T00:00:00Z",
    ),
    "b": (
        {"due_date": "2026-01-31T23:00:00Z", "priority": 5.5, "status": "done", "tags": ["y"]},
        None,
        "2026-02-01T00:00:00Z",
    ),
    "c": ({"due_date": "2026-03-01", "priority": -2, "status": "open"}, "o1", "2026-02-15T08:00:00Z"),
    "d": ({"priority": "high", "tags": []}, None, "2026-03-01T00:00:00Z"),
    "e": ({"priority": True, "status": None}, None, "2026-03-02T00:00:00Z"),
}
CASES: list[tuple[dict[str, Any], set[str]]] = [
    ({"priority": {"gt": 1}}, {"b"}),
    ({"priority": {"gte": 1}}, {"a", "b"}),
    ({"priority": {"lt": 0}}, {"c"}),
    ({"priority": {"lte": 1, "gt": -5}}, {"a", "c"}),
    ({"priority": {"gte": -2.5, "lte": 5.5}}, {"a", "b", "c"}),
    ({"due_date": {"lte": "2026-01-31"}}, {"a", "b"}),  # a date-only upper bound keeps its whole day
    ({"due_date": {"lt": "2026-01-31"}}, {"a"}),
    ({"due_date": {"gt": "2026-01-31"}}, {"c"}),
    ({"due_date": {"gte": "2026-01-31T12:00:00Z"}}, {"b", "c"}),
    ({"created_at": {"gte": "2026-02-01"}}, {"b", "c", "d", "e"}),
    ({"created_at": {"gt": "2026-02-01T00:00:00Z", "lt": "2026-03-01"}}, {"c"}),
    ({"updated_at": {"lte": "2026-01-01"}}, {"a"}),
    ({"status": {"not": "done"}}, {"a", "c", "d", "e"}),  # no status passes `not`
    ({"tags": {"not": ["x"]}}, {"b", "c", "d", "e"}),
    ({"tags": {"exists": True}}, {"a", "b"}),  # an empty list is no value
    ({"tags": {"exists": False}}, {"c", "d", "e"}),
    ({"status": {"exists": False}}, {"d", "e"}),  # null is no value
    ({"owner": {"exists": True}}, {"c"}),
    ({"owner": {"not": "o1"}}, {"a", "b", "d", "e"}),
    ({"status": ["open", "done"]}, {"a", "b", "c"}),
    ({"status": {"in": ["done"]}}, {"b"}),
    ({"status": "open", "due_date": {"gte": "2026-02-01"}, "tags": {"exists": False}}, {"c"}),
    ({"status": {"not": "done", "exists": True}, "priority": {"gte": 0}}, {"a"}),
]


def _write(index: Any, tenant: str, prefix: str = "") -> None:
    for eid, (metadata, owner, created) in ENTITIES.items():
        rec = record(
            tenant, "task", prefix + eid, "shared words", owner=owner, metadata=metadata, vec=unit(1, 0)
        )
        index.upsert(dataclasses.replace(rec, created_at=created, updated_at=created))


class SearchFilterContract:
    """Every filter operator, alone and combined, on both retrievers, within one tenant."""

    def test_each_operator_keeps_the_same_entities_in_both_retrievers(self, index: Any) -> None:
        _write(index, "t")
        _write(index, "u", prefix="u-")  # another tenant's entities pass every filter and never show
        for raw, expected in CASES:
            filters = parse_filters(raw, (), FILTERABLE)
            assert set(lex(index, "t", "shared", filters=filters)) == expected, raw
            assert set(vec(index, "t", unit(1, 0), filters)) == expected, raw

    def test_a_selective_filter_still_returns_k_results(self, index: Any) -> None:
        for i in range(40):  # better matches in both retrievers, outside the filter
            index.upsert(record("t", "task", f"n{i}", "shared shared words", vec=unit(1, 0.01 * i)))
        for i in range(3):
            rec = record("t", "task", f"due{i}", "shared words", metadata={"due_date": f"2026-05-0{i + 1}"})
            index.upsert(
                dataclasses.replace(rec, chunks=(dataclasses.replace(rec.chunks[0], embedding=unit(0, 1)),))
            )
        filters = parse_filters({"due_date": {"gte": "2026-05-01", "lt": "2026-06-01"}}, (), FILTERABLE)
        wanted = {"due0", "due1", "due2"}
        assert set(lex(index, "t", "shared", filters=filters, k=3)) == wanted
        assert set(vec(index, "t", unit(1, 0), filters, k=3)) == wanted

    def test_facets_count_every_match_of_the_query_within_the_filters(self, index: Any) -> None:
        _write(index, "t")
        _write(index, "u", prefix="u-")  # another tenant's counts never add in
        index.upsert(record("t", "task", "z", "other text", metadata={"status": "open", "tags": ["x"]}))
        words = LexicalQuery(("shared",))
        fields = ["status", "tags", "priority", "owner"]
        counts = index.facets("t", words, Filters(), fields, 100)
        assert counts["status"] == {"open": 2, "done": 1}
        assert list(counts["tags"].items()) == [("y", 2), ("x", 1)]  # most frequent first
        assert counts["priority"] == {"1": 1, "5.5": 1, "-2": 1, "high": 1, "true": 1}
        assert counts["owner"] == {"o1": 1}
        everything = index.facets("t", None, Filters(), ["status", "tags"], 100)  # no words: all entities
        assert everything == {"status": {"open": 3, "done": 1}, "tags": {"x": 2, "y": 2}}
        open_only = parse_filters({"status": "open", "due_date": {"lt": "2026-02-01"}}, (), FILTERABLE)
        assert index.facets("t", words, open_only, ["tags"], 100) == {"tags": {"x": 1, "y": 1}}
        assert list(index.facets("t", None, Filters(), ["tags"], 1)["tags"]) == ["x"]  # ties by value
        assert index.facets("nobody", words, Filters(), ["tags"], 100) == {"tags": {}}

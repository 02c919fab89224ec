"""A declared catch-all tier (QUARRY_ENTITY_TYPES_FILE `"catch_all": "body"`): a type that declares one
indexes every undeclared text field in that tier, so a word written only there is found; a type without
one reports the field in `unindexed_fields` and never finds it. Search text is built in core, so the rule is
the same on every backend (this module also runs on OpenSearch, tests/handlers/test_opensearch_api.py)."""

from __future__ import annotations

from typing import Any

from core.indexing.entity_types import EntityTypeRegistry
from tests.conftest import api_event, invoke

CONFIG = {
    "types": {
        "note": {"fields": {"heading": 3}, "catch_all": "body"},
        "memo": {"fields": {"heading": 3}},
        "document": {"catch_all": "body"},  # a built-in type keeps its fields and gains the tier
    }
}


def _found(query: str) -> list[str]:
    status, answer = invoke(api_event("search", body={"query": query, "strategy": "keyword"}))
    assert status == 200, answer
    return [r["entity_id"] for r in answer["results"]]


def test_a_catch_all_type_finds_a_word_written_only_in_an_undeclared_field(local: Any) -> None:
    local.override(registry=EntityTypeRegistry.with_config(CONFIG))
    status, body = invoke(api_event("put_entity", path="/entities/note/n1",
                                    body={"heading": "Field trip", "remarks": "a quokka waved", "rating": 4}))  # fmt: skip
    assert status == 200, body
    assert body["unindexed_fields"] == ["rating"]  # not text: stored, still not searchable, still reported
    status, body = invoke(api_event("put_entity", path="/entities/memo/m1",
                                    body={"heading": "Field trip", "remarks": "a quokka slept"}))  # fmt: skip
    assert status == 200 and body["unindexed_fields"] == ["remarks"]
    status, body = invoke(api_event("put_entity", path="/entities/document/d1",
                                    body={"title": "Marsupials", "abstract": "the quokka smiles"}))  # fmt: skip
    assert status == 200 and body["unindexed_fields"] == []
    assert sorted(_found("quokka")) == ["d1", "n1"]


def test_changing_only_a_caught_field_makes_the_new_word_findable(local: Any) -> None:
    local.override(registry=EntityTypeRegistry.with_config(CONFIG))
    assert invoke(api_event("put_entity", path="/entities/note/n2",
                            body={"heading": "Trip", "remarks": "wombat"}))[0] == 200  # fmt: skip
    status, body = invoke(api_event("patch_entity", path="/entities/note/n2", body={"remarks": "echidna"}))
    assert status == 200 and body["reembedded"] is True and body["unindexed_fields"] == []
    assert _found("echidna") == ["n2"] and _found("wombat") == []  # far from a fuzzy match


def test_a_catch_all_must_name_a_tier() -> None:
    import pytest

    from core.errors import InvalidInputError

    with pytest.raises(InvalidInputError) as caught:
        EntityTypeRegistry.with_config({"types": {"note": {"fields": {"h": 3}, "catch_all": "everything"}}})
    assert caught.value.fields == {"types.note.catch_all": "must be one of: body, strong, title (or 1, 2, 3)"}

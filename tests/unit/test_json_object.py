"""A candidate's metadata as JSON text parsed when first read (core.models.JsonObject): it must read,
compare and copy exactly as the parsed object, and never be parsed when nothing reads it."""

from __future__ import annotations

import json

import pytest

from core.models import JsonObject


def test_reads_compares_and_copies_as_the_object_it_holds() -> None:
    value = {"status": "open", "n": 3, "tags": ["a", "b"], "nested": {"x": 1.5}}
    lazy = JsonObject(json.dumps(value))
    assert lazy == value and value == lazy
    assert lazy["status"] == "open" and lazy.get("missing") is None and lazy.get("missing", 7) == 7
    assert dict(lazy) == value and {**lazy} == value
    assert list(lazy) == list(value) and len(lazy) == 4 and "tags" in lazy
    assert sorted(lazy.items()) == sorted(value.items())
    assert lazy == JsonObject(json.dumps(value)) and lazy != JsonObject('{"status": "closed"}')
    assert repr(lazy) == repr(value)
    with pytest.raises(KeyError):
        lazy["missing"]


def test_an_empty_text_is_the_empty_object() -> None:
    assert JsonObject("") == {} and JsonObject("{}") == {} and len(JsonObject("")) == 0


def test_text_nobody_reads_is_never_parsed() -> None:
    unread = JsonObject("{not json")  # a malformed text: parsing it would raise
    with pytest.raises(json.JSONDecodeError):
        unread.get("anything")


def test_unhashable_like_the_dict_it_stands_for() -> None:
    with pytest.raises(TypeError):
        hash(JsonObject("{}"))

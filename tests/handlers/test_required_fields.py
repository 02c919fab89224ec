"""A required field is required by one rule whichever other fields a write carries: `{}`, a write with
only another searchable field, and one with only undeclared fields are refused alike, naming the title
field, on PUT and in a bulk (a document alone may come untitled when it has text or chunks)."""

from __future__ import annotations

from typing import Any

import pytest

from core.indexing.entity_types import BUILTIN_TYPES
from tests.conftest import api_event, invoke

TITLED = [t for t in BUILTIN_TYPES.values() if not t.chunked]


def _others(name: str) -> list[dict[str, Any]]:
    etype = BUILTIN_TYPES[name]
    other = next(f.name for f in etype.fields if f.name != etype.title_field)
    return [{}, {other: "words in another field"}, {"undeclared": "words"}, {"source": "elsewhere"}]


@pytest.mark.parametrize("name", [t.name for t in TITLED])
def test_the_title_is_required_whatever_else_comes(local: Any, name: str) -> None:
    title = BUILTIN_TYPES[name].title_field
    for n, body in enumerate(_others(name)):
        status, answer = invoke(api_event("put_entity", path=f"/entities/{name}/x{n}", body=body))
        assert status == 400 and answer["error"]["fields"] == {title: f"is required for a {name}"}, body
        item = {"type": name, "id": f"x{n}", **body}
        status, answer = invoke(api_event("bulk_entities", body={"items": [item]}))
        assert status == 400 and list(answer["error"]["fields"]) == [f"items.0.{title}"], body
        assert answer["error"]["fields"][f"items.0.{title}"].startswith("is required"), body

"""Vector feedback through POST /search: a document like the best match is found even though it shares
no word with the query, and `QUARRY_FEEDBACK_DOCS=0` turns that off (the fake hashing embedder: similar
wording → similar vectors)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import FakeEmbedder, api_event, invoke, make_container

DOCS = [
    ("best", "orbital resonance tidal heating volcanism"),
    ("neighbour", "tidal heating volcanism moons"),  # no query word; close to "best"
    ("unrelated", "sourdough starter hydration"),
]
QUERY = "orbital resonance"


def serve(tmp_path: Path, **settings: Any) -> Iterator[Any]:
    from infra.wiring.root import set_container

    c = make_container(tmp_path / "data", FakeEmbedder(), **settings)
    set_container(c)
    items = [{"type": "memory", "id": i, "content": text, "version": 1} for i, text in DOCS]
    status, body = invoke(api_event("bulk_entities", body={"items": items}))
    assert status == 200 and body["indexed"] == len(DOCS)
    yield c
    set_container(None)


def found(query: str) -> list[str]:
    status, body = invoke(api_event("search", body={"query": query, "strategy": "hybrid", "explain": True}))
    assert status == 200, body
    return [r["entity_id"] for r in body["results"]]


@pytest.fixture
def with_feedback(tmp_path: Path) -> Iterator[Any]:
    yield from serve(tmp_path)


@pytest.fixture
def without_feedback(tmp_path: Path) -> Iterator[Any]:
    yield from serve(tmp_path, feedback_docs=0)


def test_the_neighbour_is_below_the_vector_floor_for_the_query_alone() -> None:
    q, neighbour = FakeEmbedder().embed([QUERY, DOCS[1][1]])
    assert float(np.dot(q, neighbour)) < 0.2  # the precondition of the two tests below


def test_feedback_finds_a_document_like_the_best_match_without_a_query_word(with_feedback: Any) -> None:
    results = found(QUERY)
    assert results[0] == "best"
    assert "neighbour" in results and "unrelated" not in results


def test_without_feedback_only_the_query_itself_counts(without_feedback: Any) -> None:
    assert found(QUERY) == ["best"]

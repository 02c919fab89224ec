"""Golden ranking on a small fixed corpus with the real all-MiniLM-L6-v2 embedder (seed thefold's
scenarios: exact identifiers, error strings, semantic matches with no shared word)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import api_event, invoke

pytestmark = pytest.mark.embedder

CORPUS = [
    ("mem-check", "The checkRateLimit function validates request frequency per API key"),
    ("mem-limiter", "Rate limiter caps how many calls each client may send per minute to stop abuse"),
    ("mem-typeerror", "TypeError: Cannot read property 'id' of undefined when the session expired"),
    ("mem-errors", "Generic error handling wraps failures into a problem+json response"),
    ("mem-execute", "executeTask function runs queued jobs with retries"),
    ("mem-jobs", "Background workers pick up queued work items and process them"),
    ("mem-encore", "encore.ts migration moved the services to the new framework"),
    ("mem-schema", "Database schema changes are applied with Prisma migrations"),
    ("mem-login", "Authentication bug in the login flow: tokens were not refreshed"),
    ("mem-cooking", "A good risotto needs constant stirring and warm stock"),
    ("mem-garden", "Tomatoes need six hours of sun and regular watering"),
]


@pytest.fixture
def corpus(semantic: Any) -> Any:
    items = [{"type": "memory", "id": i, "content": text, "version": 1} for i, text in CORPUS]
    status, body = invoke(api_event("bulk_entities", body={"items": items}))
    assert status == 200 and body["indexed"] == len(CORPUS)
    return semantic


def top(query: str, **extra: Any) -> list[str]:
    status, body = invoke(api_event("search", body={"query": query, "limit": 5, **extra}))
    assert status == 200, body
    return [r["entity_id"] for r in body["results"]]


def test_exact_identifier_ranks_its_memory_first(corpus: Any) -> None:
    assert top("checkRateLimit")[0] == "mem-check"
    assert top("executeTask function")[0] == "mem-execute"


def test_semantic_match_without_a_shared_word(corpus: Any) -> None:
    query_words = {"api", "throttling", "protection"}
    assert not query_words & set(dict(CORPUS)["mem-limiter"].lower().split())
    results = top("API throttling protection")
    assert "mem-limiter" in results[:2]


def test_error_strings_find_the_exact_error(corpus: Any) -> None:
    assert top("TypeError: Cannot read property")[0] == "mem-typeerror"


def test_questions_are_recognised_and_answered_semantically(corpus: Any) -> None:
    status, body = invoke(api_event("search", body={"query": "how do background jobs get processed?"}))
    assert body["query_info"]["query_shape"] == "question"
    assert body["query_info"]["strategy"] == "hybrid"  # measured: leaning further semantic only hurt
    assert body["results"][0]["entity_id"] in {"mem-jobs", "mem-execute"}


def test_unrelated_queries_do_not_return_the_whole_corpus(corpus: Any) -> None:
    assert "mem-cooking" not in top("kubernetes pod autoscaling")
    assert top("zzqx vvbn") == []

"""Each example request of the five seed documents (`../shared/seeds/`), sent as the seed writes it: taken
where Quarry takes that shape, else refused with a message naming Quarry's form (core/conformance.py).
docs/conformance.md lists the same mappings."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import api_event, invoke

NEXUS_ITEMS = [
    {"type": "task", "id": "t-ai", "title": "AI projects review", "tags": ["@computer"], "domain": "work"},
    {"type": "idea", "id": "i-ai", "title": "AI projects for home", "domain": "home"},
    {"type": "idea", "id": "i-work", "title": "AI projects at work", "domain": "work"},
    {"type": "task", "id": "t-bug", "title": "Fix login bug", "domain": "work"},
    {"type": "person", "id": "p-john", "name": "John Smith", "organization": "Acme"},
    {"type": "memory", "id": "m-rate", "content": "The checkRateLimit function validates request frequency"},
    {"type": "memory", "id": "m-phrase", "content": "an exact phrase lives here"},
]


def call(name: str, **kwargs: Any) -> tuple[int, Any]:
    return invoke(api_event(name, **kwargs))


@pytest.fixture
def seeded(local: Any) -> Any:
    status, body = call("bulk_entities", body={"items": NEXUS_ITEMS})
    assert status == 200 and body["errors"] == [], body
    return local


# nexus-ai-search-dataflow.md §3.1: POST /api/search {query, entities: ["tasks", "ideas"], filters}


NEXUS_SEARCH = {
    "query": "AI projects @computer",
    "entities": ["tasks", "ideas"],
    "filters": {"domain": "work"},
}


def test_nexus_search_at_the_seeds_path_is_a_404_naming_quarrys(seeded: Any) -> None:
    status, body = call("search", path="/api/search", body=NEXUS_SEARCH)
    assert status == 404
    assert "use POST /search" in body["error"]["message"]


def test_nexus_search_body_is_taken_as_the_seed_writes_it(seeded: Any) -> None:
    status, body = call("search", body={**NEXUS_SEARCH, "strategy": "keyword"})
    assert status == 200, body
    assert body["query_info"]["entities_searched"] == ["idea", "task"]
    assert {r["entity_id"] for r in body["results"]} == {"t-ai", "i-work"}  # domain work only


@pytest.mark.parametrize(
    ("query", "types", "first"),
    [
        ("task: fix bug", ["task"], "t-bug"),  # → entityPrefix tasks
        ("@john", ["person"], "p-john"),  # → people search for john
        ('"exact phrase"', None, "m-phrase"),  # → phrases: ['exact phrase']
    ],
)
def test_nexus_special_cases(seeded: Any, query: str, types: list[str] | None, first: str) -> None:
    status, body = call("search", body={"query": query, "strategy": "keyword"})
    assert status == 200, body
    assert body["results"][0]["entity_id"] == first
    if types is not None:
        assert body["query_info"]["entities_searched"] == types


# thefold-hybrid-memory-search.md: "checkRateLimit function" (hybrid), and "empty query returns 0 results"


def test_thefold_identifier_query_leans_lexical_and_finds_the_function(seeded: Any) -> None:
    status, body = call("search", body={"query": "checkRateLimit function"})
    assert status == 200
    assert body["query_info"]["strategy"] == "hybrid:lexical-leaning"
    assert body["results"][0]["entity_id"] == "m-rate"


def test_thefold_empty_query_returns_zero_results_not_an_error(seeded: Any) -> None:
    status, body = call("search", body={"query": ""})
    assert (status, body["results"], body["total"]) == (200, [], 0)


# gateway-context-assembly.txt: routes under /api/context, AssembleContextInputSchema, ContextFeedbackSchema,
# GET /log ?caller&mission_namespace&limit&offset, the five SourceStore names


@pytest.mark.parametrize(
    ("event", "seed_path", "quarry"),
    [
        ("context_assemble", "/api/context/assemble", "POST /context/assemble"),
        ("context_feedback", "/api/context/feedback", "POST /context/feedback"),
        ("context_weights", "/api/context/weights", "GET /context/weights"),
        ("context_budgets", "/api/context/budgets", "GET /context/budgets"),
        ("context_log", "/api/context/log", "GET /context/log"),
        ("context_log_callers", "/api/context/log/callers", "GET /context/log/callers"),
        ("context_eval", "/api/context/eval", "POST /context/eval"),
    ],
)
def test_context_routes_at_the_seeds_paths_are_404s_naming_quarrys(
    local: Any, event: str, seed_path: str, quarry: str
) -> None:
    status, body = call(event, path=seed_path)
    assert status == 404 and f"use {quarry}" in body["error"]["message"]


def test_assemble_with_mission_namespace_is_told_to_use_namespace(seeded: Any) -> None:
    seed_body = {
        "query": "login bug",
        "caller": "agent-coder",
        "mission_namespace": "auth",
        "token_budget": 800,
    }
    status, body = call("context_assemble", body=seed_body)
    assert status == 400
    assert "use `namespace`" in body["error"]["fields"]["mission_namespace"]


def test_assemble_with_explicit_links_and_log_false_answers_a_null_id(seeded: Any) -> None:
    seed_body = {
        "query": "login bug",
        "caller": "agent-coder",
        "explicit_links": ["task:t-bug"],
        "log": False,
    }
    status, body = call("context_assemble", body=seed_body)
    assert status == 200, body
    assert body["assembly_id"] is None  # the seed answers 0; Quarry null
    assert body["sources"][0]["id"] == "task:t-bug"


@pytest.mark.parametrize("seed_id", [0, 7])
def test_feedback_with_an_integer_assembly_id_is_told_quarrys_ids_are_strings(
    local: Any, seed_id: int
) -> None:
    status, body = call(
        "context_feedback", body={"assembly_id": seed_id, "used_source_ids": [], "tokens_used": 0}
    )
    assert status == 400
    assert "string `assembly_id`" in body["error"]["fields"]["assembly_id"]


def test_log_with_the_seeds_query_is_told_quarrys_parameters(local: Any) -> None:
    query = {"caller": "agent-coder", "mission_namespace": "auth", "limit": "5", "offset": "5"}
    status, body = call("context_log", query=query)
    assert status == 400
    fields = body["error"]["fields"]
    assert "use `namespace`" in fields["mission_namespace"] and "use `cursor`" in fields["offset"]
    assert set(fields) == {"mission_namespace", "offset"}
    status, _ = call("context_log", query={"caller": "agent-coder", "namespace": "auth", "limit": "5"})
    assert status == 200
    status, body = call("weight_history", query={"caller": "agent-coder", "offset": "5"})
    assert status == 400 and body["error"]["fields"]["offset"].endswith("it takes caller, limit")


def test_the_vault_source_goes_by_the_seeds_name(seeded: Any) -> None:
    status, weights = call("context_weights")
    assert status == 200
    assert weights["sources"] == [
        "memory",
        "agent_memory_own",
        "agent_memory_peer",
        "vault_index",
        "psychic_cache",
        *("tasks", "ideas", "projects", "people", "commitments"),  # the types a user writes, after them
    ]
    status, body = call(
        "context_assemble", body={"query": "AI projects", "caller": "agent-coder", "sources": ["vault_index"]}
    )
    assert status == 200, body


@pytest.mark.parametrize(
    "event", ["context_weights", "context_budgets", "context_log_callers", "context_eval"]
)
def test_the_seeds_other_context_routes_answer(local: Any, event: str) -> None:
    status, _ = call(event)
    assert status == 200


# role-overlay-retrieval-api.txt: retrieve({store, roleId, taskText, overlay: null, packetContextSummary,
# lexicalOnly, embeddingModel, ollamaUrl})


def test_retrieve_in_the_seeds_camel_case_is_told_each_snake_case_name(local: Any) -> None:
    seed_body = {
        "roleId": "dba",
        "taskText": "rotate the database credentials",
        "overlay": None,
        "packetContextSummary": "quarterly review",
        "lexicalOnly": True,
        "embeddingModel": "nomic-embed-text",
        "ollamaUrl": "http://localhost:11434",
    }
    status, body = call("retrieve", body=seed_body)
    assert status == 400
    fields = body["error"]["fields"]
    assert "use `role_id`" in fields["roleId"] and "use `task_text`" in fields["taskText"]
    assert "use `context_summary`" in fields["packetContextSummary"]
    assert "use `lexical_only`" in fields["lexicalOnly"]
    assert "QUARRY_EMBEDDER_MODEL_DIR" in fields["embeddingModel"] and "Ollama" in fields["ollamaUrl"]


def test_retrieve_with_overlay_null_uses_the_shared_corpus_only(local: Any) -> None:
    assert call("load_corpus")[0] == 200
    overlay = {
        "role_id": "dba",
        "mission": "database operations",
        "source_policy": {"forbidden": ["runbook"]},
    }
    assert call("put_overlay", path="/overlays/dba", body=overlay)[0] == 200
    task = {"role_id": "dba", "task_text": "rotate the database credentials", "lexical_only": True}
    status, stored = call("retrieve", body=task)
    assert status == 200 and stored["summary"]["overlay_applied"] is True
    status, shared = call("retrieve", body={**task, "overlay": None})
    assert status == 200 and shared["summary"]["overlay_applied"] is False
    assert "no_overlay" in [w["state"] for w in shared["warnings"]]

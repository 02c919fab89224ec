"""The search slice through the HTTP API Lambda, driven by the events/ samples, on the local backend."""

from __future__ import annotations

from typing import Any

import pytest

from core.errors import UnavailableError
from tests.conftest import FakeEmbedder, api_event, invoke, make_container

TASKS = [
    {
        "type": "task",
        "id": "t-login",
        "title": "Fix login bug",
        "description": "Users cannot sign in with email",
        "status": "open",
        "domain": "work",
        "version": 1,
    },
    {
        "type": "task",
        "id": "t-groceries",
        "title": "Buy groceries",
        "description": "milk eggs bread",
        "status": "open",
        "domain": "home",
        "version": 1,
    },
    {"type": "person", "id": "p-ann", "name": "Ann Lee", "organization": "Acme", "role": "designer"},
]


def bulk(items: list[dict[str, Any]], tenant: str = "acme") -> dict[str, Any]:
    status, body = invoke(api_event("bulk_entities", tenant=tenant, body={"items": items}))
    assert status == 200, body
    return body


def search(query: str, tenant: str = "acme", **extra: Any) -> dict[str, Any]:
    status, body = invoke(api_event("search", tenant=tenant, body={"query": query, **extra}))
    assert status == 200, body
    return body


def ids(body: dict[str, Any]) -> list[str]:
    return [r["entity_id"] for r in body["results"]]


def test_health_answers_without_a_token(local: Any) -> None:
    status, body = invoke(api_event("health", tenant=None))
    assert (status, body["status"]) == (200, "ok")


def test_bulk_then_search_finds_the_task_with_a_highlighted_snippet(local: Any) -> None:
    assert bulk(TASKS) == {"indexed": 3, "skipped_stale": 0, "errors": [], "unindexed_fields": []}
    body = search("login bug")
    assert ids(body)[0] == "t-login"
    top = body["results"][0]
    assert top["title"] == "Fix login bug"
    assert "<mark>login</mark>" in top["snippet"]
    assert top["metadata"]["status"] == "open"
    assert body["query_info"]["original_query"] == "login bug"


def test_bulk_reports_bad_items_by_position_and_indexes_the_rest(local: Any) -> None:
    status, body = invoke(
        api_event(
            "bulk_entities",
            body={"items": [TASKS[0], {"type": "spaceship", "id": "x"}, {"type": "task", "id": "no-title"}]},
        )
    )
    assert status == 400 and body["error"]["fields"] == {  # breaks the published BulkItem schema
        "items.1.type": "must be one of: commitment, document, idea, memory, person, project, task",
        "items.2.title": "is required",
    }
    assert search("login")["results"] == []  # nothing of a refused request is indexed
    body = bulk([TASKS[0], {"type": "task", "id": "bad-text", "title": "\ud800"}])  # what no schema states
    assert body["indexed"] == 1
    assert [(e["index"], e["entity_id"]) for e in body["errors"]] == [(1, "bad-text")]
    assert "items.1.title" in body["errors"][0]["fields"]


def test_entity_prefix_and_mention_narrow_the_types(local: Any) -> None:
    bulk(TASKS + [{"type": "memory", "id": "m-login", "content": "login page redesign notes"}])
    assert {r["entity_type"] for r in search("task: login")["results"]} == {"task"}
    people = search("@ann")
    assert ids(people) == ["p-ann"]
    assert people["query_info"]["entities_searched"] == ["person"]


def test_filters_apply_inside_retrieval(local: Any) -> None:
    bulk(TASKS)
    body = search("buy fix", filters={"domain": "home"}, strategy="keyword")
    assert ids(body) == ["t-groceries"]


def test_a_deleted_task_is_never_returned_again_even_from_cache(local: Any) -> None:
    bulk(TASKS)
    assert "t-login" in ids(search("login"))
    status, _ = invoke(api_event("delete_entity", path="/entities/task/t-login", query={}))
    assert status == 200
    assert "t-login" not in ids(search("login"))
    assert "t-login" not in ids(search("login", strategy="semantic"))
    status, body = invoke(api_event("patch_entity", path="/entities/task/t-login", body={"status": "x"}))
    assert status == 404


def test_a_status_only_update_does_not_re_embed(local: Any, fake_embedder: FakeEmbedder) -> None:
    bulk(TASKS)
    embedded_before = len(fake_embedder.texts)
    status, body = invoke(
        api_event("patch_entity", path="/entities/task/t-login", body={"status": "done", "version": 2})
    )
    assert status == 200 and body["reembedded"] is False
    assert len(fake_embedder.texts) == embedded_before
    found = search("login", filters={"status": "done"}, strategy="keyword")
    assert ids(found) == ["t-login"]
    status, body = invoke(
        api_event(
            "patch_entity", path="/entities/task/t-login", body={"title": "Fix OAuth login bug", "version": 3}
        )
    )
    assert status == 200 and body["reembedded"] is True
    assert len(fake_embedder.texts) == embedded_before + 1
    assert ids(search("oauth", strategy="keyword")) == ["t-login"]


def test_a_stale_version_never_overwrites_a_newer_one(local: Any) -> None:
    newer = {"content": "deploys go through the canary stage", "version": 5}
    status, _ = invoke(api_event("put_entity", path="/entities/memory/m-deploy", body=newer))
    assert status == 200
    status, body = invoke(
        api_event(
            "put_entity",
            path="/entities/memory/m-deploy",
            body={"content": "deploys skip the canary", "version": 4},
        )
    )
    assert status == 409 and body["error"]["code"] == "stale_version"
    assert body["error"]["fields"]["version"] == "stored version is 5"
    again = bulk([{"type": "memory", "id": "m-deploy", "content": "old text", "version": 3}])
    assert again == {"indexed": 0, "skipped_stale": 1, "errors": [], "unindexed_fields": []}
    assert ids(search("canary stage", strategy="keyword")) == ["m-deploy"]
    assert ids(search("skip", strategy="keyword")) == []


def test_redelivering_the_same_version_is_harmless(local: Any) -> None:
    event = api_event("put_entity")
    first = invoke(event)
    second = invoke(api_event("put_entity"))
    assert first[0] == second[0] == 200
    assert (first[1]["outcome"], second[1]["outcome"]) == ("applied", "duplicate")


def test_tenants_never_see_each_other_including_cached_results(local: Any) -> None:
    bulk(TASKS, tenant="acme")
    assert ids(search("login", tenant="acme"))[0] == "t-login"
    assert search("login", tenant="acme")["query_info"]["cache"] == "hit"
    other = search("login", tenant="globex")
    assert other["results"] == [] and other["query_info"]["cache"] == "miss"
    status, _ = invoke(api_event("delete_entity", tenant="globex", path="/entities/task/t-login", query={}))
    assert status == 404
    assert ids(search("login", tenant="acme", strategy="keyword")) == ["t-login"]


def test_cache_hits_until_a_write_changes_the_tenant(local: Any) -> None:
    bulk(TASKS)
    assert search("groceries")["query_info"]["cache"] == "miss"
    assert search("groceries")["query_info"]["cache"] == "hit"
    bulk([{"type": "task", "id": "t-more", "title": "More groceries", "version": 1}])
    fresh = search("groceries")
    assert fresh["query_info"]["cache"] == "miss"
    assert "t-more" in ids(fresh)


def test_a_query_differing_only_in_case_is_not_served_the_other_ones_cached_answer(local: Any) -> None:
    # `auto` reads case: checkRateLimit is an identifier (lexical-leaning), checkratelimit a plain word.
    bulk(
        [{"type": "memory", "id": "m1", "content": "The checkRateLimit function validates request frequency"}]
    )
    camel = search("checkRateLimit")
    lower = search("checkratelimit")
    assert lower["query_info"]["cache"] == "miss"
    assert lower["query_info"]["original_query"] == "checkratelimit"
    assert (camel["query_info"]["query_shape"], lower["query_info"]["query_shape"]) == ("identifier", "plain")
    assert (camel["query_info"]["strategy"], lower["query_info"]["strategy"]) == (
        "hybrid:lexical-leaning",
        "hybrid",
    )
    spaced = search("  checkRateLimit ")
    assert (spaced["query_info"]["cache"], spaced["query_info"]["original_query"]) == (
        "miss",
        "  checkRateLimit ",
    )
    assert search("checkRateLimit")["query_info"]["cache"] == "hit"


def test_explain_reports_each_retrievers_rank_and_score(local: Any) -> None:
    bulk(TASKS)
    top = search("login", explain=True)["results"][0]
    explanation = top["explanation"]
    assert explanation["lexical"]["rank"] == 0 and explanation["lexical"]["score"] > 0
    assert explanation["field_boosts"]["title"] == 3


def test_misspelt_keyword_query_falls_back_to_fuzzy_matching(local: Any) -> None:
    bulk(TASKS)
    body = search("grocreies", strategy="keyword")
    assert ids(body) == ["t-groceries"]
    assert body["query_info"]["fallback"] == "fuzzy"
    assert search("grocer", strategy="keyword")["query_info"]["fallback"] == "prefix"


def test_embedder_outage_degrades_to_keyword_and_says_so(tmp_path: Any) -> None:
    from infra.wiring.root import set_container

    class DownEmbedder(FakeEmbedder):
        def embed(self, texts: Any) -> Any:
            if self.calls >= 1:
                raise UnavailableError("embedder", "model crashed")
            return super().embed(texts)

    set_container(make_container(tmp_path, DownEmbedder()))
    try:
        bulk(TASKS[:1])
        body = search("login")
        assert body["query_info"]["degraded"] is True
        assert body["query_info"]["strategy"] == "keyword"
        assert ids(body) == ["t-login"]
        assert search("login")["query_info"]["cache"] == "miss"  # degraded answers are not cached
        status, body = invoke(api_event("put_entity", path="/entities/task/t2", body={"title": "x"}))
        assert status == 503 and body["error"]["code"] == "unavailable"
    finally:
        set_container(None)


def test_openapi_document_lists_the_routes(local: Any) -> None:
    status, body = invoke(api_event("openapi"))
    assert status == 200
    assert {"/search", "/entities", "/entities/{entity_type}/{entity_id}"} <= set(body["paths"])


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"query": "x" * 10_000}, "query"),
        ({"query": "ok", "limit": 0}, "limit"),
        ({"query": "ok", "limit": 101}, "limit"),
        ({"query": "ok", "limit": "ten"}, "limit"),
        ({"query": "ok", "entities": ["spaceship"]}, "entities.0"),
        ({"query": "ok", "strategy": "magic"}, "strategy"),
        ({"query": "ok", "filters": {"colour": "red"}}, "filters.colour"),
        ({"query": "ok", "limt": 5}, "limt"),
        ({}, "query"),
    ],
)
def test_bad_search_input_is_a_400_naming_the_field(local: Any, payload: dict[str, Any], field: str) -> None:
    status, body = invoke(api_event("search", body=payload))
    assert status == 400
    assert body["error"]["code"] == "invalid_input"
    assert field in body["error"]["fields"], body


def test_malformed_json_is_a_400(local: Any) -> None:
    status, body = invoke(api_event("search", raw_body='{"query": "x",'))
    assert status == 400 and body["error"]["fields"]["body"].startswith("is not valid JSON (")
    assert "line 1 column 15" in body["error"]["fields"]["body"]


def test_wrong_content_type_is_a_415(local: Any) -> None:
    status, body = invoke(api_event("search", raw_body="query=x", headers={"content-type": "text/plain"}))
    assert status == 415 and "content-type" in body["error"]["fields"]


def test_oversized_body_is_a_413(local: Any) -> None:
    status, body = invoke(api_event("search", body={"query": "x" * 1_100_000}))
    assert status == 413 and body["error"]["code"] == "payload_too_large"


def test_missing_token_is_a_401_and_wrong_scope_a_403(local: Any) -> None:
    status, body = invoke(api_event("search", tenant=None, body={"query": "x"}))
    assert (status, body["error"]["code"]) == (401, "unauthorized")
    status, body = invoke(api_event("put_entity", scopes=["read"]))
    assert (status, body["error"]["code"]) == (403, "forbidden")


def test_unknown_route_is_404_and_wrong_method_405(local: Any) -> None:
    assert invoke(api_event("health", path="/nowhere"))[0] == 404
    status, body = invoke(api_event("search", method="GET", raw_body=""))
    assert status == 405 and body["error"]["fields"]["method"] == "must be one of POST"


def test_bad_entity_writes_name_the_field(local: Any) -> None:
    status, body = invoke(api_event("put_entity", path="/entities/spaceship/x"))
    assert status == 400 and "type" in body["error"]["fields"]
    status, body = invoke(api_event("put_entity", body={"category": "x"}))
    assert status == 400 and body["error"]["fields"] == {"content": "is required for a memory"}
    status, body = invoke(api_event("put_entity", body={"content": "x", "version": -1, "tags": [1, 2]}))
    assert status == 400 and set(body["error"]["fields"]) == {"version", "tags"}
    # above the synchronous size a bulk becomes a job (202); above the job limit it is refused
    status, body = invoke(api_event("bulk_entities", body={"items": [{"type": "task", "id": "x"}] * 10_001}))
    assert status == 400 and "items" in body["error"]["fields"]


@pytest.mark.parametrize("query", ["", "   \t "])
def test_an_empty_query_answers_no_results_not_an_error(local: Any, query: str) -> None:
    # the hybrid-search seed (thefold): "empty query returns 0 results, not error"
    bulk(TASKS)
    embedded = local.embedder.calls
    body = search(query)
    assert (body["results"], body["total"], body["next_cursor"]) == ([], 0, None)
    assert body["query_info"]["original_query"] == query
    assert local.embedder.calls == embedded  # nothing was embedded for it
    status, refused = invoke(api_event("search", body={"query": "", "entities": ["spaceship"]}))
    assert status == 400 and "entities.0" in refused["error"]["fields"]  # the rest is still checked


def test_plural_type_names_select_their_types(local: Any) -> None:
    # the search seed (nexus §3.1) sends "entities": ["tasks", "ideas"]; Quarry's types are singular
    bulk(TASKS + [{"type": "memory", "id": "m-login", "content": "login page redesign notes"}])
    body = search("login", entities=["tasks", "people"], strategy="keyword")
    assert body["query_info"]["entities_searched"] == ["person", "task"]
    assert ids(body) == ["t-login"]
    assert search("task: login", entities=["tasks"])["query_info"]["entities_searched"] == ["task"]
    memories = search("login", entities=["memories"], strategy="keyword")  # English plurals, not name + "s"
    assert memories["query_info"]["entities_searched"] == ["memory"] and ids(memories) == ["m-login"]
    assert ids(search("memories: login", strategy="keyword")) == ["m-login"]


def test_explain_rounds_alpha_and_scores(local: Any) -> None:
    bulk(
        [{"type": "memory", "id": "m1", "content": "The checkRateLimit function validates request frequency"}]
    )
    explanation = search("checkRateLimit", explain=True)["results"][0]["explanation"]
    assert explanation["alpha"] == 0.35  # 0.8 - 0.45 is 0.35000000000000003 in floating point
    for leg in ("lexical", "vector"):
        score = explanation[leg]["score"]
        assert score is None or score == round(score, 6)


def test_the_search_log_line_counts_each_leg_and_alpha(local: Any, caplog: pytest.LogCaptureFixture) -> None:
    from handlers.observability.powertools import logger

    bulk([
        {"type": "memory", "id": "m1", "content": "The checkRateLimit function validates request frequency"},
        {"type": "memory", "id": "m2", "content": "Rate limiter caps how many calls each client may send"},
    ])  # fmt: skip
    level = logger.log_level
    logger.setLevel("INFO")
    try:
        with caplog.at_level("INFO", logger=logger.name):
            body = search("checkRateLimit", limit=1)
            search("checkRateLimit", limit=1)  # a cache hit retrieves nothing: no counts
    finally:
        logger.setLevel(level)
    first, hit = [vars(r) for r in caplog.records if r.getMessage() == "search"]
    assert first["alpha"] == 0.35 and first["hybrid_results"] == len(body["results"]) == 1
    assert first["bm25_results"] >= 1 and first["bm25_results"] >= first["bm25_only_results"] >= 0
    assert first["vector_results"] + first["bm25_only_results"] == body["total"]
    assert hit["cache"] == "hit" and "vector_results" not in hit
    assert "checkRateLimit" not in str(first) + str(hit)  # the query stays out of the log

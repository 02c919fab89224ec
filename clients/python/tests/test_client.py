"""The sync client against a real `quarry serve`: every route, typed answers, iterators across pages, write
jobs followed with wait(), and errors raised as typed exceptions carrying the API's error body."""

from __future__ import annotations

import pytest
from quarry_client import (
    AuthenticationError,
    BadRequestError,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    Quarry,
    TenantErasedError,
    models,
)

from tests.conftest import ASYNC_MIN_CHUNKS


def test_search_answers_typed_hits_and_pages_through_every_one(client: Quarry) -> None:
    page = client.search("rate limit", limit=2, strategy="keyword")
    assert isinstance(page, models.SearchResponse) and len(page.results) == 2
    assert all(isinstance(r, models.SearchResult) for r in page.results)
    assert page.next_cursor and page.query_info.strategy
    every = [
        f"{r.entity_type}:{r.entity_id}"
        for r in client.iter_search("rate limit", limit=2, strategy="keyword")
    ]
    assert len(every) == len(set(every)) >= 4  # each entity once, across several pages
    assert sum(1 for _ in client.search_pages("rate limit", limit=2, strategy="keyword")) >= 2


def test_entities_crud_with_typed_items_and_the_listing_iterator(client: Quarry) -> None:
    item = models.TaskItem(
        type="task", id="t-crud-1", title="Write the client docs", status="open", version=1
    )
    assert client.bulk_write([item]).wait().indexed == 1
    got = client.get_entity("task", "t-crud-1")
    assert got.title == "Write the client docs" and got.metadata["status"] == "open"
    assert client.patch_entity("task", "t-crud-1", {"status": "done", "version": 2}).outcome == "applied"
    assert client.get_entity("task", "t-crud-1").metadata["status"] == "done"
    listed = [e.entity_id for e in client.iter_entities("task", page_size=2)]
    assert "t-crud-1" in listed and len(listed) == len(set(listed)) > 2
    assert client.delete_entity("task", "t-crud-1", version=3).outcome == "applied"
    with pytest.raises(NotFoundError) as gone:
        client.get_entity("task", "t-crud-1")
    assert gone.value.status == 404 and gone.value.code == "not_found"


def test_a_large_bulk_becomes_a_job_and_wait_follows_it_to_done(client: Quarry) -> None:
    items = [
        {"type": "memory", "id": f"bulk-{i}", "content": f"batch note {i}"}
        for i in range(ASYNC_MIN_CHUNKS + 5)
    ]
    # a clock version (from updated_at) for an entity stored with a sequence number: refused on its own
    items.append(
        {"type": "memory", "id": "m-keys", "content": "rotate", "updated_at": "2026-01-01T00:00:00Z"}
    )
    written = client.bulk_write(items)
    assert written.job is not None and written.job.status in ("queued", "running", "done")
    done = written.wait(timeout=300, interval=0.2)
    assert done.done and done.job is not None and done.job.status == "done"
    assert done.indexed == ASYNC_MIN_CHUNKS + 5 and [e["entity_id"] for e in done.errors] == ["m-keys"]
    assert client.get_entity("memory", "bulk-7").fields["content"] == "batch note 7"


def test_errors_are_typed_and_carry_the_api_error_body(client: Quarry, server: str) -> None:
    with pytest.raises(BadRequestError) as bad:
        client.search("x", limit=1000)
    assert bad.value.code == "invalid_input" and "limit" in bad.value.fields
    with pytest.raises(BadRequestError) as items:
        client.bulk_write([{"type": "spaceship", "id": "x"}])
    assert list(items.value.fields) == ["items.0.type"] and "task" in items.value.fields["items.0.type"]
    client.put_entity("task", "t-stale", {"title": "v5", "version": 5})
    with pytest.raises(ConflictError) as stale:
        client.put_entity("task", "t-stale", {"title": "v4", "version": 4})
    assert stale.value.code == "stale_version" and "version" in stale.value.fields
    with Quarry(server, "k-read") as reader, pytest.raises(PermissionDeniedError):
        reader.put_entity("task", "t-denied", {"title": "x"})
    with Quarry(server, "not-a-key") as stranger, pytest.raises(AuthenticationError):
        stranger.search("x")


def test_assemble_feedback_log_learning_and_weights(client: Quarry) -> None:
    answer = client.assemble_context(
        "how do clients back off when rate limited?", "docs-bot", token_budget=400
    )
    assert answer.total_tokens <= 400 and answer.sources and answer.assembly_id
    used = [answer.sources[0].id]
    assert client.send_feedback(answer.assembly_id, used, tokens_used=100).recorded_ids == used
    log = list(client.iter_log("docs-bot", page_size=1))
    assert log[0].assembly_id == answer.assembly_id and log[0].used_ids == used
    assert "docs-bot" in client.list_callers().data
    pinned = client.set_weight("docs-bot", "memory", weight=1.2)
    assert pinned.manual and pinned.weight == 1.2
    assert any(w.caller == "docs-bot" for w in client.iter_weights(page_size=1))
    assert client.get_weight_history("docs-bot").data
    assert isinstance(client.run_learning(), models.EvalResponse)
    assert isinstance(client.get_budgets(), models.BudgetsResponse)


def test_overlays_retrieval_and_corpus(client: Quarry) -> None:
    loaded = client.load_corpus(
        [{"id": "doc-rl", "title": "Rate limits", "text": "Each client may send 100 calls a minute."}]
    )
    assert loaded.wait().indexed == 1
    overlay = client.put_overlay("support", {"mission": "help customers with API limits"})
    assert overlay.role_id == "support" and client.get_overlay("support") == overlay
    bundle = client.retrieve("support", "how many calls may a client send?", lexical_only=True)
    assert isinstance(bundle, models.RetrievalBundle) and bundle.role_id == "support"
    assert client.eval_overlay("support").queries == 0  # no golden set
    with pytest.raises(BadRequestError):
        client.tune_overlay("support")
    assert client.list_overlay_evals("support").data == [] and isinstance(
        client.list_evals(), models.EvalsResponse
    )
    assert client.delete_overlay("support").deleted
    assert "properties" in client.get_schema("role_overlay")


def test_export_iterates_every_record_and_erase_empties_the_tenant(server: str) -> None:
    with Quarry(server, "k-erase") as scratch:
        scratch.bulk_write(
            [{"type": "memory", "id": f"e-{i}", "content": "x " * 2000} for i in range(8)]
        ).wait()
        records = list(scratch.export(max_bytes=10_000))  # several NDJSON pages
        assert sorted(r["data"]["entity_id"] for r in records if r["kind"] == "entity") == [
            f"e-{i}" for i in range(8)
        ]
        assert scratch.erase_tenant("scratch").entities_removed == 8
        with pytest.raises(TenantErasedError) as erased:  # fenced: nothing read or written until reopened
            list(scratch.export())
        assert erased.value.status == 410 and erased.value.code == "tenant_erased"
        with pytest.raises(ConflictError) as early:  # reopening waits out the server's delay
            scratch.reopen_tenant("scratch")
        assert early.value.status == 409


def test_meta_routes(client: Quarry) -> None:
    assert client.health()["status"] == "ok"
    assert client.whoami()["tenant"] == "clients"
    assert client.openapi()["info"]["title"] == "Quarry"

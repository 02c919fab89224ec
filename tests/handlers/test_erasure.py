"""An erased tenant stays erased (docs/api.md, Erasing a tenant): the erase fences the tenant first — its
requests are refused (410), its queued changes and job parts discarded — removes jobs, entities, state and
cached searches and says so; work that raced the erase undoes itself; the tenant can be reopened, empty,
once nothing admitted before the erase can still run. Local backend; the same race on OpenSearch and
DynamoDB is in test_erasure_stack.py."""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from infra.wiring import root as wiring
from tests.conftest import FakeEmbedder, api_event, invoke, make_container
from tests.handlers.erase_race import (
    DOOMED,
    KEPT,
    SECRET,
    VISIBLE,
    check_race,
    data_bytes,
    die_mid_part,
    erase,
    files_holding,
    fill,
    racing,
)
from tests.handlers.test_tenant_lifecycle import export_all


@pytest.fixture
def box(tmp_path: Path, fake_embedder: FakeEmbedder) -> Iterator[Any]:
    """A local container whose bulk writes of more than 4 chunks become jobs, whose doomed tenant a queue
    producer may write, and whose erased tenants may be reopened at once."""
    from tests.handlers.test_indexing_handler import SAMPLE_SENDER

    container = make_container(
        tmp_path / "data",
        fake_embedder,
        async_min_chunks=4,
        reopen_after_seconds=0,
        producer_tenants={SAMPLE_SENDER: [DOOMED]},
    )
    wiring.set_container(container)
    yield container
    wiring.set_container(None)


def as_doomed(name: str, **kwargs: Any) -> tuple[int, Any]:
    return invoke(api_event(name, tenant=DOOMED, **kwargs))


@pytest.mark.slow
def test_an_erase_racing_writes_searches_and_jobs_leaves_no_byte_of_the_tenant(box: Any) -> None:
    data_dir = box.settings.data_dir
    fill(KEPT, VISIBLE)
    fill(DOOMED, SECRET)
    before = export_all(KEPT)
    settings = {"data_dir": str(data_dir), "async_min_chunks": 4}
    with racing(settings) as race:
        report = erase(DOOMED)
        erased_at = time.time()
        results = race.finish(erased_at)
    check_race(results, erased_at)
    # (what the erase's own purge counted varies: work that raced it may have purged some stores first)
    assert report["tenant_id"] == DOOMED and report["fenced_at"]
    box.job_queue.drain()  # parts the racing processes left behind: discarded, their tenant being fenced
    assert invoke(api_event("search", tenant=KEPT, body={"query": f"{VISIBLE} harbor"}))[0] == 200
    assert files_holding(data_dir, SECRET, DOOMED) == []
    raw = data_bytes(data_dir)
    assert VISIBLE.encode() in raw and KEPT.encode() in raw
    assert export_all(KEPT) == before


@pytest.mark.slow
def test_a_part_cut_off_after_writing_past_the_erase_is_purged_by_whoever_takes_its_claim_over(
    box: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job part admitted before the erase writes after the erase's purge, and its process dies before
    the check that would purge again: the part's claim outlives the erase (without its items), and the
    process that takes it over purges the tenant instead of running it."""
    data_dir = box.settings.data_dir
    items = [
        {"type": "memory", "id": f"q-{i}", "content": f"{SECRET} queued {i}", "version": 1} for i in range(9)
    ]
    monkeypatch.setattr(box.job_queue, "start", lambda: None)  # the part runs in the other process
    status, job = as_doomed("bulk_entities", body={"items": items})
    assert status == 202 and job["parts"] > 1
    admitted, release = tmp_path / "admitted", tmp_path / "erased"
    ctx = multiprocessing.get_context("spawn")
    child = ctx.Process(
        target=die_mid_part,
        args=({"data_dir": str(data_dir), "async_min_chunks": 4}, str(admitted), str(release)),
    )
    child.start()
    try:
        deadline = time.monotonic() + 120
        while not admitted.exists():
            assert child.is_alive() and time.monotonic() < deadline, "the other process admitted no part"
            time.sleep(0.05)
        report = erase(DOOMED)
        release.touch()
        child.join(120)
        assert child.exitcode == 0, "the other process did not die at its end-of-unit check"
    finally:
        if child.is_alive():
            child.kill()
    assert report["job_parts_discarded"] == job["parts"]
    monkeypatch.undo()
    box.job_queue.drain()
    assert files_holding(data_dir, SECRET, DOOMED) == []
    assert box.index.list_entities(DOOMED, None, 10, None) == []


def test_the_erase_fences_first_then_removes_jobs_and_says_what_it_removed(
    box: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(DOOMED, SECRET)
    items = [
        {"type": "memory", "id": f"q-{i}", "content": f"{SECRET} queued {i}", "version": 1} for i in range(9)
    ]
    monkeypatch.setattr(box.job_queue, "start", lambda: None)  # the job thread has not reached them yet
    status, job = as_doomed("bulk_entities", body={"items": items})
    assert status == 202 and box.job_queue.pending() == job["parts"] > 1
    report = erase(DOOMED)
    assert (report["jobs_removed"], report["job_parts_discarded"]) == (1, job["parts"])
    assert report["fenced_at"] and report["reopen_after"] == report["fenced_at"]  # reopen_after_seconds=0
    monkeypatch.undo()
    box.job_queue.drain()
    assert as_doomed("get_job", path=f"/jobs/{job['job_id']}")[0] == 410
    assert box.job_store.get_job(DOOMED, job["job_id"]) is None  # no late part brought it back
    assert SECRET.encode() not in data_bytes(box.settings.data_dir)


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("search", {"body": {"query": "harbor"}}),
        ("get_entity", {"path": "/entities/memory/m-1"}),
        ("list_entities", {"path": "/entities", "query": {}}),
        ("put_entity", {"path": "/entities/memory/m-1", "body": {"content": "again", "version": 9}}),
        ("bulk_entities", {"body": {"items": [{"type": "task", "id": "t", "title": "again"}]}}),
        ("context_assemble", {"body": {"query": "harbor", "caller": "agent"}}),
        ("put_overlay", {"path": "/overlays/r", "body": {"mission": "again", "version": "1.0"}}),
        ("tenant_export", {}),
    ],
)
def test_every_request_of_an_erased_tenant_is_a_410(box: Any, name: str, kwargs: dict[str, Any]) -> None:
    fill(DOOMED, SECRET)
    erase(DOOMED)
    status, body = as_doomed(name, **kwargs)
    assert status == 410 and body["error"]["code"] == "tenant_erased", body
    assert box.index.list_entities(DOOMED, None, 10, None) == []


def test_erasing_again_is_safe_and_reopening_needs_the_wait(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    container = make_container(tmp_path / "data", fake_embedder, reopen_after_seconds=600)
    wiring.set_container(container)
    try:
        fill(DOOMED, SECRET)
        erase(DOOMED)
        again = erase(DOOMED)  # a retry after a failure, or a second click
        assert again["entities_removed"] == 0
        status, body = as_doomed("reopen_tenant", body={"confirm": DOOMED})
        assert status == 409 and "not before" in body["error"]["fields"]["confirm"], body
        assert as_doomed("search", body={"query": "harbor"})[0] == 410
    finally:
        wiring.set_container(None)


def test_a_reopened_tenant_is_empty_and_new_but_its_old_queued_changes_stay_discarded(box: Any) -> None:
    from tests.handlers.test_indexing_handler import failed_ids, sqs_event
    from tests.handlers.test_indexing_handler import invoke as consume

    fill(DOOMED, SECRET)
    assert as_doomed("reopen_tenant", body={"confirm": DOOMED})[0] == 409  # not erased: nothing to reopen
    erased = erase(DOOMED)
    status, reopened = as_doomed("reopen_tenant", body={"confirm": DOOMED})
    assert status == 200 and reopened["entities_removed"] == 0, reopened
    assert reopened["reopened_at"] >= erased["fenced_at"]
    assert as_doomed("list_entities", path="/entities", query={})[1]["data"] == []
    assert as_doomed("put_entity", path="/entities/memory/new", body={"content": "a new life"})[0] == 200
    old_time = str(int((time.time() - 3600) * 1000))  # SentTimestamp of a change queued before the erase
    late = sqs_event({"op": "upsert", "type": "task", "id": "late", "tenant_id": DOOMED, "version": 1,
                      "entity": {"title": f"{SECRET} from the past"}})  # fmt: skip
    late["Records"][0]["attributes"]["SentTimestamp"] = old_time
    assert failed_ids(consume(late)) == []  # discarded, not retried nor dead-lettered
    assert as_doomed("get_entity", path="/entities/task/late")[0] == 404
    fresh = sqs_event({"op": "upsert", "type": "task", "id": "fresh", "tenant_id": DOOMED, "version": 1,
                       "entity": {"title": "after the reopen"}})  # fmt: skip
    fresh["Records"][0]["attributes"]["SentTimestamp"] = str(int(time.time() * 1000))
    assert failed_ids(consume(fresh)) == []
    assert as_doomed("get_entity", path="/entities/task/fresh")[0] == 200


def test_queued_changes_and_mcp_calls_for_an_erased_tenant_are_discarded_or_refused(box: Any) -> None:
    from tests.handlers.test_indexing_handler import failed_ids, sqs_event
    from tests.handlers.test_indexing_handler import invoke as consume
    from tests.handlers.test_mcp_server import error_of, run, server_for

    fill(DOOMED, SECRET)
    erase(DOOMED)
    change = {
        "op": "upsert",
        "type": "task",
        "id": "q",
        "tenant_id": DOOMED,
        "version": 1,
        "entity": {"title": SECRET},
    }
    assert failed_ids(consume(sqs_event(change))) == []  # a success: discarded, never dead-lettered
    assert box.index.list_entities(DOOMED, None, 10, None) == []

    async def work(client: Any) -> None:
        result = await client.call_tool("search", {"query": "harbor"})
        assert error_of(result)["code"] == "tenant_erased"

    run(server_for(box, {"read", "write"}, tenant=DOOMED), work)

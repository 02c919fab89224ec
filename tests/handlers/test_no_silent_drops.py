"""No accepted change is silently dropped: an entity named twice in one request is refused at its later
place (bulk, corpus, and across a job's parts), the same version with other content is a 409, an
`updated_at` far in the future is refused, and one PUT as large as a bulk job becomes a job (202)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from infra.wiring import root as wiring
from tests.conftest import FakeEmbedder, api_event, invoke, make_container
from tests.handlers.test_write_jobs import aws_jobs  # noqa: F401 (a fixture: SQS and DynamoDB on moto)


def get(entity_id: str, etype: str = "task") -> tuple[int, Any]:
    return invoke(api_event("get_entity", path=f"/entities/{etype}/{entity_id}"))


def put(entity_id: str, body: dict[str, Any], etype: str = "task") -> tuple[int, Any]:
    return invoke(api_event("put_entity", path=f"/entities/{etype}/{entity_id}", body=body))


def bulk(items: list[dict[str, Any]]) -> tuple[int, Any]:
    return invoke(api_event("bulk_entities", body={"items": items}))


# ---------------------------------------------------------------- one entity, once per request


def test_an_id_twice_in_one_bulk_is_refused_at_its_later_place(local: Any) -> None:
    status, report = bulk(
        [
            {"type": "task", "id": "a", "title": "first word", "version": 1},
            {"type": "task", "id": "b", "title": "other", "version": 1},
            {"type": "task", "id": "a", "title": "second word", "version": 2},
            {"type": "task", "id": "a", "title": "first word", "version": 1},
        ]
    )
    assert status == 200 and report["indexed"] == 2, report
    assert [(e["index"], e["code"]) for e in report["errors"]] == [
        (2, "duplicate_item"),
        (3, "duplicate_item"),
    ]
    assert report["errors"][0]["fields"] == {"items.2.id": "repeats item 0"}
    assert (
        get("a")[1]["title"] == "first word"
    )  # never silently replaced by a later item, nor lost unreported


def test_a_repeat_in_another_part_of_a_job_is_refused_too(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    container = make_container(tmp_path / "data", fake_embedder, async_min_chunks=2)
    wiring.set_container(container)
    try:
        items = [{"type": "task", "id": f"t{i}", "title": f"walrus{i}", "version": 1} for i in range(6)]
        items.append({"type": "task", "id": "t0", "title": "walrus again", "version": 2})
        status, accepted = bulk(items)
        assert status == 202 and accepted["parts"] == 4, accepted
        container.job_queue.drain()
        job = invoke(api_event("get_job", path=f"/jobs/{accepted['job_id']}"))[1]
        assert job["status"] == "done" and job["indexed"] == 6, job
        assert [(e["index"], e["code"], e["fields"]) for e in job["errors"]] == [
            (6, "duplicate_item", {"items.6.id": "repeats item 0"})
        ]
        assert get("t0")[1]["title"] == "walrus0"
    finally:
        wiring.set_container(None)


def test_a_corpus_document_id_twice_is_refused_at_its_later_place(local: Any) -> None:
    documents = [
        {"id": "d1", "title": "Harbour rules", "text": "boats dock at the north pier", "source": "wiki"},
        {"id": "d1", "title": "Harbour rules v2", "text": "boats dock at the south pier", "source": "wiki"},
    ]
    status, report = invoke(api_event("load_corpus", body={"documents": documents}))
    assert status == 200 and report["documents_ingested"] == 1, report
    assert [(e["index"], e["id"]) for e in report["errors"]] == [(1, "d1")]
    assert "repeats item 0" in report["errors"][0]["error"]


# ---------------------------------------------------------------- one version, one content


def test_the_same_version_with_other_content_is_a_409(local: Any) -> None:
    assert put("v", {"title": "original", "version": 3})[0] == 200
    status, body = put("v", {"title": "rewritten", "version": 3})
    assert status == 409 and body["error"]["code"] == "version_conflict", body
    assert body["error"]["fields"] == {"version": "3 is already stored with other content"}
    again = put("v", {"title": "original", "version": 3})  # a re-delivery stays harmless
    assert again[0] == 200 and again[1]["outcome"] == "duplicate"
    patch = invoke(api_event("patch_entity", path="/entities/task/v", body={"status": "done", "version": 3}))
    assert patch[0] == 409 and patch[1]["error"]["code"] == "version_conflict"
    status, report = bulk([{"type": "task", "id": "v", "title": "bulk rewrite", "version": 3}])
    assert report["indexed"] == 0 and [e["code"] for e in report["errors"]] == ["version_conflict"]
    assert get("v")[1]["title"] == "original" and "status" not in get("v")[1]["fields"]


def test_another_writer_storing_other_content_at_the_same_version_meanwhile_is_a_409(
    local: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two writers check the stored version at once; the index keeps the first, the second learns it."""
    upsert, upsert_many = local.index.upsert, local.index.upsert_many

    def other_first(record: Any) -> Any:
        return replace(record, body={**record.body, "title": "the other writer"}, title="the other writer")

    monkeypatch.setattr(local.index, "upsert", lambda r: (upsert(other_first(r)), upsert(r))[1])
    monkeypatch.setattr(
        local.index, "upsert_many", lambda rs: (upsert_many([other_first(r) for r in rs]), upsert_many(rs))[1]
    )
    status, body = put("race", {"title": "mine", "version": 5})
    assert status == 409 and body["error"]["code"] == "version_conflict", body
    status, report = bulk([{"type": "task", "id": "race2", "title": "mine too", "version": 5}])
    assert report["indexed"] == 0 and [e["code"] for e in report["errors"]] == ["version_conflict"], report
    assert get("race")[1]["title"] == get("race2")[1]["title"] == "the other writer"


def test_the_consumer_sends_a_same_version_conflict_to_the_dead_letter_queue(tmp_path: Path) -> None:
    from tests.handlers.test_indexing_handler import PRODUCERS, SAMPLE_SENDER, failed_ids, sqs_event
    from tests.handlers.test_indexing_handler import invoke as consume

    container = make_container(tmp_path / "data", FakeEmbedder(), producer_tenants=PRODUCERS)
    wiring.set_container(container)
    try:
        change = {"op": "upsert", "type": "task", "id": "q", "tenant_id": "acme", "version": 9}
        first = sqs_event({**change, "entity": {"title": "queued original"}})
        other = sqs_event({**change, "entity": {"title": "queued rewrite"}})
        assert first["Records"][0]["attributes"]["SenderId"] == SAMPLE_SENDER
        assert failed_ids(consume(first)) == [] and failed_ids(consume(first)) == []
        assert failed_ids(consume(other)) == ["msg-0"]
        assert get("q")[1]["title"] == "queued original"
    finally:
        wiring.set_container(None)


# ---------------------------------------------------------------- versions from updated_at


def stamp(delta: timedelta) -> str:
    return (datetime.now(UTC) + delta).isoformat().replace("+00:00", "Z")


def test_an_updated_at_far_in_the_future_is_refused(local: Any) -> None:
    status, body = put("f", {"title": "from the future", "updated_at": "9999-12-31T23:59:59Z"})
    assert status == 400 and "ahead of the server's clock" in body["error"]["fields"]["updated_at"], body
    status, report = bulk(
        [{"type": "task", "id": "f", "title": "bulk future", "updated_at": stamp(timedelta(days=2))}]
    )
    assert report["indexed"] == 0 and "items.0.updated_at" in report["errors"][0]["fields"]
    assert put("f", {"title": "a little ahead", "updated_at": stamp(timedelta(seconds=60))})[0] == 200
    assert get("f")[1]["title"] == "a little ahead"


def test_the_skew_is_configurable(tmp_path: Path, fake_embedder: FakeEmbedder) -> None:
    container = make_container(tmp_path / "data", fake_embedder, max_clock_skew_seconds=7200)
    wiring.set_container(container)
    try:
        assert put("g", {"title": "an hour ahead", "updated_at": stamp(timedelta(hours=1))})[0] == 200
        assert put("h", {"title": "three hours ahead", "updated_at": stamp(timedelta(hours=3))})[0] == 400
    finally:
        wiring.set_container(None)


# ---------------------------------------------------------------- one big PUT is a job


def test_a_put_as_large_as_a_bulk_job_is_a_job(tmp_path: Path, fake_embedder: FakeEmbedder) -> None:
    container = make_container(tmp_path / "data", fake_embedder, async_min_chunks=4)
    wiring.set_container(container)
    try:
        text = " ".join(f"lighthouse{i}" for i in range(3000))
        status, job = put("big", {"title": "Harbour manual", "text": text, "version": 1}, etype="document")
        assert status == 202 and job["kind"] == "bulk" and job["items"] == 1 and job["chunks"] > 4, job
        container.job_queue.drain()
        done = invoke(api_event("get_job", path=f"/jobs/{job['job_id']}"))[1]
        assert (done["status"], done["indexed"], done["errors"]) == ("done", 1, [])
        stored = get("big", "document")[1]
        assert stored["chunks"] > 4 and stored["embedded"]
        # checked before it is queued: a stale or broken big PUT is answered at once
        stale = put("big", {"title": "Harbour manual", "text": text, "version": 0}, etype="document")
        assert stale[0] == 409 and stale[1]["error"]["code"] == "stale_version"
        same = put("big", {"title": "Harbour manual", "text": text, "version": 1}, etype="document")
        assert same[0] == 200 and same[1]["outcome"] == "duplicate"
        broken = put("big2", {"text": text, "version": 1, "owner": ""}, etype="document")
        assert broken[0] == 400 and "owner" in broken[1]["error"]["fields"]
        assert container.job_queue.pending() == 0
    finally:
        wiring.set_container(None)


def test_the_template_and_the_consumer_agree_on_a_parts_last_delivery() -> None:
    from core.indexing.write_jobs import MAX_PART_ATTEMPTS
    from tests.conftest import ROOT

    template = (ROOT / "template.yaml").read_text()
    block = template[template.index("  WriteJobsQueue:") :]
    block = block[: block.index("\n\n")]
    assert f"maxReceiveCount: {MAX_PART_ATTEMPTS}" in block, json.dumps(block)


def test_a_part_failing_on_its_last_sqs_delivery_ends_its_job_failed_with_the_reason(
    aws_jobs: Any,  # noqa: F811 - test_write_jobs' fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import copy

    from core.errors import UnavailableError
    from handlers.lambda_functions import indexing_consumer
    from handlers.local_server.devserver import FakeLambdaContext
    from tests.conftest import load_event

    container, sqs, url, arn = aws_jobs
    items = [{"type": "task", "id": f"f-{i}", "title": f"item {i}"} for i in range(300)]
    status, accepted = bulk(items)
    assert status == 202 and accepted["parts"] == 2, accepted

    def down(texts: Any) -> Any:
        raise UnavailableError("bedrock", "ThrottlingException at internal-host.example")

    monkeypatch.setattr(container.embedder, "embed", down)
    [message] = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1)["Messages"]
    record = copy.deepcopy(load_event("sqs_entity_changes")["Records"][0])
    record.update(messageId=message["MessageId"], body=message["Body"], eventSourceARN=arn)
    for receives, status_after in (("4", "queued"), ("5", "running")):  # the 5th is the queue's last
        record["attributes"]["ApproximateReceiveCount"] = receives
        result = indexing_consumer.lambda_handler(
            {"Records": [record]}, FakeLambdaContext(aws_request_id="t")
        )
        assert len(result["batchItemFailures"]) == 1  # SQS delivers it again, or dead-letters it
        job = invoke(api_event("get_job", path=f"/jobs/{accepted['job_id']}"))[1]
        assert job["status"] == status_after, job
    [failure] = job["failures"]
    assert (
        "failed on each of its 5 attempts" in failure["reason"] and "internal-host" not in failure["reason"]
    )

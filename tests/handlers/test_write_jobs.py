"""Work sized to the function: a bulk above the synchronous size is accepted as 202 with a job
id, its parts travel through SQS to the indexing consumer, and every item becomes searchable; GET
/jobs/{id} follows it. SQS and DynamoDB (job status) run on moto in-process; the index is the local one."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from handlers.lambda_functions import indexing_consumer
from handlers.local_server.devserver import FakeLambdaContext
from infra.wiring import root as wiring
from tests.conftest import FakeEmbedder, api_event, invoke, load_event, make_container

REGION = "us-east-1"
ITEMS = 2000


@pytest.fixture
def aws_jobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_embedder: FakeEmbedder) -> Iterator[Any]:
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_DEFAULT_REGION": REGION}.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    with mock_aws():
        sqs = boto3.client("sqs", region_name=REGION)
        url = sqs.create_queue(QueueName="quarry-jobs")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        container = make_container(
            tmp_path / "data", fake_embedder, state="dynamodb", dynamodb_create_tables=True,
            jobs_queue_url=url, jobs_queue_arn=arn,
        )  # fmt: skip
        wiring.set_container(container)
        yield container, sqs, url, arn
        wiring.set_container(None)


def drain_through_consumer(sqs: Any, url: str, arn: str) -> int:
    """Feed every queued message to the indexing consumer, one per invocation (the event source's batch
    size), as Lambda's SQS poller would; return how many parts it processed."""
    template = load_event("sqs_entity_changes")["Records"][0]
    parts = 0
    while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        for message in messages:
            record = copy.deepcopy(template)
            record.update(messageId=message["MessageId"], body=message["Body"], eventSourceARN=arn)
            result = indexing_consumer.lambda_handler(
                {"Records": [record]}, FakeLambdaContext(aws_request_id="t")
            )
            assert result == {"batchItemFailures": []}
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
            parts += 1
    return parts


def test_a_2000_item_bulk_is_a_job_and_every_item_becomes_searchable(aws_jobs: Any) -> None:
    container, sqs, url, arn = aws_jobs
    items = [
        {"type": "task", "id": f"t-{i}", "title": f"quarterly ledger {i} zebra{i}"} for i in range(ITEMS)
    ]
    items[7] = {"type": "task", "id": "bad", "title": "\ud800"}  # not Unicode: reported by position

    status, body = invoke(api_event("bulk_entities", body={"items": items}))
    assert status == 202, body
    assert body["status"] == "queued" and body["items"] == ITEMS and body["parts"] >= ITEMS // 200
    job_id = body["job_id"]
    assert invoke(api_event("search", body={"query": "zebra1999", "strategy": "keyword"}))[1]["total"] == 0

    assert drain_through_consumer(sqs, url, arn) == body["parts"]

    status, job = invoke(api_event("get_job", path=f"/jobs/{job_id}"))
    assert status == 200, job
    assert job["status"] == "done" and job["parts_done"] == job["parts"]
    assert job["indexed"] == ITEMS - 1
    assert [(e["index"], e["entity_id"]) for e in job["errors"]] == [(7, "bad")]
    for i in (0, 1234, 1999):
        _, found = invoke(api_event("search", body={"query": f"zebra{i}", "strategy": "keyword"}))
        assert [r["entity_id"] for r in found["results"]] == [f"t-{i}"]


def test_a_redelivered_part_counts_once(aws_jobs: Any) -> None:
    container, sqs, url, arn = aws_jobs
    items = [{"type": "task", "id": f"r-{i}", "title": f"item {i}"} for i in range(450)]
    status, body = invoke(api_event("bulk_entities", body={"items": items}))
    assert status == 202
    [first, *_] = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1)["Messages"]
    message = json.loads(first["Body"])
    container.jobs.process(message)
    container.jobs.process(message)  # SQS delivers at least once
    job = container.jobs.status("acme", body["job_id"])
    assert job.to_json()["indexed"] == len(message["items"]) and job.status == "running"


def test_another_tenant_cannot_read_a_job(aws_jobs: Any) -> None:
    status, body = invoke(api_event("bulk_entities", body={"items": [
        {"type": "task", "id": f"x-{i}", "title": "t"} for i in range(300)]}))  # fmt: skip
    assert status == 202
    path = f"/jobs/{body['job_id']}"
    assert invoke(api_event("get_job", path=path, tenant="globex"))[0] == 404
    assert invoke(api_event("get_job", path="/jobs/nope"))[0] == 404


def test_a_job_part_on_the_entity_queue_is_not_a_job(aws_jobs: Any) -> None:
    """A producer cannot smuggle a job part (any tenant's items) through the entity-change queue."""
    _, sqs, url, arn = aws_jobs
    record = copy.deepcopy(load_event("sqs_entity_changes")["Records"][0])
    part = {"job": {"id": "j", "tenant_id": "victim", "kind": "bulk", "part": 0}, "offset": 0,
            "items": [{"type": "task", "id": "evil", "title": "x"}]}  # fmt: skip
    record.update(body=json.dumps(part), eventSourceARN="arn:aws:sqs:us-east-1:123456789012:entity-changes")
    result = indexing_consumer.lambda_handler({"Records": [record]}, FakeLambdaContext(aws_request_id="t"))
    assert len(result["batchItemFailures"]) == 1


def test_locally_a_job_runs_in_a_background_thread(tmp_path: Path, fake_embedder: FakeEmbedder) -> None:
    """No queue configured (the local server): the API still answers 202 at once and a thread indexes."""
    container = make_container(tmp_path / "data", fake_embedder, async_min_chunks=5)
    wiring.set_container(container)
    try:
        items = [{"type": "task", "id": f"n-{i}", "title": f"walrus{i}"} for i in range(12)]
        status, body = invoke(api_event("bulk_entities", body={"items": items}))
        assert status == 202 and body["parts"] == 3  # parts of at most 5 chunks
        container.job_queue.drain()
        status, job = invoke(api_event("get_job", path=f"/jobs/{body['job_id']}"))
        assert (status, job["status"], job["indexed"]) == (200, "done", 12)
        _, found = invoke(api_event("search", body={"query": "walrus11", "strategy": "keyword"}))
        assert [r["entity_id"] for r in found["results"]] == ["n-11"]
    finally:
        wiring.set_container(None)


def test_a_job_with_many_bad_items_keeps_its_status_small_and_counts_them_all(aws_jobs: Any) -> None:
    container, sqs, url, arn = aws_jobs
    items = [{"type": "task", "id": f"b-{i}", "title": "\udc00"} for i in range(600)]  # none is Unicode
    status, body = invoke(api_event("bulk_entities", body={"items": items}))
    assert status == 202
    drain_through_consumer(sqs, url, arn)
    _, job = invoke(api_event("get_job", path=f"/jobs/{body['job_id']}"))
    assert job["status"] == "done" and job["indexed"] == 0
    assert job["errors_total"] == 600 and 0 < len(job["errors"]) <= 100
    assert job["errors"][0]["index"] == 0

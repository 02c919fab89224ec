"""Queued work cut off after writing past an erase (docs/api.md, Erasing a tenant): a delivery that was
admitted before the erase, wrote after the erase's purge and stopped before its end-of-unit check (a
Lambda timeout, a crash) leaves writes nobody else would purge. Its redelivery — SQS says so by its
receive count, EventBridge retries without saying — is refused as erased work, and purges the tenant
before it is discarded. The local queue's claim taken over is in test_erasure.py."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from handlers.lambda_functions import indexing_consumer
from handlers.local_server.devserver import FakeLambdaContext
from infra.wiring import root as wiring
from tests.conftest import FakeEmbedder, api_event, invoke, load_event, make_container
from tests.handlers.erase_race import DOOMED, SECRET, erase, files_holding
from tests.handlers.test_indexing_handler import SAMPLE_SENDER
from tests.handlers.test_write_jobs import aws_jobs  # noqa: F401 (a fixture: SQS and DynamoDB on moto)

EVENT_SOURCE = "com.example.tasks"  # the sample EventBridge event's producer


@pytest.fixture
def box(tmp_path: Path, fake_embedder: FakeEmbedder) -> Iterator[Any]:
    """A local container whose doomed tenant a queue producer and an EventBridge source may write."""
    container = make_container(
        tmp_path / "data", fake_embedder, producer_tenants={SAMPLE_SENDER: [DOOMED], EVENT_SOURCE: [DOOMED]}
    )
    wiring.set_container(container)
    yield container
    wiring.set_container(None)


def straggler(container: Any, entity_id: str) -> None:
    """What a delivery cut off mid-way wrote after the erase's purge (straight to the service: its
    admission happened before the erase)."""
    body = {"content": f"{SECRET} written after the purge", "version": 1}
    container.indexing.put(DOOMED, "memory", entity_id, body, time.time())
    assert container.index.list_entities(DOOMED, None, 10, None)


def change(entity_id: str) -> dict[str, Any]:
    return {"op": "upsert", "type": "memory", "id": entity_id, "tenant_id": DOOMED, "version": 1,
            "entity": {"content": f"{SECRET} the change itself"}}  # fmt: skip


def consume(record: dict[str, Any]) -> dict[str, Any]:
    return dict(
        indexing_consumer.lambda_handler({"Records": [record]}, FakeLambdaContext(aws_request_id="t"))
    )


def test_an_sqs_change_delivered_again_after_the_erase_purges_what_its_first_delivery_left(
    box: Any,
) -> None:
    invoke(api_event("put_entity", tenant=DOOMED, path="/entities/memory/m-0", body={"content": "x"}))
    sent = time.time()  # the change was sent before the erase, and first delivered then
    erase(DOOMED)
    straggler(box, "late-1")
    record = copy.deepcopy(load_event("sqs_entity_changes")["Records"][0])
    record["body"] = json.dumps(change("late-1"))
    record["attributes"].update(ApproximateReceiveCount="2", SentTimestamp=str(int(sent * 1000)))
    assert consume(record) == {"batchItemFailures": []}  # discarded: a success, never dead-lettered
    assert box.index.list_entities(DOOMED, None, 10, None) == []
    assert files_holding(box.settings.data_dir, SECRET) == []


def test_an_eventbridge_change_retried_after_the_erase_purges_what_its_first_attempt_left(box: Any) -> None:
    event = load_event("eventbridge_entity_change")
    event["time"] = "2026-01-02T09:30:00Z"  # long before the erase
    event["detail"] = change("late-2")
    erase(DOOMED)
    straggler(box, "late-2")
    result = indexing_consumer.lambda_handler(event, FakeLambdaContext(aws_request_id="t"))
    assert result == {"outcome": "discarded"}
    assert box.index.list_entities(DOOMED, None, 10, None) == []


def test_a_job_part_delivered_again_after_the_erase_purges_what_its_first_delivery_left(
    aws_jobs: Any,  # noqa: F811 - the fixture imported above
) -> None:
    container, sqs, url, arn = aws_jobs
    items = [{"type": "memory", "id": f"j-{i}", "content": f"{SECRET} item {i}"} for i in range(300)]
    status, job = invoke(api_event("bulk_entities", tenant=DOOMED, body={"items": items}))
    assert status == 202, job
    [message] = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1)["Messages"]
    erase(DOOMED)
    straggler(container, "j-0")
    record = copy.deepcopy(load_event("sqs_entity_changes")["Records"][0])
    record.update(messageId=message["MessageId"], body=message["Body"], eventSourceARN=arn)
    record["attributes"]["ApproximateReceiveCount"] = "2"
    assert consume(record) == {"batchItemFailures": []}
    assert container.index.list_entities(DOOMED, None, 10, None) == []


def test_a_nightly_task_delivered_again_after_the_erase_purges_the_state_its_first_delivery_left(
    box: Any,
) -> None:
    from handlers.lambda_functions import nightly

    erase(DOOMED)
    box.state.put_overlay(DOOMED, "late-role", {"mission": f"{SECRET} mission", "version": "1.0"})
    record = copy.deepcopy(load_event("sqs_entity_changes")["Records"][0])
    record["body"] = json.dumps({"task": "golden", "tenant_id": DOOMED, "role_id": "late-role"})
    record["attributes"]["ApproximateReceiveCount"] = "2"
    assert nightly.lambda_handler({"Records": [record]}, FakeLambdaContext()) == {"batchItemFailures": []}
    assert box.state.list_overlays(DOOMED) == []

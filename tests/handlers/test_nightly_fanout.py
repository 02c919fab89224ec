"""The nightly run fans out: the schedule queues one task per tenant with pending feedback and
one per stored overlay, and each task message runs in its own invocation — no invocation's work grows
with the number of tenants. SQS on moto in-process; state on the local backend."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from handlers.lambda_functions import nightly
from handlers.local_server.devserver import FakeLambdaContext
from infra.wiring import root as wiring
from tests.adapters.statestore_data import with_feedback
from tests.conftest import FakeEmbedder, api_event, invoke, load_event, make_container

TENANTS = ("acme", "globex", "initech")


@pytest.fixture
def fanout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_embedder: FakeEmbedder) -> Iterator[Any]:
    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in {"AWS_ACCESS_KEY_ID": "t", "AWS_SECRET_ACCESS_KEY": "t", "AWS_DEFAULT_REGION": "us-east-1"}.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = sqs.create_queue(QueueName="quarry-eval-tasks")["QueueUrl"]
        container = make_container(tmp_path / "data", fake_embedder, eval_queue_url=url)
        wiring.set_container(container)
        yield container, sqs, url
        wiring.set_container(None)


def test_the_schedule_queues_one_task_per_tenant_and_overlay_and_each_runs_alone(fanout: Any) -> None:
    container, sqs, url = fanout
    for tenant in TENANTS:
        assert invoke(api_event("put_overlay", tenant=tenant))[0] in (200, 201)
    for tenant in TENANTS[:2]:  # two tenants have enough feedback to learn from
        with_feedback(container.state, [f"{tenant}-{i}" for i in range(10)], tenant=tenant)

    planned = nightly.lambda_handler(load_event("eventbridge_nightly_eval"), FakeLambdaContext())
    assert planned == {"queued": 5}

    template = load_event("sqs_entity_changes")["Records"][0]
    tasks = []
    while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        for message in messages:
            tasks.append(json.loads(message["Body"]))
            record = copy.deepcopy(template)
            record.update(messageId=message["MessageId"], body=message["Body"])
            result = nightly.lambda_handler({"Records": [record]}, FakeLambdaContext())
            assert result == {"batchItemFailures": []}
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    assert sorted((t["task"], t["tenant_id"]) for t in tasks) == sorted(
        [("learning", "acme"), ("learning", "globex")] + [("golden", t) for t in TENANTS]
    )
    assert container.state.pending_callers(10) == []  # every tenant learned
    for tenant in TENANTS:
        assert container.state.list_evals(tenant, "overlay:dba", 10), tenant


def test_a_malformed_task_fails_alone(fanout: Any) -> None:
    record = copy.deepcopy(load_event("sqs_entity_changes")["Records"][0])
    record.update(body=json.dumps({"task": "golden", "tenant_id": "acme"}))  # no role_id
    result = nightly.lambda_handler({"Records": [record]}, FakeLambdaContext())
    assert result == {"batchItemFailures": [{"itemIdentifier": record["messageId"]}]}

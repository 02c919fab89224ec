"""The event sources as AWS drives the functions (deploy/event_sources.py): the SQS event source mappings
with partial batch responses and redrive, the nightly schedule's fan-out, the entity bus's rule, and the
Cognito trigger whose claims reach the API through the JWT authorizer's payload."""

from __future__ import annotations

import json
from typing import Any

from deploy.event_sources import jwt_authorizer_context, pre_token_generation
from deploy.lambda_backends import client
from deploy.lambda_emulator import EmulatedFunction
from deploy.lambda_local import Deployment
from tests.conftest import api_event
from tests.lambda_runtime.conftest import (
    ASYNC_MIN_CHUNKS,
    BATCHING_WINDOW_SECONDS,
    SETTLE_SECONDS,
    call,
    eventually,
)

JOB_ITEMS = 3 * ASYNC_MIN_CHUNKS  # one chunk each: three parts on the jobs queue
LEARNING_ASSEMBLIES = 10  # the learning cycle's batch minimum (core/context/learning.py, EVAL_BATCH_SIZE)


def put_changes(local: Deployment, details: list[dict[str, Any]]) -> None:
    """Entity changes as a producer puts them on the stack's bus (its rule routes them to the queue)."""
    bus = local.stack.refs["EntityEventBus"]
    source = local.stack.parameters["EntityEventSources"][0]
    detail_type = local.stack.parameters["EntityEventDetailType"]
    entries = [
        {"EventBusName": bus, "Source": source, "DetailType": detail_type, "Detail": json.dumps(d)}
        for d in details
    ]
    assert client("events", local.moto_url).put_events(Entries=entries)["FailedEntryCount"] == 0


def searched(api: EmulatedFunction, tenant: str, query: str) -> set[str]:
    status, body = call(api, "POST", "/search", tenant, {"query": query, "limit": 100})
    assert status == 200, body
    return {r["entity_id"] for r in body["results"]}


def test_a_bulk_write_becomes_a_job_the_consumer_indexes_and_search_then_finds_every_item(
    local: Deployment, api: EmulatedFunction, consumer: EmulatedFunction
) -> None:
    tenant = "jobs-t"
    items = [
        {"type": "memory", "id": f"lh-{i}", "content": f"lighthouse keeper log entry {i}", "version": 1}
        for i in range(JOB_ITEMS)
    ]
    status, accepted = call(api, "POST", "/entities", tenant, {"items": items})
    assert status == 202 and accepted["parts"] == 3, accepted

    jobs = local.event_source("IndexingConsumerFunctionWriteJobs", consumer)

    def job() -> dict[str, Any]:
        return call(api, "GET", f"/jobs/{accepted['job_id']}", tenant)[1]

    batches = jobs.run(lambda: job()["status"] == "done", SETTLE_SECONDS)
    assert [len(b.message_ids) for b in batches] == [1, 1, 1]  # BatchSize 1: a part per invocation
    assert all(not b.failed for b in batches) and jobs.waiting() == 0
    assert job()["indexed"] == JOB_ITEMS
    expected = {item["id"] for item in items}
    assert eventually(lambda: searched(api, tenant, "lighthouse keeper") == expected), (
        "not every item is found"
    )


def test_a_malformed_entity_change_alone_returns_then_lands_in_the_dead_letter_queue(
    local: Deployment, api: EmulatedFunction, consumer: EmulatedFunction
) -> None:
    tenant = "redrive-t"
    good = [
        {"op": "upsert", "type": "task", "id": f"t-{i}", "tenant_id": tenant, "version": 1,
         "entity": {"title": f"calibrate the telescope mirror {i}"}}
        for i in range(2)
    ]  # fmt: skip
    malformed = {"op": "upsert", "type": "task", "tenant_id": tenant, "entity": {"title": "no id"}}
    put_changes(local, [*good, malformed])
    changes = local.event_source("IndexingConsumerFunctionEntityChanges", consumer, BATCHING_WINDOW_SECONDS)
    dlq = local.stack.refs["EntityChangesDLQ"]
    sqs = client("sqs", local.moto_url)

    def parked() -> list[dict[str, Any]]:
        return sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10, VisibilityTimeout=0).get(
            "Messages", []
        )

    batches = changes.run(lambda: changes.waiting() == 0, SETTLE_SECONDS)
    first, *redeliveries = batches
    assert len(first.message_ids) == 3 and len(first.failed) == 1 and len(first.deleted) == 2
    bad_id = first.failed[0]
    assert json.loads(first.bodies[first.message_ids.index(bad_id)])["detail"] == malformed
    max_receives = local.stack.properties("EntityChangesQueue")["RedrivePolicy"]["maxReceiveCount"]
    assert [b.message_ids for b in redeliveries] == [(bad_id,)] * (max_receives - 1)
    assert [b.failed for b in redeliveries] == [(bad_id,)] * (max_receives - 1)
    assert [b.receive_counts for b in batches[1:]] == [(n,) for n in range(2, max_receives + 1)]
    assert [json.loads(m["Body"])["detail"] for m in eventually(parked)] == [malformed]
    assert eventually(lambda: searched(api, tenant, "telescope mirror") == {"t-0", "t-1"})


def test_the_nightly_schedule_queues_one_task_per_tenant_and_each_runs_in_the_eval_function(
    local: Deployment, api: EmulatedFunction, nightly: EmulatedFunction
) -> None:
    from infra.dynamodb.state import DynamoStateStore
    from tests.adapters.statestore_data import with_feedback

    tenants = ("night-a", "night-b")
    store = DynamoStateStore(local.stack.refs["StateTable"], client=client("dynamodb", local.moto_url))
    for tenant in tenants:  # feedback the learning cycle can learn from, written as the API writes it
        with_feedback(store, [f"{tenant}-{i}" for i in range(LEARNING_ASSEMBLIES)], tenant=tenant)
    schedule = local.schedule("NightlyEvalFunctionNightly", nightly)
    assert schedule.expression == local.stack.parameters["NightlyEvalSchedule"]

    planned = schedule.fire()
    assert not planned.function_error, nightly.output()[-3000:]
    tasks = local.event_source("NightlyEvalFunctionEvalTasks", nightly)
    batches = tasks.run(lambda: tasks.waiting() == 0, SETTLE_SECONDS)
    assert len(batches) == planned.payload["queued"] and all(len(b.message_ids) == 1 for b in batches)
    assert all(b.invocation.payload == {"batchItemFailures": []} for b in batches)
    learning = sorted(json.loads(b.bodies[0])["tenant_id"] for b in batches if '"learning"' in b.bodies[0])
    assert [t for t in learning if t in tenants] == list(tenants)  # one task per tenant, each run once
    for tenant in tenants:
        status, weights = call(api, "GET", "/context/weights", tenant)
        assert status == 200 and weights["weights"], weights

    again = schedule.fire()  # what was learned from is marked: tomorrow has nothing for these tenants
    queued = tasks.run(lambda: tasks.waiting() == 0, SETTLE_SECONDS)
    assert again.payload["queued"] == len(queued)
    assert not [b for b in queued if any(t in b.bodies[0] for t in tenants)]


def test_the_cognito_trigger_puts_the_tenant_in_the_access_token_the_api_then_trusts(
    api: EmulatedFunction, pretoken: EmulatedFunction, local: Deployment
) -> None:
    server = local.stack.parameters["JwtResourceServer"]
    scopes = [f"{server}/read", "aws.cognito.signin.user.admin"]
    claims = pre_token_generation(pretoken, "alice", ["tenant:cog-t", "staff"], scopes, "app-client")
    assert claims["tenant"] == "cog-t" and claims["token_use"] == "access"

    event = api_event("search", path="/whoami", method="GET")
    event["requestContext"]["authorizer"] = jwt_authorizer_context(claims)
    answer = json.loads(api.invoke(event).payload["body"])
    assert answer == {"tenant": "cog-t", "scopes": ["read"], "caller": claims["sub"]}

    torn = pre_token_generation(pretoken, "mallory", ["tenant:cog-t", "tenant:other"], scopes, "app-client")
    assert "tenant" not in torn  # two tenant groups: no tenant claim, and Quarry refuses the token
    event["requestContext"]["authorizer"] = jwt_authorizer_context(torn)
    assert api.invoke(event).payload["statusCode"] == 403


def test_an_item_too_big_for_one_queue_message_travels_through_the_payload_bucket(
    local: Deployment, api: EmulatedFunction, consumer: EmulatedFunction
) -> None:
    """A PUT whose part is above SQS's 262,144 bytes only as UTF-8 (140,000 × `é`: 280,000 bytes; ASCII
    escaping would make it 840,000): the API puts the part in the payload bucket, the consumer reads it,
    indexes the entity and deletes the object."""
    tenant, text = "big-t", "é" * 140_000
    status, accepted = call(
        api, "PUT", "/entities/document/big", tenant, {"title": "a big one", "text": text}
    )
    assert status == 202, accepted
    s3, bucket = client("s3", local.moto_url), local.stack.refs["JobPayloadsBucket"]
    assert s3.list_objects_v2(Bucket=bucket).get("KeyCount") == 1

    jobs = local.event_source("IndexingConsumerFunctionWriteJobs", consumer)

    def job() -> dict[str, Any]:
        return call(api, "GET", f"/jobs/{accepted['job_id']}", tenant)[1]

    batches = jobs.run(lambda: job()["status"] == "done", SETTLE_SECONDS)
    assert all(not b.failed for b in batches) and jobs.waiting() == 0, consumer.output()[-3000:]
    assert (job()["indexed"], job()["errors"]) == (1, [])
    status, entity = call(api, "GET", "/entities/document/big", tenant)
    assert status == 200 and text in json.dumps(entity, ensure_ascii=False), entity
    assert s3.list_objects_v2(Bucket=bucket).get("KeyCount") == 0

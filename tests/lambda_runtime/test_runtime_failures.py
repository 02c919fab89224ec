"""Failures the runtime owns: a bad setting fails the init (the runtime's init error names it), a hung
backend is answered 503 + Retry-After before the function's timeout, and a function stopped at its
timeout loses no acknowledged write (the queue delivers it again)."""

from __future__ import annotations

import json

import pytest

from deploy.lambda_backends import client
from deploy.lambda_emulator import EmulatedFunction
from deploy.lambda_local import Deployment
from tests.conftest import api_event
from tests.lambda_runtime.conftest import BATCHING_WINDOW_SECONDS, SETTLE_SECONDS, call, eventually
from tests.lambda_runtime.outage import StallingProxy, silent_server
from tests.lambda_runtime.test_event_sources import put_changes, searched

# Short function timeouts, each above a warm answer here and below the OpenSearch client's own wait
# (5 s per attempt, 4 attempts): the function, not the client, decides when time is up.
HUNG_TIMEOUT_SECONDS = 5
KILLED_TIMEOUT_SECONDS = 8  # also leaves a cold start, the model's load and the write time to succeed


@pytest.mark.parametrize(
    ("function", "variable", "value"),
    [
        ("ApiFunction", "QUARRY_OPENSEARCH_URL", ""),
        ("IndexingConsumerFunction", "QUARRY_OPENSEARCH_URL", ""),
        ("NightlyEvalFunction", "QUARRY_OPENSEARCH_URL", ""),
        ("ApiFunction", "QUARRY_MAX_LIMIT", "lots"),
    ],
)
def test_a_bad_setting_fails_the_init_naming_the_variable(
    local: Deployment, function: str, variable: str, value: str
) -> None:
    broken = local.function(function, **{variable: value})
    for _ in range(2):  # every invocation, not a hang and never a 200
        answer = broken.invoke({"version": "2.0"} if function == "ApiFunction" else {"Records": []})
        assert answer.init_failed, answer.body
        error = answer.payload
        assert error["errorType"] == "ConfigurationError" and variable in error["errorMessage"], error


def test_a_hung_search_backend_is_a_503_with_retry_after_before_the_function_times_out(
    local: Deployment,
) -> None:
    with silent_server() as hung:
        api = local.function("ApiFunction", timeout=HUNG_TIMEOUT_SECONDS, QUARRY_OPENSEARCH_URL=hung)
        assert call(api, "GET", "/health", "hung-t")[0] == 200  # the init is done; the clock starts now
        for method, path, body in (
            ("POST", "/search", {"query": "lighthouse"}),
            ("PUT", "/entities/memory/m-1", {"content": "lighthouse keeper"}),
        ):
            event_answer = api.invoke(
                api_event("search", tenant="hung-t", method=method, path=path, body=body)
            )
            assert not event_answer.timed_out, api.output()[-2000:]
            response = event_answer.payload
            assert response["statusCode"] == 503 and int(response["headers"]["Retry-After"]) > 0, response
            assert json.loads(response["body"])["error"]["code"] == "unavailable"


def test_a_write_whose_consumer_was_stopped_at_its_timeout_is_delivered_again_and_indexed(
    local: Deployment, api: EmulatedFunction
) -> None:
    tenant = "outage-t"
    proxy = StallingProxy(local.opensearch_url)
    try:
        consumer = local.function(
            "IndexingConsumerFunction", timeout=KILLED_TIMEOUT_SECONDS, QUARRY_OPENSEARCH_URL=proxy.url
        )
        changes = local.event_source(
            "IndexingConsumerFunctionEntityChanges", consumer, BATCHING_WINDOW_SECONDS
        )
        proxy.stalled.set()
        change = {"op": "upsert", "type": "memory", "id": "m-vault", "tenant_id": tenant, "version": 1,
                  "entity": {"content": "the vault combination changes at midnight"}}  # fmt: skip
        put_changes(local, [change])  # acknowledged by EventBridge: it must not be lost

        stopped = changes.run(lambda: bool(changes.batches), SETTLE_SECONDS)[0]
        assert stopped.invocation.timed_out and stopped.deleted == ()
        proxy.stalled.clear()  # the node answers again
        changes.run(lambda: changes.waiting() == 0, SETTLE_SECONDS)
    finally:
        proxy.close()
    redelivered = changes.batches[-1]
    assert (
        redelivered.receive_counts == (2,)
        and not redelivered.failed
        and not redelivered.invocation.function_error
    )
    dlq = local.stack.refs["EntityChangesDLQ"]
    sqs = client("sqs", local.moto_url)
    parked = sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10, VisibilityTimeout=0).get(
        "Messages", []
    )
    assert change not in [json.loads(m["Body"])["detail"] for m in parked]
    assert eventually(lambda: searched(api, tenant, "vault combination") == {"m-vault"})

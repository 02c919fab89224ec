"""The functions as Lambda runs them: the built artifact in the Lambda Runtime Interface Emulator with
awslambdaric on Python 3.12, in its read-only sandbox, against moto_server and the OpenSearch node
(deploy/lambda_local.py). Nothing here calls a handler in this interpreter.

Without the emulator or Python 3.12 (`make lambda-runtime` builds both), or without Linux's `unshare`,
these tests skip naming what is missing; with QUARRY_REQUIRE_LAMBDA=1 (CI, .ci/run) they fail instead.

One deployment per session (moto_server, the stack's tables and queues, an index prefix of its own on the
node, deleted afterwards); each test uses tenants of its own. The queues' visibility timeout is 1 s
instead of the template's 360 s, so redeliveries and redrives happen within the test; the entity queue's
5 s batching window is 0.5 s for the same reason.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from deploy.lambda_builds import missing
from deploy.lambda_emulator import EmulatedFunction
from deploy.lambda_local import Deployment, deployment
from deploy.lambda_template import parameter_overrides

pytestmark = pytest.mark.lambda_runtime
VISIBILITY_SECONDS = 1
BATCHING_WINDOW_SECONDS = 0.5
ASYNC_MIN_CHUNKS = 20  # the template parameter: bulks above 20 chunks become jobs of 20-chunk parts
BUS_TENANTS = ("redrive-t", "outage-t")  # tenants the tests' entity changes write through the bus
SETTLE_SECONDS = 60.0  # a deadline for polls that wait on the node's refresh or a queue; never a sleep
POLL_SECONDS = 0.2


@pytest.fixture(scope="session")
def lambda_runtime() -> None:
    problems = missing()
    if problems:
        reason = "cannot run the emulated functions: " + "; ".join(problems)
        if os.environ.get("QUARRY_REQUIRE_LAMBDA", "") not in ("", "0"):
            pytest.fail(reason + " (QUARRY_REQUIRE_LAMBDA=1 makes this a failure)", pytrace=False)
        pytest.skip(reason)


def producer_tenants() -> str:
    """samconfig.toml's producers, and the bus's source may also write the tenants these tests use."""
    producers = json.loads(parameter_overrides("local_invoke")["EntityProducerTenants"])
    producers["quarry.entities"] = [*producers.get("quarry.entities", []), *BUS_TENANTS]
    return json.dumps(producers)


@pytest.fixture(scope="session")
def local(lambda_runtime: None, opensearch_url: str) -> Iterator[Deployment]:
    """The stack on moto_server and the node, for the session."""
    name = f"quarry-t{uuid.uuid4().hex[:8]}"
    with deployment(
        "local_invoke",
        opensearch_url,
        overrides={"AsyncMinChunks": str(ASYNC_MIN_CHUNKS), "EntityProducerTenants": producer_tenants()},
        stack_name=name,
        visibility_timeout=VISIBILITY_SECONDS,
        environment={"QUARRY_OPENSEARCH_INDEX_PREFIX": name},
    ) as stack:
        yield stack
    _delete_indices(opensearch_url, name)


def _delete_indices(url: str, prefix: str) -> None:
    from infra.opensearch import mapping
    from tests.adapters.opensearch_live_support import live_client

    client = live_client(url)
    for name in client.indices.get(index=f"{prefix}-v*", ignore=404) or {}:  # by name: see live support
        client.indices.delete(index=name, ignore=404)
    client.indices.delete_index_template(name=mapping.template_name(prefix), ignore=404)


@pytest.fixture(scope="session")
def api(local: Deployment) -> EmulatedFunction:
    return local.function("ApiFunction")


@pytest.fixture(scope="session")
def consumer(local: Deployment) -> EmulatedFunction:
    return local.function("IndexingConsumerFunction")


@pytest.fixture(scope="session")
def nightly(local: Deployment) -> EmulatedFunction:
    return local.function("NightlyEvalFunction")


@pytest.fixture(scope="session")
def pretoken(local: Deployment) -> EmulatedFunction:
    return local.function("PreTokenGenerationFunction")


def eventually(check: Callable[[], Any], timeout: float = SETTLE_SECONDS) -> Any:
    """`check()`'s first truthy value, polled until `timeout` (the node refreshes about once a second)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(POLL_SECONDS)


def call(
    function: EmulatedFunction,
    method: str,
    path: str,
    tenant: str,
    body: Any = None,
    scopes: tuple[str, ...] = ("read", "write", "admin"),
) -> tuple[int, Any]:
    """One HTTP API request to the emulated API function (a payload 2.0 event with the authorizer's
    context); (status, decoded body)."""
    from tests.conftest import api_event

    event = api_event("search", tenant=tenant, scopes=scopes, path=path, method=method)
    event["body"] = None if body is None else json.dumps(body)
    answer = function.invoke(event)
    assert not answer.function_error, (answer.body, function.output()[-3000:])
    payload = answer.payload
    return int(payload["statusCode"]), json.loads(payload["body"]) if payload.get("body") else None

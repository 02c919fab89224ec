"""The local dev server with DynamoDB state and cache on a moto server on loopback (QUARRY_STATE=dynamodb):
the context feedback → learning flow works through HTTP, and the state really lives in DynamoDB."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto.server import ThreadedMotoServer

from tests.conftest import FakeEmbedder, make_container
from tests.handlers.serving import free_port, serving
from tests.handlers.test_devserver_and_cli import call

KEY = "qk_test_dynamo"
ASSEMBLIES = 12  # above the learning cycle's batch minimum of 10 (seed EVAL_BATCH_SIZE)


@pytest.fixture
def moto_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    for name, value in {
        "AWS_ENDPOINT_URL_DYNAMODB": endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    try:
        yield endpoint
    finally:
        server.stop()


@pytest.fixture
def url(moto_endpoint: str, tmp_path: Path) -> Iterator[str]:
    from infra.wiring.root import set_container

    container = make_container(tmp_path, FakeEmbedder(), state="dynamodb", cache="dynamodb")
    set_container(container)
    keys = {KEY: {"tenant": "acme", "scopes": ["read", "write", "admin"]}}
    with serving(keys, 1_048_576) as url:
        yield url
        set_container(None)


def test_feedback_and_learning_flow_through_the_dev_server_on_dynamodb(url: str, moto_endpoint: str) -> None:
    items: list[dict[str, Any]] = []
    for i in range(6):
        items.append(
            {
                "type": "memory",
                "id": f"mem-{i}",
                "content": f"deploy pipeline step {i} uses canary",
                "source": "memory",
                "version": 1,
            }
        )
        items.append(
            {
                "type": "document",
                "id": f"doc-{i}",
                "title": f"deploy pipeline manual {i}",
                "text": f"the deploy pipeline chapter {i} describes canary releases",
                "source": "vault",
                "version": 1,
            }
        )
    status, body = call(f"{url}/entities", "POST", {"items": items}, key=KEY)
    assert status == 200 and body["indexed"] == 12, body

    for _ in range(ASSEMBLIES):
        status, assembled = call(
            f"{url}/context/assemble",
            "POST",
            {"query": "deploy pipeline canary", "caller": "agent-a", "token_budget": 800},
            key=KEY,
        )
        assert status == 200, assembled
        sources = {s["source"] for s in assembled["sources"]}
        assert {"memory", "vault_index"} <= sources
        used = [s["id"] for s in assembled["sources"] if s["source"] == "memory"]
        status, fed = call(
            f"{url}/context/feedback",
            "POST",
            {"assembly_id": assembled["assembly_id"], "used_source_ids": used},
            key=KEY,
        )
        assert status == 200, fed

    status, learned = call(f"{url}/context/eval", "POST", {}, key=KEY)
    assert status == 200, learned
    status, weights = call(f"{url}/context/weights", "GET", key=KEY)
    assert status == 200
    rows = {(w["caller"], w["source"]): w for w in weights["weights"]}
    assert rows[("agent-a", "memory")]["weight"] > rows[("agent-a", "vault_index")]["weight"]

    # The state is in DynamoDB (on the moto server), not in the local SQLite file.
    dynamodb = boto3.client("dynamodb", endpoint_url=moto_endpoint)
    tables = dynamodb.list_tables()["TableNames"]
    assert "quarry-state" in tables
    assert dynamodb.scan(TableName="quarry-state", Select="COUNT")["Count"] >= ASSEMBLIES

"""The erase race of test_erasure.py on the production stack: the live OpenSearch node (documents written
without refresh, as deployed), state, jobs and cache in DynamoDB on a moto server, traffic from three
processes while a fourth erases. Afterwards no document of the tenant is found on the node, and no item
of either table holds a byte of it (the cached searches it left in DynamoDB stayed there until their TTL
before); its later requests were refused and its reopening serves it again, empty."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from infra.opensearch import build_client
from infra.wiring.root import Container, set_container
from tests.conftest import FakeEmbedder, api_event, invoke, make_container
from tests.handlers.erase_race import (
    DOOMED,
    KEPT,
    SECRET,
    VISIBLE,
    check_race,
    data_bytes,
    erase,
    fill,
    racing,
)
from tests.handlers.test_opensearch_api import moto_endpoint, stack  # noqa: F401 (fixtures)
from tests.handlers.test_tenant_lifecycle import export_all

pytestmark = [pytest.mark.live, pytest.mark.slow]


@pytest.fixture
def deployed(tmp_path: Path, stack: dict[str, Any]) -> Iterator[tuple[Container, dict[str, Any]]]:  # noqa: F811
    """The stack as deployed (no refresh after writes), bulk writes above 4 chunks as jobs."""
    settings = {**stack, "opensearch_refresh": "false", "async_min_chunks": 4, "reopen_after_seconds": 0}
    container = make_container(tmp_path / "data", FakeEmbedder(), **settings)
    set_container(container)
    yield container, {"data_dir": str(tmp_path / "data"), **settings}
    set_container(None)


def table_bytes(endpoint: str, *tables: str) -> bytes:
    client = boto3.client("dynamodb", endpoint_url=endpoint)
    items = [
        i
        for t in tables
        for page in client.get_paginator("scan").paginate(TableName=t)
        for i in page["Items"]
    ]
    return json.dumps(items).encode()


def node_hits(url: str, prefix: str, query: dict[str, Any]) -> int:
    client = build_client(url)
    client.indices.refresh(index=prefix)  # the alias is the prefix
    return int(client.count(index=prefix, body={"query": query})["count"])


def test_an_erase_racing_its_tenant_leaves_nothing_on_opensearch_or_dynamodb(
    deployed: tuple[Container, dict[str, Any]],
    opensearch_url: str,
    moto_endpoint: str,  # noqa: F811
) -> None:
    container, settings = deployed
    fill(KEPT, VISIBLE)
    fill(DOOMED, SECRET)
    before = export_all(KEPT)
    with racing(settings) as race:
        erase(DOOMED)
        erased_at = time.time()
        results = race.finish(erased_at)
    check_race(results, erased_at)
    container.job_queue.drain()

    prefix = settings["opensearch_index_prefix"]
    assert node_hits(opensearch_url, prefix, {"term": {"tenant_id": DOOMED}}) == 0
    assert node_hits(opensearch_url, prefix, {"query_string": {"query": SECRET}}) == 0
    assert node_hits(opensearch_url, prefix, {"term": {"tenant_id": KEPT}}) > 0
    stored = table_bytes(moto_endpoint, settings["state_table"], settings["cache_table"])
    assert DOOMED.encode() not in stored and SECRET.encode() not in stored
    assert KEPT.encode() in stored and VISIBLE.encode() in stored
    assert SECRET.encode() not in data_bytes(Path(settings["data_dir"]))  # the local job queue's file
    assert export_all(KEPT) == before

    status, reopened = invoke(api_event("reopen_tenant", tenant=DOOMED, body={"confirm": DOOMED}))
    assert status == 200, reopened
    assert invoke(api_event("search", tenant=DOOMED, body={"query": f"{SECRET} harbor"}))[1]["results"] == []

"""Nothing silently partial: a search, an assembly or a governed retrieval the cluster answers from some
shards only (a node lost, a shard without an active copy, a timeout on the node) is refused with 503 and
Retry-After, never presented as complete. The handlers run end to end over the real adapter; only the
cluster is simulated (FakeOpenSearch), answering every `_msearch` item with a shard missing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from infra.opensearch import RetryPolicy, build_opensearch_index
from infra.wiring import root as wiring
from tests.adapters.opensearch_fakes import FakeOpenSearch
from tests.adapters.test_opensearch_errors import shards_missing
from tests.conftest import FakeEmbedder, api_event, make_container


@pytest.fixture
def partial_cluster(tmp_path: Path, fake_embedder: FakeEmbedder) -> Iterator[FakeOpenSearch]:
    server = FakeOpenSearch()

    def answer(lines: list[dict[str, Any]]) -> dict[str, Any]:
        return {"took": 1, "responses": [shards_missing() for _ in lines[1::2]]}

    server.msearch_responses = [answer] * 100
    container = make_container(tmp_path / "data", fake_embedder, cache_ttl_seconds=0)
    index = build_opensearch_index(
        server, dimension=fake_embedder.dimension, retry=RetryPolicy(max_retries=1)
    )
    container.override(index=index)
    wiring.set_container(container)
    yield server
    wiring.set_container(None)


def call(event: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
    import json

    from handlers.lambda_functions.api import lambda_handler
    from handlers.local_server.devserver import FakeLambdaContext

    result = lambda_handler(event, FakeLambdaContext(aws_request_id="test"))
    return int(result["statusCode"]), result.get("headers") or {}, json.loads(result["body"])


@pytest.mark.parametrize("strategy", ["keyword", "semantic", "hybrid"])
def test_a_search_answered_by_some_shards_only_is_a_503_to_retry(
    partial_cluster: FakeOpenSearch, strategy: str
) -> None:
    status, headers, body = call(api_event("search", body={"query": "login token", "strategy": strategy}))
    assert status == 503, body
    assert int(headers["Retry-After"]) > 0 and body["error"]["code"] == "unavailable"
    assert body.get("results") is None  # no answer at all rather than a short one
    assert len(partial_cluster.calls("msearch")) == 2  # the partial search was asked again once


def test_an_assembly_answered_by_some_shards_only_is_a_503_to_retry(partial_cluster: FakeOpenSearch) -> None:
    body = {"query": "how does the login rate limiter work", "caller": "agent-coder", "namespace": "auth"}
    status, headers, answer = call(api_event("context_assemble", body=body))
    assert status == 503, answer
    assert int(headers["Retry-After"]) > 0


def test_a_governed_retrieval_answered_by_some_shards_only_is_a_503_to_retry(
    partial_cluster: FakeOpenSearch,
) -> None:
    status, headers, answer = call(api_event("retrieve"))
    assert status == 503, answer
    assert int(headers["Retry-After"]) > 0

"""One index round trip per context assembly: every source's lexical and vector query, and the
cross-namespace expansion, go out in ONE `_msearch`. Counted at the HTTP layer: the real opensearch-py
client and Transport run over a connection that counts requests and answers `_msearch` with one (empty)
response per search it was sent."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opensearchpy import OpenSearch

from infra.opensearch.index import build_opensearch_index
from infra.wiring import root as wiring
from tests.adapters.opensearch_fakes import FakeConnection, search_response
from tests.conftest import FakeEmbedder, api_event, invoke, make_container


class CountingConnection(FakeConnection):
    """Answers each `_msearch` with one empty search response per query line pair."""

    def perform_request(self, method: str, url: str, params: Any = None, body: Any = None, **kw: Any) -> Any:
        if url.endswith("/_msearch"):
            self.attempts.append((method, url))
            text = body.decode() if isinstance(body, bytes) else str(body)
            searches = len([line for line in text.splitlines() if line.strip()]) // 2
            self.searches.append(searches)
            payload = {"took": 1, "responses": [{**search_response([]), "status": 200}] * searches}
            return 200, {"content-type": "application/json"}, json.dumps(payload)
        return super().perform_request(method, url, params, body, **kw)


@pytest.fixture
def traffic(tmp_path: Path, fake_embedder: FakeEmbedder) -> Iterator[tuple[list[Any], list[int]]]:
    attempts: list[Any] = []
    searches: list[int] = []
    CountingConnection.searches = searches  # type: ignore[attr-defined]
    client = OpenSearch(hosts=["http://127.0.0.1:9"], connection_class=CountingConnection, attempts=attempts)
    container = make_container(tmp_path / "data", fake_embedder)
    container.override(
        index=build_opensearch_index(client, dimension=fake_embedder.dimension, auto_create=False)
    )
    wiring.set_container(container)
    yield attempts, searches
    wiring.set_container(None)


def test_an_assembly_over_every_default_source_is_one_index_round_trip(traffic: Any) -> None:
    attempts, searches = traffic
    body = {"query": "how does the login rate limiter work", "caller": "agent-coder", "namespace": "auth"}
    status, answer = invoke(api_event("context_assemble", body=body))
    assert status == 200, answer
    sources = len(wiring.container().context_settings.sources)
    assert sources == 10  # the seed's five stores and the five entity types users write
    assert attempts == [("POST", "/_msearch")]
    # every source + the cross-namespace expansion, each a lexical and a vector query
    assert searches == [2 * (sources + 1)]


def test_chunk_vectors_come_back_from_one_mget_of_the_stored_documents() -> None:
    import numpy as np

    from core.models import EntityKey
    from tests.adapters.opensearch_fakes import FakeOpenSearch
    from tests.adapters.search_index_contract import DIM, record, unit

    server = FakeOpenSearch()
    index = build_opensearch_index(server, dimension=DIM)
    index.upsert(record("t", "document", "d", "x", chunks=["first part", "second part"]))
    d = EntityKey("document", "d")
    before = len(server.calls("mget"))
    got = index.chunk_vectors("t", [(d, 1), (EntityKey("memory", "absent"), 0)])
    assert list(got) == [(d, 1)] and np.allclose(got[(d, 1)], unit(1, 2), atol=1e-6)
    assert len(server.calls("mget")) == before + 1
    assert index.chunk_vectors("other-tenant", [(d, 1)]) == {}

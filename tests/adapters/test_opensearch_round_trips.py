"""Round trips to the index, counted at the HTTP layer (the real opensearch-py client and Transport over a
connection that counts requests and answers each `_msearch`): one per context assembly (every source's
lexical and vector query, and the cross-namespace expansion, in ONE `_msearch`), and at most two per hybrid
search with vector feedback on (docs/benchmarks.md#compact-feedback-vectors)."""

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


def _tenant(body: Any) -> str | None:
    """The tenant a search body filters on (its `tenant_id` term, wherever the query nests it)."""
    if isinstance(body, dict):
        term = body.get("term")
        if isinstance(term, dict) and "tenant_id" in term:
            return str(term["tenant_id"])
        found = (_tenant(v) for v in body.values())
    elif isinstance(body, list):
        found = (_tenant(v) for v in body)
    else:
        return None
    return next((t for t in found if t is not None), None)


class HitConnection(FakeConnection):
    """Answers every search of an `_msearch` with one hit, the document "a", its doc values as asked
    (the compact feedback vectors among them when asked); counts every request."""

    vector: Any = None

    def perform_request(self, method: str, url: str, params: Any = None, body: Any = None, **kw: Any) -> Any:
        from infra.opensearch import documents
        from infra.opensearch import mapping as m

        if not url.endswith("/_msearch"):
            self.attempts.append((method, url))
            return 200, {"content-type": "application/json"}, json.dumps({"docs": []})
        self.attempts.append((method, url))
        text = body.decode() if isinstance(body, bytes) else str(body)
        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
        answers = []
        for search in lines[1::2]:
            asked = search.get("docvalue_fields") or []
            values = {m.TENANT: [_tenant(search)], m.DELETED: [False], m.ENTITY_TYPE: ["document"]}
            values |= {m.ENTITY_ID: ["a"], m.TITLE_VALUE: ["A"], m.METADATA_VALUE: ["{}"]}
            values[m.FEEDBACK_VECTORS] = [documents.feedback_vectors([(0, self.vector)])]
            hit = {"_score": 0.9, "fields": {k: v for k, v in values.items() if k in asked}}
            answers.append({**search_response([hit]), "status": 200})
        return 200, {"content-type": "application/json"}, json.dumps({"took": 1, "responses": answers})


@pytest.fixture
def hybrid_traffic(tmp_path: Path, fake_embedder: FakeEmbedder) -> Iterator[tuple[list[Any], Any]]:
    import numpy as np

    attempts: list[Any] = []
    HitConnection.vector = np.ones(fake_embedder.dimension, np.float32) / np.sqrt(fake_embedder.dimension)
    client = OpenSearch(hosts=["http://127.0.0.1:9"], connection_class=HitConnection, attempts=attempts)
    container = make_container(tmp_path / "data", fake_embedder)
    index = build_opensearch_index(client, dimension=fake_embedder.dimension, auto_create=False)
    container.override(index=index)
    wiring.set_container(container)
    yield attempts, index
    wiring.set_container(None)


@pytest.mark.parametrize("mode", ["search", "rescore"])
def test_a_hybrid_search_with_feedback_is_at_most_two_round_trips(
    hybrid_traffic: Any, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    # Given an index keeping the compact feedback vectors, when a hybrid search runs with feedback on, then
    # the top results' vectors come with the first `_msearch` (no `_mget`): the feedback's k-NN search is
    # the second round trip, and re-scoring the candidates in hand makes none.
    import dataclasses

    attempts, _ = hybrid_traffic
    settings = wiring.container().search_settings
    assert settings.feedback_docs > 0
    tuned = dataclasses.replace(settings, feedback_mode=mode)
    wiring.container().override(search_settings=tuned)
    status, answer = invoke(api_event("search", body={"query": "rate limiter", "strategy": "hybrid"}))
    assert status == 200, answer
    assert [entity["entity_id"] for entity in answer["results"]] == ["a"]
    expected = 2 if mode == "search" else 1
    assert attempts == [("POST", "/_msearch")] * expected


@pytest.mark.parametrize("mode", ["search", "rescore"])
def test_an_index_without_the_compact_vectors_reads_them_by_mget_as_before(
    hybrid_traffic: Any, mode: str
) -> None:
    # Re-scoring needs the vectors in hand: without them it searches again, as before (never an `_mget`
    # of every candidate).
    import dataclasses

    attempts, index = hybrid_traffic
    index._lifecycle._feedback_vectors = False  # an index made before them (mapping.has_feedback_vectors)
    settings = wiring.container().search_settings
    wiring.container().override(search_settings=dataclasses.replace(settings, feedback_mode=mode))
    status, answer = invoke(api_event("search", body={"query": "rate limiter", "strategy": "hybrid"}))
    assert status == 200, answer
    assert [url for _, url in attempts] == ["/_msearch", "/quarry/_mget", "/_msearch"]

"""POST /embed through the HTTP API Lambda (docs/api.md, Your own vectors): the tenant's model's vectors for
given texts, as queries or passages; read scope; bounded in texts and characters, each bound a 400 naming
it; a tenant that brings its own vectors has no model (409); a vector it answers finds what the model
indexed, sent as `query_vector`, and is taken as a write's `embedding`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core.search.embedding import MAX_EMBED_CHARS, MAX_EMBED_TEXTS
from infra.wiring.root import set_container
from tests.conftest import FakeEmbedder, api_event, invoke, make_container

DIM = 16


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Any]:
    c = make_container(tmp_path / "data", FakeEmbedder(DIM), byo_vector_tenants={"byo": 3})
    set_container(c)
    yield c
    set_container(None)


def embed(body: Any, tenant: str = "acme", scopes: tuple[str, ...] = ("read",)) -> tuple[int, Any]:
    return invoke(api_event("embed", tenant=tenant, scopes=scopes, body=body))


def test_the_sample_event_answers_one_query_vector_of_the_models_dimension(app: Any) -> None:
    status, body = invoke(api_event("embed"))
    assert status == 200, body
    assert (body["model"], body["dimension"], body["kind"]) == (app.embedder.model_id, DIM, "query")
    (vector,) = body["vectors"]
    assert len(vector) == DIM and np.isclose(np.linalg.norm(vector), 1.0, atol=1e-5)


def test_queries_and_passages_are_the_models_own_vectors_in_the_order_asked(app: Any) -> None:
    model = FakeEmbedder(DIM)
    texts = ["rotate the keys", "rate limiter", "login"]
    for kind, expected in (("query", model.embed_query(texts)), ("passage", model.embed(texts))):
        status, body = embed({"texts": texts, "kind": kind})
        assert status == 200 and body["kind"] == kind, body
        assert np.allclose(np.array(body["vectors"]), np.array(expected), atol=1e-6)


def test_a_passage_vector_is_a_writes_embedding_and_a_query_vector_finds_it(app: Any) -> None:
    _, passage = embed({"texts": ["Keys rotate monthly"], "kind": "passage"})
    body = {"content": "Keys rotate monthly", "embedding": passage["vectors"][0], "version": 1}
    status, put = invoke(api_event("put_entity", path="/entities/memory/m3", body=body))
    assert status == 200 and put["reembedded"] is False, put
    _, query = embed({"texts": ["Keys rotate monthly"]})
    search = {"query": "", "strategy": "semantic", "query_vector": query["vectors"][0]}
    status, found = invoke(api_event("search", body=search))
    assert status == 200 and [r["entity_id"] for r in found["results"]] == ["m3"], found


def test_embedding_needs_the_read_scope(app: Any) -> None:
    status, body = embed({"texts": ["x"]}, scopes=("write",))
    assert status == 403, body
    status, body = invoke(api_event("embed", tenant=None))
    assert status == 401, body


@pytest.mark.parametrize(
    ("request_body", "field", "says"),
    [
        ({"texts": ["x"] * (MAX_EMBED_TEXTS + 1)}, "texts", f"at most {MAX_EMBED_TEXTS}"),
        ({"texts": []}, "texts", "at least 1"),
        ({"texts": [""]}, "texts.0", "at least 1"),
        ({"texts": ["ok", "q" * (MAX_EMBED_CHARS + 1)]}, "texts.1", f"at most {MAX_EMBED_CHARS} characters"),
        (
            {"texts": ["p" * (MAX_EMBED_CHARS + 1)], "kind": "passage"},
            "texts.0",
            f"at most {MAX_EMBED_CHARS} characters",
        ),
        ({"texts": ["x"], "kind": "document"}, "kind", "'query' or 'passage'"),
        ({"text": "x"}, "text", "is not a known field"),
    ],
)
def test_each_bound_is_a_400_naming_it(app: Any, request_body: Any, field: str, says: str) -> None:
    status, body = embed(request_body)
    assert status == 400, body
    assert says in body["error"]["fields"][field], body["error"]


def test_the_longest_texts_the_schema_allows_are_embedded(app: Any) -> None:
    """The published bounds are exact: what the schema allows is answered 200 (a fuzzer checks as much)."""
    status, body = embed({"texts": ["q" * MAX_EMBED_CHARS] * MAX_EMBED_TEXTS, "kind": "query"})
    assert status == 200 and len(body["vectors"]) == MAX_EMBED_TEXTS, body


def test_a_tenant_that_brings_its_own_vectors_has_no_model_to_embed_with(app: Any) -> None:
    status, body = embed({"texts": ["x"]}, tenant="byo")
    assert status == 409 and "texts" in body["error"]["fields"], body

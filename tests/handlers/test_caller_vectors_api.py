"""Your own vectors over HTTP (docs/api.md, "Your own vectors"): `embedding` on PUT and bulk items,
`query_vector` on POST /search, each bad one a 400 naming it; the search cache tells two vectors apart; a
tenant bringing its own vectors gets keyword-only context assembly and governed retrieval, with a warning."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import FakeEmbedder, api_event, invoke, make_container

DIM = 16  # the fake model's
BYO_DIM = 3  # tenant `byo` brings its own


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Any]:
    from infra.wiring.root import set_container

    c = make_container(
        tmp_path / "data", FakeEmbedder(DIM), byo_vector_tenants={"byo": BYO_DIM}, cache="memory"
    )
    set_container(c)
    yield c
    set_container(None)


def axis(n: int, dim: int = DIM) -> list[float]:
    v = [0.0] * dim
    v[n] = 1.0
    return v


def put(eid: str, body: Any, tenant: str = "acme", raw: str | None = None) -> tuple[int, Any]:
    event = api_event("put_entity", tenant=tenant, path=f"/entities/memory/{eid}", body=body, raw_body=raw)
    return invoke(event)


def search(body: dict[str, Any], tenant: str = "acme") -> tuple[int, Any]:
    return invoke(api_event("search", tenant=tenant, body=body))


@pytest.mark.parametrize(
    ("embedding", "rule"),
    [
        (axis(0)[:-1], f"must have {DIM} numbers (the tenant's vector dimension), not {DIM - 1}"),
        ([0] * DIM, "must not be all zeros (it has no direction)"),
    ],
)
def test_a_put_with_a_bad_embedding_is_a_400_naming_it(app: Any, embedding: list[float], rule: str) -> None:
    status, body = put("m1", {"content": "words", "embedding": embedding})
    assert status == 400, body
    assert body["error"]["fields"] == {"embedding": rule}


def test_a_non_finite_or_non_numeric_embedding_is_a_400_naming_it(app: Any) -> None:
    numbers = ", ".join(["1"] * (DIM - 1))
    status, body = put("m1", None, raw=f'{{"content": "words", "embedding": [{numbers}, 1e999]}}')
    assert status == 400 and "1e999" in body["error"]["fields"]["body"], body  # not JSON: refused on arrival
    status, body = put("m1", {"content": "words", "embedding": "0.1 0.2"})
    assert status == 400 and "embedding" in body["error"]["fields"], body


def test_a_bulk_reports_a_bad_embedding_as_its_items_error(app: Any) -> None:
    items = [
        {"type": "memory", "id": "ok", "content": "fine", "embedding": axis(1)},
        {"type": "memory", "id": "short", "content": "fine", "embedding": axis(1)[:3]},
    ]
    status, body = invoke(api_event("bulk_entities", body={"items": items}))
    assert status == 200 and body["indexed"] == 1, body
    assert [e["fields"] for e in body["errors"]] == [
        {"items.1.embedding": f"must have {DIM} numbers (the tenant's vector dimension), not 3"}
    ]
    assert body["unindexed_fields"] == []  # the vector is not a stored field
    items[1]["embedding"] = ["x"] * DIM  # not numbers: the request's own schema refuses it
    status, body = invoke(api_event("bulk_entities", body={"items": items}))
    assert status == 400 and set(body["error"]["fields"]) == {"items.1.embedding"}, body


def test_reads_never_return_the_vector(app: Any) -> None:
    assert put("m1", {"content": "words", "embedding": axis(2)})[0] == 200
    assert put("m2", {"content": "words", "embedding": None})[0] == 200  # null: no vector, not a field
    for eid in ("m1", "m2"):
        status, body = invoke(api_event("get_entity", path=f"/entities/memory/{eid}"))
        assert status == 200 and body["fields"] == {"content": "words"} and body["embedded"], body


@pytest.mark.parametrize(
    ("request_body", "field"),
    [
        ({"query": "x", "query_vector": axis(0)[:4]}, "query_vector"),
        ({"query": "x", "query_vector": [0.0] * DIM}, "query_vector"),
        ({"query": "x", "query_vector": ["a"] * DIM}, "query_vector.0"),
        ({"query": "x", "query_vector": []}, "query_vector"),
    ],
)
def test_a_bad_query_vector_is_a_400_naming_it(app: Any, request_body: dict[str, Any], field: str) -> None:
    status, body = search(request_body)
    assert status == 400 and field in body["error"]["fields"], body


def test_a_semantic_search_of_a_tenant_bringing_its_own_vectors_needs_a_query_vector(app: Any) -> None:
    assert put("w", {"content": "walrus notes", "embedding": [0.0, 1.0, 0.0]}, tenant="byo")[0] == 200
    status, body = search({"query": "walrus", "strategy": "semantic"}, tenant="byo")
    assert status == 400 and set(body["error"]["fields"]) == {"query_vector"}, body
    status, body = search({"query": "walrus"}, tenant="byo")
    assert status == 200 and body["query_info"]["strategy"] == "keyword", body
    assert [r["entity_id"] for r in body["results"]] == ["w"]
    status, body = search({"query": "", "query_vector": [0.1, 0.9, 0.0]}, tenant="byo")
    assert status == 200 and [r["entity_id"] for r in body["results"]] == ["w"], body


def test_two_searches_differing_only_in_their_vector_never_share_a_cache_entry(app: Any) -> None:
    for n in range(3):
        assert put(f"e{n}", {"content": "shared words", "embedding": axis(n)})[0] == 200
    answers = []
    for n in (0, 1, 0):
        status, body = search({"query": "shared words", "strategy": "semantic", "query_vector": axis(n)})
        assert status == 200, body
        answers.append((body["query_info"]["cache"], body["results"][0]["entity_id"]))
    assert answers == [("miss", "e0"), ("miss", "e1"), ("hit", "e0")]


def test_assembly_and_governed_retrieval_of_a_byo_tenant_fall_back_to_keywords_with_a_warning(
    app: Any,
) -> None:
    status, _ = put("w", {"content": "login rate limiter design", "embedding": [1.0, 0.0, 0.0]}, tenant="byo")
    assert status == 200
    event = api_event("context_assemble", tenant="byo")
    event["body"] = json.dumps({"query": "login rate limiter", "caller": "agent", "token_budget": 500})
    status, body = invoke(event)
    assert status == 200, body
    assert any("come from its callers" in w for w in body["warnings"]), body["warnings"]
    assert "login rate limiter design" in json.dumps(body)  # found by its words
    status, body = invoke(api_event("retrieve", tenant="byo"))
    assert status == 200, body
    assert body["query"]["mode"] == "lexical_degraded", body["query"]
    assert "come from its callers" in body["diagnostics"]["degraded_reason"]


def test_the_caller_vector_is_used_as_given_not_the_models(app: Any) -> None:
    """The fake model embeds `apple` and `pear` texts far apart; the callers' vectors say otherwise."""
    model = FakeEmbedder(DIM)
    apple, pear = model.embed(["apple", "pear"])
    assert float(apple @ pear) < 0.5
    assert put("a", {"content": "apple", "embedding": pear.tolist()})[0] == 200
    status, body = search({"query": "pear", "strategy": "semantic"})
    assert status == 200 and [r["entity_id"] for r in body["results"]] == ["a"], body
    assert np.isclose(body["results"][0]["score"], 1.0)


def test_tuning_a_byo_tenants_overlay_is_a_409_that_says_why_not_a_503_to_retry(app: Any) -> None:
    """Fusion tuning compares fused rankings of query text the deployment's model embeds: for a tenant whose
    vectors come from its callers that can never happen, so retrying (what a 503 asks for) cannot help."""
    assert invoke(api_event("put_overlay", tenant="byo"))[0] == 200
    assert invoke(api_event("load_corpus", tenant="byo"))[0] == 200
    status, body = invoke(api_event("tune_overlay", tenant="byo"))
    assert status == 409, body
    assert "vectors come from its callers" in body["error"]["message"]
    status, report = invoke(api_event("eval_overlay", tenant="byo"))  # golden sets run what they can
    assert status == 200 and set(report["strategies"]) == {"keyword"}, report


def patch(eid: str, body: Any, tenant: str = "acme") -> tuple[int, Any]:
    return invoke(api_event("patch_entity", tenant=tenant, path=f"/entities/memory/{eid}", body=body))


def test_reembedded_says_whether_the_model_ran_not_whether_a_vector_was_stored(app: Any) -> None:
    """A write that brings its vector is not embedded, so it answers `reembedded: false`; the model's own
    writes answer true; a tenant bringing its own vectors never has the model run."""
    status, body = put("v", {"content": "apple", "embedding": axis(2), "version": 1})
    assert status == 200 and body["outcome"] == "applied" and body["reembedded"] is False, body
    status, body = patch("v", {"embedding": axis(3), "version": 2})
    assert status == 200 and body["reembedded"] is False, body
    status, body = patch("v", {"content": "pear", "version": 3})  # new text, no vector: the model runs
    assert status == 200 and body["reembedded"] is True, body
    status, body = put("w", {"content": "plum", "version": 1})
    assert status == 200 and body["reembedded"] is True, body
    status, body = put("w", {"content": "plum", "version": 1}, tenant="byo")
    assert status == 200 and body["reembedded"] is False, body


@pytest.mark.parametrize(
    ("field", "hint"),
    [
        ("embedding", "`query_vector`"),
        ("vector", "`query_vector` on a search"),
        ("top_k", "use `limit`"),
        ("filter", "use `filters`"),
    ],
)
def test_another_engines_spelling_on_a_search_is_told_quarrys(app: Any, field: str, hint: str) -> None:
    status, body = search({"query": "apple", field: axis(0) if "vector" in hint else 5})
    assert status == 400, body
    message = body["error"]["fields"][field]
    assert message.startswith("is not a known field; ") and hint in message, message

"""Bring-your-own vectors through the services on every index (core/indexing/caller_vectors.py): the embedded SQLite
index and the live OpenSearch node, wired as a deployment is (infra/wiring/root.py), with a deterministic
hashing embedder standing in for the model. A tenant declared bring-your-own at a dimension other than the
model's shares the deployment with a tenant on the model (on OpenSearch: an index of its own)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core.errors import InvalidInputError, VersionConflictError
from core.models import EntityKey, WriteOutcome
from core.search.search_api import SearchRequest
from tests.conftest import FakeEmbedder, make_container

DIM = 8  # the model's (the fake embedder's) dimension
BYO_DIM = 5  # the bring-your-own tenant's
NOW = 1_800_000_000.0


@pytest.fixture(params=["sqlite", pytest.param("opensearch", marks=pytest.mark.live)])
def c(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A container whose tenant `byo` brings its own 5-dimension vectors; every other tenant is on the
    8-dimension model."""
    settings: dict[str, Any] = {"byo_vector_tenants": {"byo": BYO_DIM}, "cache": "memory"}
    if request.param == "opensearch":
        settings |= {
            "index": "opensearch",
            "opensearch_url": request.getfixturevalue("opensearch_url"),
            "opensearch_index_prefix": f"quarry-test-{uuid.uuid4().hex[:10]}",
            "opensearch_refresh": "true",
            "opensearch_shards": 1,
        }
    else:  # FTS5 ranks keywords: tantivy's threads, ending seconds after an index is collected, would
        # be counted by a later test (tests/adapters/test_tantivy_keywords.py); vectors are the subject here
        settings["keyword_engine"] = "fts5"
    container = make_container(tmp_path / "data", FakeEmbedder(DIM), **settings)
    yield container
    if request.param == "opensearch":
        container.index.drop()


def unit(values: Any) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    return (v / np.linalg.norm(v)).astype(np.float32)


def orthogonal_to(v: np.ndarray) -> np.ndarray:
    """A unit vector at cosine 0 from `v`."""
    probe = np.arange(1, len(v) + 1, dtype=np.float64)
    return unit(probe - float(probe @ v) * v.astype(np.float64))


def put(c: Any, eid: str, body: dict[str, Any], tenant: str = "t", etype: str = "memory") -> Any:
    return c.indexing.put(tenant, etype, eid, body, NOW)


def search(c: Any, tenant: str = "t", **request: Any) -> list[str]:
    answer = c.search.search(tenant, SearchRequest(**request))
    return [r.entity_id for r in answer.results]


def test_caller_vectors_rank_writes_and_queries_where_the_model_would_rank_otherwise(c: Any) -> None:
    model = FakeEmbedder(DIM)
    query = "apple orchard harvest"
    (q,) = model.embed_query([query])
    near, far = q, orthogonal_to(q)
    # Given: the model ranks `a` (the query's own words) above `b` (other words) for this query ...
    a_text, b_text = query, "banana grove shipping"
    a_model, b_model = model.embed([a_text, b_text])
    assert float(a_model @ q) > float(b_model @ q) + 0.5
    # ... but the callers' vectors put `b` on the query's vector and `a` at right angles to it.
    put(c, "a", {"content": a_text, "embedding": far.tolist()})
    put(c, "b", {"content": b_text, "embedding": near.tolist()})
    # The stored vectors are the callers': embedding the query text finds `b` first, `a` below the floor.
    assert search(c, query=query, strategy="semantic") == ["b"]
    # A query vector replaces the query text's embedding on the vector leg.
    assert search(c, query=query, strategy="semantic", query_vector=far.tolist())[0] == "a"
    # No query text: a pure vector search.
    answer = c.search.search("t", SearchRequest(query="", query_vector=far.tolist(), explain=True))
    assert [r.entity_id for r in answer.results][0] == "a"
    assert answer.query_info.strategy == "semantic"
    explained = answer.results[0].explanation
    assert explained is not None and (explained.vector.rank, explained.vector.score) == (0, 1.0)
    # Hybrid: the keyword leg still reads the text (`banana` matches only b), the vector leg the vector.
    assert set(search(c, query="banana", strategy="hybrid", query_vector=far.tolist())) == {"a", "b"}


def test_a_tenant_bringing_its_own_vectors_has_its_dimension_and_keyword_only_entities(c: Any) -> None:
    own = unit([1, 2, 0, 0, 1])
    put(c, "x", {"content": "walrus colony survey", "embedding": own.tolist()}, tenant="byo")
    put(c, "y", {"content": "yak herd census"}, tenant="byo")  # no vector: found by keywords only
    put(c, "m", {"content": "walrus colony survey"})  # another tenant, on the model (8 dimensions)
    status = c.index.embedding_status("byo", [EntityKey("memory", "x"), EntityKey("memory", "y")])
    assert (status[EntityKey("memory", "x")].embedded, status[EntityKey("memory", "y")].embedded) == (1, 0)
    assert (c.catalog.get("byo", "memory", "x").embedded, c.catalog.get("byo", "memory", "y").embedded) == (
        True,
        False,
    )
    assert search(c, "byo", query="", query_vector=own.tolist()) == ["x"]
    assert search(c, "byo", query="yak census") == ["y"]
    answer = c.search.search("byo", SearchRequest(query="walrus"))
    assert answer.query_info.strategy == "keyword" and not answer.query_info.degraded
    assert search(c, query="walrus colony", strategy="semantic") == ["m"]
    with pytest.raises(InvalidInputError) as refused:
        c.search.search("byo", SearchRequest(query="walrus", strategy="semantic"))
    assert "query_vector" in refused.value.fields
    with pytest.raises(InvalidInputError) as wrong:
        put(c, "z", {"content": "eight numbers", "embedding": unit(range(1, DIM + 1)).tolist()}, tenant="byo")
    assert wrong.value.fields == {"embedding": "must have 5 numbers (the tenant's vector dimension), not 8"}
    with pytest.raises(InvalidInputError) as short:
        c.search.search("t", SearchRequest(query="walrus", query_vector=own.tolist()))
    assert short.value.fields["query_vector"].startswith("must have 8 numbers")


@pytest.mark.parametrize(
    ("embedding", "rule"),
    [
        ([0.0] * DIM, "must not be all zeros (it has no direction)"),
        ([1.0] * (DIM - 1) + [float("inf")], "must hold finite numbers only"),
        ([1.0] * (DIM - 1) + [float("nan")], "must hold finite numbers only"),
        ([1] * (DIM - 1) + [10**400], "must hold finite numbers only"),  # beyond any float
        ([1.0] * (DIM + 1), f"must have {DIM} numbers (the tenant's vector dimension), not {DIM + 1}"),
        ("0.1,0.2", "must be a list of numbers"),
        ([True] * DIM, "must be a list of numbers"),
    ],
)
def test_a_bad_embedding_is_refused_naming_it_and_in_a_bulk_only_its_item(
    c: Any, embedding: Any, rule: str
) -> None:
    with pytest.raises(InvalidInputError) as refused:
        put(c, "bad", {"content": "text", "embedding": embedding})
    assert refused.value.fields == {"embedding": rule}
    items = [
        {"type": "memory", "id": "ok", "content": "fine words"},
        {"type": "memory", "id": "bad", "content": "text", "embedding": embedding},
    ]
    report = c.indexing.bulk("t", items, NOW)
    assert report.indexed == 1
    assert [(e["index"], e["fields"]) for e in report.errors] == [(1, {"items.1.embedding": rule})]


def test_huge_and_tiny_numbers_keep_their_direction(c: Any) -> None:
    huge = [1.0e308] * DIM  # its norm overflows a float: the direction does not
    tiny = [5e-324] + [0.0] * (DIM - 1)
    put(c, "huge", {"content": "huge numbers", "embedding": huge})
    put(c, "tiny", {"content": "tiny numbers", "embedding": tiny})
    assert search(c, query="", query_vector=[1.0] * DIM, limit=1) == ["huge"]
    assert search(c, query="", query_vector=axis0(), limit=1) == ["tiny"]


def axis0() -> list[float]:
    return [1.0] + [0.0] * (DIM - 1)


def test_the_same_version_with_another_vector_is_other_content(c: Any) -> None:
    first, second = unit(range(1, DIM + 1)), orthogonal_to(unit(range(1, DIM + 1)))
    body = {"content": "versioned words", "version": 3}
    assert put(c, "v", {**body, "embedding": first.tolist()}).outcome is WriteOutcome.APPLIED
    # The same vector again, even scaled (only its direction counts), is a re-delivery.
    assert put(c, "v", {**body, "embedding": (first * 4).tolist()}).outcome is WriteOutcome.DUPLICATE
    for other in ({**body, "embedding": second.tolist()}, body):
        with pytest.raises(VersionConflictError):
            put(c, "v", other)
    report = c.indexing.bulk("t", [{"type": "memory", "id": "v", **body, "embedding": second.tolist()}], NOW)
    assert [e["code"] for e in report.errors] == ["version_conflict"]
    assert put(c, "v", {**body, "version": 4, "embedding": second.tolist()}).outcome is WriteOutcome.APPLIED
    assert search(c, query="", query_vector=second.tolist()) == ["v"]
    # Reads return what was written, without the vector (derived data, as the model's vectors are).
    assert "embedding" not in c.catalog.get("t", "memory", "v").fields


def test_a_long_text_with_its_own_vector_keeps_one_vector_and_every_chunk_for_keywords(c: Any) -> None:
    words = " ".join(f"filler{i}" for i in range(3000)) + " zeppelin"
    own = unit(range(1, DIM + 1))
    put(c, "long", {"text": words, "title": "a long report", "embedding": own.tolist()}, etype="document")
    status = c.index.embedding_status("t", [EntityKey("document", "long")])[EntityKey("document", "long")]
    assert status.chunks > 1 and status.embedded == 1
    assert c.catalog.get("t", "document", "long").embedded  # the entity has its (one) vector
    assert search(c, query="zeppelin") == ["long"]  # a word of the last chunk
    assert search(c, query="", query_vector=own.tolist()) == ["long"]


def test_a_patch_may_replace_the_vector_alone(c: Any) -> None:
    first, second = unit(range(1, DIM + 1)), orthogonal_to(unit(range(1, DIM + 1)))
    put(c, "p", {"content": "patched words", "embedding": first.tolist()})
    result = c.indexing.patch("t", "memory", "p", {"embedding": second.tolist()}, NOW + 1)
    assert result.outcome is WriteOutcome.APPLIED
    assert search(c, query="", query_vector=second.tolist(), limit=1) == ["p"]
    got = c.index.chunk_vectors("t", [(EntityKey("memory", "p"), 0)])[(EntityKey("memory", "p"), 0)]
    assert float(np.asarray(got) @ second) == pytest.approx(1.0, abs=1e-4)


def test_reindex_never_re_embeds_a_tenant_bringing_its_own_vectors(c: Any, tmp_path: Path) -> None:
    from infra.opensearch.tenancy import own_prefix
    from infra.text_models.model_switch import reindex_store

    own = unit([1, 0, 0, 0, 1])
    put(c, "x", {"content": "walrus colony", "embedding": own.tolist()}, tenant="byo")
    put(c, "m", {"content": "model words"})
    with pytest.raises(InvalidInputError) as refused:
        reindex_store(c, tmp_path, tenant="byo")
    assert set(refused.value.fields) == {"--tenant"}
    if c.settings.index_kind == "opensearch":  # its own index is left out of a whole run, and reported
        byo_alias = own_prefix(c.settings.opensearch_index_prefix, "byo")
        found = c.index.client.indices.get_alias(name=byo_alias)
        assert any(byo_alias in entry["aliases"] for entry in found.values())  # it exists ...
        assert c.index.aliases() == [c.index.alias]  # ... and a reindex does not go through it
        assert c.index.caller_vector_tenants() == ["byo"]
    else:  # one data file: a whole-file run is refused while the tenant has entities in it
        with pytest.raises(InvalidInputError) as whole:
            reindex_store(c, tmp_path)
        assert set(whole.value.fields) == {"--tenant"}
    assert search(c, "byo", query="", query_vector=own.tolist()) == ["x"]

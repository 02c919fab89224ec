"""OpenSearchIndex's own decisions, against FakeOpenSearch (a model of the server's documented conditional
writes, alias and mget behaviour): version outcomes, tombstones, metadata rewrites, the index
lifecycle, and that retrieval is one `_msearch` whose answers become candidates."""

from __future__ import annotations

from typing import Any

import pytest

from core.errors import InvalidInputError
from core.models import EntityKey, Filters, LexicalQuery, MatchMode, Placement, WriteOutcome
from infra.opensearch import OpenSearchIndex, build_opensearch_index, documents, mapping, query_bodies
from infra.opensearch.query_bodies import INNER_HITS_NAME
from tests.adapters.opensearch_fakes import FakeOpenSearch, search_response
from tests.adapters.search_index_contract import DIM, record, unit

KEY = EntityKey("memory", "a")


@pytest.fixture
def server() -> FakeOpenSearch:
    return FakeOpenSearch()


@pytest.fixture
def index(server: FakeOpenSearch) -> OpenSearchIndex:
    return build_opensearch_index(server, dimension=DIM, prefix="quarry", refresh="wait_for")


def stored(server: FakeOpenSearch, tenant: str = "t", key: EntityKey = KEY) -> dict[str, Any]:
    return server.docs[documents.doc_id(tenant, key)][1]


# -- index lifecycle ---------------------------------------------------------------------------------------


def test_the_first_write_creates_template_index_and_alias_once(
    server: FakeOpenSearch, index: OpenSearchIndex
) -> None:
    index.upsert(record("t", "memory", "a", "one"))
    index.upsert(record("t", "memory", "b", "two"))
    assert server.aliases == {"quarry": "quarry-v1"}
    assert len(server.calls("create")) == 1 and len(server.calls("put_index_template")) == 1
    template = server.templates["quarry-template"]
    assert template["index_patterns"] == ["quarry-v*"]
    embedding = template["template"]["mappings"]["properties"]["chunks"]["properties"]["embedding"]
    assert embedding["dimension"] == DIM and embedding["method"]["engine"] == mapping.ENGINE
    assert all(call[3]["refresh"] == "wait_for" for call in server.calls("bulk"))


@pytest.mark.parametrize(("version", "pinned"), [("2.19.1", False), ("3.1.0", True)])
def test_knn_derived_source_is_pinned_off_where_it_exists(version: str, pinned: bool) -> None:
    server = FakeOpenSearch()
    server.version_number = version
    build_opensearch_index(server, dimension=DIM).ensure_index()
    created = server.concrete["quarry-v1"]["settings"]["index"]
    template = server.templates["quarry-template"]["template"]["settings"]["index"]
    assert ("knn.derived_source.enabled" in created) is pinned and created == template
    assert created.get("knn.derived_source.enabled", False) is False


def test_ensure_index_leaves_an_existing_alias_alone_and_tolerates_a_lost_race(
    server: FakeOpenSearch,
) -> None:
    first = build_opensearch_index(server, dimension=DIM)
    assert first.ensure_index() is True
    assert first.ensure_index() is False  # alias exists: nothing created
    server.aliases.clear()  # another container created the index between our check and our create
    assert build_opensearch_index(server, dimension=DIM).ensure_index() is False
    assert len(server.concrete) == 1


# -- versioned writes --------------------------------------------------------------------------------------


def test_versions_decide_every_write(server: FakeOpenSearch, index: OpenSearchIndex) -> None:
    assert index.upsert(record("t", "memory", "a", "five", version=5)) is WriteOutcome.APPLIED
    assert index.upsert(record("t", "memory", "a", "four", version=4)) is WriteOutcome.STALE
    assert index.upsert(record("t", "memory", "a", "five again", version=5)) is WriteOutcome.DUPLICATE
    assert stored(server)["chunks"][0]["text"] == "five"  # neither refused write touched the document
    assert index.upsert(record("t", "memory", "a", "six", version=6)) is WriteOutcome.APPLIED
    assert index.get("t", [KEY])[KEY].version == 6


def test_a_new_version_with_fewer_chunks_leaves_no_old_chunk_behind(
    server: FakeOpenSearch, index: OpenSearchIndex
) -> None:
    index.upsert(
        record("t", "document", "d", "", version=1, chunks=["alpha one", "alpha two", "alpha three"])
    )
    index.upsert(record("t", "document", "d", "", version=2, chunks=["beta"]))
    chunks = stored(server, key=EntityKey("document", "d"))["chunks"]
    assert [c["text"] for c in chunks] == ["beta"]


def test_upsert_many_reports_each_record_in_one_bulk(server: FakeOpenSearch, index: OpenSearchIndex) -> None:
    index.upsert(record("t", "memory", "a", "two", version=2))
    outcomes = index.upsert_many(
        [
            record("t", "memory", "a", "one", version=1),
            record("t", "memory", "b", "new"),
            record("t", "memory", "a", "two", version=2),
        ]
    )
    assert outcomes == [WriteOutcome.STALE, WriteOutcome.APPLIED, WriteOutcome.DUPLICATE]
    assert len(server.calls("bulk")) == 2 and index.upsert_many([]) == []
    assert len(server.calls("mget")) == 2  # nothing to write: nothing read either


def test_a_vector_of_the_wrong_dimension_is_refused_before_sending(
    server: FakeOpenSearch, index: OpenSearchIndex
) -> None:
    import numpy as np

    with pytest.raises(InvalidInputError) as raised:
        index.upsert(record("t", "memory", "a", "x", vec=np.ones(DIM + 1, dtype=np.float32)))
    assert "chunks.0.embedding" in raised.value.fields and server.calls("bulk") == []


def test_delete_leaves_a_versioned_tombstone_that_older_writes_cannot_pass(
    server: FakeOpenSearch, index: OpenSearchIndex
) -> None:
    assert index.delete("t", KEY, None) is WriteOutcome.NOT_FOUND  # no version: nothing to order by
    assert server.docs == {}
    index.upsert(record("t", "memory", "a", "note", version=1, owner="o", metadata={"k": "v"}))
    assert index.delete("t", KEY, 0) is WriteOutcome.STALE
    assert index.delete("t", KEY, 3) is WriteOutcome.APPLIED
    assert index.delete("t", KEY, 3) is WriteOutcome.DUPLICATE
    tomb = index.get("t", [KEY])[KEY]
    assert (
        tomb.deleted and tomb.version == 3 and tomb.owner == "o" and tomb.metadata == {} and tomb.title == ""
    )
    assert stored(server)["chunks"] == []  # nothing left to match, lexically or by vector
    assert index.upsert(record("t", "memory", "a", "late", version=2)) is WriteOutcome.STALE
    assert index.delete("t", KEY, None) is WriteOutcome.APPLIED and index.get("t", [KEY])[KEY].version == 4
    assert index.upsert(record("t", "memory", "a", "back", version=5)) is WriteOutcome.APPLIED
    assert not index.get("t", [KEY])[KEY].deleted


def test_metadata_updates_keep_text_and_vectors(server: FakeOpenSearch, index: OpenSearchIndex) -> None:
    assert index.update_metadata("t", KEY, 2, {}, {}, "now") is WriteOutcome.NOT_FOUND
    index.upsert(record("t", "memory", "a", "text", version=1, metadata={"status": "open"}, vec=unit(1, 0)))
    before = stored(server)["chunks"]
    assert (
        index.update_metadata("t", KEY, 1, {"content": "x"}, {"status": "done"}, "u")
        is WriteOutcome.DUPLICATE
    )
    outcome = index.update_metadata(
        "t", KEY, 2, {"content": "text", "status": "done"}, {"status": "done", "n": 3}, "2026-11-02"
    )
    assert outcome is WriteOutcome.APPLIED
    doc = stored(server)
    assert doc["chunks"] == before and doc["version"] == 2 and doc["updated_at"] == "2026-11-02"
    # `n` also as its range term (documents.range_term: 3.0's IEEE 754 bits with the sign bit set)
    assert doc["metadata_terms"] == ["status=done", "n=3", "%Nn=c008000000000000"] and doc[
        "metadata_raw"
    ] == {
        "status": "done",
        "n": 3,
    }
    assert index.get("t", [KEY])[KEY].body == {"content": "text", "status": "done"}
    index.delete("t", KEY, 3)
    assert index.update_metadata("t", KEY, 4, {}, {}, "later") is WriteOutcome.NOT_FOUND


def test_tenants_never_see_each_other(server: FakeOpenSearch, index: OpenSearchIndex) -> None:
    index.upsert(record("t1", "memory", "a", "secret"))
    assert index.get("t2", [KEY]) == {}
    assert index.update_metadata("t2", KEY, 9, {}, {}, "x") is WriteOutcome.NOT_FOUND
    assert index.delete("t2", KEY, 9) is WriteOutcome.APPLIED  # t2's own tombstone, nothing of t1's
    assert index.get("t1", [KEY])[KEY].tenant_id == "t1" and not index.get("t1", [KEY])[KEY].deleted


def test_document_ids_never_collide_across_tenants_and_keys() -> None:
    pairs = [
        ("a:task", EntityKey("task", "b")),
        ("a", EntityKey("task", "task:b")),
        ("a", EntityKey("task", "b")),
    ]
    ids = {documents.doc_id(t, k) for t, k in pairs}
    assert len(ids) == 3
    long_id = documents.doc_id("t", EntityKey("document", "x" * 600))
    assert len(long_id.encode()) <= documents.MAX_ID_BYTES


# -- retrieval -------------------------------------------------------------------------------------------


def hit(entity_id: str, score: float, tenant: str = "t", chunk_no: int = 0) -> dict[str, Any]:
    source = documents.entity_source(record(tenant, "memory", entity_id, f"text {entity_id}"))
    best = {
        "_index": "quarry-v1",
        "_id": "x",
        "_nested": {"field": "chunks", "offset": chunk_no},
        "_score": score,
        "fields": {mapping.CHUNK_NO: [chunk_no], mapping.CHUNK_TEXT: [f"chunk of {entity_id}"]},
    }
    return {
        "_index": "quarry-v1",
        "_id": documents.doc_id(tenant, EntityKey("memory", entity_id)),
        "_score": score,
        "_source": {f: source[f] for f in mapping.CANDIDATE_FIELDS},
        "inner_hits": {
            INNER_HITS_NAME: {
                "hits": {"total": {"value": 1, "relation": "eq"}, "max_score": score, "hits": [best]}
            }
        },
    }


def test_retrieve_sends_both_searches_in_one_msearch(server: FakeOpenSearch, index: OpenSearchIndex) -> None:
    server.msearch_responses = [
        {
            "took": 5,
            "responses": [
                search_response([hit("a", 7.5), hit("b", 3.0)]),
                search_response([hit("b", 0.95, chunk_no=2)]),
            ],
        }
    ]
    got = index.retrieve(
        "t", LexicalQuery(("word",), mode=MatchMode.FUZZY), unit(1, 0), Filters(owner="o"), 5
    )
    (call,) = server.calls("msearch")
    headers, searches = call[2][0::2], call[2][1::2]
    # both to the tenant's shard only, and neither may answer from some shards only
    routed = {"index": "quarry", "routing": "t", "allow_partial_search_results": False}
    assert headers == [routed, routed]
    assert "multi_match" in str(searches[0]) and "knn" in str(searches[1])
    assert [(c.key.entity_id, c.score) for c in got.lexical] == [("a", 7.5), ("b", 3.0)]
    (best,) = got.vector
    assert best.key.entity_id == "b" and best.score == pytest.approx(0.9) and best.chunk_no == 2
    assert best.text == "chunk of b"


def test_retrieve_skips_what_was_not_asked_for(server: FakeOpenSearch, index: OpenSearchIndex) -> None:
    assert index.retrieve("t", None, None, Filters(), 5).lexical == ()
    assert index.retrieve("t", LexicalQuery(()), None, Filters(), 5).vector == ()
    assert index.retrieve("t", LexicalQuery(("a",)), unit(1, 0), Filters(), 0).lexical == ()
    assert server.calls("msearch") == []
    server.msearch_responses = [{"took": 1, "responses": [search_response([hit("a", 0.5)])]}]
    assert [c.key.entity_id for c in index.vector("t", unit(1, 0), Filters(), 3)] == ["a"]
    (call,) = server.calls("msearch")
    assert len(call[2]) == 2  # one header, one body: the vector search alone


def test_k_is_clamped_to_what_one_search_can_return(server: FakeOpenSearch, index: OpenSearchIndex) -> None:
    server.msearch_responses = [{"took": 1, "responses": [search_response([])]}]
    index.lexical("t", LexicalQuery(("a",)), Filters(), 50_000)
    assert server.calls("msearch")[0][2][1]["size"] == 10_000


def test_a_query_vector_of_another_dimension_finds_nothing(
    server: FakeOpenSearch, index: OpenSearchIndex
) -> None:
    import numpy as np

    assert index.vector("t", np.ones(DIM * 2, dtype=np.float32), Filters(), 5) == []
    assert server.calls("msearch") == []


def test_a_delete_before_the_create_leaves_a_tombstone_the_create_cannot_pass(
    server: FakeOpenSearch, index: OpenSearchIndex
) -> None:
    assert index.delete("t", KEY, 5) is WriteOutcome.APPLIED  # the tombstone alone is written
    assert stored(server)["deleted"] is True and stored(server)["version"] == 5
    assert index.upsert(record("t", "memory", "a", "resurrected", version=3)) is WriteOutcome.STALE
    assert index.get("t", [KEY])[KEY].deleted


def test_metadata_updates_move_source_owner_and_namespace(
    server: FakeOpenSearch, index: OpenSearchIndex
) -> None:
    index.upsert(
        record("t", "memory", "a", "payroll", version=1, source="memory", owner="alice", vec=unit(1, 0))
    )
    moved = Placement(source="hr-restricted", owner="bob", namespace="hr")
    assert index.update_metadata("t", KEY, 2, {"content": "payroll"}, {}, "u", moved) is WriteOutcome.APPLIED
    doc = stored(server)
    assert (doc["source"], doc["owner"], doc["namespace"]) == ("hr-restricted", "bob", "hr")
    assert doc["chunks"] and doc["version"] == 2


def test_several_owners_filter_as_any_of_them() -> None:
    clauses = query_bodies.filter_clauses("t", Filters(owners=("alice", "bob")))
    assert {"terms": {mapping.OWNER: ["alice", "bob"]}} in clauses


def test_searches_wait_for_a_refresh_only_when_writes_do_not(server: FakeOpenSearch) -> None:
    """With refresh off a write shows in search only after the refresh interval: the cache must wait."""
    assert build_opensearch_index(server, dimension=DIM, refresh=False).visibility_delay_seconds == 1.0
    assert build_opensearch_index(server, dimension=DIM, refresh="wait_for").visibility_delay_seconds == 0.0

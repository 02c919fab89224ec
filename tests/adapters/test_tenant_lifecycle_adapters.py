"""Reading back and erasing a tenant, on every adapter: entity listings page newest first exactly once,
embedding status is reported, and `purge_tenant` removes one tenant's rows while another's stay whole
(SqliteIndex, OpenSearchIndex against FakeOpenSearch, SQLite and DynamoDB (moto) state stores, caches)."""

from __future__ import annotations

import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from core.indexing.catalog import EntityPosition
from core.models import EntityKey
from core.search.cache_key import generation_key, search_cache_key, settling_key
from core.state import EvalRecord, SourceWeight
from infra.dynamodb.cache import DynamoCache
from infra.dynamodb.state import DynamoStateStore
from infra.local.cache import MemoryCache, SqliteCache
from infra.local.keywords.fts_tables import fts_table
from infra.local.sqlite.index import build_sqlite_index
from infra.local.sqlite.state import SqliteStateStore
from infra.opensearch import build_opensearch_index
from tests.adapters.moto_support import moto_dynamodb
from tests.adapters.opensearch_fakes import FakeOpenSearch
from tests.adapters.search_index_contract import DIM, lex, record
from tests.adapters.statestore_data import T1, T2, change, entry, with_feedback


def dated(tenant: str, eid: str, created: str, etype: str = "memory", embedded: bool = True) -> Any:
    r = record(tenant, etype, eid, f"text of {eid}")
    chunks = r.chunks if embedded else tuple(replace(c, embedding=None) for c in r.chunks)
    return replace(r, created_at=created, chunks=chunks)


@pytest.fixture(params=["sqlite", "opensearch"])
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "sqlite":
        return build_sqlite_index(tmp_path / "idx.sqlite")
    return build_opensearch_index(FakeOpenSearch(), dimension=DIM, prefix="quarry")


def page_all(index: Any, tenant: str, etype: str | None, size: int) -> list[str]:
    seen: list[str] = []
    after: EntityPosition | None = None
    while True:
        page = index.list_entities(tenant, etype, size, after)
        seen.extend(e.key.entity_id for e in page)
        if len(page) < size:
            return seen
        last = page[-1]
        after = EntityPosition(last.created_at, last.key.entity_type, last.key.entity_id)


def test_listing_pages_newest_first_exactly_once_without_tombstones_or_other_tenants(index: Any) -> None:
    for i in range(11):
        index.upsert(dated(T1, f"e{i:02d}", f"2026-01-{i + 1:02d}T00:00:00Z"))
    index.upsert(dated(T1, "same-time-b", "2026-01-05T00:00:00Z"))
    index.upsert(dated(T2, "other", "2026-02-01T00:00:00Z"))
    index.delete(T1, EntityKey("memory", "e03"), None)
    listed = page_all(index, T1, None, 4)
    assert len(listed) == len(set(listed)) == 11
    assert listed[0] == "e10" and "e03" not in listed and "other" not in listed
    assert listed.index("same-time-b") < listed.index("e04")  # same created_at: id descending


def test_listing_filters_by_type(index: Any) -> None:
    index.upsert(dated(T1, "m", "2026-01-01T00:00:00Z"))
    index.upsert(dated(T1, "t", "2026-01-02T00:00:00Z", etype="task"))
    assert page_all(index, T1, "task", 10) == ["t"]


def test_embedding_status_counts_chunks_with_vectors(index: Any) -> None:
    index.upsert(dated(T1, "with", "2026-01-01T00:00:00Z"))
    index.upsert(dated(T1, "without", "2026-01-01T00:00:00Z", embedded=False))
    status = index.embedding_status(T1, [EntityKey("memory", "with"), EntityKey("memory", "without")])
    assert status[EntityKey("memory", "with")].is_embedded
    assert not status[EntityKey("memory", "without")].is_embedded
    assert index.embedding_status(T2, [EntityKey("memory", "with")]) == {}


def test_purge_removes_one_tenant_and_leaves_the_other(index: Any) -> None:
    index.upsert(dated(T1, "gone", "2026-01-01T00:00:00Z"))
    index.upsert(dated(T1, "tomb", "2026-01-01T00:00:00Z"))
    index.delete(T1, EntityKey("memory", "tomb"), None)
    index.upsert(dated(T2, "kept", "2026-01-01T00:00:00Z"))
    assert index.purge_tenant(T1) == 2
    assert index.list_entities(T1, None, 10, None) == []
    assert index.get(T1, [EntityKey("memory", "gone"), EntityKey("memory", "tomb")]) == {}
    assert [e.key.entity_id for e in index.list_entities(T2, None, 10, None)] == ["kept"]


def test_sqlite_purge_leaves_no_keyword_or_vector_rows(tmp_path: Path) -> None:
    index = build_sqlite_index(tmp_path / "idx.sqlite")
    index.upsert(dated(T1, "gone", "2026-01-01T00:00:00Z"))
    index.upsert(dated(T2, "kept", "2026-01-01T00:00:00Z"))
    assert lex(index, T1, "text") == ["gone"]
    index.purge_tenant(T1)
    assert lex(index, T1, "text") == [] and lex(index, T2, "text") == ["kept"]
    conn = index.store.conn()  # checking the file itself
    assert conn.execute("SELECT count(*) FROM idx_chunks WHERE tenant_id = ?", (T1,)).fetchone()[0] == 0
    assert conn.execute(f"SELECT count(*) FROM {fts_table(T2)}").fetchone()[0] == 1
    gone = conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (fts_table(T1),)).fetchone()
    assert gone is None  # the erased tenant's keyword table, and the statistics it held


def test_opensearch_purge_is_a_refreshed_delete_by_query_on_the_tenant() -> None:
    server = FakeOpenSearch()
    index = build_opensearch_index(server, dimension=DIM)
    index.upsert(dated(T1, "gone", "2026-01-01T00:00:00Z"))
    index.purge_tenant(T1)
    (_, alias, body, params) = server.calls("delete_by_query")[0]
    assert alias == "quarry" and body == {"query": {"term": {"tenant_id": T1}}}
    assert params["params"]["refresh"] == "true"
    # refreshed before: a document written in the last refresh interval is found and deleted too
    names = [c[0] for c in server.log]
    assert names.index("refresh") < names.index("delete_by_query")


# -- state stores and caches --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dynamodb() -> Any:
    with pytest.MonkeyPatch.context() as patch, moto_dynamodb(patch) as client:
        yield client


@pytest.fixture(params=["sqlite", "dynamodb"])
def state(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "sqlite":
        return SqliteStateStore(tmp_path / "state.sqlite")
    store = DynamoStateStore(f"state-{uuid.uuid4().hex[:12]}", client=request.getfixturevalue("dynamodb"))
    store.ensure_tables()
    return store


def fill(store: Any, tenant: str) -> None:
    store.put_weight(tenant, SourceWeight("agent", "memory", 1.1, 0.3), change("agent", "memory", 1.1, "t1"))
    store.put_overlay(tenant, "reviewer", {"role_id": "reviewer"})
    store.put_eval(tenant, EvalRecord("reviewer", "2030-01-01T00:00:00Z", {"ndcg": 0.5}))
    with_feedback(store, [f"{tenant}-a1", f"{tenant}-a2"], tenant=tenant)
    store.log_assembly(entry(f"{tenant}-a3", "2030-01-02T00:00:00Z", tenant=tenant))


def test_state_purge_erases_every_row_of_one_tenant(state: Any) -> None:
    fill(state, T1)
    fill(state, T2)
    assert state.purge_tenant(T1) > 0
    assert state.list_weights(T1) == [] and state.list_history(T1, None, 100) == []
    assert state.list_overlays(T1) == [] and state.list_evals(T1, None, 100) == []
    assert state.list_assemblies(T1, None, None, 100, None).entries == ()
    assert state.list_callers(T1) == [] and state.get_assembly(T1, f"{T1}-a1") is None
    assert all(owner != T1 for owner, _ in state.overlay_owners())
    assert len(state.list_assemblies(T2, None, None, 100, None).entries) == 3
    assert state.list_overlays(T2) == ["reviewer"] and len(state.list_weights(T2)) == 1


@pytest.fixture(params=["sqlite", "memory", "dynamodb"])
def cache(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "sqlite":
        return SqliteCache(tmp_path / "cache.sqlite")
    if request.param == "memory":
        return MemoryCache()
    c = DynamoCache(f"cache-{uuid.uuid4().hex[:12]}", client=request.getfixturevalue("dynamodb"))
    c.ensure_tables()
    return c


def test_cache_purge_drops_a_tenants_searches_and_generation_only(cache: Any) -> None:
    mine = search_cache_key("acme", "q", [], {}, "auto", 20, 1)
    extended = search_cache_key("acme:x", "q", [], {}, "auto", 20, 1)  # a tenant whose id extends ours
    for key in (mine, extended, settling_key("acme")):
        cache.set(key, {"results": []}, 300, now=0)
    cache.incr(generation_key("acme"))
    cache.incr(generation_key("acme:x"))
    assert cache.purge_tenant("acme") == 3  # its search, its settling marker, its generation
    assert cache.get(mine, now=1) is None and cache.counter(generation_key("acme")) == 0
    assert cache.get(settling_key("acme"), now=1) is None
    assert cache.get(extended, now=1) == {"results": []} and cache.counter(generation_key("acme:x")) == 1


def test_dropping_marks_leaves_the_tenants_cached_searches(cache: Any) -> None:
    """What a queue consumer's work leaves behind after an erase: the generation and the settling mark."""
    mine = search_cache_key("acme", "q", [], {}, "auto", 20, 1)
    cache.set(mine, {"results": []}, 300, now=0)
    cache.set(settling_key("acme"), True, 300, now=0)
    cache.incr(generation_key("acme"))
    assert cache.drop_marks("acme") == 2 and cache.drop_marks("acme") == 0
    assert cache.counter(generation_key("acme")) == 0 and cache.get(settling_key("acme"), now=1) is None
    assert cache.get(mine, now=1) == {"results": []}


@pytest.mark.parametrize("after", [None, EntityPosition("2026-01-01T00:00:00Z", "memory", "a")])
@pytest.mark.parametrize("etype", [None, "task"])
def test_opensearch_catalog_bodies_validate_against_the_specification(after: Any, etype: str | None) -> None:
    from infra.opensearch.catalog import listing_body, purge_body
    from tests.adapters import opensearch_spec as spec

    if not spec.spec_available():
        pytest.skip(spec.SPEC_MISSING_REASON)
    assert spec.errors(spec.request_body_uri("_core", "search"), listing_body(T1, etype, 50, after)) == []
    assert spec.errors(spec.request_body_uri("_core", "delete_by_query"), purge_body(T1)) == []

"""Nothing tenant-owned leaks and nothing stale is served: traces hold no results, error bodies
name no host, ARN or SDK exception, the embedding memo and timings tell nothing about another tenant, a
write that search cannot see yet is never cached, and PATCHed source/owner/namespace filter correctly."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from core.errors import UnavailableError
from core.models import EntityKey, Placement, WriteOutcome
from handlers.observability.powertools import tracer
from infra.dynamodb.errors import translate
from infra.local.sqlite.index import build_sqlite_index
from infra.wiring.root import Container, set_container
from tests.conftest import FakeEmbedder, api_event, invoke, make_container

SECRET = "quarterly payroll figures for the acme board"


@pytest.fixture
def box(tmp_path: Path) -> Iterator[Container]:
    c = make_container(tmp_path / "data", FakeEmbedder())
    set_container(c)
    yield c
    set_container(None)


def put(entity_id: str, body: dict[str, Any], tenant: str = "acme", entity_type: str = "memory") -> int:
    event = api_event("put_entity", tenant=tenant, body=body, path=f"/entities/{entity_type}/{entity_id}")
    return invoke(event)[0]


def search(query: str, tenant: str = "acme", **extra: Any) -> tuple[int, Any]:
    return invoke(api_event("search", tenant=tenant, body={"query": query, **extra}))


def ids(found: tuple[int, Any]) -> list[str]:
    status, body = found
    assert status == 200, body
    return [r["entity_id"] for r in body["results"]]


# ---------------------------------------------------------------- traces


class _Segment:
    def __init__(self, sink: list[Any]) -> None:
        self.sink = sink

    def put_metadata(self, key: str, value: Any, namespace: str = "default") -> None:
        self.sink.append((key, value))

    def put_annotation(self, key: str, value: Any) -> None:
        self.sink.append((key, value))

    def add_exception(self, *args: Any, **kwargs: Any) -> None:
        self.sink.append(("exception", args))


class RecordingProvider:
    """Stands in for the X-Ray recorder: keeps everything the tracer would send."""

    def __init__(self) -> None:
        self.recorded: list[Any] = []

    @contextmanager
    def in_subsegment(self, name: str | None = None, **kwargs: Any) -> Iterator[_Segment]:
        yield _Segment(self.recorded)


def test_a_trace_of_a_search_holds_no_result_text(box: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    assert put("m-1", {"content": SECRET}) in (200, 201)
    provider = RecordingProvider()
    monkeypatch.setattr(tracer, "provider", provider)
    assert ids(search("payroll figures")) == ["m-1"]
    assert provider.recorded  # the handler was traced
    assert "payroll" not in json.dumps(provider.recorded, default=str)


# ---------------------------------------------------------------- error bodies

HOST_TEXT = (
    "cannot connect: HTTPConnectionPool(host='search-quarry-abc.eu-west-1.es.amazonaws.com', port=443)"
)
ROLE_ARN = "arn:aws:sts::123456789012:assumed-role/quarry-ApiRole-X/quarry-ApiFunction"
TABLE_ARN = "arn:aws:dynamodb:eu-west-1:123456789012:table/quarry-state"
LEAKS = ("amazonaws", "arn:", "123456789012", "HTTPConnectionPool", "Exception", "port=")


class FailingIndex:
    """A search index whose reads fail with what an adapter raises."""

    def __init__(self, inner: Any, error: Exception) -> None:
        self._inner, self._error = inner, error

    def __getattr__(self, name: str) -> Any:
        if name in ("lexical", "vector", "retrieve", "retrieve_many"):

            def fail(*args: Any, **kwargs: Any) -> Any:
                raise self._error

            return fail
        return getattr(self._inner, name)


def client_error(code: str, message: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, "Query")


ERRORS = {
    "opensearch-down": UnavailableError("opensearch", HOST_TEXT),
    "dynamodb-access-denied": translate(
        client_error(
            "AccessDeniedException",
            f"User: {ROLE_ARN} is not authorized to perform: dynamodb:Query on resource: {TABLE_ARN}",
        )
    ),
    "dynamodb-validation": translate(
        client_error("ValidationException", f"One or more parameter values were invalid: {TABLE_ARN}")
    ),
    "dynamodb-throttled": translate(client_error("ThrottlingException", f"Rate exceeded for {TABLE_ARN}")),
}


@pytest.mark.parametrize("error", list(ERRORS.values()), ids=list(ERRORS))
def test_error_bodies_name_no_host_arn_or_sdk_exception(box: Container, error: Exception) -> None:
    box.override(index=FailingIndex(box.index, error))
    status, body = search("payroll")
    assert status in (500, 503)
    text = json.dumps(body)
    assert not [leak for leak in LEAKS if leak in text], text
    assert body["error"]["message"]


class SlowBedrock(FakeEmbedder):
    def embed(self, texts: Sequence[str]) -> Any:
        raise UnavailableError("bedrock", "ReadTimeoutError: https://bedrock-runtime.eu-west-1.amazonaws.com")


def test_a_degraded_search_names_no_host(tmp_path: Path) -> None:
    c = make_container(tmp_path / "data", SlowBedrock())
    set_container(c)
    try:
        status, body = search("how are payroll figures computed?", strategy="hybrid")
    finally:
        set_container(None)
    assert status == 200 and body["query_info"]["degraded"]
    assert "amazonaws" not in json.dumps(body) and "ReadTimeout" not in json.dumps(body)


# ---------------------------------------------------------------- embedding memo and timings


def test_the_embedding_memo_and_timings_tell_nothing_about_another_tenant(box: Container) -> None:
    embedder = box.embedder
    task = {"role_id": "analyst", "task_text": "rotate the payroll database credentials"}
    for tenant in ("acme", "globex"):
        status, bundle = invoke(api_event("retrieve", tenant=tenant, body=task))
        assert status == 200, bundle
        assert "embed_query" not in bundle["diagnostics"]["timings_ms"]
    # globex's query was embedded for globex, not answered from acme's memo
    assert sum("payroll database" in t for t in embedder.texts) == 2


# ---------------------------------------------------------------- the cache and a refresh-delayed index


class RefreshDelayedIndex:
    """Like OpenSearch with refresh off: `get` (mget) is real-time, searches see writes only after refresh()."""

    visibility_delay_seconds = 1.0

    def __init__(self, root: Path) -> None:
        self.truth = build_sqlite_index(root / "truth.db")
        self.visible = build_sqlite_index(root / "visible.db")
        self.pending: list[tuple[str, tuple[Any, ...]]] = []

    def _write(self, method: str, *args: Any) -> Any:
        self.pending.append((method, args))
        return getattr(self.truth, method)(*args)

    def upsert(self, record: Any) -> WriteOutcome:
        return self._write("upsert", record)

    def upsert_many(self, records: Sequence[Any]) -> list[WriteOutcome]:
        return self._write("upsert_many", records)

    def update_metadata(self, *args: Any) -> WriteOutcome:
        return self._write("update_metadata", *args)

    def touch_metadata(self, *args: Any) -> list[WriteOutcome]:
        return self._write("touch_metadata", *args)

    def delete(self, tenant_id: str, key: EntityKey, version: int | None) -> WriteOutcome:
        return self._write("delete", tenant_id, key, version)

    def get(self, tenant_id: str, keys: Sequence[EntityKey]) -> Any:
        return self.truth.get(tenant_id, keys)

    def refresh(self) -> None:
        for method, args in self.pending:
            getattr(self.visible, method)(*args)
        self.pending.clear()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.visible, name)  # lexical, vector, retrieve…: what a refresh made visible


class StepClock:
    def __init__(self) -> None:
        self.t = 1_795_000_000.0

    def now(self) -> float:
        return self.t

    def monotonic(self) -> float:
        return self.t


def test_a_deleted_entity_is_never_served_from_the_cache_after_a_refresh_delayed_write(
    tmp_path: Path,
) -> None:
    c = make_container(tmp_path / "data", FakeEmbedder(), cache="memory")
    index = RefreshDelayedIndex(tmp_path)
    clock = StepClock()
    c.override(index=index, clock=clock)
    set_container(c)
    try:
        assert put("key-1", {"content": "leaked api key sk-live-123", "version": 1}) in (200, 201)
        index.refresh()
        assert ids(search("leaked api key")) == ["key-1"]
        event = api_event("delete_entity", path="/entities/memory/key-1")
        assert invoke(event)[0] in (200, 204)
        # before the refresh, search still sees the document (as OpenSearch would)…
        assert ids(search("leaked api key")) == ["key-1"]
        clock.t += 1.0
        index.refresh()
        # …but that answer was not cached under the new generation: once visible, the delete holds
        assert ids(search("leaked api key")) == []
        clock.t += 10.0
        assert ids(search("leaked api key")) == []
    finally:
        set_container(None)


def test_writes_visible_on_return_keep_caching(box: Container) -> None:
    assert put("m-1", {"content": SECRET}) in (200, 201)
    assert search("payroll")[1]["query_info"]["cache"] == "miss"
    assert search("payroll")[1]["query_info"]["cache"] == "hit"


# ---------------------------------------------------------------- PATCH of source, owner, namespace


def patch(entity_id: str, body: dict[str, Any]) -> int:
    event = api_event("patch_entity", body=body, path=f"/entities/memory/{entity_id}")
    return invoke(event)[0]


def test_patched_owner_source_and_namespace_filter_correctly(box: Container) -> None:
    assert put("m-1", {"content": SECRET, "source": "memory", "owner": "alice", "version": 1}) in (200, 201)
    assert put("m-2", {"content": SECRET + " draft", "owner": "carol", "version": 1}) in (200, 201)
    assert patch("m-1", {"owner": "bob", "source": "hr-restricted", "namespace": "hr", "version": 2}) == 200
    assert ids(search("payroll", filters={"owner": "alice"})) == []
    assert ids(search("payroll", filters={"owner": "bob"})) == ["m-1"]
    assert ids(search("payroll", filters={"source": "memory"})) == ["m-2"]
    assert ids(search("payroll", filters={"source": "hr-restricted"})) == ["m-1"]
    assert ids(search("payroll", filters={"namespace": "hr"})) == ["m-1"]
    stored = box.index.get("acme", [EntityKey("memory", "m-1")])[EntityKey("memory", "m-1")]
    assert Placement(stored.source, stored.owner, stored.namespace) == Placement("hr-restricted", "bob", "hr")


def test_a_filter_on_several_owners_matches_any_of_them(box: Container) -> None:
    for entity_id, owner in (("a", "alice"), ("b", "bob"), ("c", "carol")):
        assert put(entity_id, {"content": SECRET, "owner": owner}) in (200, 201)
    assert sorted(ids(search("payroll", filters={"owner": ["alice", "bob"]}))) == ["a", "b"]


def test_a_patched_source_is_governed_by_the_overlay(box: Container) -> None:
    """After `source → hr-restricted`, an overlay forbidding that source no longer selects the document."""
    doc = {"title": "Payroll runbook", "text": "How payroll figures are computed each quarter", "version": 1}
    event = api_event("put_entity", body={**doc, "source": "wiki"}, path="/entities/document/d-pay")
    assert invoke(event)[0] in (200, 201)
    overlay = {
        "role_id": "analyst",
        "mission": "Answer payroll questions",
        "source_policy": {"forbidden": ["hr-restricted"]},
    }
    task = {"role_id": "analyst", "task_text": "how are payroll figures computed", "overlay": overlay}

    def selected() -> list[str]:
        status, bundle = invoke(api_event("retrieve", body=task))
        assert status == 200, bundle
        return [s["document_id"] for s in bundle["selected"]]

    assert selected() == ["d-pay"]
    event = api_event(
        "patch_entity", body={"source": "hr-restricted", "version": 2}, path="/entities/document/d-pay"
    )
    assert invoke(event)[0] == 200
    assert selected() == []

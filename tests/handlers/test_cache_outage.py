"""A search cache that fails: search fails open — the index answers, the failure is
logged and counted — and no write path leaves a stale cached result behind, even when the cache breaks
between the write's steps."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from core.errors import UnavailableError
from infra.local.cache import MemoryCache
from tests.conftest import api_event, invoke

TASK = {"type": "task", "id": "t-login", "title": "Fix login bug", "version": 1}


class FlakyCache:
    """A real MemoryCache whose operations fail on demand: `down` names the failing operations, and
    `fail_incr_calls` the 1-based numbers of `incr` calls that fail (counting every call)."""

    def __init__(self) -> None:
        self.inner = MemoryCache()
        self.down: set[str] = set()
        self.fail_incr_calls: set[int] = set()
        self.incr_calls = 0

    def _check(self, op: str) -> None:
        if op in self.down:
            raise UnavailableError("cache", f"{op} failed (test outage)")

    def get(self, key: str, now: float) -> Any | None:
        self._check("get")
        return self.inner.get(key, now)

    def set(self, key: str, value: Any, ttl_seconds: float, now: float) -> None:
        self._check("set")
        self.inner.set(key, value, ttl_seconds, now)

    def incr(self, key: str) -> int:
        self.incr_calls += 1
        self._check("incr")
        if self.incr_calls in self.fail_incr_calls:
            raise UnavailableError("cache", "incr failed (test outage)")
        return self.inner.incr(key)

    def counter(self, key: str) -> int:
        self._check("counter")
        return self.inner.counter(key)


@pytest.fixture
def flaky(local: Any) -> FlakyCache:
    cache = FlakyCache()
    local.override(cache=cache)  # every service is rebuilt around it
    return cache


def search(query: str = "login") -> dict[str, Any]:
    status, body = invoke(api_event("search", body={"query": query, "strategy": "keyword"}))
    assert status == 200, body
    return body


def found(query: str = "login") -> list[str]:
    return [r["entity_id"] for r in search(query)["results"]]


def bulk(items: list[dict[str, Any]]) -> tuple[int, Any]:
    return invoke(api_event("bulk_entities", body={"items": items}))


@pytest.mark.parametrize("op", ["counter", "get", "set"])
def test_search_answers_from_the_index_when_the_cache_fails(local: Any, flaky: FlakyCache, op: str) -> None:
    assert bulk([TASK])[0] == 200
    flaky.down.add(op)
    body = search()
    assert [r["entity_id"] for r in body["results"]] == ["t-login"]
    assert body["query_info"]["cache"] == "bypass"
    assert local.search.cache_failures >= 1


def test_a_write_while_the_cache_is_down_is_refused_and_applies_nothing(
    local: Any, flaky: FlakyCache
) -> None:
    assert bulk([TASK])[0] == 200
    assert found() == ["t-login"]  # now cached
    flaky.down.add("incr")
    status, body = invoke(api_event("delete_entity", path="/entities/task/t-login", query={}))
    assert status == 503 and body["error"]["code"] == "unavailable"
    flaky.down.clear()
    assert found() == ["t-login"]  # not deleted, so not stale
    assert invoke(api_event("delete_entity", path="/entities/task/t-login", query={}))[0] == 200
    assert found() == []


def _searching_during(local: Any, method: str) -> None:
    """Make the index run a search (which caches its answer) just before it applies `method`."""
    index = local.index
    real: Callable[..., Any] = getattr(index, method)

    def racing(*args: Any, **kwargs: Any) -> Any:
        search()  # a concurrent reader caches what the index holds before the write lands
        return real(*args, **kwargs)

    assert local.search is not None  # build the search service on the real index first
    local.indexing._index = _Proxy(index, method, racing)


class _Proxy:
    def __init__(self, inner: Any, method: str, replacement: Callable[..., Any]) -> None:
        self._inner, self._method, self._replacement = inner, method, replacement

    def __getattr__(self, name: str) -> Any:
        return self._replacement if name == self._method else getattr(self._inner, name)


def test_a_delete_whose_invalidation_fails_is_not_acknowledged_and_its_retry_leaves_nothing_stale(
    local: Any, flaky: FlakyCache
) -> None:
    assert bulk([TASK])[0] == 200
    assert found() == ["t-login"]
    _searching_during(local, "delete")
    flaky.fail_incr_calls = {flaky.incr_calls + 2}  # the bump after the delete fails
    status, _ = invoke(api_event("delete_entity", path="/entities/task/t-login", query={}))
    assert status == 503  # applied, but a cached search may still show it: not acknowledged
    status, _ = invoke(api_event("delete_entity", path="/entities/task/t-login", query={}))
    assert status == 404  # the retry: already gone
    assert found() == []  # and nothing stale is served


def test_a_put_whose_invalidation_fails_is_finished_by_its_retry(local: Any, flaky: FlakyCache) -> None:
    assert bulk([TASK])[0] == 200
    assert found() == ["t-login"]
    _searching_during(local, "upsert")
    flaky.fail_incr_calls = {flaky.incr_calls + 2}
    renamed = {"title": "Fix signup bug", "version": 2}
    path = "/entities/task/t-login"
    assert invoke(api_event("put_entity", path=path, body=renamed))[0] == 503
    status, body = invoke(api_event("put_entity", path=path, body=renamed))
    assert status == 200 and body["outcome"] == "duplicate"
    assert found() == [] and found("signup") == ["t-login"]


def test_a_bulk_while_the_cache_is_down_is_refused_whole(local: Any, flaky: FlakyCache) -> None:
    assert bulk([TASK])[0] == 200
    assert found() == ["t-login"]
    flaky.down.add("incr")
    status, _ = bulk([{**TASK, "title": "Fix signup bug", "version": 2}])
    assert status == 503
    flaky.down.clear()
    assert found() == ["t-login"] and found("signup") == []

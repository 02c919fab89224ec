"""SqliteCache and MemoryCache against the Cache contract, plus each one's own promises."""

from __future__ import annotations

import sqlite3
from contextlib import closing

import pytest

from infra.local import cache as local_cache
from infra.local.cache import MemoryCache, SqliteCache
from tests.adapters.cache_contract import NOW, CacheContract


@pytest.fixture
def sqlite_cache(tmp_path):
    c = SqliteCache(tmp_path / "quarry.db")
    yield c
    c.close()


class TestSqliteCache(CacheContract):
    @pytest.fixture
    def cache(self, sqlite_cache):
        return sqlite_cache


class TestMemoryCache(CacheContract):
    @pytest.fixture
    def cache(self):
        return MemoryCache(max_entries=100)


def test_memory_cache_evicts_the_least_recently_used_beyond_its_bound():
    cache = MemoryCache(max_entries=3)
    for key in "abc":
        cache.set(key, key.upper(), 60, NOW)
    assert cache.get("a", NOW) == "A"  # a is now the most recently used
    cache.set("d", "D", 60, NOW)
    assert len(cache) == 3
    assert cache.get("b", NOW) is None
    assert [cache.get(k, NOW) for k in "acd"] == ["A", "C", "D"]


def test_memory_cache_never_evicts_counters():
    cache = MemoryCache(max_entries=1)
    cache.incr("gen:t")
    for i in range(10):
        cache.set(f"k{i}", i, 60, NOW)
    assert cache.counter("gen:t") == 1


def test_sqlite_cache_is_shared_through_the_file(tmp_path):
    writer, reader = SqliteCache(tmp_path / "q.db"), SqliteCache(tmp_path / "q.db")
    writer.set("k", {"v": 1}, 60, NOW)
    writer.incr("gen")
    assert reader.get("k", NOW) == {"v": 1} and reader.counter("gen") == 1
    writer.close()
    reader.close()


def test_sqlite_cache_sweeps_expired_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(local_cache, "PURGE_EVERY_SETS", 5)
    cache = SqliteCache(tmp_path / "q.db")
    for i in range(4):
        cache.set(f"old{i}", i, 1, NOW)
    cache.set("fresh", "v", 60, NOW + 10)  # fifth set sweeps everything expired by NOW + 10
    with closing(sqlite3.connect(tmp_path / "q.db")) as conn:
        assert conn.execute("SELECT key FROM cache_entries").fetchall() == [("fresh",)]
    cache.close()

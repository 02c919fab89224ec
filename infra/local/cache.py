"""Local Cache adapters: `SqliteCache` (shared by processes using one data file) and `MemoryCache` (one
process, bounded, LRU).

Both store values as JSON text, so every adapter hands back the same decoded copy a DynamoDB-backed
cache would (tuples come back as lists, and mutating a returned value never changes the cache).
Counters live apart from values and never expire or get evicted: they carry index generations, and
losing one would resurrect stale cached results.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from core.search.cache_key import (
    SEARCH_KEY_HASH_CHARS,
    generation_key,
    is_tenant_cache_key,
    search_key_prefix,
    settling_key,
)
from infra.local.sqlite.connect import open_sqlite
from infra.local.sqlite.errors import FAILURES, translate

# Sets between two sweeps of expired rows. Measured on the dev VM: a set takes ~0.1 ms and a sweep of 10k
# rows (half expired) ~20 ms, so one sweep per 500 sets adds ~0.04 ms per set and bounds the table.
PURGE_EVERY_SETS = 500
# Default bound of MemoryCache (measurement: a cached search page is ~5-20 KB of JSON, so 10k entries
# stay under ~200 MB in the worst case and far below in practice).
DEFAULT_MAX_ENTRIES = 10_000

_DDL = """
CREATE TABLE IF NOT EXISTS cache_entries (key TEXT PRIMARY KEY, value TEXT NOT NULL, expires_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS cache_entries_by_expiry ON cache_entries (expires_at);
CREATE TABLE IF NOT EXISTS cache_counters (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


class SqliteCache:
    """A TTL cache and atomic counters in SQLite tables `cache_entries` and `cache_counters`."""

    def __init__(self, path_or_connection: str | Path | sqlite3.Connection) -> None:
        self._conn = open_sqlite(path_or_connection)
        self._lock = threading.Lock()
        self._sets = 0
        with self._guard() as conn:
            conn.executescript(_DDL)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

    @contextmanager
    def _guard(self) -> Iterator[sqlite3.Connection]:
        """Serialise access; SQLite lock and I/O errors become UnavailableError here and only here."""
        with self._lock:
            try:
                yield self._conn
            except FAILURES as exc:
                raise translate(exc) from exc

    def get(self, key: str, now: float) -> Any | None:
        """The live value under `key`, or None (expired entries are never returned)."""
        with self._guard() as conn:
            row = conn.execute(
                "SELECT value FROM cache_entries WHERE key = ? AND expires_at > ?", (key, now)
            ).fetchone()
        return None if row is None else json.loads(row[0])

    def set(self, key: str, value: Any, ttl_seconds: float, now: float) -> None:
        """Store `value` until `now + ttl_seconds`, replacing any previous value."""
        text = _dump(value)
        with self._guard() as conn:
            conn.execute(
                "INSERT INTO cache_entries (key, value, expires_at) VALUES (?, ?, ?) ON CONFLICT (key)"
                " DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at",
                (key, text, now + ttl_seconds),
            )
            self._sets += 1
            if self._sets % PURGE_EVERY_SETS == 0:
                conn.execute("DELETE FROM cache_entries WHERE expires_at <= ?", (now,))

    def incr(self, key: str) -> int:
        """Atomically increment an integer counter (no TTL) and return the new value."""
        with self._guard() as conn:
            row = conn.execute(
                "INSERT INTO cache_counters (key, value) VALUES (?, 1)"
                " ON CONFLICT (key) DO UPDATE SET value = value + 1 RETURNING value",
                (key,),
            ).fetchone()
        return int(row[0])

    def counter(self, key: str) -> int:
        """The counter's value, 0 when absent."""
        with self._guard() as conn:
            row = conn.execute("SELECT value FROM cache_counters WHERE key = ?", (key,)).fetchone()
        return 0 if row is None else int(row[0])

    def purge_tenant(self, tenant_id: str) -> int:
        """Drop the tenant's cached searches and generation counter (content zeroed, WAL truncated)."""
        prefix = search_key_prefix(tenant_id)
        with self._guard() as conn:
            conn.execute("PRAGMA secure_delete = ON")
            removed = conn.execute(
                "DELETE FROM cache_entries WHERE (substr(key, 1, ?) = ? AND length(key) = ?) OR key = ?",
                (len(prefix), prefix, len(prefix) + SEARCH_KEY_HASH_CHARS, settling_key(tenant_id)),
            ).rowcount
            removed += conn.execute(
                "DELETE FROM cache_counters WHERE key = ?", (generation_key(tenant_id),)
            ).rowcount
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return int(removed)

    def drop_marks(self, tenant_id: str) -> int:
        """Drop the tenant's settling mark and generation counter."""
        with self._guard() as conn:
            conn.execute("PRAGMA secure_delete = ON")
            removed = conn.execute(
                "DELETE FROM cache_entries WHERE key = ?", (settling_key(tenant_id),)
            ).rowcount
            removed += conn.execute(
                "DELETE FROM cache_counters WHERE key = ?", (generation_key(tenant_id),)
            ).rowcount
        return int(removed)


class MemoryCache:
    """An in-process TTL cache bounded to `max_entries` values, evicting the least recently used."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._max = max_entries
        self._entries: OrderedDict[str, tuple[str, float]] = OrderedDict()
        self._counters: dict[str, int] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def get(self, key: str, now: float) -> Any | None:
        """The live value under `key`, or None (expired entries are never returned)."""
        with self._lock:
            item = self._entries.get(key)
            if item is None:
                return None
            if item[1] <= now:
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            text = item[0]
        return json.loads(text)

    def set(self, key: str, value: Any, ttl_seconds: float, now: float) -> None:
        """Store `value` until `now + ttl_seconds`, evicting the least recently used beyond the bound."""
        text = _dump(value)
        with self._lock:
            self._entries[key] = (text, now + ttl_seconds)
            self._entries.move_to_end(key)
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)

    def incr(self, key: str) -> int:
        """Atomically increment an integer counter (no TTL) and return the new value."""
        with self._lock:
            value = self._counters.get(key, 0) + 1
            self._counters[key] = value
            return value

    def counter(self, key: str) -> int:
        """The counter's value, 0 when absent."""
        with self._lock:
            return self._counters.get(key, 0)

    def drop_marks(self, tenant_id: str) -> int:
        """Drop the tenant's settling mark and generation counter."""
        with self._lock:
            found = self._entries.pop(settling_key(tenant_id), None) is not None
            return int(found) + int(self._counters.pop(generation_key(tenant_id), None) is not None)

    def purge_tenant(self, tenant_id: str) -> int:
        """Drop the tenant's cached searches and generation counter."""
        with self._lock:
            entries = [k for k in self._entries if is_tenant_cache_key(k, tenant_id)]
            counters = [k for k in self._counters if is_tenant_cache_key(k, tenant_id)]
            for k in entries:
                del self._entries[k]
            for k in counters:
                del self._counters[k]
        return len(entries) + len(counters)

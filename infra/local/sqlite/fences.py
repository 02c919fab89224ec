"""`SqliteTenantFences`: the TenantFences port in the local SQLite file (table `tenant_fences`, one row per
erased tenant keyed by `core.state.fence_mark`: a SHA-256 of the id, never the id itself), and what purges
removed since the fence (table `tenant_purge_counts`, one row per mark and kind of thing removed, each
purge adding to it in one statement)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path

from core.state import TenantFence, fence_mark
from infra.local.sqlite.connect import immediate, open_sqlite
from infra.local.sqlite.errors import FAILURES, reported, translate

_DDL = (
    "CREATE TABLE IF NOT EXISTS tenant_fences "
    "(mark TEXT PRIMARY KEY, erased_at REAL NOT NULL, reopened_at REAL)"
)
_COUNTS_DDL = (
    "CREATE TABLE IF NOT EXISTS tenant_purge_counts "
    "(mark TEXT NOT NULL, kind TEXT NOT NULL, removed INTEGER NOT NULL, PRIMARY KEY (mark, kind))"
)


class SqliteTenantFences:
    """Erased tenants' fences, shared by every process using the data file."""

    def __init__(self, path: str | Path) -> None:
        self._conn = open_sqlite(path)
        self._lock = threading.Lock()
        self._conn.execute(_DDL)
        self._conn.execute(_COUNTS_DDL)

    def fence(self, tenant_id: str, at: float) -> None:
        """Mark the tenant erased at `at`, closed (again, if it was reopened); its count of what purges
        removed starts again (in the same transaction)."""
        with self._lock, reported(), immediate(self._conn):
            self._conn.execute("DELETE FROM tenant_purge_counts WHERE mark = ?", (fence_mark(tenant_id),))
            self._conn.execute(
                "INSERT INTO tenant_fences (mark, erased_at) VALUES (?, ?) ON CONFLICT (mark) "
                "DO UPDATE SET erased_at = excluded.erased_at, reopened_at = NULL",
                (fence_mark(tenant_id), at),
            )

    def fence_of(self, tenant_id: str) -> TenantFence | None:
        """The tenant's fence, or None. Read by every request (twice by one that may write): SQLite's
        failures are translated only when one is raised, as a search's reads are (sqlite/errors.py)."""
        try:
            with self._lock:
                row = self._conn.execute(
                    "SELECT erased_at, reopened_at FROM tenant_fences WHERE mark = ?",
                    (fence_mark(tenant_id),),
                ).fetchone()
        except FAILURES as exc:
            raise translate(exc) from exc
        return None if row is None else TenantFence(float(row[0]), None if row[1] is None else float(row[1]))

    def reopen(self, tenant_id: str, at: float) -> None:
        """Serve the tenant again from `at`."""
        with self._lock, reported():
            self._conn.execute(
                "UPDATE tenant_fences SET reopened_at = ? WHERE mark = ?", (at, fence_mark(tenant_id))
            )

    def count_removed(self, tenant_id: str, removed: Mapping[str, int]) -> None:
        """Add one purge's counts to the tenant's count since its fence."""
        mark = fence_mark(tenant_id)
        with self._lock, reported(), immediate(self._conn):
            self._conn.executemany(
                "INSERT INTO tenant_purge_counts VALUES (?, ?, ?) ON CONFLICT (mark, kind) "
                "DO UPDATE SET removed = removed + excluded.removed",
                [(mark, kind, int(n)) for kind, n in removed.items()],
            )

    def removed_since_fence(self, tenant_id: str) -> dict[str, int]:
        """What every purge since the fence removed, by what."""
        with self._lock, reported():
            rows = self._conn.execute(
                "SELECT kind, removed FROM tenant_purge_counts WHERE mark = ?", (fence_mark(tenant_id),)
            ).fetchall()
        return {str(kind): int(n) for kind, n in rows}

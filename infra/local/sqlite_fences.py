"""`SqliteTenantFences`: the TenantFences port in the local SQLite file (table `tenant_fences`, one row per
erased tenant keyed by `core.state.fence_mark`: a SHA-256 of the id, never the id itself)."""

from __future__ import annotations

import threading
from pathlib import Path

from core.state import TenantFence, fence_mark
from infra.local.sqlite_connect import open_sqlite, reported

_DDL = (
    "CREATE TABLE IF NOT EXISTS tenant_fences "
    "(mark TEXT PRIMARY KEY, erased_at REAL NOT NULL, reopened_at REAL)"
)


class SqliteTenantFences:
    """Erased tenants' fences, shared by every process using the data file."""

    def __init__(self, path: str | Path) -> None:
        self._conn = open_sqlite(path)
        self._lock = threading.Lock()
        self._conn.execute(_DDL)

    def fence(self, tenant_id: str, at: float) -> None:
        """Mark the tenant erased at `at`, closed (again, if it was reopened)."""
        with self._lock, reported():
            self._conn.execute(
                "INSERT INTO tenant_fences (mark, erased_at) VALUES (?, ?) ON CONFLICT (mark) "
                "DO UPDATE SET erased_at = excluded.erased_at, reopened_at = NULL",
                (fence_mark(tenant_id), at),
            )

    def fence_of(self, tenant_id: str) -> TenantFence | None:
        """The tenant's fence, or None."""
        with self._lock, reported():
            row = self._conn.execute(
                "SELECT erased_at, reopened_at FROM tenant_fences WHERE mark = ?", (fence_mark(tenant_id),)
            ).fetchone()
        return None if row is None else TenantFence(float(row[0]), None if row[1] is None else float(row[1]))

    def reopen(self, tenant_id: str, at: float) -> None:
        """Serve the tenant again from `at`."""
        with self._lock, reported():
            self._conn.execute(
                "UPDATE tenant_fences SET reopened_at = ? WHERE mark = ?", (at, fence_mark(tenant_id))
            )

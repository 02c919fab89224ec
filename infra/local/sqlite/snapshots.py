"""`SqliteSearchSnapshots`: the SearchSnapshots port in the local SQLite file (table `search_snapshots`,
one row per snapshot with its compressed body, keyed by tenant and id). Expired rows are never returned
and are deleted when the next snapshot is stored, so the file does not grow with abandoned iterations."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from core.search.paging import SearchSnapshot
from infra.local.sqlite.connect import immediate, open_sqlite
from infra.local.sqlite.errors import FAILURES, translate

_DDL = (
    "CREATE TABLE IF NOT EXISTS search_snapshots (tenant_id TEXT NOT NULL, snapshot_id TEXT NOT NULL, "
    "fingerprint TEXT NOT NULL, created_at REAL NOT NULL, expires_at REAL NOT NULL, keep_alive REAL NOT NULL, "
    "body BLOB NOT NULL, PRIMARY KEY (tenant_id, snapshot_id))"
)
_EXPIRY_DDL = "CREATE INDEX IF NOT EXISTS search_snapshots_expiry ON search_snapshots (expires_at)"


class SqliteSearchSnapshots:
    """Search snapshots shared by every process using the data file."""

    def __init__(self, path_or_connection: str | Path | sqlite3.Connection) -> None:
        self._conn = open_sqlite(path_or_connection)
        self._lock = threading.Lock()
        with self._lock:
            try:
                self._conn.execute(_DDL)
                self._conn.execute(_EXPIRY_DDL)
            except FAILURES as exc:
                raise translate(exc) from exc

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

    def put(self, snapshot: SearchSnapshot) -> None:
        """Store the snapshot, dropping every snapshot that expired before it was taken."""
        s = snapshot
        row = (s.tenant_id, s.snapshot_id, s.fingerprint, s.created_at, s.expires_at, s.keep_alive, s.body)
        with self._lock:
            try:
                with immediate(self._conn):
                    self._conn.execute("DELETE FROM search_snapshots WHERE expires_at <= ?", (s.created_at,))
                    self._conn.execute(
                        "INSERT OR REPLACE INTO search_snapshots VALUES (?, ?, ?, ?, ?, ?, ?)", row
                    )
            except FAILURES as exc:
                raise translate(exc) from exc

    def get(self, tenant_id: str, snapshot_id: str, now: float) -> SearchSnapshot | None:
        """The tenant's live snapshot, or None."""
        with self._lock:
            try:
                row = self._conn.execute(
                    "SELECT fingerprint, created_at, expires_at, keep_alive, body FROM search_snapshots "
                    "WHERE tenant_id = ? AND snapshot_id = ? AND expires_at > ?",
                    (tenant_id, snapshot_id, now),
                ).fetchone()
            except FAILURES as exc:
                raise translate(exc) from exc
        if row is None:
            return None
        return SearchSnapshot(
            tenant_id, snapshot_id, row[0], float(row[1]), float(row[2]), float(row[3]), bytes(row[4])
        )

    def extend(self, tenant_id: str, snapshot_id: str, expires_at: float, now: float) -> bool:
        """Move a live snapshot's expiry; False when it is absent or lapsed."""
        with self._lock:
            try:
                with immediate(self._conn):
                    changed = self._conn.execute(
                        "UPDATE search_snapshots SET expires_at = ? "
                        "WHERE tenant_id = ? AND snapshot_id = ? AND expires_at > ?",
                        (expires_at, tenant_id, snapshot_id, now),
                    ).rowcount
            except FAILURES as exc:
                raise translate(exc) from exc
        return changed > 0

    def purge_tenant(self, tenant_id: str) -> int:
        """Delete every snapshot of the tenant; deleted content is zeroed and the WAL truncated afterwards
        (as the state store's purge does)."""
        with self._lock:
            try:
                self._conn.execute("PRAGMA secure_delete = ON")  # per connection: zero what is deleted
            except FAILURES as exc:
                raise translate(exc) from exc
        with self._lock:
            try:
                with immediate(self._conn):
                    removed = self._conn.execute(
                        "DELETE FROM search_snapshots WHERE tenant_id = ?", (tenant_id,)
                    ).rowcount
            except FAILURES as exc:
                raise translate(exc) from exc
        with self._lock:
            try:
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except FAILURES as exc:
                raise translate(exc) from exc
        return removed

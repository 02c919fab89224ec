"""FakeSearchSnapshots: the SearchSnapshots port in a dict (passes tests/adapters/test_search_snapshots.py)."""

from __future__ import annotations

import dataclasses
import threading

from core.search.paging import SearchSnapshot


class FakeSearchSnapshots:
    """Snapshots held in memory, keyed by (tenant, id); what is held is readable by a test."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.held: dict[tuple[str, str], SearchSnapshot] = {}

    def put(self, snapshot: SearchSnapshot) -> None:
        with self._lock:
            self.held[(snapshot.tenant_id, snapshot.snapshot_id)] = snapshot

    def get(self, tenant_id: str, snapshot_id: str, now: float) -> SearchSnapshot | None:
        with self._lock:
            snapshot = self.held.get((tenant_id, snapshot_id))
        return snapshot if snapshot is not None and snapshot.expires_at > now else None

    def extend(self, tenant_id: str, snapshot_id: str, expires_at: float, now: float) -> bool:
        with self._lock:
            snapshot = self.held.get((tenant_id, snapshot_id))
            if snapshot is None or snapshot.expires_at <= now:
                return False
            self.held[(tenant_id, snapshot_id)] = dataclasses.replace(snapshot, expires_at=expires_at)
            return True

    def purge_tenant(self, tenant_id: str) -> int:
        with self._lock:
            keys = [k for k in self.held if k[0] == tenant_id]
            for key in keys:
                del self.held[key]
        return len(keys)

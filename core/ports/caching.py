"""What is kept for a while and then forgotten: the search cache and the snapshots search cursors page over
(docs/architecture.md, Ports and adapters).
"""

from __future__ import annotations

from typing import Any, Protocol

from core.search.paging import SearchSnapshot


class Cache(Protocol):
    """A key-value cache with time-to-live; values are JSON-serialisable."""

    def get(self, key: str, now: float) -> Any | None:
        """The live value under `key`, or None (expired entries are never returned)."""
        ...

    def set(self, key: str, value: Any, ttl_seconds: float, now: float) -> None: ...

    def incr(self, key: str) -> int:
        """Atomically increment an integer counter (no TTL) and return the new value."""
        ...

    def counter(self, key: str) -> int:
        """The counter's value, 0 when absent."""
        ...

    def purge_tenant(self, tenant_id: str) -> int:
        """Drop the tenant's cached searches, settling mark and generation counter (`search:<tenant>:…`,
        `settling:<tenant>`, `gen:<tenant>`); how many there were."""
        ...

    def drop_marks(self, tenant_id: str) -> int:
        """Drop only the tenant's generation counter and settling mark (what a write leaves behind)."""
        ...


class SearchSnapshots(Protocol):
    """Search snapshots that cursors page over (core/search/paging.py), per tenant, each with an expiry.

    A snapshot is readable only by its tenant and only until its expiry: `get` never returns a lapsed one,
    whether or not the store has removed it yet."""

    def put(self, snapshot: SearchSnapshot) -> None:
        """Store the snapshot (its body may be large: an adapter with an item limit splits it)."""
        ...

    def get(self, tenant_id: str, snapshot_id: str, now: float) -> SearchSnapshot | None:
        """The tenant's snapshot, or None when absent, another tenant's, or expired at `now`."""
        ...

    def extend(self, tenant_id: str, snapshot_id: str, expires_at: float, now: float) -> bool:
        """Move a live snapshot's expiry to `expires_at`; False when it is absent or lapsed at `now`."""
        ...

    def purge_tenant(self, tenant_id: str) -> int:
        """Remove every snapshot of the tenant (an erase); how many."""
        ...

"""Reinforcement (docs/conformance.md, Memory): each memory placed in an assembled context or named
in feedback counts a use — `access_count` up by one, `last_accessed_at` moved to
the time of use, its decay clock restarted (core/memory/relevance.py). A search counts none: it is a read (a
search that wrote would shift OpenSearch's per-shard BM25 statistics and reorder the next identical search:
docs/conformance.md, Memory).

Uses are not written one by one: an assembly would become a write. They are summed in memory per (tenant,
memory) and written together at most once per FLUSH_SECONDS, or as soon as FLUSH_USES are waiting; at most
MAX_PENDING memories wait (uses of others beyond that are dropped and counted in `dropped`). A write is
a metadata-only change at the memory's current version, one batch per tenant (SearchIndex.touch_metadata): a memory rewritten
meanwhile keeps its new version and loses those uses.

So the counters are approximate: a crash or a recycled Lambda container loses the uses still waiting (at
most FLUSH_SECONDS' worth), and a use racing a write of the same memory is lost. A cached search answer
does not move when its memories are reinforced (the cache generation is not bumped by uses).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from core.errors import UnavailableError
from core.memory.metadata import MEMORY_TYPE
from core.memory.relevance import reinforced
from core.models import EntityKey, WriteOutcome
from core.ports import MetadataTouch, SearchIndex

_log = logging.getLogger(__name__)

FLUSH_SECONDS = 5.0  # uses reach the index at most this late (and at most this often, per process)
FLUSH_USES = 1_000  # ... or as soon as this many uses wait
MAX_PENDING = 10_000  # distinct memories waiting at most: the buffer's bound


@dataclass(slots=True)
class _Uses:
    count: int
    last: float


class Reinforcement:
    """Buffers memory uses and writes them to the index in batches (see the module docstring)."""

    def __init__(
        self,
        index: SearchIndex,
        flush_seconds: float = FLUSH_SECONDS,
        flush_uses: int = FLUSH_USES,
        max_pending: int = MAX_PENDING,
    ) -> None:
        self._index = index
        self._flush_seconds = flush_seconds
        self._flush_uses = flush_uses
        self._max_pending = max_pending
        self._lock = threading.Lock()
        self._pending: dict[tuple[str, EntityKey], _Uses] = {}
        self._waiting = 0
        self._last_flush: float | None = None
        self.dropped = 0  # uses not buffered: the buffer was full
        self.written = 0  # memories whose uses reached the index

    def used(self, tenant_id: str, keys: Iterable[EntityKey], now: float) -> None:
        """Count one use of each memory among `keys` at `now`; write the buffer when it is due."""
        with self._lock:
            for key in keys:
                if key.entity_type != MEMORY_TYPE:
                    continue
                uses = self._pending.get((tenant_id, key))
                if uses is None:
                    if len(self._pending) >= self._max_pending:
                        self.dropped += 1
                        continue
                    self._pending[(tenant_id, key)] = _Uses(1, now)
                else:
                    uses.count += 1
                    uses.last = max(uses.last, now)
                self._waiting += 1
            if self._last_flush is None:
                self._last_flush = now
            due = self._waiting >= self._flush_uses or now - self._last_flush >= self._flush_seconds
        if due:
            self.flush(now)

    def flush(self, now: float) -> int:
        """Write every waiting use now; the number of memories written (a failure is logged, not raised)."""
        with self._lock:
            batch, self._pending, self._waiting, self._last_flush = self._pending, {}, 0, now
        by_tenant: dict[str, dict[EntityKey, _Uses]] = {}
        for (tenant_id, key), uses in batch.items():
            by_tenant.setdefault(tenant_id, {})[key] = uses
        written = 0
        for tenant_id, tenant_uses in by_tenant.items():
            try:
                written += self._write(tenant_id, tenant_uses)
            except UnavailableError as exc:  # uses are bookkeeping: never fail a search over them
                _log.warning("memory uses of %d memories lost: %s", len(tenant_uses), exc)
        with self._lock:
            self.written += written
        return written

    def _write(self, tenant_id: str, uses: dict[EntityKey, _Uses]) -> int:
        stored = self._index.get(tenant_id, sorted(uses, key=str))
        touches = [
            MetadataTouch(
                key, entity.version, reinforced(entity.metadata, entity.created_at, use.count, use.last)
            )
            for key, use in uses.items()
            if (entity := stored.get(key)) is not None and not entity.deleted
        ]
        outcomes = self._index.touch_metadata(tenant_id, touches) if touches else []
        return sum(o is WriteOutcome.APPLIED for o in outcomes)

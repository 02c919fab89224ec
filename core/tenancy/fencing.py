"""The fence an erase puts around a tenant (docs/api.md, Erasing a tenant): every unit of work for a tenant — an
API request, an MCP tool call, a queued entity change, a job part — is admitted only while the tenant is
not fenced, and checks the fence again when it ends.

Why both ends. Admission alone leaves a race: work admitted just before the erase may write after the
erase's purge. So a unit that ends and finds the fence (read strongly consistent) purges the tenant again
itself and is answered TenantErasedError: its writes all came before that check, so they are gone either
way — written before the fence, the erase's purge removed them; after, this purge did. Admission reads a
per-process copy of the fence no older than ADMISSION_TTL_SECONDS (an erase elsewhere is seen within it),
so a busy tenant costs one fence read per process per second, plus one (strongly consistent) per unit
that may write: every API request but a GET, every queued change, job part, MCP call and nightly task.

Work that may have run before. A unit that wrote after the erase's purge and then stopped before its
end-of-unit check (a crash, a timeout, a process exiting under its job thread) leaves writes nobody purges.
Queued work says when it may have run before — a redelivered SQS message, a local job part whose claim
was taken over, an EventBridge event (Lambda retries those without telling) — and such a unit, refused at
admission while the tenant is still erased, purges the tenant before it is discarded. A local part claimed
when the erase comes keeps its row, without its items, until it is done or taken over
(infra/jobs/sqlite_queue.py), so a part cut off mid-way is always taken over.

Why the check at the end reads afresh rather than a copy like admission's. With a copy read at t_c, a
unit settling at t_s < t_c + TTL that found no fence keeps what it wrote until t_s; an erase that fenced
at t_e > t_c and purged at once (LifecycleService.erase) has then already purged, so writes between that
purge and t_s would outlive the erase. A copy is safe only if every erase waited out the copies' age (the
TTL) between its fence and its purge: writes before t_s < t_c + TTL < t_e + TTL would all precede the
purge. The erase does not wait, so the end-of-unit read stays fresh; it is one strongly consistent GetItem
(single-digit milliseconds in DynamoDB).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from core.errors import TenantErasedError
from core.ports import Clock, TenantFences
from core.state import TenantFence

# How stale a process's copy of a tenant's fence may be at admission; the check when a unit ends is never
# stale, so this bounds only how long a process may start doomed work after an erase elsewhere.
ADMISSION_TTL_SECONDS = 1.0
SEEN_TENANTS = (
    10_000  # copies kept per process; past this many the oldest are read again (a bound, not a tuning)
)


class TenantGate:
    """Admits and settles units of work for a tenant against its fence (see the module docstring)."""

    def __init__(
        self,
        fences: TenantFences,
        purge: Callable[[str], Any],
        clock: Clock,
        ttl_seconds: float = ADMISSION_TTL_SECONDS,
    ) -> None:
        self._fences, self._purge, self._clock, self._ttl = fences, purge, clock, ttl_seconds
        self._seen: dict[str, tuple[float, TenantFence | None]] = {}
        self._lock = threading.Lock()

    def _fence(self, tenant_id: str, fresh: bool) -> TenantFence | None:
        now = self._clock.monotonic()
        with self._lock:
            seen = self._seen.get(tenant_id)
        if not fresh and seen is not None and now - seen[0] < self._ttl:
            return seen[1]
        fence = self._fences.fence_of(tenant_id)
        with self._lock:
            if len(self._seen) >= SEEN_TENANTS:
                self._seen.clear()
            self._seen[tenant_id] = (now, fence)
        return fence

    def admit(self, tenant_id: str, since: float | None = None, retried: bool = False) -> None:
        """TenantErasedError when the tenant is fenced, or when work that originated at `since` (epoch
        seconds: a queued change's own time) predates its erase. `retried`: the unit may have run before
        and stopped before settling (see the module docstring); refused while the tenant is still erased,
        it purges the tenant first."""
        fence = self._fence(tenant_id, fresh=retried)
        if fence is not None and fence.refuses(since):
            if retried and fence.closed:
                self._purge(tenant_id)
            raise TenantErasedError()

    def settle(self, tenant_id: str) -> None:
        """At the end of a unit that may have written: when the tenant was fenced meanwhile, purge it
        again and raise TenantErasedError."""
        fence = self._fence(tenant_id, fresh=True)
        if fence is not None and fence.closed:
            self._purge(tenant_id)
            raise TenantErasedError()

    @contextmanager
    def unit(self, tenant_id: str, since: float | None = None, retried: bool = False) -> Iterator[None]:
        """Admit, run the block, settle — settled even when the block fails, since it may have written
        before failing."""
        self.admit(tenant_id, since, retried)
        try:
            yield
        finally:
            self.settle(tenant_id)

    def forget(self, tenant_id: str) -> None:
        """Drop this process's copy of the tenant's fence (after this process fenced or reopened it)."""
        with self._lock:
            self._seen.pop(tenant_id, None)

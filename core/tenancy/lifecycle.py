"""A tenant's data lifecycle (docs/architecture.md): export everything it stored, and erase it completely.

Export is NDJSON, one `{"kind", "data"}` record per line, in three phases: `entity` (live entities,
newest first, fields as stored; embeddings are derived data and left out), then `overlay`, `weight`,
`budget`, `weight_change` and `eval` (the tenant's state, in one go), then `assembly` (the log, newest
first, with feedback). A page stops after the record that crosses `max_bytes` (Lambda responses are
bounded at 6 MB, and API Gateway cannot stream) and ends with `{"kind": "next", "cursor"}`; the last page
ends with `{"kind": "end"}`. Following the cursors yields every record exactly once.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from core.cursor import decode_cursor, encode_cursor
from core.errors import ConflictError, InvalidInputError
from core.indexing.catalog import EntityPosition
from core.indexing.catalog_service import entity_out
from core.ports import (
    Cache,
    Clock,
    JobQueue,
    JobStore,
    SearchIndex,
    SearchSnapshots,
    StateStore,
    TenantFences,
)
from core.state import REOPEN_AFTER_SECONDS
from core.timestamps import iso_timestamp

EXPORT_KIND = "export"

EXPORT_PAGE_BYTES = 4_000_000  # under the 6 MB Lambda response limit with room for headers and JSON
ENTITY_BATCH = 200  # entities read per index call while exporting
LOG_BATCH = 200  # assembly-log rows per state read (the log's own page bound)
ALL_ROWS = 1_000_000  # history and eval rows are few per tenant; read them all in the state phase


class EraseReport(BaseModel):
    """DELETE /tenant: when the fence went up, what was removed, and from when the tenant may be reopened."""

    tenant_id: str
    fenced_at: str
    entities_removed: int
    state_rows_removed: int
    cache_entries_removed: int
    jobs_removed: int
    job_parts_discarded: int
    reopen_after: str


class ReopenReport(BaseModel):
    """POST /tenant/reopen: what the final sweep found (stragglers of work that raced the erase) and when
    the tenant was opened again."""

    tenant_id: str
    reopened_at: str
    entities_removed: int
    state_rows_removed: int
    cache_entries_removed: int
    jobs_removed: int


SweepScope = Literal["all", "index", "state"]


@dataclass(frozen=True, slots=True)
class Removed:
    """What one purge of a tenant removed."""

    entities: int
    state_rows: int
    cache_entries: int
    jobs: int
    job_parts: int

    def tally(self) -> dict[str, int]:
        """The counts as TenantFences.count_removed keeps them (only what is not zero)."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v}

    @classmethod
    def from_tally(cls, tally: dict[str, int]) -> Removed:
        """The counts TenantFences.removed_since_fence read back."""
        return cls(*(int(tally.get(f.name, 0)) for f in dataclasses.fields(cls)))

    def counts(self, tenant_id: str) -> dict[str, Any]:
        """The fields both reports share."""
        return {
            "tenant_id": tenant_id,
            "entities_removed": self.entities,
            "state_rows_removed": self.state_rows,
            "cache_entries_removed": self.cache_entries,
            "jobs_removed": self.jobs,
        }


def _line(kind: str, data: Any) -> str:
    return json.dumps({"kind": kind, "data": data}, separators=(",", ":"), sort_keys=True, default=str)


def _position(position: dict[str, Any]) -> dict[str, Any]:
    """A decoded export cursor's position when it has the shape `export` issues: a phase, an entity
    position of three strings, a log cursor string (a forged one is a 400, never a TypeError)."""
    after, log = position.get("after"), position.get("c")
    valid = (
        position.get("p") in ("entities", "state", "log")
        and (
            after is None
            or (isinstance(after, list) and len(after) == 3 and all(isinstance(a, str) for a in after))
        )
        and (log is None or isinstance(log, str))
    )
    if not valid:
        raise InvalidInputError("invalid cursor", {"cursor": "is not an export cursor"})
    return position


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


class LifecycleService:
    """Export, erase and reopen, for the caller's tenant only."""

    def __init__(
        self,
        index: SearchIndex,
        state: StateStore,
        cache: Cache,
        jobs: JobStore,
        queue: JobQueue,
        fences: TenantFences,
        clock: Clock,
        reopen_after_seconds: float = REOPEN_AFTER_SECONDS,
        snapshots: SearchSnapshots | None = None,
        fence_moved: Callable[[str], None] = lambda _tenant: None,
    ) -> None:
        """`snapshots`: the search snapshots an erase removes with the cache (None: a deployment without).
        `fence_moved`: told the tenant once an erase or a reopen is done, so the process drops its copy of
        the tenant's fence (TenantGate.forget)."""
        self._index, self._state, self._cache = index, state, cache
        self._snapshots = snapshots
        self._fence_moved = fence_moved
        self._jobs, self._queue, self._fences = jobs, queue, fences
        self._clock, self._reopen_after = clock, reopen_after_seconds

    # -- export -----------------------------------------------------------------------------------------

    def export(self, tenant_id: str, cursor: str | None, max_bytes: int = EXPORT_PAGE_BYTES) -> str:
        """One page of the NDJSON export (see module docstring), at least one record long."""
        position = _position(decode_cursor(EXPORT_KIND, tenant_id, cursor)) if cursor else {"p": "entities"}
        lines: list[str] = []
        size = 0
        for line, resume in self._records(tenant_id, position):
            lines.append(line)
            size += len(line) + 1
            if size >= max_bytes and resume is not None:
                following = {"kind": "next", "cursor": encode_cursor(EXPORT_KIND, tenant_id, resume)}
                lines.append(json.dumps(following, separators=(",", ":")))
                return "\n".join(lines) + "\n"
        lines.append(json.dumps({"kind": "end"}, separators=(",", ":")))
        return "\n".join(lines) + "\n"

    def _records(
        self, tenant_id: str, position: dict[str, Any]
    ) -> Iterator[tuple[str, dict[str, Any] | None]]:
        """(line, where to resume after it) for every record from `position` on; None: cannot stop here."""
        phase = position.get("p")
        if phase == "entities":
            yield from self._entities(tenant_id, position.get("after"))
            phase = "state"
        if phase == "state":
            yield from self._state_rows(tenant_id)
            phase, position = "log", {"p": "log"}
        yield from self._log(tenant_id, position.get("c"))

    def _entities(
        self, tenant_id: str, after: list[str] | None
    ) -> Iterator[tuple[str, dict[str, Any] | None]]:
        last = EntityPosition(*after) if after else None
        while True:
            batch = self._index.list_entities(tenant_id, None, ENTITY_BATCH, last)
            status = self._index.embedding_status(tenant_id, [e.key for e in batch])
            for e in batch:
                s = status.get(e.key)
                out = entity_out(e, s.chunks if s else 0, s.embedded if s else 0)
                last = EntityPosition(e.created_at, e.key.entity_type, e.key.entity_id)
                resume = {"p": "entities", "after": [last.created_at, last.entity_type, last.entity_id]}
                yield _line("entity", out.model_dump(mode="json")), resume
            if len(batch) < ENTITY_BATCH:
                return

    def _state_rows(self, tenant_id: str) -> Iterator[tuple[str, dict[str, Any] | None]]:
        rows: list[tuple[str, Any]] = []
        for role_id in self._state.list_overlays(tenant_id):
            rows.append(
                ("overlay", {"role_id": role_id, "overlay": self._state.get_overlay(tenant_id, role_id)})
            )
        rows.extend(("weight", _plain(w)) for w in self._state.list_weights(tenant_id))
        rows.extend(("budget", _plain(b)) for b in self._state.list_budgets(tenant_id))
        rows.extend(("weight_change", _plain(h)) for h in self._state.list_history(tenant_id, None, ALL_ROWS))
        rows.extend(("eval", _plain(r)) for r in self._state.list_evals(tenant_id, None, ALL_ROWS))
        for i, (kind, data) in enumerate(rows):
            yield _line(kind, data), ({"p": "log"} if i == len(rows) - 1 else None)

    def _log(self, tenant_id: str, cursor: str | None) -> Iterator[tuple[str, dict[str, Any] | None]]:
        while True:
            page = self._state.list_assemblies(tenant_id, None, None, LOG_BATCH, cursor)
            for i, entry in enumerate(page.entries):
                last_of_page = i == len(page.entries) - 1
                resume = {"p": "log", "c": page.next_cursor} if last_of_page and page.next_cursor else None
                yield _line("assembly", _plain(entry)), resume
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    # -- erase ------------------------------------------------------------------------------------------

    def erase(self, tenant_id: str, confirm: str) -> EraseReport:
        """Fence the tenant, then remove every trace of it: queued job parts, jobs, index, state, cache.

        The fence goes up first and stays (keyed by a hash of the id, core/state.py): from that moment the
        tenant's requests are refused and its queued work discarded, and work that raced the erase purges
        again when it ends (core/tenancy/fencing.py). Erasing again is safe (a retry after a failure)."""
        _confirmed(tenant_id, confirm)
        now = self._clock.now()
        self._fences.fence(tenant_id, now)
        self.purge(tenant_id)
        # What every purge since the fence removed, this one's and those of work that raced the erase and
        # purged first (which leave this purge nothing to find): what the tenant held, whoever removed it.
        removed = Removed.from_tally(self._fences.removed_since_fence(tenant_id))
        self._fence_moved(tenant_id)
        return EraseReport(
            **removed.counts(tenant_id),
            fenced_at=iso_timestamp(now),
            job_parts_discarded=removed.job_parts,
            reopen_after=iso_timestamp(now + self._reopen_after),
        )

    def purge(self, tenant_id: str, scope: SweepScope = "all") -> Removed:
        """Remove the tenant's data (what an erase does after fencing; what work that raced the erase does
        when it ends). `scope`: the stores a process's work may write, so each function needs rights to
        delete only what it writes — all (the API, the local server), index (the queue consumer: index
        documents and the cache's generation and settling marks) or state (the nightly run). Jobs first:
        the local index's purge rebuilds the file they share. What it removed is added to the tenant's
        count since its fence, which the erase's receipt reports."""
        removed = self._removed(tenant_id, scope)
        if removed.tally():  # counted for the erase's receipt, whoever purged (TenantFences.count_removed)
            self._fences.count_removed(tenant_id, removed.tally())
        return removed

    def _removed(self, tenant_id: str, scope: SweepScope) -> Removed:
        if scope == "index":
            entities = self._index.purge_tenant(tenant_id)
            return Removed(entities, 0, self._cache.drop_marks(tenant_id), 0, 0)
        if scope == "state":
            return Removed(0, self._state.purge_tenant(tenant_id), 0, 0, 0)
        parts = self._queue.discard_tenant(tenant_id)
        jobs = self._jobs.purge_tenant(tenant_id)
        entities = self._index.purge_tenant(tenant_id)
        rows = self._state.purge_tenant(tenant_id)
        cached = self._cache.purge_tenant(tenant_id)  # cached searches, and below the snapshots pages read
        cached += self._snapshots.purge_tenant(tenant_id) if self._snapshots is not None else 0
        return Removed(entities, rows, cached, jobs, parts)

    def reopen(self, tenant_id: str, confirm: str) -> ReopenReport:
        """Serve an erased tenant again (empty), once no work admitted before its erase can still run:
        sweep every store once more, then lift the fence. Changes that originated before the erase (a
        queued event, a redriven part) stay discarded."""
        _confirmed(tenant_id, confirm)
        fence = self._fences.fence_of(tenant_id)
        if fence is None or not fence.closed:
            raise _conflict("the tenant is not erased; there is nothing to reopen", "is not an erased tenant")
        now = self._clock.now()
        ready = fence.erased_at + self._reopen_after
        if now < ready:
            raise _conflict(
                f"the tenant can be reopened from {iso_timestamp(ready)}: work admitted before its erase may "
                "still be running until then",
                f"not before {iso_timestamp(ready)}",
            )
        removed = self.purge(tenant_id)
        self._fences.reopen(tenant_id, now)
        self._fence_moved(tenant_id)
        return ReopenReport(**removed.counts(tenant_id), reopened_at=iso_timestamp(now))


def _confirmed(tenant_id: str, confirm: str) -> None:
    if confirm != tenant_id:
        raise InvalidInputError(
            "confirmation does not match", {"confirm": "must equal the id of the caller's tenant"}
        )


def _conflict(message: str, problem: str) -> ConflictError:
    return ConflictError(message, {"confirm": problem})

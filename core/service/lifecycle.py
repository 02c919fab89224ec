"""A tenant's data lifecycle (DESIGN.md §9): export everything it stored, and erase it completely.

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
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from core.cache_key import generation_key
from core.catalog import EntityPosition, decode_cursor, encode_cursor
from core.errors import InvalidInputError
from core.ports import Cache, SearchIndex, StateStore
from core.service.catalog import entity_out

EXPORT_KIND = "export"
EXPORT_PAGE_BYTES = 4_000_000  # under the 6 MB Lambda response limit with room for headers and JSON
ENTITY_BATCH = 200  # entities read per index call while exporting
LOG_BATCH = 200  # assembly-log rows per state read (the log's own page bound)
ALL_ROWS = 1_000_000  # history and eval rows are few per tenant; read them all in the state phase


class EraseReport(BaseModel):
    """DELETE /tenant: what was removed."""

    tenant_id: str
    entities_removed: int
    state_rows_removed: int
    cache_entries_removed: int


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
    """Export and erase, for the caller's tenant only."""

    def __init__(self, index: SearchIndex, state: StateStore, cache: Cache) -> None:
        self._index = index
        self._state = state
        self._cache = cache

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
        """Remove every trace of the tenant from index, state and cache; `confirm` must be its id."""
        if confirm != tenant_id:
            raise InvalidInputError(
                "confirmation does not match", {"confirm": "must equal the id of the tenant being deleted"}
            )
        entities = self._index.purge_tenant(tenant_id)
        rows = self._state.purge_tenant(tenant_id)
        # Bump, then drop with the rest: a search racing the erase caches under a generation no key reaches
        # until that many new writes (and the entry's 5-minute TTL is long gone by then in practice).
        self._cache.incr(generation_key(tenant_id))
        cached = self._cache.purge_tenant(tenant_id)
        return EraseReport(
            tenant_id=tenant_id,
            entities_removed=entities,
            state_rows_removed=rows,
            cache_entries_removed=cached,
        )

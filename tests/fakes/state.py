"""FakeStateStore: the StateStore port (core/ports/) in dicts keyed by tenant, passing the StateStore
contract (tests/adapters/test_fake_state.py) like SqliteStateStore and DynamoStateStore."""

from __future__ import annotations

import copy
import dataclasses
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from core.cursor import decode_position, encode_position
from core.errors import ConflictError
from core.state import (
    AssemblyLogEntry,
    CallerBudget,
    EvalRecord,
    LearningUpdate,
    LogPage,
    SourceWeight,
    WeightChange,
)


def _ready(e: AssemblyLogEntry, settled_before: str) -> bool:
    """Unprocessed, and with feedback or logged before `settled_before` (what learning may take)."""
    return not e.processed and (e.used_ids is not None or e.created_at < settled_before)


class FakeStateStore:
    """Weights, budgets, history, the assembly log, overlays and evals per tenant, in memory."""

    def __init__(self) -> None:
        self.weights: dict[tuple[str, str, str], SourceWeight] = {}  # (tenant, caller, source)
        self.budgets: dict[tuple[str, str], CallerBudget] = {}
        self.history: list[tuple[str, WeightChange]] = []  # in write order
        self.assemblies: dict[tuple[str, str], AssemblyLogEntry] = {}
        self.overlays: dict[tuple[str, str], dict[str, Any]] = {}
        self.evals: list[tuple[str, EvalRecord]] = []
        self._lock = threading.RLock()

    # weights, budgets, history

    def list_weights(self, tenant_id: str) -> list[SourceWeight]:
        return [w for (t, _, _), w in sorted(self.weights.items()) if t == tenant_id]

    def get_weights(self, tenant_id: str, caller: str) -> list[SourceWeight]:
        return [w for w in self.list_weights(tenant_id) if w.caller == caller]

    def put_weight(self, tenant_id: str, weight: SourceWeight, change: WeightChange | None) -> None:
        with self._lock:
            self.weights[(tenant_id, weight.caller, weight.source)] = weight
            if change is not None:
                self.history.append((tenant_id, change))

    def list_budgets(self, tenant_id: str) -> list[CallerBudget]:
        return [b for (t, _), b in sorted(self.budgets.items()) if t == tenant_id]

    def get_budget(self, tenant_id: str, caller: str) -> CallerBudget | None:
        return self.budgets.get((tenant_id, caller))

    def put_budget(self, tenant_id: str, budget: CallerBudget) -> None:
        self.budgets[(tenant_id, budget.caller)] = budget

    def list_history(self, tenant_id: str, caller: str | None, limit: int) -> list[WeightChange]:
        mine = [(c.at, n, c) for n, (t, c) in enumerate(self.history) if t == tenant_id]
        newest = [c for _, _, c in sorted(mine, key=lambda r: (r[0], r[1]), reverse=True)]
        return [c for c in newest if caller in (None, c.caller)][: max(limit, 0)]

    # the assembly log

    def log_assembly(self, entry: AssemblyLogEntry) -> None:
        with self._lock:
            key = (entry.tenant_id, entry.assembly_id)
            if key in self.assemblies:
                raise ConflictError(f"assembly '{entry.assembly_id}' is already logged")
            self.assemblies[key] = entry

    def get_assembly(self, tenant_id: str, assembly_id: str) -> AssemblyLogEntry | None:
        return self.assemblies.get((tenant_id, assembly_id))

    def record_feedback(
        self, tenant_id: str, assembly_id: str, used_ids: Sequence[str], tokens_used: int | None, at: str
    ) -> bool:
        with self._lock:
            entry = self.assemblies.get((tenant_id, assembly_id))
            if entry is None:
                return False
            self.assemblies[(tenant_id, assembly_id)] = dataclasses.replace(
                entry, used_ids=tuple(used_ids), tokens_used=tokens_used, feedback_at=at
            )
            return True

    def _log(self, tenant_id: str) -> list[AssemblyLogEntry]:
        """The tenant's log, oldest first (by time, then id)."""
        with self._lock:
            mine = [e for (t, _), e in self.assemblies.items() if t == tenant_id]
        return sorted(mine, key=lambda e: (e.created_at, e.assembly_id))

    def list_assemblies(
        self, tenant_id: str, caller: str | None, namespace: str | None, limit: int, cursor: str | None
    ) -> LogPage:
        after = decode_position(cursor, 2) if cursor is not None else None
        rows = [
            e
            for e in reversed(self._log(tenant_id))
            if caller in (None, e.caller)
            and namespace in (None, e.namespace)
            and (after is None or (e.created_at, e.assembly_id) < after)
        ]
        page = rows[:limit]
        more = len(rows) > limit
        return LogPage(
            tuple(page), encode_position((page[-1].created_at, page[-1].assembly_id)) if more else None
        )

    def list_callers(self, tenant_id: str) -> list[str]:
        return sorted({e.caller for e in self._log(tenant_id)})

    # learning

    def pending_callers(self, min_rows: int, settled_before: str = "") -> list[tuple[str, str]]:
        with self._lock:
            counts: dict[tuple[str, str], int] = {}
            for (tenant, _), e in self.assemblies.items():
                if _ready(e, settled_before):
                    counts[(tenant, e.caller)] = counts.get((tenant, e.caller), 0) + 1
        return sorted(pair for pair, n in counts.items() if n >= min_rows)

    def unprocessed_assemblies(
        self, tenant_id: str, caller: str, limit: int, settled_before: str = ""
    ) -> list[AssemblyLogEntry]:
        ready = [e for e in self._log(tenant_id) if e.caller == caller and _ready(e, settled_before)]
        return ready[: max(limit, 0)]

    def apply_learning(self, tenant_id: str, update: LearningUpdate) -> bool:
        with self._lock:
            ids = list(dict.fromkeys(update.processed_ids))
            rows = [self.assemblies.get((tenant_id, i)) for i in ids]
            if any(e is None or e.processed for e in rows):
                return False
            for w in update.weights:
                self.weights[(tenant_id, w.caller, w.source)] = w
            self.history += [(tenant_id, c) for c in update.history]
            if update.budget is not None:
                self.put_budget(tenant_id, update.budget)
            for i in ids:
                self.assemblies[(tenant_id, i)] = dataclasses.replace(
                    self.assemblies[(tenant_id, i)], processed=True
                )
            return True

    # overlays and evals

    def put_overlay(self, tenant_id: str, role_id: str, overlay: Mapping[str, Any]) -> None:
        self.overlays[(tenant_id, role_id)] = copy.deepcopy(dict(overlay))

    def get_overlay(self, tenant_id: str, role_id: str) -> Mapping[str, Any] | None:
        found = self.overlays.get((tenant_id, role_id))
        return copy.deepcopy(found) if found is not None else None

    def delete_overlay(self, tenant_id: str, role_id: str) -> bool:
        return self.overlays.pop((tenant_id, role_id), None) is not None

    def list_overlays(self, tenant_id: str) -> list[str]:
        return sorted(r for t, r in self.overlays if t == tenant_id)

    def overlay_owners(self) -> list[tuple[str, str]]:
        return sorted(self.overlays)

    def put_eval(self, tenant_id: str, record: EvalRecord) -> None:
        self.evals.append((tenant_id, record))

    def list_evals(self, tenant_id: str, name: str | None, limit: int) -> list[EvalRecord]:
        mine = [
            (r.at, n, r) for n, (t, r) in enumerate(self.evals) if t == tenant_id and name in (None, r.name)
        ]
        return [r for _, _, r in sorted(mine, key=lambda x: (x[0], x[1]), reverse=True)][: max(limit, 0)]

    def purge_tenant(self, tenant_id: str) -> int:
        with self._lock:
            tables: tuple[dict[Any, Any], ...] = (self.weights, self.budgets, self.assemblies, self.overlays)
            removed = sum(_drop(table, tenant_id) for table in tables)
            kept_history = [(t, c) for t, c in self.history if t != tenant_id]
            kept_evals = [(t, r) for t, r in self.evals if t != tenant_id]
            removed += len(self.history) - len(kept_history) + len(self.evals) - len(kept_evals)
            self.history, self.evals = kept_history, kept_evals
            return removed


def _drop(table: dict[Any, Any], tenant_id: str) -> int:
    """Remove the tenant's rows (keys start with the tenant id); how many."""
    mine = [k for k in table if k[0] == tenant_id]
    for k in mine:
        del table[k]
    return len(mine)

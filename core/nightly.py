"""The nightly cycle as independent tasks: one learning task per tenant with pending feedback
and one golden-set task per stored overlay, so each runs in its own invocation (fanned out through a
queue in AWS) and none depends on how many tenants there are. Locally they simply run one after another.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from core.context.learning import EVAL_BATCH_SIZE, settled_before
from core.errors import InvalidInputError
from core.ports import StateStore

TaskKind = Literal["learning", "golden"]


@dataclass(frozen=True, slots=True, order=True)
class NightlyTask:
    """One tenant's learning cycle, or one overlay's golden set."""

    kind: TaskKind
    tenant_id: str
    role_id: str | None = None

    def to_message(self) -> dict[str, Any]:
        return {"task": self.kind, "tenant_id": self.tenant_id, "role_id": self.role_id}

    @classmethod
    def from_message(cls, message: Any) -> NightlyTask:
        """The task in a queue message; 400-style InvalidInputError when it is not one."""
        if not isinstance(message, Mapping) or message.get("task") not in ("learning", "golden"):
            raise InvalidInputError("not a nightly task", {"task": "must be learning or golden"})
        tenant, role = message.get("tenant_id"), message.get("role_id")
        if not isinstance(tenant, str) or not tenant or (message["task"] == "golden" and not role):
            raise InvalidInputError(
                "incomplete nightly task", {"tenant_id": "and role_id (golden) are required"}
            )
        return cls(message["task"], tenant, str(role) if role else None)


def plan_nightly(state: StateStore, now: float, tenant_id: str | None = None) -> list[NightlyTask]:
    """Every task tonight (of one tenant when given): learning where ≥ EVAL_BATCH_SIZE assemblies are
    ready (core.context.learning), golden sets for every stored overlay (one without a golden set is
    skipped by its task)."""
    ready = state.pending_callers(EVAL_BATCH_SIZE, settled_before(now))
    learning = {t for t, _ in ready if tenant_id in (None, t)}
    tasks = [NightlyTask("learning", t) for t in learning]
    tasks += [NightlyTask("golden", t, r) for t, r in state.overlay_owners() if tenant_id in (None, t)]
    return sorted(tasks)

"""The state Quarry keeps besides the index, by role: callers' settings, the assembly log, overlays, eval
records, and erased tenants' fences (docs/architecture.md, Ports and adapters).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from core.state import (
    AssemblyLogEntry,
    CallerBudget,
    EvalRecord,
    LearningUpdate,
    LogPage,
    SourceWeight,
    TenantFence,
    WeightChange,
)


class CallerSettings(Protocol):
    """Per caller: source weights and token shares, budgets, and the history of weight changes."""

    def list_weights(self, tenant_id: str) -> list[SourceWeight]: ...

    def get_weights(self, tenant_id: str, caller: str) -> list[SourceWeight]:
        """Rows for exactly this caller (the `*` fallback is resolved in core)."""
        ...

    def put_weight(self, tenant_id: str, weight: SourceWeight, change: WeightChange | None) -> None:
        """Upsert one row and, when given, append its history row."""
        ...

    def list_budgets(self, tenant_id: str) -> list[CallerBudget]: ...

    def get_budget(self, tenant_id: str, caller: str) -> CallerBudget | None: ...

    def put_budget(self, tenant_id: str, budget: CallerBudget) -> None: ...

    def list_history(self, tenant_id: str, caller: str | None, limit: int) -> list[WeightChange]: ...


class AssemblyLog(Protocol):
    """Every context assembly with its feedback, and the learning cycles that turn them into weights."""

    def log_assembly(self, entry: AssemblyLogEntry) -> None: ...

    def get_assembly(self, tenant_id: str, assembly_id: str) -> AssemblyLogEntry | None: ...

    def record_feedback(
        self, tenant_id: str, assembly_id: str, used_ids: Sequence[str], tokens_used: int | None, at: str
    ) -> bool:
        """Attach feedback; False when the assembly does not exist for this tenant."""
        ...

    def list_assemblies(
        self, tenant_id: str, caller: str | None, namespace: str | None, limit: int, cursor: str | None
    ) -> LogPage: ...

    def list_callers(self, tenant_id: str) -> list[str]: ...

    def pending_callers(self, min_rows: int, settled_before: str = "") -> list[tuple[str, str]]:
        """(tenant, caller) pairs with at least `min_rows` unprocessed assemblies ready for learning: with
        feedback, or logged before `settled_before` (an ISO timestamp; "": with feedback only)."""
        ...

    def unprocessed_assemblies(
        self, tenant_id: str, caller: str, limit: int, settled_before: str = ""
    ) -> list[AssemblyLogEntry]:
        """Oldest first: assemblies no learning cycle has processed yet, with feedback or logged before
        `settled_before` ("": with feedback only)."""
        ...

    def apply_learning(self, tenant_id: str, update: LearningUpdate) -> bool:
        """Write weights, history and budget and mark rows processed, all or nothing.

        Returns False (and writes nothing) when any of `processed_ids` was already processed (or is
        unknown to this tenant), so two concurrent cycles never double-apply. One update marks at most
        `core.state.MAX_LEARNING_ROWS` rows (the DynamoDB adapter's transaction bound).
        """
        ...


class OverlayStore(Protocol):
    """Governance overlays: one per (tenant, role)."""

    def put_overlay(self, tenant_id: str, role_id: str, overlay: Mapping[str, Any]) -> None: ...

    def get_overlay(self, tenant_id: str, role_id: str) -> Mapping[str, Any] | None: ...

    def delete_overlay(self, tenant_id: str, role_id: str) -> bool: ...

    def list_overlays(self, tenant_id: str) -> list[str]:
        """The tenant's overlay role ids, sorted."""
        ...

    def overlay_owners(self) -> list[tuple[str, str]]:
        """Every (tenant, role_id) with a stored overlay, sorted (for the nightly golden-set run)."""
        ...


class EvalStore(Protocol):
    """Stored evaluation results (golden sets, fusion tuning), newest first."""

    def put_eval(self, tenant_id: str, record: EvalRecord) -> None: ...

    def list_evals(self, tenant_id: str, name: str | None, limit: int) -> list[EvalRecord]: ...


class FeedbackLoop(CallerSettings, AssemblyLog, Protocol):
    """What context assembly and learning share: assemblies logged with their feedback, turned into the
    callers' weights and budgets."""


class StateStore(CallerSettings, AssemblyLog, OverlayStore, EvalStore, Protocol):
    """One backend's state in every role (the composition root hands each service the roles it uses)."""

    def purge_tenant(self, tenant_id: str) -> int:
        """Erase every weight, budget, history, log, overlay and eval row of the tenant; rows removed."""
        ...


class TenantFences(Protocol):
    """The durable marks of erased tenants, kept by the state store under `core.state.fence_mark` (never
    the tenant id), outside the tenant's own rows, so an erase's purge leaves them."""

    def fence(self, tenant_id: str, at: float) -> None:
        """Mark the tenant erased at `at` (closed; erasing again moves `erased_at` on and closes it), and
        start its count of what purges remove from zero (before the fence goes up: every purge this
        erase causes is counted)."""
        ...

    def count_removed(self, tenant_id: str, removed: Mapping[str, int]) -> None:
        """Add what one purge of the tenant removed ({what: how many}) to its count since its fence."""
        ...

    def removed_since_fence(self, tenant_id: str) -> dict[str, int]:
        """What every purge of the tenant removed since its fence went up, whoever purged (read strongly
        consistent); {} before any purge."""
        ...

    def fence_of(self, tenant_id: str) -> TenantFence | None:
        """The tenant's fence, read strongly consistent; None for a tenant never erased."""
        ...

    def reopen(self, tenant_id: str, at: float) -> None:
        """Serve the tenant again from `at` (its `erased_at` stays, for changes that predate the erase)."""
        ...

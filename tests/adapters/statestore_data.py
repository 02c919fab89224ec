"""Builders of StateStore test data shared by the contract suites and the adapter test modules."""

from __future__ import annotations

from core.state import (
    AssemblyLogEntry,
    AssemblySource,
    CallerBudget,
    LearningUpdate,
    SourceWeight,
    WeightChange,
)

T1, T2 = "tenant-a", "tenant-b"
# Sources a full-size learning update writes alongside MAX_LEARNING_ROWS rows (the bound core.state names).
FULL_UPDATE_SOURCES = 17


def at(i: int) -> str:
    """A distinct, ordered ISO timestamp for step `i`."""
    return f"2030-01-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}.000000Z"


def entry(
    assembly_id: str,
    created_at: str,
    tenant: str = T1,
    caller: str = "agent",
    namespace: str | None = None,
) -> AssemblyLogEntry:
    """A logged assembly with two sources and no feedback yet."""
    return AssemblyLogEntry(
        assembly_id=assembly_id,
        tenant_id=tenant,
        caller=caller,
        namespace=namespace,
        request_id=f"req-{assembly_id}",
        query_hash="ab" * 32,
        budget=2000,
        total_tokens=180,
        sources=(AssemblySource("m-1", "memory", 1.0, 120), AssemblySource("v-9", "vault_index", 0.25, 60)),
        retrieval_ms=12.5,
        total_ms=20.25,
        created_at=created_at,
    )


def change(caller: str, source: str, new_weight: float, when: str) -> WeightChange:
    """A history row moving a weight from 1.0."""
    return WeightChange(caller, source, 1.0, new_weight, 0.2, 0.25, "learning", when)


def with_feedback(store, ids, tenant=T1, caller="agent", start=0):
    """Log assemblies `ids` in order and attach feedback to each; returns their ids."""
    for i, assembly_id in enumerate(ids):
        store.log_assembly(entry(assembly_id, at(start + i), tenant=tenant, caller=caller))
        assert store.record_feedback(tenant, assembly_id, ["m-1"], 100, at(start + i + 1))
    return list(ids)


def snapshot(store, tenant=T1):
    """Everything learning can change, to compare before and after."""
    return (
        store.list_weights(tenant),
        store.list_history(tenant, None, 1000),
        store.list_budgets(tenant),
        [e.processed for e in store.list_assemblies(tenant, None, None, 1000, None).entries],
    )


def update(ids, weight=1.2, caller="agent", when=at(500)):
    """A learning update for `caller` over `ids`."""
    return LearningUpdate(
        caller=caller,
        weights=(SourceWeight(caller, "memory", weight, 0.3, False, when),),
        history=(change(caller, "memory", weight, when),),
        budget=CallerBudget(caller, 2200, 500, 4000, when),
        processed_ids=tuple(ids),
    )

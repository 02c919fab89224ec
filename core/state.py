"""Values the StateStore keeps: source weights and token shares, caller budgets, weight history, the
assembly log with its feedback, role overlays and evaluation results (docs/architecture.md: Context assembly,
The learning cycle, Governed retrieval, Evaluation).

All timestamps are ISO-8601 UTC strings produced by an injected clock; ids are opaque strings.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

WILDCARD_CALLER = "*"
# Rows one LearningUpdate may mark processed. DynamoDB's TransactWriteItems holds at most 100 writes (AWS
# DynamoDB developer guide, "Transactions"), and an update also writes one weight and one history row per
# source plus the budget: 64 rows leave room for 17 sources. A caller with more pending rows is learned
# over several updates (select with `unprocessed_assemblies(..., limit=MAX_LEARNING_ROWS)`).
MAX_LEARNING_ROWS = 64
# An erased tenant may be reopened this long after its erase: AWS Lambda's longest timeout (15 minutes, the
# nightly function's) and a minute more, so no invocation admitted before the fence is still writing when
# the final sweep runs (the local server's requests and job parts end far sooner).
# QUARRY_REOPEN_AFTER_SECONDS overrides it.
REOPEN_AFTER_SECONDS = 960.0


@dataclass(frozen=True, slots=True)
class SourceWeight:
    """How much a caller trusts a source (weight) and how much of the budget it gets (token_share).

    `manual` rows were set by an operator (PUT /context/weights/{caller}/{source}); learning never moves them.
    """

    caller: str
    source: str
    weight: float
    token_share: float
    manual: bool = False
    updated_at: str = ""


@dataclass(frozen=True, slots=True)
class CallerBudget:
    """A caller's default token budget and the bounds learning may move it within."""

    caller: str
    budget: int
    min_budget: int
    max_budget: int
    updated_at: str = ""


@dataclass(frozen=True, slots=True)
class WeightChange:
    """One history row: what learning (or an operator) changed, from what to what, and why."""

    caller: str
    source: str
    old_weight: float
    new_weight: float
    old_share: float
    new_share: float
    reason: str
    at: str


@dataclass(frozen=True, slots=True)
class AssemblySource:
    """One item an assembly returned: the entity id, its source, normalised score and token cost."""

    id: str
    source: str
    score: float
    tokens: int


@dataclass(frozen=True, slots=True)
class AssemblyLogEntry:
    """A logged assembly; `used_ids` and `tokens_used` arrive later with feedback."""

    assembly_id: str
    tenant_id: str
    caller: str
    namespace: str | None
    request_id: str | None
    query_hash: str
    budget: int
    total_tokens: int
    sources: tuple[AssemblySource, ...]
    retrieval_ms: float
    total_ms: float
    created_at: str
    used_ids: tuple[str, ...] | None = None
    tokens_used: int | None = None
    feedback_at: str | None = None
    processed: bool = False


@dataclass(frozen=True, slots=True)
class LogPage:
    """A page of the assembly log, newest first, with an opaque cursor for the next page (None at the end)."""

    entries: tuple[AssemblyLogEntry, ...]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class LearningUpdate:
    """Everything one learning cycle writes for one caller, applied atomically (or not at all)."""

    caller: str
    weights: tuple[SourceWeight, ...]
    history: tuple[WeightChange, ...]
    budget: CallerBudget | None
    processed_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EvalRecord:
    """Stored evaluation figures: which golden set, which strategy, the metrics, when."""

    name: str
    at: str
    metrics: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TenantFence:
    """An erase's durable mark (DELETE /tenant). From `erased_at` (epoch seconds) the tenant's requests,
    writes, jobs and queued changes are refused or discarded; once reopened (`reopened_at`) new requests
    are served again, while a change that originated before the erase stays discarded."""

    erased_at: float
    reopened_at: float | None = None

    @property
    def closed(self) -> bool:
        """True until the tenant is reopened."""
        return self.reopened_at is None

    def refuses(self, since: float | None = None) -> bool:
        """Whether work for the tenant is refused: everything while closed; after a reopen, work that
        originated (`since`, epoch seconds) at or before the erase."""
        return self.closed or (since is not None and since <= self.erased_at)


def fence_mark(tenant_id: str) -> str:
    """The key an erased tenant's fence is kept under: a SHA-256 of its id, so no byte of the id remains."""
    return hashlib.sha256(tenant_id.encode()).hexdigest()

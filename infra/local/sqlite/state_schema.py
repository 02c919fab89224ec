"""Tables, statements and row mapping of `SqliteStateStore` (all tables prefixed `state_`)."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from core.state import AssemblyLogEntry, CallerBudget, SourceWeight, WeightChange
from core.state_codec import dump_ids, dump_sources, load_ids, load_sources

DDL = """
CREATE TABLE IF NOT EXISTS state_weights (
    tenant_id TEXT NOT NULL, caller TEXT NOT NULL, source TEXT NOT NULL,
    weight REAL NOT NULL, token_share REAL NOT NULL, manual INTEGER NOT NULL DEFAULT 0,
    updated_at TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (tenant_id, caller, source)
);
CREATE TABLE IF NOT EXISTS state_budgets (
    tenant_id TEXT NOT NULL, caller TEXT NOT NULL,
    budget INTEGER NOT NULL, min_budget INTEGER NOT NULL, max_budget INTEGER NOT NULL,
    updated_at TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (tenant_id, caller)
);
CREATE TABLE IF NOT EXISTS state_weight_history (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id TEXT NOT NULL, caller TEXT NOT NULL, source TEXT NOT NULL,
    old_weight REAL NOT NULL, new_weight REAL NOT NULL, old_share REAL NOT NULL, new_share REAL NOT NULL,
    reason TEXT NOT NULL, at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS state_weight_history_by_time ON state_weight_history (tenant_id, at, seq);
CREATE TABLE IF NOT EXISTS state_assembly_log (
    tenant_id TEXT NOT NULL, assembly_id TEXT NOT NULL,
    caller TEXT NOT NULL, namespace TEXT, request_id TEXT, query_hash TEXT NOT NULL,
    budget INTEGER NOT NULL, total_tokens INTEGER NOT NULL, sources TEXT NOT NULL,
    retrieval_ms REAL NOT NULL, total_ms REAL NOT NULL, created_at TEXT NOT NULL,
    used_ids TEXT, tokens_used INTEGER, feedback_at TEXT, processed INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, assembly_id)
);
CREATE INDEX IF NOT EXISTS state_assembly_log_by_time
    ON state_assembly_log (tenant_id, created_at, assembly_id);
CREATE INDEX IF NOT EXISTS state_assembly_log_by_caller
    ON state_assembly_log (tenant_id, caller, created_at, assembly_id);
DROP INDEX IF EXISTS state_assembly_log_pending;
CREATE INDEX IF NOT EXISTS state_assembly_log_unprocessed
    ON state_assembly_log (tenant_id, caller, created_at) WHERE processed = 0;
CREATE TABLE IF NOT EXISTS state_overlays (
    tenant_id TEXT NOT NULL, role_id TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (tenant_id, role_id)
);
CREATE TABLE IF NOT EXISTS state_evals (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id TEXT NOT NULL, name TEXT NOT NULL, at TEXT NOT NULL, metrics TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS state_evals_by_time ON state_evals (tenant_id, at, seq);
"""

# Every table holding tenant rows (DELETE /tenant erases the tenant from each).
TENANT_TABLES = (
    "state_weights",
    "state_budgets",
    "state_weight_history",
    "state_assembly_log",
    "state_overlays",
    "state_evals",
)

SELECT_WEIGHTS = (
    "SELECT caller, source, weight, token_share, manual, updated_at FROM state_weights WHERE tenant_id = ?"
)
UPSERT_WEIGHT = (
    "INSERT INTO state_weights (tenant_id, caller, source, weight, token_share, manual, updated_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant_id, caller, source) DO UPDATE SET"
    " weight = excluded.weight, token_share = excluded.token_share, manual = excluded.manual,"
    " updated_at = excluded.updated_at"
)
SELECT_BUDGETS = (
    "SELECT caller, budget, min_budget, max_budget, updated_at FROM state_budgets WHERE tenant_id = ?"
)
UPSERT_BUDGET = (
    "INSERT INTO state_budgets (tenant_id, caller, budget, min_budget, max_budget, updated_at)"
    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (tenant_id, caller) DO UPDATE SET budget = excluded.budget,"
    " min_budget = excluded.min_budget, max_budget = excluded.max_budget, updated_at = excluded.updated_at"
)
SELECT_HISTORY = "SELECT caller, source, old_weight, new_weight, old_share, new_share, reason, at FROM state_weight_history"
INSERT_HISTORY = (
    "INSERT INTO state_weight_history"
    " (tenant_id, caller, source, old_weight, new_weight, old_share, new_share, reason, at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
ASSEMBLY_COLUMNS = (
    "tenant_id, assembly_id, caller, namespace, request_id, query_hash, budget, total_tokens, sources,"
    " retrieval_ms, total_ms, created_at, used_ids, tokens_used, feedback_at, processed"
)
SELECT_ASSEMBLIES = f"SELECT {ASSEMBLY_COLUMNS} FROM state_assembly_log"
INSERT_ASSEMBLY = f"INSERT INTO state_assembly_log ({ASSEMBLY_COLUMNS}) VALUES ({', '.join('?' * 16)})"


def optional_filters(tenant_id: str, **equal: str | None) -> tuple[str, list[Any]]:
    """A WHERE clause on the tenant plus each given (non-None) column equality."""
    clauses, params = ["tenant_id = ?"], [tenant_id]
    for column, value in equal.items():
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    return " AND ".join(clauses), params


def load_json(text: str) -> Any:
    """A JSON column's value."""
    return json.loads(text)


def weight_params(tenant_id: str, w: SourceWeight) -> tuple[Any, ...]:
    """Parameters of UPSERT_WEIGHT."""
    return (tenant_id, w.caller, w.source, w.weight, w.token_share, int(w.manual), w.updated_at)


def weight_from_row(r: sqlite3.Row) -> SourceWeight:
    """A SourceWeight from a SELECT_WEIGHTS row."""
    return SourceWeight(
        caller=r["caller"],
        source=r["source"],
        weight=r["weight"],
        token_share=r["token_share"],
        manual=bool(r["manual"]),
        updated_at=r["updated_at"],
    )


def budget_params(tenant_id: str, b: CallerBudget) -> tuple[Any, ...]:
    """Parameters of UPSERT_BUDGET."""
    return (tenant_id, b.caller, b.budget, b.min_budget, b.max_budget, b.updated_at)


def budget_from_row(r: sqlite3.Row) -> CallerBudget:
    """A CallerBudget from a SELECT_BUDGETS row."""
    return CallerBudget(
        caller=r["caller"],
        budget=r["budget"],
        min_budget=r["min_budget"],
        max_budget=r["max_budget"],
        updated_at=r["updated_at"],
    )


def history_params(tenant_id: str, c: WeightChange) -> tuple[Any, ...]:
    """Parameters of INSERT_HISTORY."""
    return (
        tenant_id,
        c.caller,
        c.source,
        c.old_weight,
        c.new_weight,
        c.old_share,
        c.new_share,
        c.reason,
        c.at,
    )


def change_from_row(r: sqlite3.Row) -> WeightChange:
    """A WeightChange from a SELECT_HISTORY row."""
    return WeightChange(*tuple(r))


def assembly_params(e: AssemblyLogEntry) -> tuple[Any, ...]:
    """Parameters of INSERT_ASSEMBLY."""
    return (
        e.tenant_id,
        e.assembly_id,
        e.caller,
        e.namespace,
        e.request_id,
        e.query_hash,
        e.budget,
        e.total_tokens,
        dump_sources(e.sources),
        e.retrieval_ms,
        e.total_ms,
        e.created_at,
        dump_ids(e.used_ids),
        e.tokens_used,
        e.feedback_at,
        int(e.processed),
    )


def assembly_from_row(r: sqlite3.Row) -> AssemblyLogEntry:
    """An AssemblyLogEntry from a SELECT_ASSEMBLIES row."""
    return AssemblyLogEntry(
        assembly_id=r["assembly_id"],
        tenant_id=r["tenant_id"],
        caller=r["caller"],
        namespace=r["namespace"],
        request_id=r["request_id"],
        query_hash=r["query_hash"],
        budget=r["budget"],
        total_tokens=r["total_tokens"],
        sources=load_sources(r["sources"]),
        retrieval_ms=r["retrieval_ms"],
        total_ms=r["total_ms"],
        created_at=r["created_at"],
        used_ids=load_ids(r["used_ids"]),
        tokens_used=r["tokens_used"],
        feedback_at=r["feedback_at"],
        processed=bool(r["processed"]),
    )

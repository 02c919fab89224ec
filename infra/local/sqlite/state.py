"""`SqliteStateStore`: the StateStore port on SQLite (WAL), for the local backend.

Tables are prefixed `state_` so they can share the local index's data file. One connection guarded by a
lock serves every thread of the dev server; writes that must be atomic run in `BEGIN IMMEDIATE`
transactions, which also serialise them against other processes using the same file (e.g. two
`quarry eval-cycle` runs). Every query is scoped by tenant.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from core.state import (
    AssemblyLogEntry,
    CallerBudget,
    EvalRecord,
    LearningUpdate,
    LogPage,
    SourceWeight,
    WeightChange,
)
from core.state_codec import decode_log_cursor, dump_ids, dump_json, encode_log_cursor
from infra.local.sqlite import state_schema as schema
from infra.local.sqlite.connect import immediate, open_sqlite
from infra.local.sqlite.errors import FAILURES, translate


class SqliteStateStore:
    """Weights, budgets, history, the assembly log, overlays and eval records in SQLite."""

    def __init__(self, path_or_connection: str | Path | sqlite3.Connection) -> None:
        self._conn = open_sqlite(path_or_connection)
        self._lock = threading.RLock()
        with self._guard() as conn:
            conn.executescript(schema.DDL)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

    @contextmanager
    def _guard(self) -> Iterator[sqlite3.Connection]:
        """Serialise access and turn SQLite errors into core errors (errors.py): a taken key is a
        ConflictError, a locked or unreadable database UnavailableError."""
        with self._lock:
            try:
                yield self._conn
            except FAILURES as exc:
                raise translate(exc) from exc

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """An immediate (write-locked) transaction, committed on success and rolled back on any error."""
        with self._guard() as conn, immediate(conn):
            yield conn

    def _rows(self, sql: str, params: Sequence[Any]) -> list[sqlite3.Row]:
        with self._guard() as conn:
            cur = conn.execute(sql, params)
            cur.row_factory = sqlite3.Row
            return cur.fetchall()

    # weights, budgets, history

    def list_weights(self, tenant_id: str) -> list[SourceWeight]:
        """Every weight row of the tenant, by caller then source."""
        rows = self._rows(schema.SELECT_WEIGHTS + " ORDER BY caller, source", (tenant_id,))
        return [schema.weight_from_row(r) for r in rows]

    def get_weights(self, tenant_id: str, caller: str) -> list[SourceWeight]:
        """Rows for exactly this caller (the `*` fallback is resolved in core)."""
        rows = self._rows(schema.SELECT_WEIGHTS + " AND caller = ? ORDER BY source", (tenant_id, caller))
        return [schema.weight_from_row(r) for r in rows]

    def put_weight(self, tenant_id: str, weight: SourceWeight, change: WeightChange | None) -> None:
        """Upsert one row and, when given, append its history row."""
        with self._transaction() as conn:
            conn.execute(schema.UPSERT_WEIGHT, schema.weight_params(tenant_id, weight))
            if change is not None:
                conn.execute(schema.INSERT_HISTORY, schema.history_params(tenant_id, change))

    def list_budgets(self, tenant_id: str) -> list[CallerBudget]:
        """Every caller budget of the tenant, by caller."""
        rows = self._rows(schema.SELECT_BUDGETS + " ORDER BY caller", (tenant_id,))
        return [schema.budget_from_row(r) for r in rows]

    def get_budget(self, tenant_id: str, caller: str) -> CallerBudget | None:
        """The budget configured for exactly this caller, or None."""
        rows = self._rows(schema.SELECT_BUDGETS + " AND caller = ?", (tenant_id, caller))
        return schema.budget_from_row(rows[0]) if rows else None

    def put_budget(self, tenant_id: str, budget: CallerBudget) -> None:
        """Upsert a caller budget."""
        with self._transaction() as conn:
            conn.execute(schema.UPSERT_BUDGET, schema.budget_params(tenant_id, budget))

    def list_history(self, tenant_id: str, caller: str | None, limit: int) -> list[WeightChange]:
        """Weight changes, newest first, optionally for one caller."""
        where, params = schema.optional_filters(tenant_id, caller=caller)
        sql = f"{schema.SELECT_HISTORY} WHERE {where} ORDER BY at DESC, seq DESC LIMIT ?"
        return [schema.change_from_row(r) for r in self._rows(sql, (*params, max(limit, 0)))]

    # assembly log

    def log_assembly(self, entry: AssemblyLogEntry) -> None:
        """Append one assembly to the log (ConflictError when the id is already logged)."""
        with self._transaction() as conn:
            conn.execute(schema.INSERT_ASSEMBLY, schema.assembly_params(entry))

    def get_assembly(self, tenant_id: str, assembly_id: str) -> AssemblyLogEntry | None:
        """The tenant's assembly with this id, or None (also when another tenant has it)."""
        sql = f"{schema.SELECT_ASSEMBLIES} WHERE tenant_id = ? AND assembly_id = ?"
        rows = self._rows(sql, (tenant_id, assembly_id))
        return schema.assembly_from_row(rows[0]) if rows else None

    def record_feedback(
        self, tenant_id: str, assembly_id: str, used_ids: Sequence[str], tokens_used: int | None, at: str
    ) -> bool:
        """Attach feedback; False when the assembly does not exist for this tenant."""
        with self._transaction() as conn:
            cur = conn.execute(
                "UPDATE state_assembly_log SET used_ids = ?, tokens_used = ?, feedback_at = ?"
                " WHERE tenant_id = ? AND assembly_id = ?",
                (dump_ids(used_ids), tokens_used, at, tenant_id, assembly_id),
            )
            return cur.rowcount > 0

    def list_assemblies(
        self, tenant_id: str, caller: str | None, namespace: str | None, limit: int, cursor: str | None
    ) -> LogPage:
        """Newest first; the cursor is a keyset position, so rows inserted meanwhile never shift pages."""
        where, params = schema.optional_filters(tenant_id, caller=caller, namespace=namespace)
        if cursor is not None:
            created_at, assembly_id = decode_log_cursor(cursor)
            where += " AND (created_at, assembly_id) < (?, ?)"
            params += [created_at, assembly_id]
        limit = max(limit, 0)
        sql = f"{schema.SELECT_ASSEMBLIES} WHERE {where} ORDER BY created_at DESC, assembly_id DESC LIMIT ?"
        entries = [schema.assembly_from_row(r) for r in self._rows(sql, (*params, limit + 1))]
        if len(entries) <= limit or limit == 0:
            return LogPage(entries=tuple(entries[:limit]), next_cursor=None)
        last = entries[limit - 1]
        return LogPage(
            entries=tuple(entries[:limit]), next_cursor=encode_log_cursor(last.created_at, last.assembly_id)
        )

    def list_callers(self, tenant_id: str) -> list[str]:
        """Distinct callers in the tenant's assembly log, sorted."""
        sql = "SELECT DISTINCT caller FROM state_assembly_log WHERE tenant_id = ? ORDER BY caller"
        return [r["caller"] for r in self._rows(sql, (tenant_id,))]

    def pending_callers(self, min_rows: int, settled_before: str = "") -> list[tuple[str, str]]:
        """(tenant, caller) pairs with at least `min_rows` unprocessed assemblies ready for learning: with
        feedback, or logged before `settled_before` ("": feedback only)."""
        sql = (
            "SELECT tenant_id, caller FROM state_assembly_log WHERE processed = 0"
            " AND (used_ids IS NOT NULL OR created_at < ?)"
            " GROUP BY tenant_id, caller HAVING COUNT(*) >= ? ORDER BY tenant_id, caller"
        )
        return [(r["tenant_id"], r["caller"]) for r in self._rows(sql, (settled_before, min_rows))]

    def unprocessed_assemblies(
        self, tenant_id: str, caller: str, limit: int, settled_before: str = ""
    ) -> list[AssemblyLogEntry]:
        """Oldest first: logged assemblies no learning cycle has processed yet, with feedback or logged
        before `settled_before` ("": feedback only)."""
        sql = (
            f"{schema.SELECT_ASSEMBLIES} WHERE tenant_id = ? AND caller = ? AND processed = 0"
            " AND (used_ids IS NOT NULL OR created_at < ?) ORDER BY created_at, assembly_id LIMIT ?"
        )
        params = (tenant_id, caller, settled_before, max(limit, 0))
        return [schema.assembly_from_row(r) for r in self._rows(sql, params)]

    def apply_learning(self, tenant_id: str, update: LearningUpdate) -> bool:
        """Write weights, history and budget and mark rows processed, all or nothing.

        Returns False (and writes nothing) when any of `processed_ids` is already processed or unknown.
        """
        ids = list(dict.fromkeys(update.processed_ids))
        with self._transaction() as conn:
            marks = ",".join("?" * len(ids))
            open_rows = conn.execute(
                f"SELECT COUNT(*) FROM state_assembly_log WHERE tenant_id = ? AND processed = 0"
                f" AND assembly_id IN ({marks})",
                (tenant_id, *ids),
            ).fetchone()[0]
            if open_rows != len(ids):
                return False
            conn.executemany(
                schema.UPSERT_WEIGHT, [schema.weight_params(tenant_id, w) for w in update.weights]
            )
            conn.executemany(
                schema.INSERT_HISTORY, [schema.history_params(tenant_id, c) for c in update.history]
            )
            if update.budget is not None:
                conn.execute(schema.UPSERT_BUDGET, schema.budget_params(tenant_id, update.budget))
            conn.execute(
                f"UPDATE state_assembly_log SET processed = 1 WHERE tenant_id = ? AND assembly_id IN ({marks})",
                (tenant_id, *ids),
            )
        return True

    # overlays and evals

    def put_overlay(self, tenant_id: str, role_id: str, overlay: Mapping[str, Any]) -> None:
        """Create or replace a role overlay."""
        with self._transaction() as conn:
            conn.execute(
                "INSERT INTO state_overlays (tenant_id, role_id, body) VALUES (?, ?, ?)"
                " ON CONFLICT (tenant_id, role_id) DO UPDATE SET body = excluded.body",
                (tenant_id, role_id, dump_json(overlay)),
            )

    def get_overlay(self, tenant_id: str, role_id: str) -> Mapping[str, Any] | None:
        """The tenant's overlay for the role, or None."""
        sql = "SELECT body FROM state_overlays WHERE tenant_id = ? AND role_id = ?"
        rows = self._rows(sql, (tenant_id, role_id))
        return schema.load_json(rows[0]["body"]) if rows else None

    def list_overlays(self, tenant_id: str) -> list[str]:
        """The tenant's overlay role ids, sorted."""
        sql = "SELECT role_id FROM state_overlays WHERE tenant_id = ? ORDER BY role_id"
        return [row[0] for row in self._rows(sql, (tenant_id,))]

    def overlay_owners(self) -> list[tuple[str, str]]:
        """Every (tenant, role_id) with a stored overlay, sorted."""
        sql = "SELECT tenant_id, role_id FROM state_overlays ORDER BY tenant_id, role_id"
        return [(row[0], row[1]) for row in self._rows(sql, ())]

    def delete_overlay(self, tenant_id: str, role_id: str) -> bool:
        """Remove the overlay; False when the tenant had none for the role."""
        with self._transaction() as conn:
            cur = conn.execute(
                "DELETE FROM state_overlays WHERE tenant_id = ? AND role_id = ?", (tenant_id, role_id)
            )
            return cur.rowcount > 0

    def put_eval(self, tenant_id: str, record: EvalRecord) -> None:
        """Append one evaluation record."""
        with self._transaction() as conn:
            conn.execute(
                "INSERT INTO state_evals (tenant_id, name, at, metrics) VALUES (?, ?, ?, ?)",
                (tenant_id, record.name, record.at, dump_json(dict(record.metrics))),
            )

    def list_evals(self, tenant_id: str, name: str | None, limit: int) -> list[EvalRecord]:
        """Evaluation records, newest first, optionally for one golden set."""
        where, params = schema.optional_filters(tenant_id, name=name)
        sql = f"SELECT name, at, metrics FROM state_evals WHERE {where} ORDER BY at DESC, seq DESC LIMIT ?"
        return [
            EvalRecord(name=r["name"], at=r["at"], metrics=schema.load_json(r["metrics"]))
            for r in self._rows(sql, (*params, max(limit, 0)))
        ]

    def purge_tenant(self, tenant_id: str) -> int:
        """Erase every row of the tenant; deleted content is zeroed and the WAL truncated afterwards."""
        with self._guard() as conn:
            conn.execute("PRAGMA secure_delete = ON")  # per connection: zero what is deleted
        with self._transaction() as conn:
            removed = sum(
                conn.execute(f"DELETE FROM {table} WHERE tenant_id = ?", (tenant_id,)).rowcount
                for table in schema.TENANT_TABLES
            )
        with self._guard() as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return removed

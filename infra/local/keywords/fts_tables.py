"""Each tenant's FTS5 table: its name, its creation on the tenant's first write, its vocabulary (the fuzzy
fallback's), and the one-time split of the table all tenants shared before.

Why a table per tenant: FTS5's bm25() takes its statistics — the number of rows, their average length and
each phrase's number of matching rows — from the whole table, whatever the MATCH filters. In one shared
table a tenant's score for a rare word fell by orders of magnitude when another tenant wrote it, and with
a few planted documents (a canary and a decoy ranked by idf) a tenant could tell whether any other tenant
held a word; a prefix (`term*`) counted every tenant's rows, and the fuzzy fallback chose among every
tenant's words. An auxiliary ranking function fed with per-tenant figures would need FTS5's C API, which
Python's sqlite3 does not reach, and scoring rows in Python costs more than FTS5's whole query; a table of
its own makes every statistic the tenant's, exactly, and erasing a tenant is dropping its table (no other
table ever held its words). The price is one schema entry set per tenant (measured: ~22 KB of file per
tenant, and a new tenant's first write makes every open connection re-read the schema, ~2 ms at 100
tenants and ~140 ms at 1,000): the embedded backend is for a file of up to some hundreds of tenants.

The name is a digest of the tenant id, so no tenant id is ever written into the schema.
"""

from __future__ import annotations

import hashlib
import sqlite3

from infra.local.sqlite.connect import immediate

FTS_PREFIX = "idx_fts_"
_DIGITS = 24  # hex digits of sha256 kept (96 bits): no two tenants of a file share a table
_COLUMNS = "scope, b3, b2, b1, tokenize = 'porter unicode61 remove_diacritics 2'"
LEGACY = "idx_fts"  # the table every tenant shared before (its vocabulary: idx_vocab)
MIGRATION_WAIT_MS = 600_000  # a second process opening the file meanwhile waits for the split to finish


def tenant_digest(tenant_id: str) -> str:
    """The tenant's name in the schema and the keyword index's folders (never the id itself)."""
    return hashlib.sha256(tenant_id.encode("utf-8")).hexdigest()[:_DIGITS]


def fts_table(tenant_id: str) -> str:
    """The name of the tenant's FTS5 table (whether or not it exists yet)."""
    return FTS_PREFIX + tenant_digest(tenant_id)


def create_fts_table(conn: sqlite3.Connection, tenant_id: str) -> str:
    """The tenant's FTS5 table, created if missing (inside the caller's write transaction)."""
    table = fts_table(tenant_id)
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5 ({_COLUMNS})")
    return table


def is_missing_table(conn: sqlite3.Connection, table: str) -> bool:
    """True when `table` does not exist: a tenant that never wrote a chunk, or was erased."""
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,))
    return found.fetchone() is None


def vocabulary(
    conn: sqlite3.Connection, tenant_id: str, first: str, lengths: tuple[int, int]
) -> list[tuple[str, int]]:
    """(term, rows holding it) of the tenant's own table, for terms starting with `first` whose length is
    within `lengths`: an `fts5vocab` table over it in this connection's temp schema (so creating it
    changes nothing other connections see)."""
    table = fts_table(tenant_id)
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_vocab USING fts5vocab (main, {table}, 'row')"
    )
    try:
        rows = conn.execute(
            f"SELECT term, doc FROM temp.{table}_vocab WHERE term >= ? AND term < ? "
            "AND length(term) BETWEEN ? AND ?",
            (first, first + "\U0010ffff", *lengths),
        ).fetchall()
    except sqlite3.OperationalError:
        if is_missing_table(conn, table):
            return []
        raise
    return [(str(term), int(doc)) for term, doc in rows]


def split_shared_table(conn: sqlite3.Connection) -> None:
    """Move the rows of the table all tenants shared into a table per tenant, then drop it: once, on the
    first open after the upgrade (the rows are copied in SQL, without re-reading the entities)."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (LEGACY,)).fetchone() is None:
        return
    with immediate(conn, wait_ms=MIGRATION_WAIT_MS):
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (LEGACY,)).fetchone() is not None:
            tenants = [r[0] for r in conn.execute("SELECT DISTINCT tenant_id FROM idx_chunks")]
            for tenant in tenants:
                table = create_fts_table(conn, tenant)
                conn.execute(
                    f"INSERT INTO {table} (rowid, scope, b3, b2, b1) SELECT f.rowid, f.scope, f.b3, f.b2, "
                    f"f.b1 FROM {LEGACY} f JOIN idx_chunks c ON c.id = f.rowid WHERE c.tenant_id = ? "
                    "ORDER BY f.rowid",
                    (tenant,),
                )
            conn.execute("DROP TABLE IF EXISTS idx_vocab")
            conn.execute(f"DROP TABLE {LEGACY}")

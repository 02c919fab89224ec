"""One way to open Quarry's local SQLite file (WAL, NORMAL sync, a busy timeout, autocommit mode) and one
way to write to it atomically (`immediate`); its errors are translated in errors.py."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# How long a writer waits for another connection's lock (a learning-cycle or bulk transaction takes a few
# ms; 5 s absorbs a busy dev machine without hanging a request).
BUSY_TIMEOUT_MS = 5000


def open_sqlite(path_or_connection: str | Path | sqlite3.Connection) -> sqlite3.Connection:
    """A configured connection to `path` (its folder created), or the given connection configured."""
    if isinstance(path_or_connection, sqlite3.Connection):
        conn = path_or_connection
    else:
        if str(path_or_connection) != ":memory:":
            Path(path_or_connection).parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            str(path_or_connection),
            check_same_thread=False,
            isolation_level=None,
            timeout=BUSY_TIMEOUT_MS / 1000,
        )
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")  # WAL + NORMAL: no fsync per commit, never corrupt
    return conn


@contextmanager
def immediate(conn: sqlite3.Connection, wait_ms: int | None = None) -> Iterator[sqlite3.Connection]:
    """A write-locked transaction (BEGIN IMMEDIATE, so two writers never deadlock upgrading a read lock):
    committed when the block ends, rolled back when it raises (the error goes on). `wait_ms`: how long to
    wait for the write lock, instead of BUSY_TIMEOUT_MS, for this BEGIN only."""
    if wait_ms is not None:
        conn.execute(f"PRAGMA busy_timeout = {int(wait_ms)}")
    try:
        conn.execute("BEGIN IMMEDIATE")
    finally:
        if wait_ms is not None:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    try:
        yield conn
    except BaseException:
        if conn.in_transaction:  # SQLite may have rolled back already (a full disk, an interrupt)
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")

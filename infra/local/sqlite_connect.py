"""One way to open Quarry's local SQLite file: WAL, NORMAL sync, a busy timeout, autocommit mode."""

from __future__ import annotations

import sqlite3
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

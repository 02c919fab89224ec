"""The one write transaction of the local SQLite writers (infra/local/sqlite/connect.py `immediate`)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from infra.local.sqlite.connect import BUSY_TIMEOUT_MS, immediate, open_sqlite


@pytest.fixture
def conn(tmp_path: Path) -> sqlite3.Connection:
    c = open_sqlite(tmp_path / "t.db")
    c.execute("CREATE TABLE t (x INTEGER PRIMARY KEY)")
    return c


def rows(conn: sqlite3.Connection) -> list[int]:
    return [r[0] for r in conn.execute("SELECT x FROM t ORDER BY x")]


def test_a_block_that_ends_is_committed_and_seen_by_another_connection(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    with immediate(conn):
        conn.execute("INSERT INTO t VALUES (1)")
        conn.execute("INSERT INTO t VALUES (2)")
    assert rows(open_sqlite(tmp_path / "t.db")) == [1, 2] and not conn.in_transaction


def test_a_block_that_raises_leaves_nothing_and_the_error_goes_on(conn: sqlite3.Connection) -> None:
    with pytest.raises(sqlite3.IntegrityError), immediate(conn):
        conn.execute("INSERT INTO t VALUES (1)")
        conn.execute("INSERT INTO t VALUES (1)")  # the same key: the whole block is undone
    assert rows(conn) == [] and not conn.in_transaction


def test_a_second_writer_waits_its_own_time_then_the_usual_timeout_is_back(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    other = open_sqlite(tmp_path / "t.db")
    with immediate(conn):
        with pytest.raises(sqlite3.OperationalError, match="locked"), immediate(other, wait_ms=0):
            pass
        assert not other.in_transaction
    assert other.execute("PRAGMA busy_timeout").fetchone()[0] == BUSY_TIMEOUT_MS

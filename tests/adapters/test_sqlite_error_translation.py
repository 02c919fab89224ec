"""Every local SQLite adapter of the cold paths (the job store and queue, the tenant fences, the search
snapshots, the state store) turns SQLite's failures into core errors (infra/local/sqlite/errors.py): a
write lock held by another connection past the busy timeout, or a file whose table another program
dropped, is UnavailableError — never a raw sqlite3.OperationalError — and a key already taken is a
ConflictError."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.errors import ConflictError, UnavailableError
from core.indexing.write_jobs import Job
from core.search.paging import SearchSnapshot
from core.state import CallerBudget
from infra.jobs.sqlite_queue import SqliteJobQueue
from infra.jobs.sqlite_store import SqliteJobStore
from infra.local.sqlite import connect
from infra.local.sqlite.fences import SqliteTenantFences
from infra.local.sqlite.snapshots import SqliteSearchSnapshots
from infra.local.sqlite.state import SqliteStateStore
from tests.adapters.sqlite_locks import write_locked

LOCK_WAIT_MS = 50  # the busy timeout in these tests: a held lock fails quickly
NOW = 1_768_435_200.0
AT = "2026-01-01T00:00:00Z"


@pytest.fixture(autouse=True)
def short_busy_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connect, "BUSY_TIMEOUT_MS", LOCK_WAIT_MS)


def drop(path: Path, table: str) -> None:
    """Another program drops the adapter's table from the file."""
    other = sqlite3.connect(path, isolation_level=None)
    other.execute(f"DROP TABLE {table}")
    other.close()


def job(job_id: str = "j1") -> Job:
    return Job(job_id, "t", "bulk", 3, 3, 2, AT, AT)


def snapshot() -> SearchSnapshot:
    return SearchSnapshot("t", "s1", "fp-1", NOW, NOW + 60, 60.0, b"body")


PART = {"job": {"id": "j1", "tenant_id": "t", "kind": "bulk", "part": 0}, "offset": 0, "items": []}


def queue(path: Path) -> SqliteJobQueue:
    return SqliteJobQueue(path, lambda message, retried: None, lambda message, reason: None)


WRITES: dict[str, tuple[Callable[[Path], Any], Callable[[Any], Any]]] = {
    "jobs.create_job": (SqliteJobStore, lambda s: s.create_job(job("j2"))),
    "jobs.delete_job": (SqliteJobStore, lambda s: s.delete_job("t", "j1")),
    "jobs.record_part": (SqliteJobStore, lambda s: s.record_part("t", "j1", 0, {"indexed": 1}, AT)),
    "jobs.purge_tenant": (SqliteJobStore, lambda s: s.purge_tenant("t")),
    "queue.send": (queue, lambda q: q.send([PART])),
    "queue.discard_tenant": (queue, lambda q: q.discard_tenant("t")),
    "fences.fence": (SqliteTenantFences, lambda f: f.fence("t", NOW)),
    "fences.reopen": (SqliteTenantFences, lambda f: f.reopen("t", NOW)),
    "fences.count_removed": (SqliteTenantFences, lambda f: f.count_removed("t", {"entities": 1})),
    "snapshots.put": (SqliteSearchSnapshots, lambda s: s.put(snapshot())),
    "snapshots.extend": (SqliteSearchSnapshots, lambda s: s.extend("t", "s1", NOW + 120, NOW)),
    "snapshots.purge_tenant": (SqliteSearchSnapshots, lambda s: s.purge_tenant("t")),
    "state.put_budget": (
        SqliteStateStore,
        lambda s: s.put_budget("t", CallerBudget("agent", 900, 100, 2000)),
    ),
}


@pytest.mark.parametrize("name", WRITES)
def test_a_write_to_a_locked_file_is_unavailable_not_a_sqlite_error(tmp_path: Path, name: str) -> None:
    path = tmp_path / "quarry.db"
    build, write = WRITES[name]
    adapter = build(path)
    if isinstance(adapter, SqliteJobStore):
        adapter.create_job(job())
    with write_locked(path), pytest.raises(UnavailableError) as raised:
        write(adapter)
    assert isinstance(raised.value.__cause__, sqlite3.OperationalError)
    write(adapter)  # the lock gone, the same write works
    if isinstance(adapter, SqliteJobQueue):
        adapter.drain()  # the part sent, processed by the queue's thread


READS: dict[str, tuple[Callable[[Path], Any], str, Callable[[Any], Any]]] = {
    "jobs.get_job": (SqliteJobStore, "jobs", lambda s: s.get_job("t", "j1")),
    "fences.fence_of": (SqliteTenantFences, "tenant_fences", lambda f: f.fence_of("t")),
    "fences.removed_since_fence": (
        SqliteTenantFences,
        "tenant_purge_counts",
        lambda f: f.removed_since_fence("t"),
    ),
    "snapshots.get": (SqliteSearchSnapshots, "search_snapshots", lambda s: s.get("t", "s1", NOW)),
    "state.get_budget": (SqliteStateStore, "state_budgets", lambda s: s.get_budget("t", "agent")),
}


@pytest.mark.parametrize("name", READS)
def test_a_read_of_a_table_gone_is_unavailable_not_a_sqlite_error(tmp_path: Path, name: str) -> None:
    path = tmp_path / "quarry.db"
    build, table, read = READS[name]
    adapter = build(path)
    read(adapter)
    drop(path, table)
    with pytest.raises(UnavailableError) as raised:
        read(adapter)
    assert isinstance(raised.value.__cause__, sqlite3.OperationalError)


def test_snapshots_opened_on_a_locked_new_file_are_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "quarry.db"
    SqliteJobStore(path)  # the file exists, in WAL mode, without the snapshots' table
    with write_locked(path), pytest.raises(UnavailableError):
        SqliteSearchSnapshots(path)


def test_a_job_id_already_taken_is_a_conflict(tmp_path: Path) -> None:
    jobs = SqliteJobStore(tmp_path / "quarry.db")
    jobs.create_job(job())
    with pytest.raises(ConflictError) as raised:
        jobs.create_job(job())
    assert isinstance(raised.value.__cause__, sqlite3.IntegrityError)

"""`SqliteJobQueue`: the local server's job queue, in its SQLite file, so a write job survives a crash.

`send` stores a job's parts as rows of `job_parts` (in one transaction) and wakes this process's job
thread; every process using the file runs one such thread (started by the first `send`, or by `start`:
each `quarry serve` worker starts it, so parts left by a stopped or crashed server resume). A thread claims
the oldest part that is free, processes it and deletes it. A claim names the claiming process: a part
claimed by a process that no longer runs (kill -9, a crash, a stop mid-part) is claimed again, as is a
claim older than LEASE_SECONDS (a recycled pid). A part that raises is retried after RETRY_SECONDS; after
MAX_PART_ATTEMPTS claims it is recorded as failed, with the reason, and its job ends `failed` — never
`queued` or `running` forever. A claim taken over is a retry: should the part's tenant have been erased
meanwhile, the part purges it (core/tenancy/fencing.py); an erase empties a claimed part to its erased mark
rather than deleting it, for that reason. Parts of one job may run in several processes at once: each part's report
is its own, and writes are versioned.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from core.errors import UnavailableError
from core.indexing.write_jobs import MAX_PART_ATTEMPTS, JobPart, failure_reason
from infra.local.sqlite.connect import immediate, open_sqlite
from infra.local.sqlite.errors import FAILURES, translate

_log = logging.getLogger(__name__)

RETRY_SECONDS = (
    5.0  # a part that raised waits this long (a backend outage clears in seconds) before the next try
)
IDLE_POLL_SECONDS = 1.0  # an idle thread looks this often for parts another process queued
# A claim older than this is taken over even when its pid runs (the pid may have been recycled): far above
# one part's time (at most QUARRY_ASYNC_MIN_CHUNKS embeddings, seconds) on any machine this runs on.
LEASE_SECONDS = 900.0
DRAIN_TIMEOUT_SECONDS = 120.0

_DDL = """
CREATE TABLE IF NOT EXISTS job_parts (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id TEXT NOT NULL,
    message TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    claimed_by INTEGER,
    claimed_at REAL,
    not_before REAL NOT NULL DEFAULT 0
)
"""

Claim = tuple[int, int, dict[str, Any]]  # (seq, attempts including this one, message)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


class SqliteJobQueue:
    """JobQueue whose parts live in the SQLite file until processed (see the module docstring)."""

    def __init__(
        self,
        path: str | Path,
        process: Callable[[dict[str, Any], bool], Any],
        fail: Callable[[dict[str, Any], str], Any],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._conn = open_sqlite(path)
        self._conn.execute(_DDL)
        self._conn.execute("PRAGMA secure_delete = ON")  # a processed part's items are zeroed, not left free
        self._process, self._fail, self._clock = process, fail, clock
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._done = threading.Condition()
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                with immediate(self._conn) as conn:
                    yield conn
            except FAILURES as exc:
                raise translate(exc) from exc

    def send(self, messages: Sequence[dict[str, Any]]) -> None:
        """Store every part (all or none), then wake this process's job thread."""
        rows = [(str(m["job"]["tenant_id"]), json.dumps(m, separators=(",", ":"))) for m in messages]
        with self._transaction() as conn:
            conn.executemany("INSERT INTO job_parts (tenant_id, message) VALUES (?, ?)", rows)
        self.start()
        self._wake.set()

    def start(self) -> None:
        """Run this process's job thread (idempotent): it resumes whatever parts the file holds."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="jobs", daemon=True)
                self._thread.start()

    def discard_tenant(self, tenant_id: str) -> int:
        """Drop the tenant's parts (an erase). A part claimed now keeps its row, emptied to its erased
        mark (no items), until its claimant is done with it: should the claimant stop before its
        end-of-unit check, the process that takes the claim over purges the tenant (core/tenancy/fencing.py)."""
        with self._transaction() as conn:
            removed = int(
                conn.execute(
                    "DELETE FROM job_parts WHERE tenant_id = ? AND claimed_by IS NULL", (tenant_id,)
                ).rowcount
            )
            claimed = conn.execute(
                "SELECT seq, message FROM job_parts WHERE tenant_id = ?", (tenant_id,)
            ).fetchall()
            for seq, message in claimed:
                mark = JobPart.from_message(json.loads(message)).erased_mark().to_message()
                conn.execute(
                    "UPDATE job_parts SET message = ? WHERE seq = ?",
                    (json.dumps(mark, separators=(",", ":")), seq),
                )
        self._checkpoint()
        return removed + len(claimed)

    def _checkpoint(self) -> None:
        """Write the WAL back into the file and truncate it, so no deleted part's bytes linger there."""
        with self._lock:
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def pending(self) -> int:
        """Parts not yet processed (claimed ones included)."""
        with self._lock:
            return int(self._conn.execute("SELECT count(*) FROM job_parts").fetchone()[0])

    def drain(self, timeout: float = DRAIN_TIMEOUT_SECONDS) -> None:
        """Wait until no part is left (tests, tools); TimeoutError past `timeout`."""
        self.start()
        deadline = time.monotonic() + timeout
        while self.pending():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.pending()} job part(s) still pending after {timeout:g} s")
            self._wake.set()
            with self._done:
                self._done.wait(0.05)

    # -- the job thread --------------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            try:
                claimed = self._claim()
            except UnavailableError:  # the file locked past the busy timeout, or unreadable
                _log.exception("job queue: cannot claim a part; trying again")
                claimed = None
            if claimed is None:
                self._wake.wait(IDLE_POLL_SECONDS)
                self._wake.clear()
                continue
            try:
                self._work(*claimed)
            except UnavailableError:  # its end not recorded: the part runs again once its claim expires
                _log.exception("job queue: cannot record the end of a part; trying again later")
            with self._done:
                self._done.notify_all()

    def _claim(self) -> Claim | None:
        """The oldest free part, claimed by this process (its attempts counted); None when there is none."""
        now, me = self._clock(), os.getpid()
        with self._transaction() as conn:
            owners = [
                r[0]
                for r in conn.execute(
                    "SELECT DISTINCT claimed_by FROM job_parts WHERE claimed_by IS NOT NULL"
                )
            ]
            for pid in owners:
                if pid != me and not _alive(pid):
                    conn.execute("UPDATE job_parts SET claimed_by = NULL WHERE claimed_by = ?", (pid,))
            conn.execute(
                "UPDATE job_parts SET claimed_by = NULL WHERE claimed_at < ?", (now - LEASE_SECONDS,)
            )
            row = conn.execute(
                "SELECT seq, attempts, message FROM job_parts WHERE claimed_by IS NULL AND not_before <= ? "
                "ORDER BY seq LIMIT 1",
                (now,),
            ).fetchone()
            if row is None:
                return None
            conn.execute(
                "UPDATE job_parts SET claimed_by = ?, claimed_at = ?, attempts = attempts + 1 WHERE seq = ?",
                (me, now, row[0]),
            )
        return int(row[0]), int(row[1]) + 1, json.loads(row[2])

    def _work(self, seq: int, attempts: int, message: dict[str, Any]) -> None:
        erased = bool(message.get("erased"))  # an erase emptied it: processing it only purges (if needed)
        if attempts > MAX_PART_ATTEMPTS and not erased:  # every earlier claimant stopped while processing it
            self._finish(
                seq, message, f"the server stopped while processing this part, {MAX_PART_ATTEMPTS} times"
            )
            return
        try:
            self._process(message, attempts > 1 or erased)
        except Exception as exc:  # noqa: BLE001 - the thread must outlive any part
            _log.exception("job part failed (attempt %d of %d)", attempts, MAX_PART_ATTEMPTS)
            if attempts >= MAX_PART_ATTEMPTS:
                self._finish(seq, message, failure_reason(exc, attempts))
            else:
                self._release(seq)
            return
        self._delete(seq)

    def _finish(self, seq: int, message: dict[str, Any], reason: str) -> None:
        """Record the part as failed, then drop it."""
        try:
            self._fail(message, reason)
        except Exception:  # noqa: BLE001 - the job store is down: the part stays, to be failed next time
            _log.exception("job part could not be recorded as failed")
            self._release(seq)
            return
        self._delete(seq)

    def _release(self, seq: int) -> None:
        """Let the part be claimed again after RETRY_SECONDS."""
        with self._transaction() as conn:
            conn.execute(
                "UPDATE job_parts SET claimed_by = NULL, not_before = ? WHERE seq = ?",
                (self._clock() + RETRY_SECONDS, seq),
            )

    def _delete(self, seq: int) -> None:
        """Drop a processed part (zeroed: secure_delete); an erased mark, which an erase may have made of
        it while it ran, is also checkpointed out of the WAL."""
        with self._transaction() as conn:
            rows = conn.execute(  # every row read, so the statement is done before the commit
                "DELETE FROM job_parts WHERE seq = ? RETURNING json_extract(message, '$.erased')", (seq,)
            ).fetchall()
        if any(erased for (erased,) in rows):
            self._checkpoint()

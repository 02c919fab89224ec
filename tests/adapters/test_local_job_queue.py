"""The local job queue keeps parts in the SQLite file: a part a dead process had claimed is claimed again,
a part that keeps failing ends failed with the reason, an erase drops a tenant's waiting parts."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from core.errors import UnavailableError
from core.indexing.write_jobs import MAX_PART_ATTEMPTS
from infra.jobs import sqlite_queue
from infra.jobs.sqlite_queue import SqliteJobQueue


def part(tenant: str, n: int) -> dict[str, Any]:
    return {"job": {"id": "j", "tenant_id": tenant, "kind": "bulk", "part": n}, "offset": n, "items": []}


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


class Recorder:
    def __init__(self, failing: bool = False) -> None:
        self.done: list[int] = []
        self.retried: list[int] = []  # parts that may have run before (a claim taken over)
        self.failed: list[tuple[int, str]] = []
        self.failing = failing
        self.lock = threading.Lock()

    def process(self, message: dict[str, Any], retried: bool) -> None:
        if self.failing:
            raise UnavailableError("bedrock", "ThrottlingException: secret-host.internal")
        with self.lock:
            self.done.append(message["job"]["part"])
            self.retried += [message["job"]["part"]] if retried else []

    def fail(self, message: dict[str, Any], reason: str) -> None:
        with self.lock:
            self.failed.append((message["job"]["part"], reason))


def test_parts_survive_the_process_and_a_dead_claimants_part_is_claimed_again(tmp_path: Path) -> None:
    path = tmp_path / "quarry.db"
    first = SqliteJobQueue(path, Recorder().process, Recorder().fail)
    with first._transaction() as conn:  # noqa: SLF001 - two parts as a crashed server left them
        conn.execute("INSERT INTO job_parts (tenant_id, message, attempts, claimed_by, claimed_at) VALUES "
                     "('t', ?, 1, ?, 0)", ('{"job": {"id": "j", "tenant_id": "t", "kind": "bulk", "part": 0},'
                                          ' "offset": 0, "items": []}', dead_pid()))  # fmt: skip
        conn.execute("INSERT INTO job_parts (tenant_id, message) VALUES ('t', ?)",
                     ('{"job": {"id": "j", "tenant_id": "t", "kind": "bulk", "part": 1}, "offset": 1, "items": []}',))  # fmt: skip
    recorder = Recorder()
    resumed = SqliteJobQueue(path, recorder.process, recorder.fail)  # the restarted server
    resumed.drain(timeout=30)
    assert sorted(recorder.done) == [0, 1] and recorder.failed == []
    assert recorder.retried == [0]  # the dead claimant's part may have written before it died


def test_a_part_failing_every_time_ends_failed_with_a_reason_fit_for_the_caller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_queue, "RETRY_SECONDS", 0.0)
    recorder = Recorder(failing=True)
    queue = SqliteJobQueue(tmp_path / "quarry.db", recorder.process, recorder.fail)
    queue.send([part("t", 0)])
    queue.drain(timeout=30)
    [(n, reason)] = recorder.failed
    assert n == 0 and f"each of its {MAX_PART_ATTEMPTS} attempts" in reason
    assert "bedrock is temporarily unavailable" in reason and "secret-host" not in reason


def test_a_part_whose_claimants_keep_dying_ends_failed(tmp_path: Path) -> None:
    recorder = Recorder()
    queue = SqliteJobQueue(tmp_path / "quarry.db", recorder.process, recorder.fail)
    with queue._transaction() as conn:  # noqa: SLF001
        conn.execute("INSERT INTO job_parts (tenant_id, message, attempts, claimed_by, claimed_at) VALUES "
                     "('t', ?, ?, ?, 0)", ('{"job": {"id": "j", "tenant_id": "t", "kind": "bulk", "part": 4},'
                                          ' "offset": 0, "items": []}', MAX_PART_ATTEMPTS, dead_pid()))  # fmt: skip
    queue.drain(timeout=30)
    assert recorder.done == [] and recorder.failed == [
        (4, f"the server stopped while processing this part, {MAX_PART_ATTEMPTS} times")
    ]


def test_discarding_a_tenant_drops_only_its_waiting_parts(tmp_path: Path) -> None:
    recorder = Recorder()
    queue = SqliteJobQueue(tmp_path / "quarry.db", recorder.process, recorder.fail)
    with queue._transaction() as conn:  # noqa: SLF001 - queued without waking the thread
        for tenant, n in (("gone", 0), ("kept", 1), ("gone", 2)):
            conn.execute(
                "INSERT INTO job_parts (tenant_id, message) VALUES (?, ?)",
                (tenant, json.dumps(part(tenant, n))),
            )
    assert queue.discard_tenant("gone") == 2
    queue.drain(timeout=30)
    assert recorder.done == [1]


def test_a_part_claimed_when_its_tenant_is_discarded_keeps_only_its_erased_mark(tmp_path: Path) -> None:
    """The claimant may still write; if it dies first, whoever takes the claim over gets the mark (as a
    retry, so the tenant is purged) and no item of the part."""
    recorder = Recorder()
    queue = SqliteJobQueue(tmp_path / "quarry.db", recorder.process, recorder.fail)
    claimed = part("gone", 0) | {"items": [{"type": "memory", "id": "m", "content": "secretword"}]}
    with queue._transaction() as conn:  # noqa: SLF001 - claimed by a process that died mid-part
        conn.execute(
            "INSERT INTO job_parts (tenant_id, message, attempts, claimed_by, claimed_at) VALUES (?, ?, 1, ?, 0)",
            ("gone", json.dumps(claimed), dead_pid()),
        )
    assert queue.discard_tenant("gone") == 1
    assert b"secretword" not in (tmp_path / "quarry.db").read_bytes()
    taken: list[dict[str, Any]] = []
    queue._process = lambda message, retried: taken.append(message | {"retried": retried})  # noqa: SLF001
    queue.drain(timeout=30)
    assert taken == [{"job": claimed["job"], "offset": 0, "items": [], "erased": True, "retried": True}]
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert b"gone" not in raw  # the mark is zeroed once done with

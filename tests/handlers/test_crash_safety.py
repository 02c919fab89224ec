"""kill -9 during bulk ingest: a child process bulk-indexes through the IndexingService and
prints an ack after each bulk call returns; the parent SIGKILLs it mid-run, at a random moment, several
times over the same data directory. Every acknowledged write must be there after the restart."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from core.models import EntityKey
from core.search.search_api import SearchRequest
from tests.conftest import ROOT, FakeEmbedder, make_container

ROUNDS = 3  # kills over the same data directory (each restart resumes on what the last one left)
ACKS_BEFORE_KILL = (5, 25)  # the kill lands after a random number of acknowledged batches in this range
BATCH = 25
CHILD_TIMEOUT_SECONDS = 120

CHILD = """
import sys
from tests.conftest import FakeEmbedder, make_container
c = make_container(sys.argv[1], FakeEmbedder())
prefix, size = sys.argv[2], int(sys.argv[3])
print("ready", flush=True)
for batch in range(10_000):
    ids = [f"{prefix}-{batch}-{i}" for i in range(size)]
    items = [{"type": "task", "id": eid, "title": f"crash test {eid} token{prefix}"} for eid in ids]
    report = c.indexing.bulk("t", items, c.clock.now())
    assert not report.errors, report.errors
    print("ack " + ",".join(ids), flush=True)
"""


def _run_and_kill(data: Path, prefix: str, rng: random.Random) -> list[str]:
    """Start the child, read acks until a random count, SIGKILL it; the ids it acknowledged."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(data), prefix, str(BATCH)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    acked: list[str] = []
    wanted = rng.randint(*ACKS_BEFORE_KILL)
    started = time.monotonic()
    try:
        assert child.stdout is not None
        for line in child.stdout:
            if line.startswith("ack "):
                acked.extend(line[4:].strip().split(","))
                if len(acked) >= wanted * BATCH:
                    time.sleep(rng.uniform(0, 0.02))  # land inside the next batch's transaction, or near it
                    break
            assert time.monotonic() - started < CHILD_TIMEOUT_SECONDS
    finally:
        child.send_signal(signal.SIGKILL)
        _, err = child.communicate(timeout=30)  # drains and closes both pipes
    assert child.returncode == -signal.SIGKILL, err
    return acked


def test_every_acknowledged_write_survives_kill_9_during_bulk_ingest(tmp_path: Path) -> None:
    data = tmp_path / "data"
    rng = random.Random(10)
    acked: list[str] = []
    for round_no in range(ROUNDS):
        acked += _run_and_kill(data, f"r{round_no}", rng)
    assert len(acked) >= ROUNDS * ACKS_BEFORE_KILL[0] * BATCH

    with sqlite3.connect(data / "quarry.db") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    c = make_container(data, FakeEmbedder())
    stored = c.index.get("t", [EntityKey("task", eid) for eid in acked])
    lost = [eid for eid in acked if EntityKey("task", eid) not in stored]
    assert lost == [], f"{len(lost)} acknowledged writes lost, e.g. {lost[:5]}"
    assert not any(entity.deleted for entity in stored.values())
    # …and searchable, lexically, after the restart
    for round_no in range(ROUNDS):
        response = c.search.search(
            "t", SearchRequest(query=f"tokenr{round_no}", strategy="keyword", limit=100)
        )
        assert response.total > 0, json.dumps(response.model_dump(mode="json"))[:300]

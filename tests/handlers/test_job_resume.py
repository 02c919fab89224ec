"""A write job accepted by `quarry serve` survives kill -9 of the server mid-job: the restarted server
resumes it from the SQLite file, and GET /jobs/{id} ends `done` with every item indexed (it stayed
`queued` with 0 indexed, with nothing to say it would never run)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.handlers.serving import free_port

pytestmark = pytest.mark.slow
KEY = "qk_resume_test"
ITEMS = 240
DEADLINE_SECONDS = 180  # the busy shared machine: MiniLM embeds a few hundred short texts in seconds


def call(url: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"authorization": f"Bearer {KEY}", "content-type": "application/json"}
    request = urllib.request.Request(url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


@contextmanager
def serve(data: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("QUARRY_")},
        "PYTHONPATH": str(ROOT),
        "QUARRY_DATA_DIR": str(data),
        "QUARRY_ASYNC_MIN_CHUNKS": "8",
        "QUARRY_ACCESS_LOG": "false",  # its stdout is read once: a full pipe would stall the server
        "QUARRY_API_KEYS": json.dumps({KEY: {"tenant": "acme", "scopes": ["read", "write"]}}),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "handlers.cli.main", "serve", "--workers", "1", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "Quarry API on" in line, line
        yield proc, f"http://127.0.0.1:{port}"
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)


def job(url: str, job_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while time.monotonic() < deadline:
        try:
            status, body = call(url, "GET", f"/jobs/{job_id}")
        except OSError:  # the server is still loading
            continue
        if status == 200:
            return dict(body)
    raise AssertionError("the job was never readable")


def test_a_job_interrupted_by_kill_9_resumes_after_the_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    items = [{"type": "task", "id": f"k-{i}", "title": f"resumable ledger walrus{i}"} for i in range(ITEMS)]
    with serve(data) as (proc, url):
        status, accepted = call(url, "POST", "/entities", {"items": items})
        assert status == 202, accepted
        job_id, parts = accepted["job_id"], accepted["parts"]
        deadline = time.monotonic() + DEADLINE_SECONDS
        while (progress := job(url, job_id))["parts_done"] < 1:  # kill it mid-job, not before it starts
            assert time.monotonic() < deadline, progress
        assert progress["status"] == "running", progress
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    with serve(data) as (_, url):
        deadline = time.monotonic() + DEADLINE_SECONDS
        while (done := job(url, job_id))["status"] != "done":
            assert time.monotonic() < deadline and done["status"] == "running", done
        assert done["parts_done"] == parts and done["indexed"] == ITEMS and done["errors"] == [], done
        found = call(url, "POST", "/search", {"query": f"walrus{ITEMS - 1}", "strategy": "keyword"})[1]
        assert [r["entity_id"] for r in found["results"]] == [f"k-{ITEMS - 1}"]

"""`quarry serve` with worker processes stops when asked: SIGTERM (or Ctrl-C) ends every worker gracefully,
without waiting out the supervisor's grace period, and a second signal during the stop never leaves a worker
running behind the supervisor."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from handlers.local_server.devserver_workers import STOP_GRACE_SECONDS
from tests.handlers.serving import free_port

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 60


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, parent gone or not reaping yet) is not running
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def health(port: int) -> int:
    """1 when GET /health on a new connection answers 200."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/health")
        return int(conn.getresponse().status == 200)
    except OSError:
        time.sleep(0.1)
        return 0
    finally:
        conn.close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], int, list[int]]]:
    """A `quarry serve --workers 2` process that has answered 20 connections; its workers' PIDs."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QUARRY_DATA_DIR": str(tmp_path / "data")}
    env["QUARRY_ACCESS_LOG"] = "false"  # only the first line is read: a full pipe would block the workers
    proc = subprocess.Popen(
        [sys.executable, "-m", "handlers.cli.main", "serve", "--workers", "2", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    workers: list[int] = []
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "Quarry API on" in line, line
        deadline = time.monotonic() + START_TIMEOUT_S
        answered = 0
        while answered < 20:
            assert time.monotonic() < deadline, "the server did not answer"
            answered += health(port)
        # Bursts of connections at once: both workers wake for each, one accepts, the other tries too.
        with ThreadPoolExecutor(16) as pool:
            for _ in range(3):
                assert sum(pool.map(lambda _: health(port), range(32))) == 32
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        workers = [int(c) for c in children]
        assert len(workers) == 2
        yield proc, port, workers
    finally:
        for pid in [proc.pid, *workers]:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()


def in_accept(pid: int) -> bool:
    """Whether the worker's main thread waits in the kernel's accept() (Linux's wchan)."""
    try:
        return Path(f"/proc/{pid}/wchan").read_text().strip() == "inet_csk_accept"
    except OSError:
        return False


def test_sigterm_stops_every_worker_without_waiting_out_the_grace_period(
    server: tuple[subprocess.Popen[str], int, list[int]],
) -> None:
    proc, port, workers = server
    # Both workers wake for each new connection and one accepts it; the other also calls accept(). With a
    # blocking socket it then sat in accept() until the next connection — through SIGTERM, whose handler
    # runs and accept() resumes — until the supervisor killed it at the end of its grace period. Connect
    # until a worker is where that happened (or, fixed, could have happened) and then stop.
    for _ in range(200):
        if any(in_accept(pid) for pid in workers):
            break
        health(port)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=STOP_GRACE_SECONDS - 2) == 0
    assert not [pid for pid in workers if alive(pid)]
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


def test_a_second_signal_during_the_stop_leaves_no_worker_behind(
    server: tuple[subprocess.Popen[str], int, list[int]],
) -> None:
    proc, _, workers = server
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.05)
    proc.send_signal(signal.SIGINT)  # an impatient second Ctrl-C
    proc.wait(timeout=STOP_GRACE_SECONDS + 5)
    assert not [pid for pid in workers if alive(pid)]  # the supervisor waited for them before leaving

"""The local server under concurrency. Many client threads, two tenants, thousands of
requests: every response belongs to its caller, every acknowledged write is stored under its caller's
tenant, nothing answers 5xx — in one process and across worker processes. And it is bounded: beyond one
running request and the queue, a request gets 503 with Retry-After at once."""

from __future__ import annotations

import functools
import http.client
import json
import multiprocessing
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from handlers.lambda_functions import api
from handlers.local_server.devserver import make_server
from handlers.local_server.devserver_workers import Supervisor, listen
from tests.conftest import FakeEmbedder, make_container
from tests.handlers.serving import serving

KEYS = {
    "key-one": {"tenant": "t1", "scopes": ["read", "write", "admin"]},
    "key-two": {"tenant": "t2", "scopes": ["read", "write", "admin"]},
}
TENANT_KEY = {"t1": "key-one", "t2": "key-two"}
CLIENT_THREADS = 8  # 4 per tenant
ROUNDS = 100  # per thread; 3 requests a round → 2,400 requests
# Shorter GIL time slices make a thread switch inside a shared-state window likely within thousands of
# requests rather than one in ~40,000 (how the bug was first seen).
SWITCH_INTERVAL = 1e-5
KILL_BATCH = 50  # items per bulk request while a worker is killed


class Client:
    """One keep-alive connection for one tenant."""

    def __init__(self, port: int, tenant: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.headers = {"authorization": f"Bearer {TENANT_KEY[tenant]}", "content-type": "application/json"}

    def close(self) -> None:
        self.conn.close()

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """(status, JSON body); a dropped connection is status 0 (and the next call reconnects)."""
        try:
            self.conn.request(method, path, json.dumps(body) if body is not None else None, self.headers)
            response = self.conn.getresponse()
            return response.status, json.loads(response.read() or b"null")
        except (http.client.HTTPException, OSError) as exc:
            self.conn.close()
            return 0, {"dropped": repr(exc)}


def hammer(port: int) -> tuple[dict[str, set[str]], list[str]]:
    """Writes, searches and assemblies from many threads; (acknowledged ids per tenant, problems)."""
    acked: dict[str, set[str]] = {"t1": set(), "t2": set()}
    problems: list[str] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        tenant = ("t1", "t2")[n % 2]
        client = Client(port, tenant)
        mine: set[str] = set()
        for i in range(ROUNDS):
            entity_id = f"{tenant}-{n}-{i}"
            status, body = client.call(
                "PUT", f"/entities/task/{entity_id}", {"title": f"quarterly report draft {i}", "version": 1}
            )
            if status != 200 or not isinstance(body, dict) or body.get("entity_id") != entity_id:
                problems.append(f"PUT {entity_id}: {status} {body}")
            else:
                mine.add(entity_id)
            status, body = client.call("POST", "/search", {"query": "quarterly report", "limit": 50})
            if status != 200 or "results" not in body:
                problems.append(f"search as {tenant}: {status} {body}")
            else:
                problems.extend(
                    f"search as {tenant} returned {r['entity_id']}"
                    for r in body["results"]
                    if not r["entity_id"].startswith(tenant + "-")
                )
            status, body = client.call(
                "POST", "/context/assemble", {"query": "report draft", "caller": f"agent-{n}", "log": False}
            )
            if status != 200 or "sources" not in body:
                problems.append(f"assemble as {tenant}: {status} {body}")
            else:
                problems.extend(
                    f"assemble as {tenant} returned {s['id']}"
                    for s in body["sources"]
                    if tenant + "-" not in s["id"]
                )
        client.close()
        with lock:
            acked[tenant] |= mine

    previous = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL)
    try:
        with ThreadPoolExecutor(CLIENT_THREADS) as pool:
            list(pool.map(worker, range(CLIENT_THREADS)))
    finally:
        sys.setswitchinterval(previous)
    return acked, problems


def wait_until(condition: Callable[[], bool], seconds: float, what: str) -> None:
    """Poll `condition` until it holds; fail naming `what` after `seconds`."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"waited {seconds} s for {what}"
        time.sleep(0.01)


def stored(db: Path) -> dict[str, set[str]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT tenant_id, entity_id FROM idx_entities").fetchall()
    found: dict[str, set[str]] = {"t1": set(), "t2": set()}
    for tenant, entity_id in rows:
        found.setdefault(tenant, set()).add(entity_id)
    return found


def assert_every_answer_was_for_its_caller(port: int, db: Path) -> None:
    acked, problems = hammer(port)
    assert problems == [], f"{len(problems)} wrong or failed responses, e.g. {problems[:5]}"
    assert len(acked["t1"]) == len(acked["t2"]) == CLIENT_THREADS // 2 * ROUNDS
    assert stored(db) == acked  # each acknowledged write is stored under its caller, and only there


@pytest.fixture
def one_process(local: Any) -> Iterator[int]:
    with serving(KEYS, 1 << 20) as url:
        yield int(url.rsplit(":", 1)[1])


def test_one_process_never_answers_for_the_wrong_tenant(one_process: int, local: Any) -> None:
    assert_every_answer_was_for_its_caller(one_process, local.settings.sqlite_path)


def _start_worker(data: Path, sock: Any) -> Any:
    from infra.wiring.root import set_container

    set_container(make_container(data, FakeEmbedder()))
    return make_server("127.0.0.1", 0, KEYS, api.lambda_handler, 1 << 20, sock=sock)


def _serve_two_workers(data: str, ports: Any) -> None:
    """`quarry serve --workers 2` with the test's keys and embedder, until SIGTERM: the schema, a socket,
    the supervisor forking its two workers. Run in a spawned interpreter, as the CLI runs it: forked from
    the test process, whose earlier tests leave threads (keyword followers, thread pools) that may hold a
    lock at the moment of the fork, a worker could inherit that lock held forever."""
    from handlers.local_server.devserver_workers import serve

    init = make_container(Path(data), FakeEmbedder())
    _ = init.index, init.state  # the schema exists before the workers start
    sock = listen("127.0.0.1", 0)
    ports.put(sock.getsockname()[1])
    serve(sock, 2, functools.partial(_start_worker, Path(data)))


def test_worker_processes_never_answer_for_the_wrong_tenant(tmp_path: Path) -> None:
    data = tmp_path / "data"
    spawn = multiprocessing.get_context("spawn")
    ports = spawn.Queue()
    server = spawn.Process(target=_serve_two_workers, args=(str(data), ports))
    server.start()
    try:
        port = ports.get(timeout=120)
        assert_every_answer_was_for_its_caller(
            port, make_container(data, FakeEmbedder()).settings.sqlite_path
        )
    finally:
        server.terminate()  # SIGTERM: the supervisor stops both workers, then itself
        server.join(60)
        if server.is_alive():
            server.kill()
            server.join()


def test_beyond_the_queue_a_request_gets_503_with_retry_after_at_once(local: Any) -> None:
    release = threading.Event()
    entered = threading.Event()

    def slow(event: dict[str, Any], context: Any) -> dict[str, Any]:
        entered.set()
        release.wait(30)
        return {"statusCode": 200, "headers": {"content-type": "application/json"}, "body": "{}"}

    httpd = make_server("127.0.0.1", 0, KEYS, slow, 1 << 20, queue=0)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    port = int(httpd.server_address[1])
    try:
        first = Client(port, "t1")
        with ThreadPoolExecutor(1) as pool:
            running = pool.submit(first.call, "GET", "/context/weights")
            assert entered.wait(10)
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/context/weights", headers={"authorization": "Bearer key-one"})
            response = conn.getresponse()
            body = json.loads(response.read())
            assert response.status == 503 and response.getheader("Retry-After") == "1"
            assert body["error"]["code"] == "overloaded"
            release.set()
            assert running.result()[0] == 200
        conn.request("GET", "/context/weights", headers={"authorization": "Bearer key-one"})
        assert conn.getresponse().status == 200  # capacity is back once the running request is done
        conn.close()
        first.close()
    finally:
        release.set()
        httpd.shutdown()
        httpd.server_close()


def test_kill_9_of_a_worker_during_bulk_ingest_loses_no_acknowledged_write(tmp_path: Path) -> None:
    """Bulk writes from 4 threads while one worker is SIGKILLed mid-stream: requests on the dead worker
    fail (unacknowledged), the supervisor restarts it, every acknowledged item is stored, and a client that
    retries what was not acknowledged ends with every item stored once."""
    import os
    import signal

    data = tmp_path / "data"
    init = make_container(data, FakeEmbedder())
    _ = init.index, init.state

    def start(sock: Any) -> Any:
        from infra.wiring.root import set_container

        set_container(make_container(data, FakeEmbedder()))
        return make_server("127.0.0.1", 0, KEYS, api.lambda_handler, 1 << 22, sock=sock)

    sock = listen("127.0.0.1", 0)
    port = sock.getsockname()[1]
    supervisor = Supervisor(sock, 2, start)
    supervisor.spawn_all()
    watcher = threading.Thread(target=supervisor.watch, daemon=True)
    watcher.start()
    batches = {(n, b): [f"w{n}-b{b}-{i}" for i in range(KILL_BATCH)] for n in range(4) for b in range(15)}
    acked: set[str] = set()
    unacknowledged: list[tuple[int, int]] = []
    lock = threading.Lock()

    def send(client: Client, ids: list[str]) -> bool:
        items = [{"type": "task", "id": i, "title": f"ingest item {i}", "version": 1} for i in ids]
        status, body = client.call("POST", "/entities", {"items": items})
        ok = status == 200 and body["indexed"] == len(ids) and not body["errors"]
        if ok:
            with lock:
                acked.update(ids)
        return ok

    def writer(n: int) -> None:
        client = Client(port, "t1")
        for b in range(15):
            if not send(client, batches[(n, b)]):
                with lock:
                    unacknowledged.append((n, b))
        client.close()

    try:
        with ThreadPoolExecutor(4) as pool:
            running = [pool.submit(writer, n) for n in range(4)]
            wait_until(lambda: bool(acked), 60, "a first acknowledged batch")  # the ingest is under way
            victim = sorted(supervisor.pids)[0]
            os.kill(victim, signal.SIGKILL)
            killed_mid_stream = not all(f.done() for f in running)
            for future in running:
                future.result()
        assert killed_mid_stream, "every batch was sent before the kill: nothing was tested"
        wait_until(lambda: victim not in supervisor.pids and len(supervisor.pids) == 2, 20, "the restart")
        assert acked <= stored(init.settings.sqlite_path)["t1"]  # nothing acknowledged was lost
        client = Client(port, "t1")
        for key in unacknowledged:  # the client's retry of what was never acknowledged
            assert send(client, batches[key]), f"batch {key} failed again after the restart"
        client.close()
        every_id = {i for ids in batches.values() for i in ids}
        assert acked == every_id == stored(init.settings.sqlite_path)["t1"]
        client = Client(port, "t2")
        assert client.call("GET", "/context/weights")[0] == 200  # still serving after the restart
        client.close()
    finally:
        supervisor.stop()
        watcher.join(timeout=15)
        sock.close()


def test_beyond_the_connection_cap_a_connection_gets_503_and_the_cap_frees_up(local: Any) -> None:
    import socket

    httpd = make_server("127.0.0.1", 0, KEYS, api.lambda_handler, 1 << 20, max_connections=2)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    port = int(httpd.server_address[1])
    try:
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]  # slow clients, silent
        client = Client(port, "t1")
        deadline = time.monotonic() + 10
        while (answer := client.call("GET", "/context/weights"))[0] == 200:  # until both are accepted
            assert time.monotonic() < deadline, "the connection cap never applied"
            client.close()
            time.sleep(0.05)
        status, body = answer
        assert status == 503 and body["error"]["code"] == "overloaded"
        for sock in idle:
            sock.close()
        deadline = time.monotonic() + 10
        while (status := client.call("GET", "/context/weights")[0]) == 503 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert status == 200
        client.close()
    finally:
        httpd.shutdown()
        httpd.server_close()

"""`make lambda-serve`: HTTP on loopback in front of the emulated API function, as `sam local start-api`
— each request becomes an HTTP API payload 2.0 event whose authorizer carries the JWT claims of the
key's configured identity (scopes of the template's resource server, its tenant claim)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import ROOT

START_SECONDS = 300  # provisions moto, builds the artifact when the sources changed, starts the emulator
STOP_SECONDS = 30  # Ctrl-C stops it in about 1 s
WRITER, READER = "qk_gateway_writer", "qk_gateway_reader"
KEYS = {
    WRITER: {"tenant": "gw-t", "scopes": ["read", "write"]},
    READER: {"tenant": "gw-t", "scopes": ["read"], "caller": "agent-x"},
}


@pytest.fixture(scope="module")
def gateway(
    lambda_runtime: None, opensearch_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    env = {**os.environ, "QUARRY_OPENSEARCH_URL": opensearch_url, "QUARRY_API_KEYS": json.dumps(KEYS)}
    command = [sys.executable, "-m", "deploy.lambda_local", "serve", "--port", "0"]
    errors = tmp_path_factory.mktemp("gateway") / "stderr.log"
    # stderr to a file and stdout read to its end: output nobody reads fills the pipe, and a process that
    # blocks writing to it stops neither serving nor on Ctrl-C
    with errors.open("w") as stderr:  # started as a non-interactive shell starts a background job: SIGINT
        proc = subprocess.Popen(  # ignored, which the server inherits (Ctrl-C must stop it all the same)
            command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        )  # fmt: skip
    assert proc.stdout is not None
    drain = threading.Thread(target=proc.stdout.read, daemon=True)  # read to the end once the URL is out
    try:
        deadline = time.monotonic() + START_SECONDS
        line = ""
        while "http://" not in line and time.monotonic() < deadline and proc.poll() is None:
            line = proc.stdout.readline()  # the server prints its URL once it listens
        assert "http://" in line, errors.read_text()[-3000:]
        drain.start()
        yield line.rsplit(" ", 1)[-1].strip()
    finally:
        proc.send_signal(signal.SIGINT)  # as Ctrl-C: the server, the emulator and moto_server stop
        try:
            proc.wait(timeout=STOP_SECONDS)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if drain.is_alive():
                drain.join(timeout=STOP_SECONDS)
            proc.stdout.close()


def request(
    url: str, method: str = "GET", key: str | None = None, body: Any = None
) -> tuple[int, Any, dict[str, str]]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        url, data=data, method=method, headers={**headers, "Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=60) as answer:
            status, raw, head = answer.status, answer.read(), dict(answer.headers)
    except urllib.error.HTTPError as exc:
        status, raw, head = exc.code, exc.read(), dict(exc.headers)
    is_json = head.get("Content-Type", "").startswith("application/json")
    return status, json.loads(raw) if is_json and raw else raw, head


def test_the_keys_identity_reaches_the_function_as_jwt_claims(gateway: str) -> None:
    status, me, _ = request(f"{gateway}/whoami", key=WRITER)
    assert status == 200 and me == {"tenant": "gw-t", "scopes": ["read", "write"], "caller": "local-gw-t"}
    status, me, _ = request(f"{gateway}/whoami", key=READER)
    assert me == {"tenant": "gw-t", "scopes": ["read"], "caller": "agent-x"}


def test_scopes_tenants_and_public_routes_behave_as_behind_api_gateway(gateway: str) -> None:
    status, body, _ = request(f"{gateway}/entities/memory/m-1", "PUT", READER, {"content": "a note"})
    assert status == 403 and "write" in body["error"]["message"], body
    status, body, _ = request(
        f"{gateway}/entities/memory/m-1", "PUT", WRITER, {"content": "a lighthouse note"}
    )
    assert status == 200, body
    status, body, _ = request(f"{gateway}/entities/memory/m-1", key=READER)
    assert status == 200 and body["fields"]["content"] == "a lighthouse note", body
    assert request(f"{gateway}/whoami")[0] == 401  # no token: refused before the function
    assert request(f"{gateway}/health")[:2] == (200, {"status": "ok", "version": "0.1.0"})
    status, page, head = request(f"{gateway}/")
    assert status == 200 and head["Content-Type"].startswith("text/html")  # the console can point here

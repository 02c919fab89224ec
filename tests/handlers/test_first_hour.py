"""The local server as a new user meets it: one stable key per data directory (the same for `quarry serve`
and `quarry mcp`, printed at every start), 401s that say where the key comes from, configuration errors
that exit 2 naming the variable, CORS when configured, and an access-log line per request."""

from __future__ import annotations

import http.client
import json
import os
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from core.errors import ConfigurationError
from handlers.local_server.local_key import key_path, local_key, local_keys
from tests.conftest import ROOT
from tests.handlers.serving import free_port

START_TIMEOUT_SECONDS = 60


# -- the local key -------------------------------------------------------------------------------------


def test_the_local_key_is_made_once_private_and_kept(tmp_path: Path) -> None:
    first = local_key(tmp_path / "data")
    path = key_path(tmp_path / "data")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert first.startswith("qk_") and local_key(tmp_path / "data") == first
    os.chmod(path, 0o644)  # copied around with a loose mode: made private again
    assert local_key(tmp_path / "data") == first and stat.S_IMODE(path.stat().st_mode) == 0o600
    keys, printed = local_keys({}, tmp_path / "data")
    assert printed == first and keys == {first: {"tenant": "dev", "scopes": ["read", "write", "admin"]}}
    configured = {"k": {"tenant": "t", "scopes": ["read"]}}
    assert local_keys(configured, tmp_path / "data") == (configured, None)


def test_processes_starting_together_agree_on_one_key(tmp_path: Path) -> None:
    with ThreadPoolExecutor(8) as pool:
        keys = set(pool.map(lambda _: local_key(tmp_path / "data"), range(16)))
    assert len(keys) == 1
    assert [p.name for p in (tmp_path / "data").iterdir()] == ["local-api-key"]  # no candidates left


def test_a_key_file_without_a_key_is_refused_naming_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "local-api-key").write_text("  \n")
    with pytest.raises(ConfigurationError) as err:
        local_key(tmp_path)
    assert "QUARRY_DATA_DIR" in err.value.variables and "delete the file" in err.value.message


# -- quarry serve and quarry mcp over the same data directory -------------------------------------------


def environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUARRY_")}
    return {**env, "PYTHONPATH": str(ROOT), "QUARRY_DATA_DIR": str(tmp_path / "data"), **extra}


@contextmanager
def started(args: list[str], env: dict[str, str], banner: str) -> Iterator[list[str]]:
    """A CLI server process until its output holds `banner`; yields the lines it printed by then."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "handlers.cli.main", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not any(banner in line for line in lines):
            assert time.monotonic() < deadline and proc.poll() is None, lines
            lines.append(proc.stdout.readline())
        yield lines
    finally:
        proc.terminate()
        proc.communicate(timeout=30)  # reads what is left and closes the pipe


def printed_key(lines: list[str]) -> str:
    line = next(line for line in lines if "export QUARRY_KEY=" in line)
    return line.split("export QUARRY_KEY=", 1)[1].split(";", 1)[0]


def get(port: int, path: str, key: str | None = None, method: str = "GET") -> tuple[int, Any]:
    """(status, JSON body) of one request, retried while the server is still binding."""
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while True:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            headers = {"Authorization": f"Bearer {key}"} if key else {}
            conn.request(method, path, body=b"{}" if method == "POST" else None, headers=headers)
            response = conn.getresponse()
            raw = response.read()
            return response.status, json.loads(raw) if raw.startswith(b"{") else raw
        except ConnectionRefusedError:
            assert time.monotonic() < deadline, "nothing listens"
            time.sleep(0.1)
        finally:
            conn.close()


@pytest.mark.slow
def test_serve_prints_the_same_key_at_every_start_and_mcp_accepts_it(tmp_path: Path) -> None:
    env = environment(tmp_path)
    keys = []
    for _ in range(2):
        port = free_port()
        serve = ["serve", "--workers", "1", "--port", str(port)]
        with started(serve, env, "export QUARRY_KEY=") as lines:
            keys.append(printed_key(lines))
            assert any(str(key_path(tmp_path / "data")) in line for line in lines)
            assert get(port, "/whoami", keys[-1])[0] == 200
            status, body = get(port, "/whoami", "qk_wrong")
            assert (
                status == 401 and str(key_path(tmp_path / "data")) in body["error"]["fields"]["authorization"]
            )
    assert keys[0] == keys[1]
    port = free_port()
    with started(["mcp", "--transport", "http", "--port", str(port)], env, "export QUARRY_KEY=") as lines:
        assert printed_key(lines) == keys[0]
        status, body = get(port, "/mcp", None, "POST")
        assert status == 401 and "local-api-key" in body["error"]["fields"]["authorization"]
        assert get(port, "/mcp", keys[0], "POST")[0] != 401


@pytest.mark.parametrize("command", [["serve", "--port", "0"], ["mcp"]])
@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("QUARRY_API_KEYS", "{not json"),
        ("QUARRY_API_KEYS", '{"k": "no grant"}'),
        ("QUARRY_JWT_CLIENT_TENANTS", "[1,"),
        ("QUARRY_CORS_ORIGINS", "https://app.example.com/path"),
        ("QUARRY_TRIPLES_FILE", "/nonexistent/facts.jsonl"),
        ("QUARRY_LINKS_ROOT", "/nonexistent/notes"),
        ("QUARRY_DATA_DIR", "/proc/quarry-data"),
    ],
)
def test_a_bad_setting_exits_2_naming_the_variable(
    tmp_path: Path, command: list[str], variable: str, value: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "handlers.cli.main", *command],
        cwd=ROOT,
        env=environment(tmp_path, **{variable: value}),
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT_SECONDS,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert variable in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert "Quarry API on" not in done.stdout


# -- CORS and the access log (the server in this process) ----------------------------------------------


@contextmanager
def local_server(local: Any, **options: Any) -> Iterator[int]:
    from handlers.lambda_functions import api
    from handlers.local_server.devserver import make_server

    keys = {"k-dev": {"tenant": "dev", "scopes": ["read", "write"]}}
    httpd = make_server("127.0.0.1", 0, keys, api.lambda_handler, 65536, **options)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(httpd.server_address[1])
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def raw(port: int, method: str, path: str, headers: dict[str, str], body: bytes | None = None) -> Any:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        response.read()
        return response
    finally:
        conn.close()


APP = "https://app.example.com"
PREFLIGHT = {
    "Origin": APP,
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "authorization",
}


def test_cross_origin_calls_are_refused_by_default(local: Any) -> None:
    with local_server(local) as port:
        preflight = raw(port, "OPTIONS", "/search", PREFLIGHT)
        assert preflight.status == 403 and preflight.getheader("Access-Control-Allow-Origin") is None
        answer = raw(port, "GET", "/whoami", {"Origin": APP, "Authorization": "Bearer k-dev"})
        assert answer.status == 200 and answer.getheader("Access-Control-Allow-Origin") is None


def test_listed_origins_get_preflights_without_a_key_and_readable_answers(local: Any) -> None:
    with local_server(local, origins=(APP,)) as port:
        preflight = raw(port, "OPTIONS", "/search", PREFLIGHT)
        assert preflight.status == 204
        assert preflight.getheader("Access-Control-Allow-Origin") == APP
        assert "POST" in preflight.getheader("Access-Control-Allow-Methods")
        assert "Authorization" in preflight.getheader("Access-Control-Allow-Headers")
        body = json.dumps({"query": "x"}).encode()
        search = raw(port, "POST", "/search", {"Origin": APP, "Authorization": "Bearer k-dev",
                                               "Content-Type": "application/json"}, body)  # fmt: skip
        assert search.status == 200 and search.getheader("Access-Control-Allow-Origin") == APP
        refused = raw(port, "GET", "/whoami", {"Origin": APP})  # the app can read the 401 too
        assert refused.status == 401 and refused.getheader("Access-Control-Allow-Origin") == APP
        other = raw(port, "OPTIONS", "/search", {**PREFLIGHT, "Origin": "https://evil.example"})
        assert other.status == 403 and other.getheader("Access-Control-Allow-Origin") is None
        plain = raw(port, "OPTIONS", "/search", {"Authorization": "Bearer k-dev"})  # not a preflight
        assert plain.status == 405


def test_every_request_gets_one_access_line_without_bodies_or_keys(
    local: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    with local_server(local, access_log=True) as port:
        body = json.dumps({"query": "secret words"}).encode()
        raw(port, "POST", "/search?cursor=abc", {"Authorization": "Bearer k-dev",
                                                  "Content-Type": "application/json"}, body)  # fmt: skip
        raw(port, "GET", "/whoami", {"Authorization": "Bearer not-a-key"})
        raw(port, "GET", "/health", {})
    # A request's line is written by its own thread once the answer is sent, so the client may see the
    # answer before the line exists: read until all three are there (or the deadline says they never came).
    out, deadline = "", time.monotonic() + 10
    while out.count('"message": "request"') < 3 and time.monotonic() < deadline:
        out += capsys.readouterr().out
        time.sleep(0.01)
    lines = [json.loads(line) for line in out.splitlines() if '"message": "request"' in line]
    assert [(x["method"], x["path"], x["status"], x["tenant"]) for x in lines] == [
        ("POST", "/search", 200, "dev"),
        ("GET", "/whoami", 401, None),
        ("GET", "/health", 200, None),
    ]
    assert all(isinstance(x["ms"], float | int) and x["ms"] >= 0 for x in lines)
    text = json.dumps(lines)
    assert "secret" not in text and "k-dev" not in text and "not-a-key" not in text and "cursor" not in text

"""A real `quarry serve` on loopback for the client's tests (its own data directory, its own keys), started
once per session from the server's venv (QUARRY_SERVER_BIN, else the repository's .venv), and a corpus."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from quarry_client import Quarry

REPO = Path(__file__).resolve().parents[3]
START_SECONDS = 120
KEYS = {
    "k-admin": {"tenant": "clients", "scopes": ["read", "write", "admin"]},
    "k-read": {"tenant": "clients", "scopes": ["read"]},
    "k-erase": {"tenant": "scratch", "scopes": ["read", "write", "admin"]},
    "k-vectors": {"tenant": "vectors", "scopes": ["read", "write", "admin"]},
    "k-docs": {"tenant": "docs", "scopes": ["read", "write", "admin"]},  # docs/clients.md's examples
    "k-paging": {"tenant": "paging", "scopes": ["read", "write", "admin"]},  # written while it is paged
}
# The vector stores' tenant brings its own vectors, of langchain-tests' fake embedding's size
# (langchain_tests.integration_tests.vectorstores.EMBEDDING_SIZE).
BYO_VECTOR_TENANTS = {"vectors": 6}
ASYNC_MIN_CHUNKS = 20  # bulk writes above this many chunks become jobs (QUARRY_ASYNC_MIN_CHUNKS)
NOTES = [
    ("memory", "m-rate", "The rate limiter caps how many calls each client may send per minute"),
    ("memory", "m-check", "checkRateLimit validates request frequency before the handler runs"),
    ("memory", "m-keys", "Rotate the signing keys every ninety days"),
    ("memory", "m-cache", "The deploy pipeline fails when the cache volume is full"),
    ("memory", "m-host", "The cache volume lives on the build host"),
    ("task", "t-login", "Fix the login bug: users cannot sign in with email"),
    ("task", "t-limit", "Raise the rate limit for the partner API clients"),
    ("task", "t-docs", "Document how clients should back off when rate limited"),
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_bin() -> Path:
    return Path(os.environ.get("QUARRY_SERVER_BIN", REPO / ".venv" / "bin" / "quarry"))


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of a running `quarry serve` (stopped at the end of the session)."""
    binary = server_bin()
    if not binary.exists():
        pytest.skip(f"no server to test against: {binary} is missing (run `make setup`)")
    port = free_port()
    env = {**os.environ, "QUARRY_API_KEYS": json.dumps(KEYS), "QUARRY_ASYNC_MIN_CHUNKS": str(ASYNC_MIN_CHUNKS),
           "QUARRY_BYO_VECTOR_TENANTS": json.dumps(BYO_VECTOR_TENANTS),
           "QUARRY_DATA_DIR": str(tmp_path_factory.mktemp("quarry") / "data"),
           "POWERTOOLS_LOG_LEVEL": "ERROR"}  # fmt: skip
    log = (tmp_path_factory.getbasetemp() / "serve.log").open("w")
    proc = subprocess.Popen([str(binary), "serve", "--port", str(port), "--workers", "1"],
                            env=env, stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_SECONDS
        while not _healthy(url):
            assert proc.poll() is None, f"quarry serve exited: see {log.name}"
            assert time.monotonic() < deadline, "quarry serve did not answer /health in time"
            time.sleep(0.2)
        _seed(url)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def _seed(url: str) -> None:
    with Quarry(url, "k-admin") as client:
        items = [{"type": t, "id": i, ("content" if t == "memory" else "title"): text, "version": 1}
                 for t, i, text in NOTES]  # fmt: skip
        written = client.bulk_write(items).wait(timeout=120)
        assert written.indexed == len(NOTES) and not written.errors, written


@pytest.fixture(scope="session", autouse=True)
def environment(server: str) -> Iterator[None]:
    """QUARRY_URL and QUARRY_API_KEY for what is built from defaults (the frameworks' standard tests)."""
    saved = {k: os.environ.get(k) for k in ("QUARRY_URL", "QUARRY_API_KEY")}
    os.environ |= {"QUARRY_URL": server, "QUARRY_API_KEY": "k-admin"}
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture
def client(server: str) -> Iterator[Quarry]:
    with Quarry(server, "k-admin") as c:
        yield c

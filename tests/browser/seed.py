"""A local server with a small demo tenant for the console: tasks and context memories, the governance
corpus with the `dba` overlay, one hostile document, and two keys (every scope / read only)."""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from handlers.lambda_functions import api
from handlers.local_server.devserver import make_server

ROOT = Path(__file__).resolve().parents[2]
TENANT = "demo"
FULL_KEY = "qk_console_full"
READ_KEY = "qk_console_read"
KEYS = {
    FULL_KEY: {"tenant": TENANT, "scopes": ["read", "write", "admin"]},
    READ_KEY: {"tenant": TENANT, "scopes": ["read"]},
}
HOSTILE_TITLE = "Quarterly <img src=x onerror=alert(1)> report"
HOSTILE_TEXT = (
    "The <img src=x onerror=alert(document.domain)> payload and <script>alert(2)</script> ride along"
)

ITEMS: list[dict[str, Any]] = [
    {
        "type": "task",
        "id": "t-login",
        "title": "Fix login rate limiter",
        "description": "limiter resets too early",
    },
    {
        "type": "task",
        "id": "t-docs",
        "title": "Write the limiter README",
        "description": "document the login limiter",
    },
    {
        "type": "task",
        "id": "t-cache",
        "title": "Cache warm-up",
        "description": "warm the search cache after deploys",
    },
    {
        "type": "task",
        "id": "t-rate",
        "title": "Rate limit the export API",
        "description": "token bucket per account",
    },
    {
        "type": "memory",
        "id": "m-billing",
        "content": "Billing rate limiter uses a token bucket per account",
        "namespace": "billing",
    },
    {
        "type": "memory",
        "id": "m-auth",
        "content": "The login limiter locks an account after five failures",
        "namespace": "auth",
    },
    {
        "type": "memory",
        "id": "a-own",
        "content": "I raised the login limiter threshold",
        "source": "agent_memory",
        "owner": "agent-coder",
        "namespace": "auth",
    },
    {
        "type": "document",
        "id": "d-design",
        "title": "Login design",
        "namespace": "auth",
        "text": "Login uses a rate limiter with lockout and a sliding window of fifteen minutes",
    },
    {"type": "document", "id": "d-hostile", "title": HOSTILE_TITLE, "text": HOSTILE_TEXT},
]


def call(url: str, method: str, path: str, body: Any = None, key: str = FULL_KEY) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"authorization": f"Bearer {key}", "content-type": "application/json"}
    request = urllib.request.Request(url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


def seed(url: str) -> None:
    """The demo tenant's data, written through the API."""
    status, body = call(url, "POST", "/entities", {"items": ITEMS})
    assert status == 200 and body["indexed"] == len(ITEMS), body
    corpus = json.loads((ROOT / "tests" / "fixtures" / "governance_corpus.json").read_text())
    status, body = call(url, "POST", "/corpus", corpus)
    assert status == 200, body
    overlay = json.loads(json.loads((ROOT / "events" / "put_overlay.json").read_text())["body"])
    status, body = call(url, "PUT", "/overlays/dba", overlay)
    assert status == 200, body


@contextmanager
def demo_server(data_dir: Path) -> Iterator[str]:
    """A seeded local server on a free loopback port (fake embedder: no model needed)."""
    from infra.wiring.root import set_container
    from tests.conftest import FakeEmbedder, make_container

    set_container(make_container(data_dir, FakeEmbedder()))
    httpd = make_server("127.0.0.1", 0, KEYS, api.lambda_handler, 1 << 20)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        seed(url)
        yield url
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
        set_container(None)

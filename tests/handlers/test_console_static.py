"""The console's files: served by the local server without a token, under a strict CSP, nothing outside
the console folder; the API beside them still needs a key; the Lambda handler serves no console."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from importlib import resources
from typing import Any

import pytest

from handlers.local_server.console_static import console_file
from tests.conftest import api_event, invoke
from tests.handlers.serving import serving


@pytest.fixture
def server(local: Any) -> Iterator[str]:
    with serving({"k": {"tenant": "t", "scopes": ["read"]}}, 4096) as url:
        yield url


def get(url: str, key: str | None = None) -> tuple[int, dict[str, str], bytes]:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as r:
            return r.status, dict(r.headers.items()), r.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers.items()), err.read()


def test_the_console_is_served_without_a_token_under_a_strict_csp(server: str) -> None:
    status, headers, body = get(server + "/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert b"<title>Quarry console</title>" in body
    csp = headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp and "style-src 'self'" in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp and "frame-ancestors 'none'" in csp
    assert headers["X-Content-Type-Options"] == "nosniff"
    status, headers, body = get(server + "/console/main.js")
    assert status == 200 and headers["Content-Type"].startswith("text/javascript") and b"import" in body


def test_the_pages_hold_no_inline_script_style_or_handlers() -> None:
    _, page, _ = console_file("/")
    text = page.decode()
    assert "<script>" not in text and "<style" not in text and " style=" not in text
    assert not re.search(r"\son[a-z]+\s*=", text)  # no onclick= / onload= attributes
    assert "http://" not in text and "https://" not in text  # nothing from another origin


def test_the_scripts_never_write_html() -> None:
    scripts = sorted((resources.files("handlers.local_server") / "console").iterdir(), key=str)
    sources = {s.name: s.read_text() for s in scripts if s.name.endswith(".js")}
    assert {"main.js", "dom.js", "search.js"} <= set(sources)
    for name, source in sources.items():
        for sink in (
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
            "new Function",
        ):
            assert sink not in source, f"{name} uses {sink}"


@pytest.mark.parametrize(
    "path",
    [
        "/console/../devserver.py",
        "/console/%2e%2e/devserver.py",
        "/console/.hidden.js",
        "/console/x/y.js",
        "/console/console_static.py",
        "/console/missing.js",
    ],
)
def test_nothing_outside_the_console_folder_is_served(server: str, path: str) -> None:
    status, _, body = get(server + path)
    assert status in (401, 404) and b"import" not in body and b"def " not in body


def test_the_api_next_to_the_console_still_needs_a_key(server: str) -> None:
    assert get(server + "/whoami")[0] == 401
    status, _, body = get(server + "/whoami", key="k")
    assert status == 200 and json.loads(body) == {"tenant": "t", "scopes": ["read"], "caller": None}


def test_whoami_names_tenant_scopes_and_bound_caller(local: Any) -> None:
    event = api_event("health", path="/whoami", scopes=["read", "write"])
    status, body = invoke(event)
    assert status == 200 and body == {"tenant": "acme", "scopes": ["read", "write"], "caller": None}


def test_the_lambda_handler_serves_no_console(local: Any) -> None:
    status, _ = invoke(api_event("health", path="/"))
    assert status == 404
    status, _ = invoke(api_event("health", path="/console/main.js"))
    assert status == 404


def test_keep_alive_answers_are_not_held_back_by_nagle(server: str) -> None:
    """Headers and body leave in two writes; without TCP_NODELAY the second waits for the client's delayed
    ACK (~40 ms on Linux), on every request of a kept-alive connection: 10 files took ~400 ms."""
    import http.client
    import time

    host, port = server.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("GET", "/console/dom.js")
    conn.getresponse().read()
    started = time.perf_counter()
    for path in ["/console/dom.js", "/health"] * 5:  # a file, and an answer of the API itself
        conn.request("GET", path)
        assert conn.getresponse().read()
    conn.close()
    assert time.perf_counter() - started < 0.25

"""Helpers for tests that talk to a local server over loopback: a free port, a one-process server in a thread."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def free_port() -> int:
    """A loopback port nothing listens on (for a server started in another process)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(keys: dict[str, Any], body_limit: int, ndjson_limit: int | None = None) -> Iterator[str]:
    """The local API (handlers.lambda_functions.api behind the dev server) on a free loopback port; yields its base URL."""
    from handlers.lambda_functions import api
    from handlers.local_server.devserver import make_server

    httpd = make_server("127.0.0.1", 0, keys, api.lambda_handler, body_limit, max_ndjson_bytes=ndjson_limit)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)

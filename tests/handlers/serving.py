"""One helper for tests that talk to the local server over loopback: a one-process server in a thread."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def serving(keys: dict[str, Any], body_limit: int) -> Iterator[str]:
    """The local API (handlers.api behind the dev server) on a free loopback port; yields its base URL."""
    from handlers import api
    from handlers.devserver import make_server

    httpd = make_server("127.0.0.1", 0, keys, api.lambda_handler, body_limit)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)
